"""kube-scheduler in the Kubernetes model: NodeResourcesFit filter and LeastAllocated/MostAllocated/
RequestedToCapacityRatio scores, GPU sharing, node selectors, DefaultPreemption by priority, and the
gang deadlock of plain Jobs (none under Kueue)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.sim.kubernetes.cluster import Nodes, hostlist
from gpuplan.sim.kubernetes.scheduler import PodRequest, Scoring, node_scores, select_node
from gpuplan.sim.outcome import COMPLETED, REJECTED, UNFINISHED

from builders import kubernetes_settings, node_pool, pods

GPU_ONLY = {"resources": [{"name": "nvidia.com/gpu"}]}


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [("LeastAllocated", [0, 1, 2]), ("MostAllocated", [0, 0, 0])],
    ids=["least allocated spreads", "most allocated packs"],
)
def test_scoring_strategy(strategy: str, expected: list[int]) -> None:
    nodes = Nodes([node_pool(3)])
    scoring = Scoring(strategy, cpu_weight=0, memory_weight=0, gpu_weight=1)
    chosen = []
    for _ in range(3):
        node = select_node(nodes, PodRequest(2, 1000, 0, 0, -1), scoring)
        nodes.take(node, 2, 1000, 0, 0, True)
        chosen.append(node)
    assert chosen == expected


def test_node_resources_fit_filters_on_cpu_and_memory_too() -> None:
    nodes = Nodes([node_pool(2, cpu_milli=64_000, memory_mib=1024)])
    nodes.take(0, 1, 1000, 60_000, 0, True)
    scoring = Scoring()
    assert select_node(nodes, PodRequest(1, 1000, 8_000, 0, -1), scoring) == 1
    nodes.take(1, 1, 1000, 0, 1000, True)
    assert select_node(nodes, PodRequest(1, 1000, 8_000, 100, -1), scoring) == -1
    assert select_node(nodes, PodRequest(1, 1000, 4_000, 0, -1), scoring) == 0


def test_gpu_shares_fill_one_gpu_before_the_next() -> None:
    nodes = Nodes([node_pool(1, gpus=2)])
    first = nodes.take(0, 1, 500, 0, 0, True)
    second = nodes.take(0, 1, 400, 0, 0, True)
    assert first == second == 0b01  # both on GPU 0 (binpack within the node)
    assert nodes.whole_free[0] == 1 and nodes.best_free[0] == 1000
    third = nodes.take(0, 1, 300, 0, 0, True)
    assert third == 0b10  # 100 left on GPU 0 is too little
    nodes.give_back(0, first, 500, 0, 0, True)
    assert nodes.gpu_free[0].tolist() == [600, 700]


def test_fractional_pods_share_gpus_in_a_run() -> None:
    # four pods of 0.5 GPU on one 2-GPU node all run at once; a whole-GPU pod then waits
    jobs = pods(run=100.0)
    for _ in range(4):
        jobs.job(gpus=1, gpu_milli=500)
    jobs.job(gpus=1, at=1)
    outcome = jobs.simulate([node_pool(1, gpus=2)], kubernetes_settings(kueue={"enable": False}))
    assert outcome.start_s.tolist() == [0, 0, 0, 0, 100]
    assert outcome.job_gpus is not None and outcome.job_gpus.tolist() == [0.5] * 4 + [1.0]


def test_a_node_selector_keeps_pods_in_their_pool() -> None:
    jobs = pods(run=100.0).job(gpus=4, partition="a10").job(gpus=4, partition="a10")
    outcome = jobs.simulate(
        [node_pool(1, name="h100"), node_pool(1, gpus=4, name="a10")], kubernetes_settings()
    )
    assert outcome.start_s.tolist() == [0, 100]
    assert [outcome.pools[p].pool.name for p in outcome.pool_of_job] == ["a10", "a10"]


def test_pods_no_node_can_hold_are_rejected_without_kueue() -> None:
    # kube-scheduler would leave them Pending for ever: rejected at submit, with its reason
    jobs = pods(run=100.0).job(gpus=16).job(gpus=8)
    outcome = jobs.simulate([node_pool(2)], kubernetes_settings(kueue={"enable": False}))
    assert outcome.state.tolist() == [REJECTED, COMPLETED]


def test_plain_jobs_deadlock_when_gangs_split_the_nodes() -> None:
    # Two 2-pod jobs created together on 2 nodes: without Kueue their pods interleave, each job binds
    # one pod and waits for the other for ever, holding 8 GPUs idle each.
    jobs = pods(run=100.0).job(pods=2, gpus=8).job(pods=2, gpus=8)
    plain = jobs.simulate([node_pool(2)], kubernetes_settings(kueue={"enable": False}), horizon_s=3600.0)
    gang = plain.extra["kubernetes"]["gang"]
    assert plain.state.tolist() == [UNFINISHED, UNFINISHED]
    assert (
        gang["deadlocked"] and gang["jobs_partly_placed_at_end"] == 2 and gang["gpus_held_idle_at_end"] == 16
    )
    assert gang["idle_held_gpu_hours"] == pytest.approx(16.0)  # 16 GPUs over the 1-hour horizon
    # Kueue admits a workload's GPUs all together: the second waits for quota, nothing deadlocks
    queued = jobs.simulate([node_pool(2)], kubernetes_settings(), horizon_s=3600.0)
    assert queued.state.tolist() == [COMPLETED, COMPLETED]
    assert queued.start_s.tolist() == [0, 100]
    assert not queued.extra["kubernetes"]["gang"]["deadlocked"]
    assert queued.extra["kubernetes"]["gang"]["idle_held_gpu_hours"] == 0


def test_a_partly_placed_gang_holds_gpus_idle_until_it_starts() -> None:
    # A 1-node job runs until 500 s; a 2-pod job binds one pod at 10 s and starts at 500 s.
    jobs = pods().job(pods=1, gpus=8, run=500).job(pods=2, gpus=8, at=10, run=100)
    outcome = jobs.simulate([node_pool(2)], kubernetes_settings(kueue={"enable": False}))
    assert outcome.start_s.tolist() == [0, 500]
    assert outcome.extra["kubernetes"]["gang"]["idle_held_gpu_hours"] == pytest.approx(8 * 490 / 3600)


def test_a_higher_priority_pod_preempts_a_lower_job_which_restarts_from_its_checkpoint() -> None:
    jobs = (
        pods(run=100.0)
        .job(gpus=8, run=1000, qos="batch", checkpoint=120.0)
        .job(gpus=8, at=300, run=100, qos="urgent")
    )
    values = {
        "kueue": {"enable": False},
        "priorities": {
            "classes": [{"name": "prod", "value": 1000}, {"name": "low", "value": 0}],
            "assign": {"urgent": "prod"},
            "default": "low",
        },
    }
    outcome = jobs.simulate([node_pool(1)], kubernetes_settings(**values))
    assert outcome.start_s.tolist() == [0, 300]
    assert outcome.preemptions.tolist() == [1, 0]
    assert outcome.lost_gpu_s[0] == pytest.approx(60 * 8)  # ran 300 s, checkpointed at 240 s
    assert outcome.end_s[0] == 400 + 760  # resumes when the urgent job ends, 760 s left
    assert outcome.extra["kubernetes"]["preemption"]["by_kube_scheduler"] == 1


def test_node_lists_name_each_jobs_nodes() -> None:
    jobs = pods(run=100.0).job(pods=2, gpus=8).job(pods=1, gpus=8, at=1)
    outcome = jobs.simulate([node_pool(3)], kubernetes_settings(scheduler=GPU_ONLY))
    assert outcome.node_lists().to_pylist() == ["h100-[0-1]", "h100-2"]
    assert hostlist(["a-1", "a-2", "a-3", "b-7", "openb-node-0001"]) == "a-[1-3],b-7,openb-node-0001"


def test_same_inputs_give_identical_runs() -> None:
    rng = np.random.default_rng(3)
    count = 300
    submits = np.sort(rng.integers(0, 5000, count)).astype(float)
    runs = rng.integers(10, 2000, count).astype(float)
    counts = rng.integers(1, 3, count)
    gpus = rng.choice([1, 2, 4, 8], count)
    teams = rng.choice(["a", "b"], count).tolist()
    jobs = pods()
    for at, run, job_pods, job_gpus, team in zip(submits, runs, counts, gpus, teams, strict=True):
        jobs.job(at=at, run=run, pods=job_pods, gpus=job_gpus, team=team)
    first = jobs.simulate([node_pool(4)], kubernetes_settings(kueue={"enable": False}))
    second = jobs.simulate([node_pool(4)], kubernetes_settings(kueue={"enable": False}))
    np.testing.assert_array_equal(first.start_s, second.start_s)
    np.testing.assert_array_equal(first.end_s, second.end_s)
    assert first.node_lists().equals(second.node_lists())
    assert first.extra == second.extra


def bin_packing_nodes() -> Nodes:
    # The worked example of Kubernetes' "Resource Bin Packing" page (its extended resource
    # intel.com/foo is nvidia.com/gpu here): node 1 has 4 GPUs, 8 CPUs, 1 GiB, and uses 1 GPU,
    # 1 CPU, 256 MiB; node 2 has 8 GPUs, 8 CPUs, 1 GiB, and uses 2 GPUs, 6 CPUs, 512 MiB.
    nodes = Nodes(
        [
            node_pool(1, gpus=4, name="one", cpu_milli=8_000, memory_mib=1_024),
            node_pool(1, gpus=8, name="two", cpu_milli=8_000, memory_mib=1_024),
        ]
    )
    nodes.take(0, 1, 1000, 1_000, 256, True)
    nodes.take(1, 2, 1000, 6_000, 512, True)
    return nodes


# the page's request (2 GPUs, 2 CPUs, 256 MiB) and weights (GPU 5, memory 1, CPU 3)
BIN_PACKING_POD = PodRequest(gpus=2, milli=1000, cpu=2_000, mem=256, pool=-1)


@pytest.mark.parametrize(
    ("shape", "scores"),
    [
        # the page's shape, {0, 0} to {100, 10}: node 1 scores (75x5 + 50x1 + 37x3) / 9 = 59.6 -> 60,
        # node 2 (50x5 + 75x1 + 100x3) / 9 = 69.4 -> 69 (the page, on its older 0-10 scale: 5 and 7)
        (((0, 0), (100, 10)), [60, 69]),
        # the reverse line, {0, 10} to {100, 0}: node 2's CPU is full and scores 0, so it leaves the
        # mean (only resources scoring above 0 count): (50x5 + 25x1) / 6 = 45.8 -> 46, against node
        # 1's (25x5 + 50x1 + 63x3) / 9 = 40.4 -> 40 (63: Go's division truncates -37 towards zero)
        (((0, 10), (100, 0)), [40, 46]),
    ],
    ids=["bin packing", "spreading"],
)
def test_requested_to_capacity_ratio_scores_the_documented_example(
    shape: tuple[tuple[int, int], ...], scores: list[int]
) -> None:
    scoring = Scoring("RequestedToCapacityRatio", cpu_weight=3, memory_weight=1, gpu_weight=5, shape=shape)
    nodes = bin_packing_nodes()
    assert node_scores(nodes, BIN_PACKING_POD, scoring, [0, 1]) == scores
    assert select_node(nodes, BIN_PACKING_POD, scoring) == 1


def test_requested_to_capacity_ratio_needs_an_increasing_shape() -> None:
    from pydantic import ValidationError

    ratio = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
    settings = kubernetes_settings(
        scheduler={"scoringStrategy": "RequestedToCapacityRatio", "requestedToCapacityRatio": ratio}
    )
    outcome = pods().job(gpus=4).job(gpus=4).simulate([node_pool(2)], settings)  # the setting reaches the run
    assert outcome.state.tolist() == [COMPLETED, COMPLETED]
    assert outcome.settings["scoringStrategy"] == "RequestedToCapacityRatio"
    for scheduler, message in (
        ({"scoringStrategy": "RequestedToCapacityRatio"}, "only with it"),
        ({"requestedToCapacityRatio": ratio}, "only with it"),
        (
            {
                "scoringStrategy": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                },
            },
            "sorted in increasing order",
        ),
    ):
        with pytest.raises(ValidationError, match=message):
            kubernetes_settings(scheduler=scheduler)
