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
    result = runner.invoke(app, ["recommend", "--out", str(tmp_path)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.stderr
    assert "mixed-org.yaml" in "".join(result.stdout.split())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["input"]["scenario"] == "mixed-org"
    # its seeds disagree: the spread is reported, and how often each model wins, and no "clear"
    assert summary["replications"]["seeds"] == [3, 4, 5, 6, 7]
    recommendation = json.loads((tmp_path / "recommendation.json").read_text())
    winners = recommendation["seed_winners"]
    assert sorted(winners) == ["3", "4", "5", "6", "7"] and len(set(winners.values())) > 1
    assert recommendation["decision"] == "seed_dependent"
    wins = {m["model"]: m["wins"] for m in recommendation["models"]}
    assert sum(wins.values()) == 5 and wins == {m: list(winners.values()).count(m) for m in wins}
    assert "(seed dependent)" in result.stdout and "the choice depends on the seed" in result.stdout
    for model, body in summary["models"].items():
        spread = body["replications"]["spread"]["wait_s.p95"]
        values = [summary["per_seed"][seed][model]["wait_s"]["p95"] for seed in winners]
        assert (spread["min"], spread["max"]) == (min(values), max(values))
    report = (tmp_path / "report.md").read_text()
    assert "but the choice depends on the seed" in report and "median over 5 draws" in report


def test_a_bundled_example_whose_seeds_agree_is_a_clear_choice(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "src" / "gpuplan" / "examples" / "k8s-inference.yaml"
    result = runner.invoke(app, ["recommend", str(example), "--out", str(tmp_path)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.stderr
    recommendation = json.loads((tmp_path / "recommendation.json").read_text())
    chosen = recommendation["chosen"]
    assert recommendation["decision"] == "clear" and recommendation["margin"] > 0
    assert set(recommendation["seed_winners"].values()) == {chosen}
    ranges = {m["model"]: m["score_range"] for m in recommendation["models"]}
    eligible = [m["model"] for m in recommendation["models"] if m["eligible"] and m["model"] != chosen]
    assert all(ranges[chosen][0] > ranges[m][1] for m in eligible)
    assert f"{chosen} wins in all 5 seeds" in result.stdout


def test_no_model_meeting_the_targets_exits_1(tmp_path: Path) -> None:
    text = (DATA / "advisor_mpi_research.yaml").read_text()
    assert "\ntargets:" not in text
    path = tmp_path / "strict.yaml"
    path.write_text(text + "\ntargets:\n  p95_wait: 1s\n")
    result = runner.invoke(app, ["recommend", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.stdout
    recommendation = json.loads((tmp_path / "out" / "recommendation.json").read_text())
    assert recommendation["decision"] == "no_model_meets_targets"
