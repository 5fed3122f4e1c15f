"""Kueue's classical preemption, restated from its own unit tests (pkg/scheduler/preemption/
preemption_test.go, v0.19) and scheduler (pkg/scheduler/scheduler.go): which admitted workloads a
workload preempts, and with what reason, when its ClusterQueue is below or at its nominal quota in a
full cohort; and the quota a StrictFIFO head keeps while it waits to reclaim.

Kueue's cases ask for CPUs; here the one covered resource is nvidia.com/gpu, one GPU for each CPU,
on one node large enough for the whole cohort."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.results.files import events_table
from gpuplan.sim.kubernetes import simulate_kubernetes
from gpuplan.sim.outcome import ModelRun
from gpuplan.workload.jobtable import Labels

from builders import Pods, kubernetes_settings, node_pool, pods

# Kueue's test workloads carry priorities -2, -1 and 0
PRIORITIES = {
    "classes": [{"name": "m2", "value": -2}, {"name": "m1", "value": -1}, {"name": "zero", "value": 0}],
    "assign": {"m2": "m2", "m1": "m1"},
    "default": "zero",
}
SPREAD = {"scoringStrategy": "LeastAllocated", "resources": [{"name": "nvidia.com/gpu"}]}


def cluster_queue(name: str, nominal: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cohort": "cohort-three",
        "teams": [name],
        "flavors": [{"name": "h100", "nominalQuota": nominal}],
        **extra,
    }


# preemption_test.go defaultClusterQueues: a, b and c of cohort-three, 2 each; a preempts
# LowerPriority within itself and Any in the cohort, b and c never
COHORT_THREE = [
    cluster_queue("a", 2, preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}),
    cluster_queue("b", 2),
    cluster_queue("c", 2),
]


def run(jobs: Pods, queues: list[dict[str, Any]], gpus: int = 8, **kueue: Any) -> ModelRun:
    settings = kubernetes_settings(
        kueue={"clusterQueues": queues, **kueue}, scheduler=SPREAD, priorities=PRIORITIES
    )
    return jobs.simulate([node_pool(1, gpus=gpus)], settings)


def reasons(outcome: ModelRun) -> dict[str, int]:
    by_reason: dict[str, int] = outcome.extra["kubernetes"]["kueue"]["preemptions_by_reason"]
    return by_reason


def test_below_nominal_it_reclaims_from_the_cohort_and_preempts_its_own() -> None:
    # "allow preemption from other cluster queues if target cq is not exhausted for the requested
    # resource": a uses 1 of its 2 (a1, priority -1), b 5 of its 2 (b1-b4 at 0, b5 at -1), the
    # cohort's 6 are all used. A 2-GPU workload of a at priority 0 preempts a1 (InClusterQueue)
    # and b5 (InCohortReclamation): two at once, so that a stays within its nominal quota.
    jobs = pods(gpus=1).job(team="a", qos="m1")
    for qos in ("zero", "zero", "zero", "zero", "m1"):
        jobs.job(team="b", qos=qos)
    jobs.job(team="a", gpus=2, at=10.0)
    outcome = run(jobs, COHORT_THREE)
    assert outcome.preemptions.tolist() == [1, 0, 0, 0, 0, 1, 0]
    assert outcome.start_s[6] == 10.0
    assert reasons(outcome) == {"InClusterQueue": 1, "InCohortReclamation": 1}


def test_at_nominal_it_preempts_only_its_own_while_borrowing() -> None:
    # "preemptions from cq when target queue is exhausted for the single requested resource": a
    # uses 3 of its 2 (a1, a2 at -2, a3 at -1), b 3 (at 0). a is not below its nominal quota, so
    # it may not reclaim from b: its two lowest-priority workloads go.
    jobs = pods(gpus=1).job(team="a", qos="m2").job(team="a", qos="m2").job(team="a", qos="m1")
    for _ in range(3):
        jobs.job(team="b")
    jobs.job(team="a", gpus=2, at=10.0)
    outcome = run(jobs, COHORT_THREE)
    assert outcome.preemptions.tolist() == [1, 1, 0, 0, 0, 0, 0]
    assert outcome.start_s[6] == 10.0
    assert reasons(outcome) == {"InClusterQueue": 2}


def test_a_borrower_is_reclaimed_before_an_own_workload_of_lower_priority() -> None:
    # CandidatesOrdering: workloads of other ClusterQueues come before the preemptor's own, whatever
    # their priority. a uses 1 of its 2 (a1 at -2); b borrows 3 (b1-b5 at -1). A 1-GPU workload of
    # a fits its nominal quota (a hierarchical advantage over b's borrowed quota): it reclaims b's
    # newest workload and leaves a1, though a1 has the lowest priority.
    jobs = pods(gpus=1).job(team="a", qos="m2")
    for _ in range(5):
        jobs.job(team="b", qos="m1")
    jobs.job(team="a", at=10.0)
    outcome = run(jobs, COHORT_THREE)
    assert outcome.preemptions.tolist() == [0, 0, 0, 0, 0, 1, 0]
    assert reasons(outcome) == {"InCohortReclamation": 1}


def test_a_strict_fifo_head_waiting_for_its_lent_quota_keeps_it_from_new_borrowers() -> None:
    # scheduler.go reserveCapacityForUnreclaimablePreempt: a head that must preempt but finds no
    # candidate (reclaimWithinCohort Never) keeps up to its nominal quota for the rest of the
    # cycle. b runs b1 (8) within its quota and b2 (4) on quota a lends. a's head a1 (8) waits;
    # b3 (4) comes at 20. A StrictFIFO a keeps its head, so the reservation holds in every cycle:
    # b3 may not borrow, and a1 starts when b2 ends at 500. A BestEffortFIFO a moves its head to
    # the inadmissible list (cluster_queue.go RequeueIfNotPresent), and b3 borrows at once.
    jobs = pods().job(team="b").job(team="b", gpus=4, run=500.0)
    jobs.job(team="a", at=10.0).job(team="b", gpus=4, at=20.0)
    for strategy, starts in (
        ("StrictFIFO", [0.0, 0.0, 500.0, 1000.0]),
        ("BestEffortFIFO", [0.0, 0.0, 1000.0, 20.0]),
    ):
        queues = [
            {**cluster_queue("a", 8), "queueingStrategy": strategy},
            cluster_queue("b", 8),
        ]
        settings = kubernetes_settings(
            kueue={"clusterQueues": queues}, scheduler=SPREAD, priorities=PRIORITIES
        )
        outcome = jobs.simulate([node_pool(2)], settings)
        assert outcome.start_s.tolist() == starts, strategy
        assert outcome.preemptions.sum() == 0


def test_the_event_log_tells_each_workloads_story_in_kueues_words() -> None:
    # the first case again: a1 and b5 are evicted as Preempted, with the Preempted condition's
    # reason as detail, requeued at once, and admitted again when quota frees
    jobs = pods(gpus=1).job(team="a", qos="m1")
    for qos in ("zero", "zero", "zero", "zero", "m1"):
        jobs.job(team="b", qos=qos)
    jobs.job(team="a", gpus=2, at=10.0)
    events = events_table(run(jobs, COHORT_THREE)).to_pylist()
    story = [
        (e["time_s"], e["event"], e["reason"], e["detail"], e["queue"], e["flavor"])
        for e in events
        if e["job_id"] == 6
    ]
    assert story == [
        (0.0, "Created", None, None, "b", None),
        (0.0, "QuotaReserved", None, None, "b", "h100"),
        (0.0, "Admitted", None, None, "b", "h100"),
        (0.0, "PodsReady", None, None, "b", None),
        (10.0, "Evicted", "Preempted", "InCohortReclamation", "b", None),
        (10.0, "Requeued", None, None, "b", None),
        (1000.0, "QuotaReserved", None, None, "b", "h100"),
        (1000.0, "Admitted", None, None, "b", "h100"),
        (1000.0, "PodsReady", None, None, "b", None),
        (2000.0, "Finished", None, None, "b", None),
    ]
    assert [e["event"] for e in events if e["job_id"] == 7] == [
        "Created", "QuotaReserved", "Admitted", "PodsReady", "Finished"
    ]  # fmt: skip
    times = [e["time_s"] for e in events]
    assert times == sorted(times)


def test_a_cycle_of_preemptions_at_one_instant_ends() -> None:
    """A case hypothesis found (tests/kubernetes/data/kueue_preemption_cycle.json): at one instant
    a ClusterQueue reclaims from a borrowing one, whose high-priority head then preempts it back
    while borrowing, and so on. Kueue requeues a victim only once its pods are gone, so such a
    cycle takes time there; in the model a workload evicted twice at one instant preempts again
    only at a later one, and the run ends."""
    data = json.loads((Path(__file__).parent / "data" / "kueue_preemption_cycle.json").read_text())
    jobs, listed = pods(), data["jobs"]
    for k in range(len(listed["submit_s"])):
        jobs.job(
            at=listed["submit_s"][k],
            run=listed["duration_s"][k],
            pods=listed["pods"][k],
            gpus=listed["gpus"][k],
            team=listed["team"][k],
            qos=listed["qos"][k],
            gpu_milli=listed["gpu_milli"][k],
        )
    companions = listed["companion_pods"]
    labels = tuple(dict.fromkeys(companions))
    table = replace(
        jobs.table(), companion_pods=Labels(np.array([labels.index(c) for c in companions], np.int32), labels)
    )
    pool = node_pool(data["nodes"], name="gpu", cpu_milli=64_000, memory_mib=512_000)
    run = simulate_kubernetes(table, [pool], kubernetes_settings(**data["kubernetes"]), [])
    assert run.extra["kubernetes"]["preemption"]["by_kueue"] < 1000  # unbounded before
    assert run.end_s[np.isfinite(run.end_s)].max() < 20_000
