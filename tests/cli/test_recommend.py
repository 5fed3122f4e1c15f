"""`gpuplan recommend` end to end: real simulations of every model, the advisor, the reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuplan.cli import app

from builders import DATA

runner = CliRunner()


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("advisor_mpi_research", "slurm"),
        ("advisor_inference", "kubernetes"),
        ("advisor_two_groups", "hybrid"),
    ],
    ids=["all MPI research -> Slurm", "all inference -> Kubernetes", "both groups -> hybrid"],
)
def test_clear_cut_scenarios_simulated_end_to_end(tmp_path: Path, scenario: str, expected: str) -> None:
    result = runner.invoke(app, ["recommend", str(DATA / f"{scenario}.yaml"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert f"recommended: {expected}" in " ".join(result.stdout.split())
    recommendation = json.loads((tmp_path / "recommendation.json").read_text())
    assert recommendation["chosen"] == expected
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["models"]) == set(recommendation["scores"]) == {"slurm", "kubernetes", "hybrid"}
    for name in ("report.html", "report.md", "jobs.parquet", "timeline.parquet"):
        assert (tmp_path / name).stat().st_size > 0, name


def test_the_bundled_example_is_the_default(tmp_path: Path) -> None:
    result = runner.invoke(app, ["recommend", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert "mixed-org.yaml" in "".join(result.stdout.split())
    assert json.loads((tmp_path / "summary.json").read_text())["input"]["scenario"] == "mixed-org"


def test_no_model_meeting_the_targets_exits_1(tmp_path: Path) -> None:
    text = (DATA / "advisor_mpi_research.yaml").read_text()
    assert "\ntargets:" not in text
    path = tmp_path / "strict.yaml"
    path.write_text(text + "\ntargets:\n  p95_wait: 1s\n")
    result = runner.invoke(app, ["recommend", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.stdout
    recommendation = json.loads((tmp_path / "out" / "recommendation.json").read_text())
    assert recommendation["decision"] == "no_model_meets_targets"
