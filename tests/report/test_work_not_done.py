"""Issue 13, item 1: work a model cannot do is rejected with a reason, counted, shown and weighed.

A job that can never run is `rejected` at submit with the scheduler's reason; `unfinished` means only
still queued or running at the end; summary.json, the compare table and `recommend` show the work
not done per model; the advisor never recommends a model that leaves work undone that another does
without saying so first; hybrid's proposed split holds the largest job routed to each side, and a
given split that cannot is an error naming the workload and the pool.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gpuplan.advisor.evidence import gather
from gpuplan.advisor.scoring import recommend
from gpuplan.metrics.summary import summarize
from gpuplan.sim.cluster import Pool
from gpuplan.sim.outcome import COMPLETED, REJECTED, UNFINISHED, ModelRun
from gpuplan.sim.slurm.model import SlurmSettings, simulate_slurm
from gpuplan.sim.slurm.qos import Qos

from builders import gpuplan, workload

# A mixed H100/A10 cluster with a nightly 2x8 pipeline: the defaults route pipelines to
# Kubernetes, whose proposed part of the h100 pool was 1 node, so every pipeline run was lost.
NIGHTLY = """\
name: nightly-pipeline
seed: 1
horizon: 14d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 4}
    - {name: a10, shape: BM.GPU.A10.4, nodes: 4}
teams:
  - {name: research, share: 60}
  - {name: mlops, share: 40}
workloads:
  - name: training
    kind: batch
    team: research
    pool: h100
    arrival: {rate: 10/day}
    size: {"1x8": 70, "2x8": 30}
    duration: {median: 3h}
  - name: nightly
    kind: pipeline
    team: mlops
    pool: h100
    arrival: {rate: 2/day}
    size: "2x8"
    duration: {median: 1h}
  - name: chat
    kind: service
    team: mlops
    pool: a10
    throughput_per_replica: 10
    replicas: {min: 1, max: 8}
    demand: {peak: 60, trough: 5}
"""


def scenario(tmp_path: Path, models: str = "") -> Path:
    path = tmp_path / "nightly.yaml"
    path.write_text(NIGHTLY + models)
    return path


# ---- hybrid: the split holds the largest routed job ---------------------------------------------


def test_the_proposed_split_holds_the_largest_job_routed_to_each_side(tmp_path: Path) -> None:
    code, out, _ = gpuplan("simulate", str(scenario(tmp_path)), "--model", "hybrid", "--json")
    assert code == 0
    hybrid = json.loads(out)
    # the 2x8 pipeline goes to Kubernetes and the 2x8 training jobs to Slurm: 2 nodes each
    assert hybrid["settings"]["split"]["h100"] == {"slurm": 2, "kubernetes": 2}
    assert hybrid["work_not_done"]["jobs"] == 0
    assert hybrid["jobs"]["completed"] + hybrid["jobs"]["killed_at_limit"] == hybrid["jobs"]["submitted"]


def test_default_routing_sends_a_job_where_the_given_split_can_hold_it(tmp_path: Path) -> None:
    path = scenario(tmp_path, "models:\n  hybrid:\n    split: {h100: 3}\n")
    code, out, _ = gpuplan("simulate", str(path), "--model", "hybrid", "--json")
    assert code == 0
    hybrid = json.loads(out)
    rerouted = hybrid["settings"]["rerouted"]
    assert list(rerouted) == ["nightly"] and rerouted["nightly"]["to"] == "slurm"
    assert rerouted["nightly"]["jobs"] > 0
    assert hybrid["work_not_done"]["jobs"] == 0


def test_a_given_split_that_cannot_hold_a_routed_job_is_an_input_error(tmp_path: Path) -> None:
    models = "models:\n  hybrid:\n    split: {h100: 3}\n    routing: [{workload: nightly, to: kubernetes}]\n"
    path = scenario(tmp_path, models)
    line = (NIGHTLY + models).splitlines().index("    split: {h100: 3}") + 1
    for command in (
        ["validate", str(path)],
        ["simulate", str(path), "--model", "hybrid", "--out", str(tmp_path / "out")],
        ["recommend", str(path), "--out", str(tmp_path / "out")],
    ):
        code, _, err = gpuplan(*command)
        assert code == 2
        assert f"nightly.yaml:{line}: models.hybrid.split.h100" in err
        assert "'nightly'" in err and "'h100'" in err and "2-node jobs" in err
        assert "Traceback" not in err


# ---- every model: rejected at submit with a reason; unfinished only at the end --------------------


def test_slurm_rejects_jobs_larger_than_their_qos_allows_with_the_reason() -> None:
    jobs = (
        workload()
        .job(submit=0, run=100, nodes=2, gpus=8, qos="small")
        .job(submit=0, run=100, nodes=1, gpus=8, qos="small")
    )
    for qos, reason in (
        (Qos("small", grp_gpus=8), "QOSGrpGRES"),
        (Qos("small", max_gpus_per_user=8), "QOSMaxGRESPerUser"),
    ):
        run = simulate_slurm(jobs.table(), [Pool("batch", 4, 8)], SlurmSettings(qos=(qos,)))
        assert run.state.tolist() == [REJECTED, COMPLETED]
        assert run.reason is not None and run.reason.values()[0] == reason
        assert np.isnan(run.start_s[0])
        work = summarize(run)["work_not_done"]
        assert work["rejected"] == {"jobs": 1, "gpu_hours": pytest.approx(16 * 100 / 3600)}
        assert work["by_workload"]["a"]["reasons"] == {reason: 1}


def test_a_job_that_never_started_is_never_counted_as_completed() -> None:
    run = simulate_slurm(workload().job(submit=0, run=10).table(), [Pool("batch", 1, 1)], SlurmSettings())
    with pytest.raises(AssertionError, match="is completed with start nan"):
        ModelRun(**{**run.__dict__, "start_s": np.full(1, np.nan)})
    with pytest.raises(AssertionError, match="is rejected with start"):
        ModelRun(**{**run.__dict__, "state": np.full(1, REJECTED, np.int8)})
    # unfinished may or may not have started (queued, or running at the end)
    ModelRun(**{**run.__dict__, "state": np.full(1, UNFINISHED, np.int8)})


# ---- shown: summary, compare table, recommend's first lines and recommendation.json ------------


QOS_LIMITED = """\
name: qos-limited
seed: 1
horizon: 2d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 4}
teams:
  - {name: research}
workloads:
  - name: training
    kind: batch
    team: research
    arrival: {rate: 10/day}
    size: {"1x8": 70, "2x8": 30}
    duration: {median: 3h}
    qos: small
models:
  slurm:
    qos:
      - {name: small, grp_gpus: 8}
"""


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    base = tmp_path_factory.mktemp("limited")
    path = base / "limited.yaml"
    path.write_text(QOS_LIMITED)
    code, out, err = gpuplan("recommend", str(path), "--out", str(base / "out"), "--processes", "1")
    return base / "out", code, out, err


def test_recommend_says_first_which_work_a_model_leaves_undone(limited: tuple[Path, int, str, str]) -> None:
    out_dir, code, out, _ = limited
    assert code == 0
    lines = out.splitlines()
    # the 2x8 jobs exceed GrpTRES=gres/gpu=8 under Slurm (and hybrid's Slurm side); Kubernetes runs them
    assert lines[1].startswith("attention: slurm leaves ") and "QOSGrpGRES" in lines[1]
    assert lines[2].startswith("attention: hybrid leaves ")
    assert lines[3] == "recommended: kubernetes (clear)"
    assert any("slurm cannot be recommended: it leaves" in line for line in lines)
    saved = json.loads((out_dir / "recommendation.json").read_text())
    assert saved["chosen"] == "kubernetes"
    assert saved["warnings"][0].startswith("slurm leaves ")
    by_model = {m["model"]: m for m in saved["models"]}
    assert by_model["slurm"]["does_the_most_work"] is False and by_model["slurm"]["eligible"] is False
    assert by_model["kubernetes"]["work_not_done_jobs"] == 0
    summary = json.loads((out_dir / "summary.json").read_text())["models"]
    assert summary["slurm"]["work_not_done"]["jobs"] == by_model["slurm"]["work_not_done_jobs"] > 0


def test_the_compare_table_shows_the_work_not_done(
    limited: tuple[Path, int, str, str], tmp_path: Path
) -> None:
    out_dir, *_ = limited
    summary = json.loads((out_dir / "summary.json").read_text())["models"]
    code, out, _ = gpuplan(
        "compare", str(out_dir.parent / "limited.yaml"), "--out", str(tmp_path), "--processes", "1"
    )
    assert code == 0
    row = next(line for line in out.splitlines() if "work not done" in line)
    slurm = summary["slurm"]["work_not_done"]
    assert f"{slurm['jobs']:,} ({slurm['gpu_hours']:,.0f})" in row and "none" in row


def test_a_model_leaving_work_undone_that_another_does_is_not_eligible() -> None:
    def model(undone_jobs: int, undone_hours: float, p95: float) -> dict[str, object]:
        return {
            "wait_s": {"p95": p95},
            "work_not_done": {"jobs": undone_jobs, "gpu_hours": undone_hours, "by_workload": {}},
        }

    # slurm scores best on waits but drops work kubernetes does
    evidence = gather({"models": {"slurm": model(5, 40.0, 10.0), "kubernetes": model(0, 0.0, 9000.0)}})
    rec = recommend(evidence)
    assert rec.chosen == "kubernetes"
    assert rec.warnings == ["slurm leaves 5 job(s) (40 GPU-hours) undone; kubernetes does all of it"]
    # when every model leaves the same work undone, none is excluded for it, and it is still said
    evidence = gather({"models": {"slurm": model(5, 40.0, 10.0), "kubernetes": model(5, 40.0, 9000.0)}})
    rec = recommend(evidence)
    assert rec.chosen == "slurm" and all(m.eligible for m in rec.models)
    assert len(rec.warnings) == 2
