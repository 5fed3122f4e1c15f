"""``--set PATH=VALUE``: a scenario's field changed for one run, validated as the file is, named by
its option when wrong, and echoed in summary.json, the manifest and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.errors import InputError
from gpuplan.scenario.load import ScenarioError, load_scenario
from gpuplan.scenario.overrides import parse_override, parse_overrides

from builders import EXAMPLES, gpuplan

LAB = EXAMPLES / "research-lab.yaml"
MIXED = EXAMPLES / "mixed-org.yaml"


def test_fields_by_key_list_item_name_and_index_and_keys_the_file_lacks() -> None:
    sets = [
        "cluster.pools.h100.nodes=32",  # a pool by its name
        "workloads[0].arrival.rate=3/day",  # a workload by its index
        "models.slurm.partitions.scavenger.priority_tier=0",
        "targets.budget_usd_per_month=250000",
    ]
    loaded = load_scenario(LAB, parse_overrides(sets))
    scenario = loaded.scenario
    assert [pool.nodes for pool in loaded.pools] == [32]
    assert scenario.workloads[0].arrival.rate == pytest.approx(3 / 86400)  # type: ignore[union-attr]
    assert scenario.models.slurm.partitions[1].priority_tier == 0
    assert scenario.targets.budget_usd_per_month == 250_000
    assert [o.text for o in loaded.overrides] == sets
    # a section the file lacks (mixed-org has no models:) is added
    mixed = load_scenario(MIXED, parse_overrides(["models.slurm.bf_window=720"]))
    assert mixed.scenario.models.slurm.bf_window == 720
    # the value is YAML: a mapping, a boolean, null (unset)
    assert parse_override("a.b={min: 1, max: 4}").value == {"min": 1, "max": 4}
    assert parse_override("a.b=true").value is True
    assert parse_override("a.b=").value is None and parse_override("a.b=null").value is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            "models.slurm.bf_windw=720",
            "--set models.slurm.bf_windw: unknown key 'bf_windw'; did you mean 'bf_window'?",
        ),
        (
            "modles.slurm.bf_window=720",
            "--set modles.slurm.bf_window: unknown key 'modles'; did you mean 'models'?",
        ),
        (
            "cluster.pools.h10.nodes=4",
            "--set cluster.pools.h10.nodes: cluster.pools has no item named 'h10'; did you mean 'h100'?",
        ),
        (
            "cluster.pools.h100.nodes=-3",
            "--set cluster.pools.h100.nodes: Input should be greater than or equal to 1",
        ),
        ("cluster.pools[3].nodes=4", "--set cluster.pools[3].nodes: cluster.pools has 1 item(s): no index 3"),
        ("name.x=1", "--set name.x: name is 'research-lab', not a mapping: nothing under it to set"),
        ("cluster.pools", "--set: 'cluster.pools': expected PATH=VALUE, as cluster.pools.h100.nodes=32"),
        ("a..b=1", "--set: 'a..b' is not a field path"),
        ("horizon={", "--set horizon: '{' is not a YAML value"),
    ],
)
def test_a_wrong_path_or_value_is_exit_2_naming_the_option(given: str, expected: str) -> None:
    code, _, err = gpuplan("validate", str(LAB), "--set", given)
    assert code == 2
    assert expected in err


def test_a_cross_check_on_a_changed_field_names_the_option() -> None:
    # a workload sent to a pool that does not exist: the scenario's own cross-check, not the schema's
    with pytest.raises(ScenarioError) as caught:
        load_scenario(LAB, parse_overrides(["workloads[0].pool=a100"]))
    problem = caught.value.problems[0]
    assert problem.field == "--set workloads[0].pool" and problem.line is None
    assert "a100" in problem.message


def test_a_trace_has_no_fields_to_set(tmp_path: Path) -> None:
    code, _, err = gpuplan(
        "simulate", str(EXAMPLES / "lublin_256_first2000.swf.gz"), "--set", "cluster.pools.x.nodes=1"
    )
    assert code == 2 and "--set: --set changes a scenario's fields: a trace has none" in err


def test_compare_runs_the_changed_scenario_and_echoes_the_change(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["compare", str(LAB), "--model", "slurm", "--seeds", "1", "--out", str(out), "-q"]
    code, _, err = gpuplan(*args, "--set", "cluster.pools.h100.nodes=20")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["input"]["set"] == ["cluster.pools.h100.nodes=20"]
    assert summary["models"]["slurm"]["cluster"]["pools"]["h100"]["nodes"] == 20
    assert json.loads((out / "manifest.json").read_text())["sets"] == ["cluster.pools.h100.nodes=20"]
    # the report reads the scenario back with the same change, and says so in its header
    code, _, err = gpuplan("report", str(out))
    assert code in (0, 1), err  # (1: no model meets the targets)
    report = (out / "report.md").read_text()
    assert "with --set cluster.pools.h100.nodes=20" in report
    assert "| slurm | h100 | 160 | on demand |" in report  # the cost table's pool: 20 nodes of 8 GPUs


def test_parse_errors_are_input_errors() -> None:
    with pytest.raises(InputError):
        parse_override("=3")
