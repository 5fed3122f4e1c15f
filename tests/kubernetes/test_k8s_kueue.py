"""Kueue admission in the Kubernetes model, from the situations Kueue's documentation describes:
borrowing in a cohort, borrowingLimit, lendingLimit, reclaim, preemption within a ClusterQueue,
StrictFIFO vs BestEffortFIFO, fair-sharing weights, waitForPodsReady, quota that fits fragmented nodes.

Each test builds jobs and ClusterQueues, runs the model and checks who started when, and why."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpuplan.sim.kubernetes.model import UNBOUNDED_REQUEUES
from gpuplan.sim.kubernetes.quota import NO_LIMIT, QuotaNode, QuotaTree
from gpuplan.sim.outcome import COMPLETED, REJECTED, UNFINISHED, ModelRun

from builders import Pods, kubernetes_settings, node_pool, pods


def queue(name: str, nominal: float, cohort: str | None = "org", **extra: Any) -> dict[str, Any]:
    flavor: dict[str, Any] = {"name": "h100", "nominalQuota": nominal}
    for key in ("borrowingLimit", "lendingLimit"):
        if key in extra:
            flavor[key] = extra.pop(key)
    return {"name": name, "cohort": cohort, "teams": [name], "flavors": [flavor], **extra}


# LeastAllocated on GPUs: jobs spread over the nodes (the tests here have no CPU or memory requests)
SPREAD = {"scoringStrategy": "LeastAllocated", "resources": [{"name": "nvidia.com/gpu"}]}


# priority classes: "high" for the jobs of QoS high, "low" for the others
PRIORITIES = {
    "classes": [{"name": "high", "value": 100}, {"name": "low", "value": 0}],
    "assign": {"high": "high"},
    "default": "low",
}


def run(jobs: Pods, queues: list[dict[str, Any]], nodes: int = 2, **kueue: Any) -> ModelRun:
    """``jobs`` under Kueue with ClusterQueues ``queues`` (and Kueue settings ``kueue``), spread over
    ``nodes`` 8-GPU nodes."""
    settings = kubernetes_settings(
        kueue={"clusterQueues": queues, **kueue}, scheduler=SPREAD, priorities=PRIORITIES
    )
    return jobs.simulate([node_pool(nodes)], settings)


def kueue_figures(outcome: ModelRun) -> dict[str, Any]:
    figures: dict[str, Any] = outcome.extra["kubernetes"]["kueue"]
    return figures


def test_a_queue_borrows_the_idle_nominal_quota_of_its_cohort() -> None:
    # Two 8-GPU jobs of team a on 2 nodes; a's nominal quota is 8, b's 8 unused: a borrows it.
    outcome = run(pods().job(team="a").job(team="a"), [queue("a", 8), queue("b", 8)])
    assert outcome.start_s.tolist() == [0.0, 0.0]
    figures = kueue_figures(outcome)
    assert figures["borrowing_admissions"] == 1
    assert figures["cluster_queues"]["a"]["peak_borrowed_gpus"] == 8.0
    assert figures["cluster_queues"]["a"]["borrowed_gpu_hours"] == pytest.approx(8 * 1000 / 3600)


def test_without_a_cohort_there_is_nothing_to_borrow() -> None:
    outcome = run(
        pods().job(team="a").job(team="a"), [queue("a", 8, cohort=None), queue("b", 8, cohort=None)]
    )
    assert outcome.start_s.tolist() == [0.0, 1000.0]


def test_borrowing_limit_caps_what_a_queue_takes_from_the_cohort() -> None:
    # borrowingLimit 4: a may use 8 + 4 = 12 GPUs; the third 4-GPU job waits though b's quota is idle.
    jobs = pods().job(team="a", gpus=4).job(team="a", gpus=4).job(team="a", gpus=4).job(team="a", gpus=4)
    outcome = run(jobs, [queue("a", 8, borrowingLimit=4), queue("b", 8)])
    assert outcome.start_s.tolist() == [0.0, 0.0, 0.0, 1000.0]


def test_lending_limit_caps_what_a_queue_lends() -> None:
    # Kueue's lendingLimit example: b lends at most 4 of its 8 GPUs, so a gets 8 + 4 at most.
    jobs = pods().job(team="a", gpus=4).job(team="a", gpus=4).job(team="a", gpus=4).job(team="a", gpus=4)
    outcome = run(jobs, [queue("a", 8), queue("b", 8, lendingLimit=4)])
    assert outcome.start_s.tolist() == [0.0, 0.0, 0.0, 1000.0]
    # ... and what it keeps for itself is there when b needs it, with no preemption
    jobs.job(team="b", gpus=4, at=10.0)
    outcome = run(jobs, [queue("a", 8), queue("b", 8, lendingLimit=4)])
    assert outcome.start_s[4] == 10.0
    assert outcome.preemptions.sum() == 0


def test_quota_tree_available_follows_kueue_arithmetic() -> None:
    # cohort of a (nominal 8, borrowingLimit 2) and b (nominal 6, lendingLimit 4): the cohort pools
    # a's 8 and b's lendable 4 = 12; b keeps 2 for itself.
    a = QuotaNode("a", True, [8.0], [2.0], [NO_LIMIT], parent=0)
    b = QuotaNode("b", True, [6.0], [NO_LIMIT], [4.0], parent=0)
    tree = QuotaTree([QuotaNode("org", False, [0.0], [NO_LIMIT], [NO_LIMIT]), a, b], 1)
    assert tree.nodes[0].subtree == [12.0]
    assert tree.available(1, 0) == 10.0  # 8 + borrowingLimit 2
    assert tree.available(2, 0) == 14.0  # its own 2 + the cohort's 12
    tree.add_usage(1, 0, 10.0)
    assert tree.available(2, 0) == 4.0  # 2 kept + 2 left in the cohort
    assert tree.borrowing(1, 0) and tree.borrowed(1) == 2.0
    tree.remove_usage(1, 0, 10.0)
    assert tree.nodes[0].usage == [0.0] and tree.available(2, 0) == 14.0


@pytest.mark.parametrize(
    ("reclaim", "b_starts", "a_preemptions"),
    [("Never", 1000.0, 0), ("LowerPriority", 1000.0, 0), ("Any", 100.0, 1)],
    ids=["never: waits for the borrower", "lower priority: equal priority is not reclaimed", "any: reclaims"],
)
def test_reclaim_within_cohort(reclaim: str, b_starts: float, a_preemptions: int) -> None:
    jobs = pods().job(team="a").job(team="a", at=1.0).job(team="b", at=100.0)
    policy = {"preemption": {"reclaimWithinCohort": reclaim}}
    outcome = run(jobs, [queue("a", 8, **policy), queue("b", 8, **policy)])
    assert outcome.start_s[2] == b_starts
    assert outcome.preemptions[:2].sum() == a_preemptions
    if a_preemptions:
        # the newest borrowed job goes (job 2), loses its 99 s of work, and runs again later
        assert outcome.preemptions.tolist() == [0, 1, 0]
        assert outcome.lost_gpu_s[1] == pytest.approx(99.0 * 8)
        assert outcome.end_s[1] == 1000.0 + 1000.0
        assert kueue_figures(outcome)["reclaims"] == 1


def test_within_cluster_queue_a_higher_priority_job_preempts_a_lower_one() -> None:
    jobs = pods().job(team="a").job(team="a", at=50.0, qos="high")
    never = run(jobs, [queue("a", 8, cohort=None)], nodes=1)
    assert never.start_s.tolist() == [0.0, 1000.0]
    lower = run(
        jobs, [queue("a", 8, cohort=None, preemption={"withinClusterQueue": "LowerPriority"})], nodes=1
    )
    assert lower.start_s.tolist() == [0.0, 50.0]
    assert lower.preemptions.tolist() == [1, 0]
    assert kueue_figures(lower)["preemptions_within_cluster_queue"] == 1


def test_checkpoints_limit_the_work_lost_to_preemption() -> None:
    jobs = pods().job(team="a", run=1000.0, checkpoint=100.0).job(team="a", at=250.0, qos="high")
    settings = kubernetes_settings(
        kueue={
            "clusterQueues": [queue("a", 8, cohort=None, preemption={"withinClusterQueue": "LowerPriority"})]
        },
        priorities=PRIORITIES,
    )
    outcome = jobs.simulate([node_pool(1)], settings)
    assert outcome.lost_gpu_s[0] == pytest.approx(50.0 * 8)  # 250 s run, last checkpoint at 200 s
    assert outcome.end_s[0] == 1250.0 + 800.0  # resumes after the preemptor, with 800 s left


@pytest.mark.parametrize(
    ("strategy", "small_starts"),
    [("StrictFIFO", 1000.0), ("BestEffortFIFO", 10.0)],
    ids=["strict", "best-effort"],
)
def test_strict_fifo_blocks_behind_the_head_best_effort_does_not(strategy: str, small_starts: float) -> None:
    # Nominal 12 on 2 nodes: an 8-GPU job runs; the next 8-GPU job cannot be admitted (4 left);
    # a 4-GPU job behind it fits the remaining quota. Strict: it waits until the head is admitted
    # at 1000 s (then both fit); best effort: it goes first.
    jobs = pods().job(team="a").job(team="a", at=5.0).job(team="a", gpus=4, at=10.0)
    outcome = run(jobs, [queue("a", 12, cohort=None, queueingStrategy=strategy)])
    assert outcome.start_s.tolist() == [0.0, 1000.0, small_starts]


def test_fair_sharing_splits_the_borrowable_quota_by_weight() -> None:
    # lender owns 24 GPUs and runs nothing; a (weight 1) and b (weight 2) have no quota and queue
    # 1-GPU jobs. Admission alternates (one head per ClusterQueue per cycle: 12 each), then b's
    # pending jobs preempt a's while b's weighted share stays below a's: 8 for a, 16 for b.
    jobs = pods()
    for _ in range(30):
        jobs.job(team="a", gpus=1, run=10_000.0).job(team="b", gpus=1, run=10_000.0)
    reclaim = {"preemption": {"reclaimWithinCohort": "Any"}}
    queues = [
        queue("lender", 24),
        queue("a", 0, fairSharing={"weight": 1}, **reclaim),
        queue("b", 0, fairSharing={"weight": 2}, **reclaim),
    ]
    outcome = run(jobs, queues, nodes=3, fairSharing={"enable": True})
    teams = np.array(outcome.jobs.team.values())
    kept = (outcome.start_s == 0.0) & (outcome.preemptions == 0)
    assert (kept & (teams == "a")).sum() == 8
    assert (kept & (teams == "b")).sum() == 16
    # the 24 admitted first (12 each, alternating) lost 4 of a's, none of b's
    assert (outcome.preemptions[:24] > 0).sum() == 4
    assert outcome.preemptions[teams == "b"].sum() == 0
    equal = [queue("lender", 24), queue("a", 0, **reclaim), queue("b", 0, **reclaim)]
    even = run(jobs, equal, nodes=3, fairSharing={"enable": True})
    assert ((even.start_s == 0.0) & (even.preemptions == 0) & (teams == "a")).sum() == 12
    assert even.preemptions.sum() == 0


def test_quota_that_fits_fragmented_nodes_is_counted() -> None:
    # 16 GPUs of quota on two nodes, each already half used by a 4-GPU job: an 8-GPU job is
    # admitted (quota fits) but no node has 8 free GPUs (Kueue issue 4329).
    jobs = pods().job(team="a", gpus=4, run=500.0).job(team="a", gpus=4, run=500.0).job(team="a", at=1.0)
    outcome = run(jobs, [queue("a", 16, cohort=None)])
    assert outcome.start_s.tolist() == [0.0, 0.0, 500.0]
    assert outcome.extra["kubernetes"]["kueue"]["quota_fit_but_fragmented"] == 1


def test_wait_for_pods_ready_evicts_and_requeues_with_backoff() -> None:
    # Two 4-GPU jobs spread over two of three nodes until 500 s; a 2-pod job of 8-GPU pods is
    # admitted at 1 s, binds one pod to the free node and waits for the other: evicted at the
    # timeout (121 s), requeued after backoffBaseSeconds (181 s), evicted again (301 s), requeued
    # after twice that (421 s), and finally placed when the small jobs end at 500 s.
    jobs = (
        pods().job(team="a", gpus=4, run=500.0).job(team="a", gpus=4, run=500.0).job(team="a", pods=2, at=1.0)
    )
    wait = {"enable": True, "timeout": "2m", "requeuingStrategy": {"backoffBaseSeconds": 60}}
    outcome = run(jobs, [queue("a", 32, cohort=None)], nodes=3, waitForPodsReady=wait)
    figures = kueue_figures(outcome)
    assert figures["pods_ready_timeouts"] == 2
    assert figures["quota_fit_but_fragmented"] == 3
    assert outcome.start_s[2] == 500.0
    # one 8-GPU pod held idle while waiting: 120 s twice, then 79 s from 421 s to 500 s
    assert outcome.extra["kubernetes"]["gang"]["idle_held_gpu_hours"] == pytest.approx(
        8 * (120 + 120 + 79) / 3600
    )
    without = run(jobs, [queue("a", 32, cohort=None)], nodes=3)
    assert without.start_s[2] == 500.0
    assert without.extra["kubernetes"]["gang"]["idle_held_gpu_hours"] == pytest.approx(8 * 499 / 3600)


def test_wait_for_pods_ready_deactivates_after_the_backoff_limit() -> None:
    jobs = (
        pods()
        .job(team="a", gpus=4, run=5000.0)
        .job(team="a", gpus=4, run=5000.0)
        .job(team="a", pods=2, at=1.0)
    )
    wait = {"enable": True, "timeout": "2m", "requeuingStrategy": {"backoffLimitCount": 1}}
    outcome = run(jobs, [queue("a", 32, cohort=None)], nodes=3, waitForPodsReady=wait)
    assert kueue_figures(outcome)["deactivated"] == 1
    # Kueue deactivates the workload: it will never run (rejected), in Kueue's words
    assert outcome.state[2] == REJECTED and np.isnan(outcome.start_s[2])
    assert outcome.reason is not None and outcome.reason.values()[2] == "RequeuingLimitExceeded"


def test_a_job_that_never_gets_ready_is_given_up_without_a_backoff_limit() -> None:
    # A 2-pod job on 2 nodes, one held by a job that runs for months: one pod binds, the other
    # waits, the workload times out and is requeued (backoff at most 10 min). Kueue would requeue it
    # forever (no backoffLimitCount); the simulation gives it up after UNBOUNDED_REQUEUES: still
    # queued in reality, so unfinished, the last eviction's reason with it.
    jobs = pods().job(team="a", run=1e7).job(team="a", pods=2, at=1.0)
    wait = {"enable": True, "timeout": "2m", "requeuingStrategy": {"backoffMaxSeconds": 600}}
    outcome = run(jobs, [queue("a", 32, cohort=None)], nodes=2, waitForPodsReady=wait)
    figures = kueue_figures(outcome)
    assert figures["pods_ready_timeouts"] == UNBOUNDED_REQUEUES + 1
    assert figures["deactivated"] == 1
    assert outcome.state.tolist() == [COMPLETED, UNFINISHED]
    assert outcome.reason is not None and outcome.reason.values() == ["", "PodsReadyTimeout"]


def test_hierarchical_cohorts_lend_through_the_parent() -> None:
    # org holds two child cohorts; research's queue a borrows b's idle quota, which reaches it
    # through org; a's borrowingLimit still caps it.
    jobs = pods().job(team="a").job(team="a").job(team="a")
    queues = [queue("a", 8, cohort="research", borrowingLimit=8), queue("b", 8, cohort="product")]
    cohorts = [{"name": "org"}, {"name": "research", "parent": "org"}, {"name": "product", "parent": "org"}]
    outcome = run(jobs, queues, nodes=3, cohorts=cohorts)
    assert outcome.start_s.tolist() == [0.0, 0.0, 1000.0]
    apart = run(jobs, [queue("a", 8, cohort="research"), queue("b", 8, cohort="product")], nodes=3)
    assert apart.start_s.tolist() == [0.0, 1000.0, 2000.0]


def test_borrow_within_cohort_preempts_lower_priority_borrowers_up_to_the_threshold() -> None:
    # a (nominal 12) runs two 8-GPU low-priority jobs, borrowing 4 of b's nominal 4; b's
    # high-priority 8-GPU job needs more than b's nominal quota, so classic preemption may not
    # reclaim for it unless borrowWithinCohort allows preempting while borrowing.
    jobs = pods().job(team="a").job(team="a").job(team="b", at=10.0, qos="high")
    reclaim = {"reclaimWithinCohort": "LowerPriority"}
    plain = run(jobs, [queue("a", 12, preemption=reclaim), queue("b", 4, preemption=reclaim)])
    assert plain.preemptions.sum() == 0 and plain.start_s[2] == 1000.0
    borrow = {**reclaim, "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 0}}
    within = run(jobs, [queue("a", 12, preemption=borrow), queue("b", 4, preemption=borrow)])
    assert within.preemptions.tolist() == [0, 1, 0]  # the newest of a's
    assert within.start_s[2] == 10.0
    capped = {**reclaim, "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": -1}}
    above = run(jobs, [queue("a", 12, preemption=capped), queue("b", 4, preemption=capped)])
    assert above.preemptions.sum() == 0  # a's jobs are above the threshold


def test_default_flavor_has_no_node_labels() -> None:
    # quota in default-flavor: the pods of an admitted workload may go to any pool's nodes
    jobs = pods().job(team="a").job(team="a")
    pools = [node_pool(1), node_pool(1, name="a100")]
    flavor = {"name": "a", "teams": ["a"], "flavors": [{"name": "default-flavor", "nominalQuota": 16}]}
    outcome = jobs.simulate(pools, kubernetes_settings(kueue={"clusterQueues": [flavor]}))
    assert outcome.start_s.tolist() == [0.0, 0.0]
    assert sorted(outcome.pool_of_job.tolist()) == [0, 1]
    # per-pool flavors pin the workload to the first flavor with quota: the second waits
    pinned = {"name": "a", "teams": ["a"], "flavors": [{"name": "h100", "nominalQuota": 16}]}
    outcome = jobs.simulate(pools, kubernetes_settings(kueue={"clusterQueues": [pinned]}))
    assert outcome.start_s.tolist() == [0.0, 1000.0]
    assert outcome.extra["kubernetes"]["kueue"]["quota_fit_but_fragmented"] == 1


def test_a_workload_readmitted_to_default_flavor_loses_its_former_flavors_node_selector() -> None:
    # Kueue unsuspends a workload with the node selector of the flavor it assigns now (podset.go
    # FromAssignment), not of an earlier one: the low job, admitted to h100 and then preempted,
    # comes back in default-flavor and runs on a100 at once, not after the high job on h100
    jobs = pods().job(team="a", gpus=4).job(team="a", at=10.0, qos="high")
    pools = [node_pool(1), node_pool(1, name="a100")]
    flavors = [{"name": "h100", "nominalQuota": 8}, {"name": "default-flavor", "nominalQuota": 4}]
    cluster_queue = {
        "name": "a",
        "teams": ["a"],
        "flavors": flavors,
        "preemption": {"withinClusterQueue": "LowerPriority"},
    }
    settings = kubernetes_settings(kueue={"clusterQueues": [cluster_queue]}, priorities=PRIORITIES)
    outcome = jobs.simulate(pools, settings)
    assert outcome.preemptions.tolist() == [1, 0]
    assert outcome.start_s.tolist() == [0.0, 10.0]
    assert outcome.pool_of_job.tolist() == [1, 0]
    assert outcome.end_s[0] == 10.0 + 1000.0


# -- why a job waited: Kueue's QuotaReserved=False reasons, kept when it ran (sacct's Reason) ------------


def test_a_job_held_for_quota_keeps_the_reason_when_it_runs() -> None:
    # Nominal 8, no cohort: the second 8-GPU job waits for the first's quota (Kueue's WaitingForQuota,
    # as Slurm keeps QOSGrpGRES for a job a GrpTRES limit held); the first was admitted when tried.
    outcome = run(pods().job(team="a").job(team="a"), [queue("a", 8, cohort=None)])
    assert outcome.start_s.tolist() == [0.0, 1000.0]
    assert outcome.reason is not None and outcome.reason.values() == ["", "WaitingForQuota"]


@pytest.mark.parametrize("strategy", ["StrictFIFO", "BestEffortFIFO"])
def test_a_job_behind_a_strict_fifo_head_is_not_waiting_for_quota(strategy: str) -> None:
    # The StrictFIFO case above: the 4-GPU job fits the quota left but waits behind the head until
    # 1000 s. Kueue never tried it (PendingEvaluation, Slurm's Priority): no reason is kept. The head
    # waited for quota under both strategies.
    jobs = pods().job(team="a").job(team="a", at=5.0).job(team="a", gpus=4, at=10.0)
    outcome = run(jobs, [queue("a", 12, cohort=None, queueingStrategy=strategy)])
    assert outcome.reason is not None and outcome.reason.values() == ["", "WaitingForQuota", ""]


@pytest.mark.parametrize(
    ("strategy", "last"), [("StrictFIFO", "PendingEvaluation"), ("BestEffortFIFO", "WaitingForQuota")]
)
def test_what_holds_each_job_when_the_cluster_deadlocks(strategy: str, last: str) -> None:
    # Nominal 32 on 2 nodes, no waitForPodsReady: two 2x8 jobs created together are both admitted and
    # each binds one pod (the gang deadlock): kube-scheduler's Unschedulable. The quota is spent, so
    # the 8-GPU job after them waits for quota, and the 1-GPU job behind it is never tried when the
    # queue is StrictFIFO; best effort tries it and finds no quota either.
    gangs = pods().job(team="a", pods=2).job(team="a", pods=2)
    jobs = gangs.job(team="a", at=1.0).job(team="a", gpus=1, at=2.0)
    outcome = run(jobs, [queue("a", 32, cohort=None, queueingStrategy=strategy)])
    assert outcome.extra["kubernetes"]["gang"]["deadlocked"]
    assert (outcome.state == UNFINISHED).all()
    assert outcome.reason is not None
    assert outcome.reason.values() == ["Unschedulable", "Unschedulable", "WaitingForQuota", last]


@pytest.mark.parametrize("block", [True, False], ids=["blockAdmission", "no block"])
def test_block_admission_holds_a_job_that_fits_until_the_admitted_pods_are_ready(block: bool) -> None:
    # 2 nodes: a 4-GPU job on one until 500 s; a 2x6 job binds one pod and waits for room for the
    # other until 500 s. A 2-GPU job (quota and a node would take it) is held by blockAdmission
    # until the 2x6 job's pods are ready at 500 s: Kueue's WaitingForPodsReady. Without the block it
    # is admitted and runs at once.
    jobs = (
        pods()
        .job(team="a", gpus=4, run=500.0)
        .job(team="a", pods=2, gpus=6, at=1.0)
        .job(team="a", gpus=2, at=2.0)
    )
    wait = {"enable": True, "timeout": "1h", "blockAdmission": block}
    outcome = run(jobs, [queue("a", 64, cohort=None)], waitForPodsReady=wait)
    assert outcome.start_s.tolist() == [0.0, 500.0, 500.0 if block else 2.0]
    assert outcome.reason is not None
    assert outcome.reason.values() == ["", "", "WaitingForPodsReady" if block else ""]
