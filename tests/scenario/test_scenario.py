"""Scenario files: the bundled examples, a dozen malformed files, round trips and fuzzing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.errors import InputError
from gpuplan.scenario.load import LoadedScenario, ScenarioError, load_scenario
from gpuplan.scenario.model import Scenario
from gpuplan.sim.slurm.settings import from_scenario

from builders import EXAMPLES, SMALL_SCENARIO

EXAMPLES = sorted((EXAMPLES).glob("*.yaml"))

BASE = SMALL_SCENARIO


def load(text: str, tmp_path: Path) -> LoadedScenario:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return load_scenario(path)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_examples_are_valid(path: Path) -> None:
    loaded = load_scenario(path)
    assert loaded.scenario.workloads
    assert all(pool.gpus > 0 for pool in loaded.pools)


def test_the_base_scenario_resolves_its_shape(tmp_path: Path) -> None:
    loaded = load(BASE, tmp_path)
    pool = loaded.pools[0]  # type: ignore[attr-defined]
    assert (pool.name, pool.nodes, pool.gpus_per_node, pool.rdma) == ("gpu", 4, 8, True)
    assert loaded.scenario.horizon == 7 * 86400  # type: ignore[attr-defined]


# (what is wrong, text replaced, replacement, line, field path, words of the message)
MALFORMED = [
    ("a misspelt section", "workloads:", "workload:", 13, "workload", "did you mean 'workloads'"),
    (
        "a misspelt nested key",
        "{rate: 10/day}",
        "{rat: 10/day}",
        17,
        "workloads[0].arrival.rat",
        "did you mean 'rate'",
    ),
    (
        "a duration in words",
        "median: 2h",
        "median: 2 hours",
        19,
        "workloads[0].duration.median",
        "like '90s', '30m', '6h' or '14d', got '2 hours'",
    ),
    ("a size that is not NxG", '"2x8": 1', '"2by8": 1', 18, "workloads[0].size", "like '2x8'"),
    (
        "a pool with no nodes",
        "nodes: 4",
        "nodes: 0",
        8,
        "cluster.pools[0].nodes",
        "greater than or equal to 1",
    ),
    ("an unknown team", "team: alpha", "team: alfa", 16, "workloads[0].team", "did you mean 'alpha'"),
    ("an unknown shape", "BM.GPU.H100.8", "BM.GPU.H100", 7, "cluster.pools[0].shape", "BM.GPU.H100.8"),
    ("a job larger than any pool", '"2x8": 1', '"8x8": 1', 18, "workloads[0].size", "does not fit"),
    (
        "replica bounds upside down",
        "{min: 1, max: 4}",
        "{min: 5, max: 4}",
        24,
        "workloads[1].replicas",
        "above max",
    ),
    ("a missing arrival", "    arrival: {rate: 10/day}\n", "", 14, "workloads[0].arrival", "required"),
    ("an unknown kind", "kind: batch", "kind: training", 15, "workloads[0].kind", "'batch'"),
    ("two teams with one name", "name: beta", "name: alpha", 12, "teams[1].name", "already named"),
    (
        "a rate with no unit",
        "rate: 10/day",
        "rate: 10 per day",
        17,
        "workloads[0].arrival.rate",
        "like '20/day'",
    ),
    (
        "a trough above the peak",
        "peak: 20, trough: 2",
        "peak: 2, trough: 20",
        25,
        "workloads[1].demand",
        "above peak",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "words"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_a_malformed_scenario_names_file_line_and_field(
    tmp_path: Path, old: str, new: str, line: int, field: str, words: str
) -> None:
    assert old in BASE
    with pytest.raises(ScenarioError) as caught:
        load(BASE.replace(old, new, 1), tmp_path)
    error = caught.value
    assert (error.line, error.field) == (line, field), str(error)
    assert words in error.message
    assert str(error).startswith(f"{tmp_path / 'scenario.yaml'}:{line}: {field}: ")


def test_yaml_syntax_errors_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load(BASE.replace("    share: 2\n", "    share: [2\n"), tmp_path)
    assert caught.value.line is not None and caught.value.line >= 11


def test_every_problem_is_reported(tmp_path: Path) -> None:
    text = BASE.replace("team: alpha", "team: alfa").replace("team: beta", "team: gamma")
    with pytest.raises(ScenarioError) as caught:
        load(text, tmp_path)
    assert [p.field for p in caught.value.problems] == ["workloads[0].team", "workloads[1].team"]


def test_a_round_trip_through_yaml_keeps_the_scenario(tmp_path: Path) -> None:
    first = load(BASE, tmp_path).scenario  # type: ignore[attr-defined]
    dumped = yaml.safe_dump(first.model_dump(mode="json", exclude_none=True), sort_keys=False)
    second = load(dumped, tmp_path).scenario  # type: ignore[attr-defined]
    assert second == first


def test_the_json_schema_describes_every_section() -> None:
    schema = Scenario.model_json_schema()
    assert {"cluster", "teams", "workloads", "organisation", "models", "targets", "seed", "horizon"} <= set(
        schema["properties"]
    )
    assert schema["additionalProperties"] is False


LINES = BASE.splitlines()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, len(LINES) - 1), st.text(max_size=12)), min_size=1, max_size=3),
)
def test_a_mangled_scenario_loads_or_fails_cleanly(tmp_path: Path, edits: list[tuple[int, str]]) -> None:
    lines = list(LINES)
    for index, text in edits:
        cut = len(lines[index]) // 2
        lines[index] = lines[index][:cut] + text + lines[index][cut:]
    try:
        load("\n".join(lines), tmp_path)
    except InputError as error:
        assert str(error)


SLURM_PARTITIONS = """\
models:
  slurm:
    partitions:
      - {name: high, pool: gpu, priority_tier: 2, allow_accounts: [alpha]}
      - {name: low, pool: gpu}
    qos:
      - {name: urgent, preempt: [normal]}
    preempt_type: partition_prio
    reservations:
      - {name: maint, pool: gpu, nodes: 2, start: 1d, duration: 4h, repeat: 7d}
      - {name: demo, pool: gpu, nodes: 1, start: 2d, duration: 1d, accounts: [beta]}
    topology: {plugin: block, nodes_per_block: 2}
  hybrid:
    split: {gpu: 3}
    routing:
      - {team: beta, to: kubernetes}
"""


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("pool: gpu, priority_tier", "pool: gpus, priority_tier", "models.slurm.partitions[0].pool", "'gpu'"),
        ("[alpha]", "[alfa]", "models.slurm.partitions[0].allow_accounts[0]", "did you mean 'alpha'"),
        ("[normal]", "[norml]", "models.slurm.qos[0].preempt[0]", "did you mean 'normal'"),
        ("name: low", "name: high", "models.slurm.partitions[1].name", "already named"),
        (
            "{name: low, pool: gpu}",
            "{name: low, pool: gpu, def_mem_per_cpu: 1000, def_mem_per_node: 9000}",
            "models.slurm.partitions[1]",
            "not both",
        ),
        ("preempt_type: partition_prio", "preempt_type: partition", "models.slurm.preempt_type", "'qos'"),
        ("pool: gpu, nodes: 2", "pool: gpu, nodes: 9", "models.slurm.reservations[0].nodes", "more than"),
        ("accounts: [beta]", "accounts: [bta]", "models.slurm.reservations[1].accounts[0]", "'beta'"),
        ("nodes_per_block: 2", "nodes_per_block: 0", "models.slurm.topology.nodes_per_block", "greater"),
        ("split: {gpu: 3}", "split: {gpu: 5}", "models.hybrid.split.gpu", "more than"),
        ("{team: beta, to:", "{team: bta, to:", "models.hybrid.routing[0].team", "'beta'"),
        ("    team: alpha\n", "    team: alpha\n    partition: hihg\n", "workloads[0].partition", "'high'"),
        (
            "    team: alpha\n",
            "    team: alpha\n    partition: high\n    pool: other\n",
            "workloads[0].pool",
            "no pool named 'other'",
        ),
    ],
)
def test_partitions_and_preemption_are_checked(
    tmp_path: Path, old: str, new: str, field: str, words: str
) -> None:
    text = BASE + SLURM_PARTITIONS
    load(text, tmp_path)  # valid as it is
    assert old in text
    with pytest.raises(ScenarioError) as caught:
        load(text.replace(old, new, 1), tmp_path)
    assert field in str(caught.value) and words in str(caught.value), str(caught.value)


def test_a_partitions_job_defaults_reach_the_slurm_settings(tmp_path: Path) -> None:
    text = (BASE + SLURM_PARTITIONS).replace(
        "{name: low, pool: gpu}", "{name: low, pool: gpu, def_cpu_per_gpu: 12, def_mem_per_node: 64000}"
    )
    loaded = load(text, tmp_path)
    low = from_scenario(loaded.scenario.models.slurm).partitions[1]
    assert (low.name, low.def_cpu_per_gpu, low.def_mem_per_gpu, low.def_mem_per_node) == ("low", 12, 0, 64000)
