"""Jobs that can never run in the Kubernetes model are rejected at submit with the scheduler's own
reason (kube-scheduler's without Kueue; with Kueue, which admits on quota alone, only Kueue's, and an
admitted job whose pods no node holds stays Unschedulable); jobs that merely wait (for capacity
that frees up, or that the autoscaler adds) run. And the nodes' CPU and memory: taken from the
node list or the pool's shape, else unknown and not checked (a pod asking CPU on a node of unknown
CPU runs), with kube-scheduler's scoring leaving unknown resources out.

The Kueue cases follow Kueue's documented quota semantics (ClusterQueue nominalQuota, cohort
borrowing, borrowingLimit, lendingLimit; "maximum capacity" is PotentialAvailable in
pkg/scheduler/flavorassigner/flavorassigner.go fitsResourceQuota)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuplan.inputs import load_input, scenario_pools
from gpuplan.results.files import timeline_table
from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.scenario.load import load_scenario
from gpuplan.sim.kubernetes.cluster import UNKNOWN, Nodes
from gpuplan.sim.kubernetes.scheduler import PodRequest, Scoring, select_node
from gpuplan.sim.kubernetes.settings import node_pool_specs
from gpuplan.sim.models import run_input
from gpuplan.sim.outcome import COMPLETED, REJECTED, UNFINISHED, ModelRun

from builders import DATA, kubernetes_settings, node_pool, pods


def reasons(outcome: ModelRun) -> list[str]:
    assert outcome.reason is not None
    return outcome.reason.values()


# -- more pods than the nodes can ever hold ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kueue", "why"),
    [(True, "ExceedsMaxQuota"), (False, "Insufficient nvidia.com/gpu")],
    ids=["kueue: the default ClusterQueue holds the pool's 8 GPUs", "plain Jobs"],
)
def test_a_2x8_job_on_a_one_node_pool_is_rejected_at_submit(kueue: bool, why: str) -> None:
    outcome = (
        pods(team="a")
        .job(pods=2, gpus=8)
        .job(pods=1, gpus=8)
        .simulate([node_pool(1)], kubernetes_settings(kueue={"enable": kueue}))
    )
    assert outcome.state.tolist() == [REJECTED, COMPLETED]
    assert reasons(outcome) == [why, ""]
    assert np.isnan(outcome.start_s[0])


@pytest.mark.parametrize("kueue", [True, False], ids=["kueue", "plain Jobs"])
def test_the_same_job_runs_on_a_pool_the_autoscaler_may_grow_to_two_nodes(kueue: bool) -> None:
    outcome = (
        pods(team="a")
        .job(pods=2, gpus=8)
        .simulate([node_pool(1, max_nodes=2)], kubernetes_settings(kueue={"enable": kueue}))
    )
    assert outcome.state.tolist() == [COMPLETED]
    assert outcome.start_s[0] >= 600.0  # after the second node's provisioning delay
    assert reasons(outcome) == [""]


def test_pods_of_one_job_may_share_a_node() -> None:
    # 2 pods of 4 GPUs fit one 8-GPU node together: more pods than nodes is no reason to reject
    outcome = pods(team="a").job(pods=2, gpus=4).simulate([node_pool(1)], kubernetes_settings())
    assert outcome.state.tolist() == [COMPLETED]


def test_a_job_that_waits_for_capacity_is_not_rejected() -> None:
    # the second 2x8 job waits for the first to end on the same 2 nodes: slow, not impossible
    outcome = (
        pods(team="a").job(pods=2, gpus=8).job(pods=2, gpus=8).simulate([node_pool(2)], kubernetes_settings())
    )
    assert outcome.state.tolist() == [COMPLETED, COMPLETED]
    assert outcome.start_s.tolist() == [0.0, 1000.0]


def test_without_kueue_pods_spread_over_pools_but_a_kueue_flavor_holds_the_whole_pod_set() -> None:
    # Two 1-node pools: a 2x8 job without a node selector spreads over both (kube-scheduler places
    # each pod anywhere it fits); under Kueue its pod set gets one flavor, and neither flavor's 8
    # GPUs of quota hold its 16.
    pools = [node_pool(1, name="h100"), node_pool(1, name="a100")]
    plain = pods(team="a").job(pods=2, gpus=8).simulate(pools, kubernetes_settings(kueue={"enable": False}))
    assert plain.state.tolist() == [COMPLETED]
    queues = [
        {
            "name": "a",
            "teams": ["a"],
            "flavors": [{"name": "h100", "nominalQuota": 8}, {"name": "a100", "nominalQuota": 8}],
        }
    ]
    kueue = (
        pods(team="a")
        .job(pods=2, gpus=8)
        .simulate(pools, kubernetes_settings(kueue={"clusterQueues": queues}))
    )
    assert kueue.state.tolist() == [REJECTED]
    assert reasons(kueue) == ["ExceedsMaxQuota"]


PLAIN = kubernetes_settings(kueue={"enable": False})


def test_a_pod_no_node_can_hold_is_rejected_with_the_resource_that_is_short() -> None:
    outcome = pods(team="a").job(pods=1, gpus=16).simulate([node_pool(2)], PLAIN)
    assert (outcome.state.tolist(), reasons(outcome)) == ([REJECTED], ["Insufficient nvidia.com/gpu"])
    cpu_pods = (
        pods(team="a").job(pods=1, gpus=8, cpu_milli=32_000).simulate([node_pool(2, cpu_milli=16_000)], PLAIN)
    )
    assert (cpu_pods.state.tolist(), reasons(cpu_pods)) == ([REJECTED], ["Insufficient cpu"])


def test_kueue_admits_on_quota_a_pod_no_node_can_hold() -> None:
    # Kueue's flavor assigner checks quota, not nodes: a 16-GPU pod on 8-GPU nodes is admitted
    # into the default ClusterQueue's 16 GPUs and stays Pending (Unschedulable), holding the quota
    # an 8-GPU job then waits for (WaitingForQuota).
    jobs = pods(team="a", run=100.0).job(gpus=16).job(gpus=8)
    held = jobs.simulate([node_pool(2)], kubernetes_settings())
    assert held.state.tolist() == [UNFINISHED, UNFINISHED]
    assert reasons(held) == ["Unschedulable", "WaitingForQuota"]
    assert held.extra["kubernetes"]["kueue"]["quota_fit_but_fragmented"] == 1
    # waitForPodsReady (Kueue's setup_wait_for_pods_ready page): evicted at the 300-s timeout and
    # requeued after backoffBaseSeconds (60 s); the 8-GPU job takes the freed quota at 300 and
    # ends at 400, the 16-GPU job is admitted again and, past backoffLimitCount (1), deactivated.
    wait = {
        "enable": True,
        "timeout": "5m",
        "requeuingStrategy": {"backoffLimitCount": 1, "backoffBaseSeconds": 60},
    }
    timed = jobs.simulate([node_pool(2)], kubernetes_settings(kueue={"waitForPodsReady": wait}))
    assert timed.state.tolist() == [REJECTED, COMPLETED]
    assert timed.start_s[1] == 300.0
    assert reasons(timed) == ["RequeuingLimitExceeded", "WaitingForQuota"]
    assert timed.extra["kubernetes"]["kueue"]["pods_ready_timeouts"] == 2


# -- Kueue: a request above the most the ClusterQueue could ever get ----------------------------------------


def kueue_run(queues: list[dict[str, Any]], nodes: int = 2) -> ModelRun:
    # a 16-GPU job (2 pods of 8) of team a, on nodes enough to hold it
    return (
        pods(team="a")
        .job(pods=2, gpus=8)
        .simulate([node_pool(nodes)], kubernetes_settings(kueue={"clusterQueues": queues}))
    )


def cq(name: str, nominal: int, cohort: str | None = None, **limits: int) -> dict[str, Any]:
    return {
        "name": name,
        "cohort": cohort,
        "teams": [name],
        "flavors": [{"name": "h100", "nominalQuota": nominal, **limits}],
    }


def test_a_request_above_nominal_quota_without_a_cohort_exceeds_max_quota() -> None:
    outcome = kueue_run([cq("a", 8)])
    assert (outcome.state.tolist(), reasons(outcome)) == ([REJECTED], ["ExceedsMaxQuota"])


def test_the_same_request_is_admitted_when_a_cohort_can_lend_the_rest() -> None:
    outcome = kueue_run([cq("a", 8, "org"), cq("b", 8, "org")])
    assert (outcome.state.tolist(), reasons(outcome)) == ([COMPLETED], [""])
    assert outcome.extra["kubernetes"]["kueue"]["borrowing_admissions"] == 1


@pytest.mark.parametrize(
    "queues",
    [
        [cq("a", 8, "org", borrowingLimit=4), cq("b", 8, "org")],  # a may borrow 4 at most: 12 < 16
        [cq("a", 8, "org"), cq("b", 8, "org", lendingLimit=4)],  # b lends 4 at most: 12 < 16
    ],
    ids=["borrowingLimit", "lendingLimit"],
)
def test_borrowing_and_lending_limits_cap_the_maximum_capacity(queues: list[dict[str, Any]]) -> None:
    outcome = kueue_run(queues, nodes=3)
    assert (outcome.state.tolist(), reasons(outcome)) == ([REJECTED], ["ExceedsMaxQuota"])


def test_a_request_within_the_maximum_that_must_wait_is_not_rejected() -> None:
    # a's 16-GPU job borrows b's quota once b's own job has ended: slow, not impossible
    jobs = pods().job(team="b", pods=1, gpus=8, at=0.0).job(team="a", pods=2, gpus=8, at=1.0)
    queues = [cq("a", 8, "org"), cq("b", 8, "org")]
    outcome = jobs.simulate([node_pool(2)], kubernetes_settings(kueue={"clusterQueues": queues}))
    assert outcome.state.tolist() == [COMPLETED, COMPLETED]
    assert outcome.start_s.tolist() == [0.0, 1000.0]


# -- nodes' CPU and memory: from the node list or shape, else unknown and not checked ------------------------


def test_pods_asking_cpu_and_memory_run_on_nodes_of_unknown_capacity() -> None:
    # The case: a 1x1 pod asking 12 CPUs and 16 GiB on a 1x8 node without a node list.
    outcome = (
        pods(team="a")
        .job(pods=1, gpus=1, cpu_milli=12_000, memory_mib=16_384)
        .simulate([node_pool(1)], kubernetes_settings())
    )
    assert outcome.state.tolist() == [COMPLETED]
    assert outcome.settings["node_resources"] == {
        "h100": "CPU and memory unknown: pods' requests not checked"
    }
    assert outcome.extra["kubernetes"]["requests_not_checked_jobs"] == 1
    # one known resource is checked, the other not
    mixed = (
        pods(team="a")
        .job(pods=1, gpus=1, cpu_milli=12_000, memory_mib=16_384)
        .simulate([node_pool(1, memory_mib=8_192)], PLAIN)
    )
    assert (mixed.state.tolist(), reasons(mixed)) == ([REJECTED], ["Insufficient memory"])
    assert mixed.settings["node_resources"] == {
        "h100": "8 GiB per node; CPU unknown: pods' requests not checked"
    }


@pytest.mark.parametrize(
    "trace", ["k8s_alibaba_pod_list_sample.csv", "k8s_kubectl_pods.json"], ids=["alibaba", "kubectl"]
)
def test_a_pod_trace_without_a_node_list_runs(tmp_path: Path, trace: str) -> None:
    # a copy without the node list that lies beside the bundled pod list
    path = tmp_path / trace.replace("_pod_list_", "_pods_")
    path.write_bytes((DATA / trace).read_bytes())
    loaded = load_input(path)
    assert loaded.node_list is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = run_input("kubernetes", loaded)
    assert len(outcome.jobs) > 0 and (outcome.state == COMPLETED).all()
    assert set(outcome.settings["node_resources"].values()) == {
        "CPU and memory unknown: pods' requests not checked"
    }
    assert outcome.extra["kubernetes"]["requests_not_checked_jobs"] == len(outcome.jobs)


def test_the_node_list_gives_the_nodes_cpu_and_memory() -> None:
    outcome = run_input("kubernetes", load_input(DATA / "k8s_alibaba_pod_list_sample.csv"))
    assert "unknown" not in " ".join(outcome.settings["node_resources"].values())
    assert outcome.extra["kubernetes"]["requests_not_checked_jobs"] == 0


SCENARIO = """
name: resources
seed: 1
horizon: 1d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 1}
    - {name: custom, gpus_per_node: 4, nodes: 1}
    - {name: half, gpus_per_node: 4, cpus_per_node: 32, nodes: 1}
teams:
  - {name: a, share: 1}
workloads:
  - {name: w, kind: batch, team: a, arrival: {rate: 1/h}, size: "1x1", duration: {median: 1h, sigma: 0.1}}
"""


def test_scenario_pools_take_cpu_and_memory_from_the_shape_or_leave_them_unknown(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    specs = {p.name: p for p in node_pool_specs(scenario_pools(load_scenario(path)), KubernetesSettings())}
    assert (specs["h100"].cpu_milli, specs["h100"].memory_mib) == (112_000, 2048 * 1024)  # the shape's
    assert (specs["custom"].cpu_milli, specs["custom"].memory_mib) == (UNKNOWN, UNKNOWN)
    assert (specs["half"].cpu_milli, specs["half"].memory_mib) == (32_000, UNKNOWN)


def test_scoring_leaves_an_unknown_resource_out_of_the_mean() -> None:
    # LeastAllocated on CPU and memory (the default weights). Node 0 (known CPU, half used) scores
    # the mean of CPU 50 and memory 100 = 75; node 1 (CPU unknown) the mean of memory alone = 100,
    # so node 1 wins, as kube-scheduler's leastResourceScorer skips an allocatable of 0.
    nodes = Nodes(
        [
            node_pool(1, name="known", cpu_milli=64_000, memory_mib=1_000_000),
            node_pool(1, name="unknown", cpu_milli=UNKNOWN, memory_mib=1_000_000),
        ]
    )
    nodes.take(0, 1, 1000, 32_000, 0, True)
    pod = PodRequest(gpus=1, milli=1000, cpu=1, mem=1, pool=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert select_node(nodes, pod, Scoring()) == 1
        assert select_node(nodes, pod, Scoring("MostAllocated")) == 0
        # nothing known at all: every node scores 0, no division by a zero capacity, lowest node wins
        blank = Nodes([node_pool(3, name="x")])
        assert select_node(blank, pod, Scoring()) == 0


def test_pods_that_never_fit_a_grown_pool_end_the_run() -> None:
    # Two plain 2x8 Jobs created together on a pool of 1 node that may grow to 2: the autoscaler adds
    # the second node, each job binds one pod there and waits for the other (the gang deadlock).
    # With the pool at its maxNodes nothing can change: the autoscaler stops scanning and the run ends.
    jobs = pods(run=100.0).job(pods=2, gpus=8).job(pods=2, gpus=8)
    outcome = jobs.simulate([node_pool(1, max_nodes=2)], kubernetes_settings(kueue={"enable": False}))
    assert outcome.extra["kubernetes"]["gang"]["deadlocked"]
    assert outcome.extra["kubernetes"]["node_pools"]["h100"]["nodes_added"] == 1
    assert reasons(outcome) == ["Unschedulable", "Unschedulable"]


def test_gpus_a_deadlocked_gang_holds_are_not_busy() -> None:
    # The two deadlocked jobs above hold all 16 GPUs and run nothing: the timeline's busy GPUs (as in
    # Slurm's, those of running jobs) stay 0; the GPUs held idle are the gang figure's.
    jobs = pods(run=100.0).job(pods=2, gpus=8).job(pods=2, gpus=8)
    outcome = jobs.simulate([node_pool(2)], kubernetes_settings(kueue={"enable": False}))
    timeline = timeline_table(outcome)
    assert timeline.column("busy_gpus").to_pylist() == [0]
    assert timeline.column("queued_jobs").to_pylist() == [2]
    assert outcome.extra["kubernetes"]["gang"]["gpus_held_idle_at_end"] == 16.0
