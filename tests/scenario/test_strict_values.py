"""Strict numbers (issue 43, item 4): YAML's ``true`` and ``false`` are booleans, never a number.

pydantic's lax mode reads ``True`` as 1, so ``price_per_gpu_hour: true`` once validated and billed
$1.00 per GPU-hour. Every number field is strict now: a boolean (or a number written as text) is
refused with the file, the line and the field, exit code 2; an integer is still a number where a
number is meant, and units (``2h``, ``10/day``) are read as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.scenario.load import load_scenario
from gpuplan.scenario.model import BatchWorkload, LogNormal

from builders import SMALL_SCENARIO, gpuplan


def scenario(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """SMALL_SCENARIO with ``old`` (a whole line) replaced by ``new``: its path and the new line's number."""
    lines = SMALL_SCENARIO.splitlines()
    index = lines.index(old)
    lines[index] = new
    path = tmp_path / "scenario.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, index + 1


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        (
            "      nodes: 4",
            "      nodes: 4\n      price_per_gpu_hour: true",
            "cluster.pools[0].price_per_gpu_hour",
            "expected a number, got true",
        ),
        (
            "      nodes: 4",
            "      nodes: true",
            "cluster.pools[0].nodes",
            "expected a whole number, got true",
        ),
        (
            "    duration: {median: 2h, sigma: 0.5}",
            "    duration: {median: false, sigma: 0.5}",
            "workloads[0].duration.median",
            "expected a duration like '6h', got false",
        ),
        (
            "    duration: {median: 2h, sigma: 0.5}",
            "    duration: {median: 2h, sigma: true}",
            "workloads[0].duration.sigma",
            "expected a number, got true",
        ),
        ("    share: 2", "    share: true", "teams[0].share", "expected a number, got true"),
        (
            '    size: {"1x8": 3, "2x8": 1}',
            '    size: {"1x8": true, "2x8": 1}',
            "workloads[0].size",
            "the weight of '1x8' must be a number > 0",
        ),
        (
            "    arrival: {rate: 10/day}",
            "    arrival: {rate: true}",
            "workloads[0].arrival.rate",
            "expected a rate like '20/day', '3/h' or '0.5/s', got true",
        ),
        (
            "    replicas: {min: 1, max: 4}",
            "    replicas: {min: true, max: 4}",
            "workloads[1].replicas.min",
            "expected a whole number, got true",
        ),
        ("seed: 1", "seed: false", "seed", "expected a whole number, got false"),
    ],
    ids=["price", "node count", "duration", "sigma", "share", "size weight", "rate", "replicas", "seed"],
)
def test_a_boolean_is_no_number(tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    path, line = scenario(tmp_path, old, new)
    line += new.count("\n")  # the added line, where one is added
    code, out, err = gpuplan("validate", str(path))
    assert code == 2, out
    assert f"{path}:{line}: {field}: {message}" in " ".join(err.split()), err


def test_a_boolean_in_a_models_section_and_a_mapping_of_counts(tmp_path: Path) -> None:
    """Number fields of models.slurm, models.kubernetes (Kueue's quota and weight) and models.hybrid
    (a split is a mapping of pool to nodes) are strict too; every problem is listed."""
    text = SMALL_SCENARIO + (
        "models:\n"
        "  slurm: {bf_window: true, priority_weight_fairshare: false}\n"
        "  kubernetes:\n"
        "    kueue:\n"
        "      clusterQueues:\n"
        "        - name: all\n"
        "          flavors: [{name: gpu, nominalQuota: true}]\n"
        "          fairSharing: {weight: true}\n"
        "  hybrid: {split: {gpu: true}}\n"
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    code, _, err = gpuplan("validate", str(path))
    message = " ".join(err.split())
    assert code == 2
    first = len(SMALL_SCENARIO.splitlines()) + 1
    for line, field in [
        (first + 1, "models.slurm.bf_window"),
        (first + 1, "models.slurm.priority_weight_fairshare"),
        (first + 6, "models.kubernetes.kueue.clusterQueues[0].flavors[0].nominalQuota"),
        (first + 7, "models.kubernetes.kueue.clusterQueues[0].fairSharing.weight"),
        (first + 8, "models.hybrid.split.gpu"),
    ]:
        assert f"{path}:{line}: {field}: expected a" in message, (field, message)


def test_a_number_written_as_text_or_a_fraction_of_a_count_is_refused(tmp_path: Path) -> None:
    """Strict, not only boolean-free: ``"4"`` is text and 2.5 nodes is no count (2.0 neither: a count
    is written as one)."""
    for value, shown in (('"4"', "'4'"), ("2.5", "2.5"), ("2.0", "2.0")):
        path, line = scenario(tmp_path, "      nodes: 4", f"      nodes: {value}")
        code, _, err = gpuplan("validate", str(path))
        assert code == 2
        assert f"{path}:{line}: cluster.pools[0].nodes: expected a whole number, got {shown}" in " ".join(
            err.split()
        )


def test_a_boolean_given_with_set_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(SMALL_SCENARIO)
    code, _, err = gpuplan("validate", str(path), "--set", "teams.alpha.share=true")
    assert code == 2
    assert "--set teams.alpha.share: expected a number, got true" in " ".join(err.split()), err


def test_integers_are_numbers_and_units_still_read(tmp_path: Path) -> None:
    """An integer where a number is meant is that number; durations and rates keep their units."""
    path, _ = scenario(tmp_path, "      nodes: 4", "      nodes: 4\n      price_per_gpu_hour: 3")
    code, out, err = gpuplan("validate", str(path))
    assert code == 0, err
    assert ": ok" in out
    scenario_ = load_scenario(path).scenario
    assert scenario_.cluster.pools[0].price_per_gpu_hour == 3.0
    assert isinstance(scenario_.cluster.pools[0].price_per_gpu_hour, float)
    assert scenario_.teams[0].share == 2.0
    assert scenario_.horizon == 7 * 86400.0
    training = scenario_.workloads[0]
    assert isinstance(training, BatchWorkload) and isinstance(training.duration, LogNormal)
    assert training.duration.median == 7200.0 and training.arrival.rate == 10 / 86400


def test_a_boolean_answer_to_init_is_no_number(tmp_path: Path) -> None:
    """The questionnaire's answers file too: ``training_nodes: true`` is not 1 node."""
    answers = tmp_path / "answers.yaml"
    answers.write_text("services: 1\ntraining_nodes: true\n")
    out = tmp_path / "scenario.yaml"
    code, _, err = gpuplan("init", "--answers", str(answers), "--out", str(out))
    assert code == 2
    assert f"{answers}:2: training_nodes: expected a whole number, got true" in " ".join(err.split()), err
    assert not out.exists()
