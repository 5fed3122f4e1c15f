"""The hybrid model and `gpuplan compare`: routing, the split, and the same workload under every model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuplan.cli import app
from gpuplan.compare import CompareRequest, compare
from gpuplan.errors import GpuplanError
from gpuplan.scenario.hybrid import RoutingRule
from gpuplan.sim.hybrid.model import route_jobs_to_kubernetes
from gpuplan.workload.jobtable import JobTable, Labels

from builders import DATA, EXAMPLES

runner = CliRunner()


def without_timing(models: dict[str, dict]) -> dict[str, dict]:
    return {name: {k: v for k, v in figures.items() if k != "timing_s"} for name, figures in models.items()}


def test_all_batch_work_gives_hybrid_the_slurm_schedule(tmp_path: Path) -> None:
    # research-lab has no service or pipeline: every job goes to Slurm, which gets every node
    result = compare(
        CompareRequest(EXAMPLES / "research-lab.yaml", ("slurm", "hybrid"), tmp_path, processes=1)
    )
    slurm, hybrid = result.summary["models"]["slurm"], result.summary["models"]["hybrid"]
    assert hybrid["settings"]["split"] == {"h100": {"slurm": 16, "kubernetes": 0}}
    for key in ("jobs", "wait_s", "gpu_utilization", "preemption", "bounded_slowdown"):
        assert hybrid[key] == slurm[key], key
    assert {team: f["wait_s"] for team, f in hybrid["per_team"].items()} == {
        team: f["wait_s"] for team, f in slurm["per_team"].items()
    }


def test_all_services_give_hybrid_the_kubernetes_outcome(tmp_path: Path) -> None:
    result = compare(
        CompareRequest(EXAMPLES / "k8s-inference.yaml", ("kubernetes", "hybrid"), tmp_path, processes=1)
    )
    kubernetes, hybrid = result.summary["models"]["kubernetes"], result.summary["models"]["hybrid"]
    assert all(split["slurm"] == 0 for split in hybrid["settings"]["split"].values())
    assert hybrid["services"] == kubernetes["services"]
    assert hybrid["gpu_hours"] == pytest.approx(kubernetes["gpu_hours"])


def test_routing_rules_come_first_then_the_defaults() -> None:
    jobs = JobTable.build(
        job_id=[1, 2, 3, 4],
        submit_s=[0, 0, 0, 0],
        duration_s=[10, 10, 10, 10],
        nodes=[1, 4, 1, 1],
        team=["vision", "llm", "llm", "llm"],
    )
    jobs = replace(jobs, kind=Labels(np.array([0, 0, 1, 0], dtype=np.int32), ("batch", "pipeline")))
    assert route_jobs_to_kubernetes(jobs, []).tolist() == [False, False, True, False]
    rules = [RoutingRule(multi_node=True, to="slurm"), RoutingRule(team="llm", to="kubernetes")]
    assert route_jobs_to_kubernetes(jobs, rules).tolist() == [False, False, True, True]


def test_the_split_and_routing_of_the_scenario_are_used(tmp_path: Path) -> None:
    text = (EXAMPLES / "mixed-org.yaml").read_text()
    assert "\nmodels:\n" not in text
    text += (
        "\nmodels:\n  hybrid:\n    split: {h100: 6}\n    routing:\n      - {team: mlops, to: kubernetes}\n"
    )
    path = tmp_path / "mixed.yaml"
    path.write_text(text.replace("path: philly", f"path: {EXAMPLES}/philly"))
    result = compare(CompareRequest(path, ("hybrid",), tmp_path / "out", processes=1))
    hybrid = result.summary["models"]["hybrid"]
    assert hybrid["settings"]["split"]["h100"] == {"slurm": 6, "kubernetes": 2}
    assert hybrid["settings"]["split_source"] == {"h100": "scenario", "a10": "proposed"}
    jobs = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()
    assert {job["pool"].split("/")[1] for job in jobs if job["team"] == "mlops"} == {"kubernetes"}
    assert {job["pool"].split("/")[1] for job in jobs if job["team"] == "research"} == {"slurm"}


def test_compare_prints_the_table_and_writes_every_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    arguments = ["compare", str(EXAMPLES / "product-company.yaml"), "--out", str(out)]
    result = runner.invoke(app, arguments, env={"COLUMNS": "200"})  # no label wrapped
    assert result.exit_code == 0, result.stderr
    assert "operating models side by side" in result.stdout and "SLO attainment" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["models"]) == ["slurm", "kubernetes", "hybrid"]
    submitted = {m["jobs"]["submitted"] for m in summary["models"].values()}
    assert len(submitted) == 1  # the same workload under every model
    jobs = pq.read_table(out / "jobs.parquet")
    assert set(jobs.column("model").to_pylist()) == {"slurm", "kubernetes", "hybrid"}
    timeline = pq.read_table(out / "timeline.parquet")
    assert set(timeline.column("model").to_pylist()) == {"slurm", "kubernetes", "hybrid"}
    # same seed, same results, in one process or several
    again = compare(CompareRequest(EXAMPLES / "product-company.yaml", None, tmp_path / "again", processes=1))
    assert without_timing(again.summary["models"]) == without_timing(summary["models"])


def test_compare_refuses_a_trace_and_an_unknown_model(tmp_path: Path) -> None:
    with pytest.raises(GpuplanError, match="scenario"):
        compare(CompareRequest(EXAMPLES / "lublin_256_first2000.swf.gz", out=tmp_path))
    result = runner.invoke(app, ["compare", str(EXAMPLES / "research-lab.yaml"), "--model", "slurn"])
    assert result.exit_code == 2 and "did you mean 'slurm'" in result.stderr


HORIZON_S = 3 * 86400.0


def batch_gpu_hours_by(jobs: list[dict], team: str, until_s: float) -> float:
    return (
        sum(
            max(0.0, min(job["end_s"], until_s) - job["start_s"]) * job["gpus"]
            for job in jobs
            if job["team"] == team and job["start_s"] is not None
        )
        / 3600.0
    )


def hybrid_run(tmp_path: Path, name: str, hybrid_settings: str) -> tuple[dict, list[dict], Path]:
    text = (DATA / "hybrid_lending.yaml").read_text().replace("    split: {gpu: 4}\n", hybrid_settings)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    out = tmp_path / name
    result = compare(CompareRequest(path, ("hybrid",), out, processes=1))
    return result.summary["models"]["hybrid"], pq.read_table(out / "jobs.parquet").to_pylist(), out


def test_lending_raises_slo_attainment_and_batch_work_over_the_static_split(tmp_path: Path) -> None:
    # 6 nodes of 4 GPUs; the service needs 4 nodes at its afternoon peak and 1 at night. Static:
    # Kubernetes 2 nodes all the time. Lending: Kubernetes 1 node, borrowing Slurm's at the peaks.
    static, static_jobs, _ = hybrid_run(tmp_path, "static", "    split: {gpu: 4}\n")
    lending, lending_jobs, _ = hybrid_run(
        tmp_path, "lending", "    split: {gpu: 5}\n    lending: {policy: kubernetes_borrows}\n"
    )
    assert lending["settings"]["lending"]["moves_to_kubernetes"]["gpu"] > 0
    assert (
        lending["services"]["assistant"]["slo_attainment"] > static["services"]["assistant"]["slo_attainment"]
    )
    assert batch_gpu_hours_by(lending_jobs, "research", HORIZON_S) > batch_gpu_hours_by(
        static_jobs, "research", HORIZON_S
    )
    assert lending["gpu_utilization"] > static["gpu_utilization"]
    # the moves cost something: requeued batch work, GPU-hours in transit
    assert lending["settings"]["lending"]["gpu_hours_in_transit"] > 0


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grace=st.sampled_from(["0s", "5m", "30m"]),
    move=st.sampled_from(["1m", "5m", "20m"]),
    max_nodes=st.sampled_from([1, 2, 5]),
    kubernetes_nodes=st.integers(1, 2),
)
def test_a_lent_node_never_serves_both_sides(
    tmp_path: Path, grace: str, move: str, max_nodes: int, kubernetes_nodes: int
) -> None:
    lending = (
        f"{{policy: kubernetes_borrows, grace_time: {grace}, move_time: {move}, max_nodes: {max_nodes}}}"
    )
    split = 6 - kubernetes_nodes
    _, _, out = hybrid_run(tmp_path, "run", f"    split: {{gpu: {split}}}\n    lending: {lending}\n")
    timeline = pq.read_table(out / "timeline.parquet").to_pylist()
    rows = {"gpu/slurm": [], "gpu/kubernetes": []}
    for row in timeline:
        rows[row["pool"]].append(row)
    times = sorted({row["time_s"] for row in timeline})

    def at(pool: str, time_s: float, key: str) -> int:
        value = 0
        for row in rows[pool]:  # rows are in time order: the last at or before time_s holds
            if row["time_s"] > time_s:
                break
            value = row[key]
        return value

    for time_s in times:
        slurm_busy = at("gpu/slurm", time_s, "busy_gpus")
        kubernetes_nodes = at("gpu/kubernetes", time_s, "nodes_up")
        assert slurm_busy + 4 * kubernetes_nodes <= 6 * 4, time_s


def test_backfill_option_reaches_the_slurm_side_with_lending(tmp_path: Path) -> None:
    text = (
        (DATA / "hybrid_lending.yaml")
        .read_text()
        .replace("    split: {gpu: 4}\n", "    split: {gpu: 5}\n    lending: {policy: kubernetes_borrows}\n")
    )
    path = tmp_path / "lending.yaml"
    path.write_text(text)
    result = runner.invoke(
        app,
        ["simulate", str(path), "--model", "hybrid", "--backfill", "none", "--json", "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["settings"]["slurm"]["backfill"] == "none"
