"""validate, schema, inspect and simulate on scenario files, end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gpuplan.cli import app

from builders import EXAMPLES, SHARED_TRACES, require

SCENARIOS = sorted(EXAMPLES.glob("*.yaml"))
runner = CliRunner()


def test_validate_accepts_the_examples() -> None:
    result = runner.invoke(app, ["validate", *map(str, SCENARIOS)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(": ok") == len(SCENARIOS)


def test_validate_refuses_a_misspelt_key_with_exit_2(tmp_path: Path) -> None:
    text = (EXAMPLES / "research-lab.yaml").read_text().replace("  - name: h100\n", "  - nmae: h100\n")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert (
        f"{path}:" in message and "cluster.pools[0].nmae: unknown key 'nmae'; did you mean 'name'?" in message
    )


def test_schema_is_json_schema() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"] == "Scenario" and "workloads" in schema["properties"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_inspect_characterises_each_example(tmp_path: Path, path: Path) -> None:
    result = runner.invoke(app, ["inspect", str(path), "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)
    for key in (
        "by_kind",
        "by_team",
        "size",
        "duration_s",
        "interarrival_s",
        "burstiness",
        "diurnal_profile",
    ):
        assert key in figures
    assert 0 < figures["offered_load"]["load"] < 2
    assert len(figures["diurnal_profile"]) == 24
    assert sum(figures["diurnal_profile"]) == pytest.approx(1.0 if figures["jobs"] else 0.0)
    table = pq.read_table(tmp_path / "job_table.parquet")
    assert table.num_rows == figures["jobs"]
    assert "team" in table.column_names and "workload" in table.column_names


def test_inspect_on_a_trace_prints_tables(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["inspect", str(EXAMPLES / "lublin_256_first2000.swf.gz"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.stderr
    assert "offered load" in result.stdout and "GPUs per job" in result.stdout


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_simulate_runs_each_example_through_the_slurm_model(tmp_path: Path, path: Path) -> None:
    result = runner.invoke(
        app,
        ["simulate", str(path), "--model", "slurm", "--backfill", "easy", "--json", "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    figures = json.loads(runner.invoke(app, ["inspect", str(path), "--json", "--out", str(tmp_path)]).stdout)
    assert summary["jobs"]["submitted"] == figures["jobs"]
    assert set(summary["services"]) == {
        name for name, kind in _workload_kinds(path).items() if kind == "service"
    }
    assert summary["gpu_utilization"] is not None and 0 < summary["gpu_utilization"] <= 1


def _workload_kinds(path: Path) -> dict[str, str]:
    from gpuplan.scenario.load import load_scenario

    return {w.name: getattr(w, "kind", "batch") for w in load_scenario(path).scenario.workloads}


SHARED_PHILLY = SHARED_TRACES / "gpu" / "philly_jobs_adaptdl.csv.gz"


@pytest.mark.parametrize(
    ("path", "jobs"),
    [(EXAMPLES / "philly_vc11cb48_week.csv.gz", 1337), (SHARED_PHILLY, 82247)],
    ids=["the bundled Philly week", "the shared Philly trace"],
)
def test_inspect_tells_a_philly_csv_by_its_header(tmp_path: Path, path: Path, jobs: int) -> None:
    result = runner.invoke(app, ["inspect", str(require(path)), "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["input"]["format"] == "philly" and figures["jobs"] == jobs
    assert figures["profile_clock"] == "UTC wall clock"
    assert sum(team["jobs"] for team in figures["by_team"].values()) == jobs


@pytest.mark.parametrize("mode", ["requeue", "cancel"])
def test_preemption_and_limits_show_in_the_summary_and_jobs(tmp_path: Path, mode: str) -> None:
    # research-lab: rl-sweeps run in the low-tier "scavenger" partition, which the "batch"
    # partition preempts (PreemptType=preempt/partition_prio); notebooks have MaxJobsPerUser=1
    text = (EXAMPLES / "research-lab.yaml").read_text()
    text = text.replace("preempt_mode: requeue  ", f"preempt_mode: {mode}  ")
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(path), "--model", "slurm", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    preemption = summary["preemption"]
    assert preemption["events"] >= preemption["jobs_preempted"] > 0
    assert preemption["lost_gpu_hours"] > 0
    assert summary["reasons"]["QOSMaxJobsPerUser"] > 0
    jobs = pq.read_table(out / "jobs.parquet").to_pylist()
    preempted = [job for job in jobs if job["preemptions"] > 0]
    assert {job["team"] for job in preempted} == {"rl"}  # only scavenger jobs are preempted
    assert sum(job["lost_gpu_s"] for job in jobs) / 3600 == pytest.approx(preemption["lost_gpu_hours"])
    states = {job["state"] for job in preempted}
    if mode == "cancel":
        assert states == {"preempted"}
        assert summary["jobs"]["preempted"] == len(preempted) == preemption["events"]
    else:
        assert "preempted" not in states and summary["jobs"]["preempted"] == 0
    held = [job for job in jobs if job["reason"] == "QOSMaxJobsPerUser"]
    assert len(held) == summary["reasons"]["QOSMaxJobsPerUser"]
