"""Fair baselines that diagnose themselves (issue 39): Kueue's ``waitForPodsReady`` as its
documentation recommends where the user did not configure it, and the pathologies a run shows named
with their figure and fix (``gpuplan.metrics.diagnose``), each from a real simulation of a small
scenario whose jobs are a Kueue workload list (a CSV, so every job is where the case needs it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.inputs import load_input
from gpuplan.metrics.diagnose import diagnose
from gpuplan.metrics.summary import summarize
from gpuplan.sim.models import run_input

DAY_S = 86400.0

SCENARIO = """\
name: diagnose
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: gpu, shape: BM.GPU.H100.8, nodes: {nodes}}}
teams:
  - {{name: team-a, share: 1}}
  - {{name: team-b, share: 1}}
workloads:
  - name: listed
    jobs: jobs.csv
models:
{models}
"""

HEADER = "name,namespace,created,runtime,pods,gpus,cpu,memory\n"
# four MPI jobs of 3 pods x 8 GPUs created together on 4 nodes: their pods interleave (the Job
# controller creates them concurrently), each job binds 2 of its 3 and waits for the other's nodes
MPI = HEADER + "".join(f"mpi-{k},team-a,0,3600,3,8,64,512Gi\n" for k in range(4))
# a ClusterQueue of twice the cluster's GPUs, as in Kueue's waitForPodsReady example
OVER_QUOTA = """\
  kubernetes:
    kueue:
      clusterQueues:
        - {{name: cq, flavors: [{{name: gpu, nominalQuota: 64}}]}}
{wait}"""
# every 1000 s, four 1-GPU pods then one 8-GPU pod: LeastAllocated spreads the small ones over the
# 4 nodes, so the large one's quota fits and no node holds it (until the small ones end)
SPREAD = HEADER + "".join(
    "".join(f"small-{k}-{i},team-a,{k * 1000},900,1,1,8,64Gi\n" for i in range(4))
    + f"big-{k},team-a,{k * 1000 + 1},100,1,8,64,512Gi\n"
    for k in range(12)
)
SCORING = "  kubernetes:\n    scheduler: {{scoringStrategy: {strategy}}}\n"
# one node, a 1-hour 8-GPU job every 30 minutes: twice what it can run
OVERLOAD = HEADER + "".join(f"job-{k},team-a,{k * 1800},3600,1,8,64,512Gi\n" for k in range(48))


def simulate(
    tmp_path: Path, jobs: str, models: str, model: str = "kubernetes", nodes: int = 4
) -> dict[str, Any]:
    (tmp_path / "jobs.csv").write_text(jobs)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.format(nodes=nodes, models=models or "  {}"))
    return summarize(run_input(model, load_input(scenario)))


def named(model: str, summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = diagnose(model, summary, DAY_S)
    for diagnosis in found:
        assert set(diagnosis) == {"id", "title", "figure", "unit", "detail", "fix", "source"}
        assert isinstance(diagnosis["figure"], float) and diagnosis["detail"].endswith(".")
    return {diagnosis["id"]: diagnosis for diagnosis in found}


def test_mpi_jobs_run_with_wait_for_pods_ready_and_the_assumption_is_recorded(tmp_path: Path) -> None:
    # waitForPodsReady not written: enabled with blockAdmission, as Kueue's page's example, so the
    # jobs are admitted one at a time and every one completes
    summary = simulate(tmp_path, MPI, OVER_QUOTA.format(wait=""))
    settings = summary["settings"]
    assert settings["waitForPodsReady"] is True
    assert len(settings["assumptions"]) == 1
    assumption = settings["assumptions"][0]
    assert assumption.startswith("waitForPodsReady enabled (timeout 30m, blockAdmission true)")
    assert "4 multi-pod jobs" in assumption and "waitForPodsReady.enable: false" in assumption
    assert summary["jobs"]["completed"] == 4
    assert "gang_deadlock" not in named("kubernetes", summary)


def test_enable_false_written_keeps_it_off_and_the_deadlock_is_named(tmp_path: Path) -> None:
    summary = simulate(tmp_path, MPI, OVER_QUOTA.format(wait="      waitForPodsReady: {enable: false}\n"))
    assert summary["settings"]["waitForPodsReady"] is False
    assert "assumptions" not in summary["settings"]
    assert summary["jobs"]["unfinished"] == 4
    deadlock = named("kubernetes", summary)["gang_deadlock"]
    # two jobs hold 2 nodes each (32 GPUs) idle from t = 0 to the 1-day horizon
    assert deadlock["figure"] == 32 * 24.0 and deadlock["unit"] == "GPU-hours"
    assert "2 jobs ended the run holding 32 GPUs" in deadlock["detail"]
    assert "waitForPodsReady" in deadlock["fix"] and "blockAdmission: true" in deadlock["fix"]


def test_quota_above_the_nodes_gpus_is_named_with_the_excess(tmp_path: Path) -> None:
    summary = simulate(tmp_path, MPI, OVER_QUOTA.format(wait=""))
    assert summary["kubernetes"]["kueue"]["flavors"] == {
        "gpu": {"nominal_gpus": 64.0, "placeable_gpus": 32.0}
    }
    quota = named("kubernetes", summary)["quota_exceeds_capacity"]
    assert quota["figure"] == 32.0 and quota["unit"] == "GPUs"
    assert quota["detail"].startswith("Flavor gpu has 64 GPUs of nominal quota for nodes of 32 GPUs")
    assert "nominalQuota" in quota["fix"] and "32 GPUs" in quota["fix"]


def test_fragmentation_under_least_allocated_is_named_and_bin_packing_clears_it(tmp_path: Path) -> None:
    spread = simulate(tmp_path, SPREAD, SCORING.format(strategy="LeastAllocated"))
    fragmentation = named("kubernetes", spread)["fragmentation"]
    assert fragmentation["figure"] == 12.0 and fragmentation["unit"] == "admissions"
    assert "MostAllocated" in fragmentation["fix"]
    assert (
        fragmentation["source"]
        == "https://kubernetes.io/docs/concepts/scheduling-eviction/resource-bin-packing/"
    )
    packed = simulate(tmp_path, SPREAD, SCORING.format(strategy="MostAllocated"))
    assert packed["kubernetes"]["kueue"]["quota_fit_but_fragmented"] == 0
    assert "fragmentation" not in named("kubernetes", packed)


@pytest.mark.parametrize("model", ["kubernetes", "slurm"])
def test_a_healthy_run_names_nothing(tmp_path: Path, model: str) -> None:
    summary = simulate(tmp_path, SPREAD, SCORING.format(strategy="MostAllocated"), model)
    assert summary["jobs"]["completed"] == len(SPREAD.splitlines()) - 1
    assert diagnose(model, summary, DAY_S) == []


def test_single_pod_jobs_need_no_wait_for_pods_ready(tmp_path: Path) -> None:
    summary = simulate(tmp_path, SPREAD, "")
    assert summary["settings"]["waitForPodsReady"] is False and "assumptions" not in summary["settings"]


@pytest.mark.parametrize("model", ["kubernetes", "slurm"])
def test_a_queue_that_grows_to_the_horizon_is_named(tmp_path: Path, model: str) -> None:
    summary = simulate(tmp_path, OVERLOAD, "", model, nodes=1)
    queue = named(model, summary)["queue_never_drains"]
    backlog = summary["backlog"]
    assert backlog["horizon_s"] == DAY_S
    queued = [sample["jobs"] for sample in backlog["queued_jobs"]]
    assert queued == sorted(queued) and queued[-1] >= 20  # about half the 48 jobs still queued
    assert queue["figure"] == backlog["queued_at_horizon"]["gpu_hours"] == 8.0 * queued[-1]
    assert "at the 1d horizon" in queue["detail"] and "the queue was growing" in queue["detail"]
    assert "Add nodes or lower the load" in queue["fix"]


def test_diagnose_reads_a_summary_without_the_model_figures() -> None:
    # a summary of a run made outside the model contract (no backlog, no Kubernetes figures): the
    # jobs still queued when the run ended
    summary = {"work_not_done": {"unfinished": {"jobs": 3, "gpu_hours": 30.0}}, "gpu_hours": 70.0}
    queue = named("slurm", summary)["queue_never_drains"]
    assert queue["figure"] == 30.0 and "30% of the work submitted) were still queued when" in queue["detail"]
    assert diagnose("slurm", {"gpu_hours": 70.0}, None) == []


# The hybrid: team-a's jobs to Kubernetes, team-b's to Slurm, on the nodes the split gives Slurm
HYBRID = """\
  hybrid:
    split: {{gpu: {slurm}}}
    routing:
      - {{team: team-a, to: kubernetes}}
      - {{team: team-b, to: slurm}}
"""


def test_the_hybrid_s_kubernetes_side_gets_the_default_for_the_jobs_routed_to_it(tmp_path: Path) -> None:
    jobs = HEADER + "mpi-0,team-a,0,600,2,4,32,256Gi\nsolo-0,team-b,0,600,1,8,64,512Gi\n"
    summary = simulate(tmp_path, jobs, HYBRID.format(slurm=2), "hybrid")
    assert summary["settings"]["kubernetes"]["waitForPodsReady"] is True
    assert summary["settings"]["assumptions"][-1].startswith("Kubernetes side: waitForPodsReady enabled")
    assert "1 multi-pod job " in summary["settings"]["assumptions"][-1]
    # the multi-pod job on Slurm's side does not count for Kubernetes
    routed_away = HEADER + "solo-0,team-a,0,600,1,8,64,512Gi\nmpi-0,team-b,0,600,2,8,64,512Gi\n"
    summary = simulate(tmp_path, routed_away, HYBRID.format(slurm=2), "hybrid")
    assert summary["settings"]["kubernetes"]["waitForPodsReady"] is False
    assert not any("waitForPodsReady" in a for a in summary["settings"].get("assumptions", []))


def test_a_starved_hybrid_side_is_named(tmp_path: Path) -> None:
    # team-a: a 1-hour 8-GPU job every 30 minutes on Kubernetes' 1 node; team-b: 4 jobs on Slurm's 3
    busy = "".join(f"a-{k},team-a,{k * 1800},3600,1,8,64,512Gi\n" for k in range(24))
    light = "".join(f"b-{k},team-b,{k * 3600},3600,1,8,64,512Gi\n" for k in range(4))
    summary = simulate(tmp_path, HEADER + busy + light, HYBRID.format(slurm=3), "hybrid")
    sides = summary["sides"]
    assert sides["kubernetes"]["jobs"] == 24 and sides["slurm"]["jobs"] == 4
    starved = named("hybrid", summary)["starved_side"]
    assert starved["title"] == "The Kubernetes side is starved"
    assert starved["unit"] == "s (p95 wait)" and starved["figure"] == sides["kubernetes"]["wait_p95_s"]
    assert "slurm left" in starved["detail"] and "idle" in starved["detail"]
    assert "models.hybrid.split" in starved["fix"] and "kubernetes_borrows" in starved["fix"]
