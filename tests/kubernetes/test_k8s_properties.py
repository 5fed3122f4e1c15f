"""Properties of the Kubernetes model on random workloads (some with companion pod sets: pods
asking their own GPUs, CPU and memory), checked after every scheduling instant: no node is
over-committed (GPU, GPU share, CPU, memory) and the placed pods account for exactly what the nodes
have given out; no ClusterQueue uses more than its nominal quota plus its borrowingLimit,
no cohort hands out more than its members lend; every job that can run eventually completes when
there is no gang to deadlock."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.sim.kubernetes.cluster import MILLI
from gpuplan.sim.kubernetes.model import PLACING, RUNNING, KubernetesRun
from gpuplan.sim.outcome import COMPLETED, PREEMPTED, REJECTED
from gpuplan.workload.jobtable import JobTable, Labels

from builders import kubernetes_settings, node_pool, pods


class CheckedRun(KubernetesRun):
    """A run that checks its invariants after every instant."""

    checks = 0

    def _record(self) -> None:
        super()._record()
        self.check()
        CheckedRun.checks += 1

    def check(self) -> None:
        nodes = self.nodes
        real = np.arange(nodes.max_gpus)[None, :] < nodes.gpus[:, None]
        assert ((nodes.gpu_free >= 0) & (nodes.gpu_free <= MILLI))[real].all(), "a GPU over-committed"
        assert (nodes.cpu_free >= 0).all() and (nodes.mem_free >= 0).all(), "CPU or memory over-committed"
        # what the pods hold is what the nodes gave out
        held = np.zeros(nodes.count, np.int64)
        cpu, mem = np.zeros(nodes.count, np.int64), np.zeros(nodes.count, np.int64)
        state, placed = np.asarray(self.state), np.asarray(self.placed)
        for j in np.flatnonzero((state == PLACING) | (state == RUNNING)).tolist():
            first = int(self.first_pod[j])
            bound = self.bound.get(j, [self.requests[j]] * int(placed[j]))
            assert len(bound) == placed[j]
            for p, pod in zip(range(first, first + int(placed[j])), bound, strict=True):
                held[self.pod_node[p]] += pod.gpu_milli_total
                cpu[self.pod_node[p]] += pod.cpu
                mem[self.pod_node[p]] += pod.mem
        for rid, replica in self.deployments.replicas.items():
            if replica.node >= 0:
                held[replica.node] += self.deployments.request(rid).gpu_milli_total
        assert (held == nodes.gpus_used()).all(), "placements and node state disagree"
        assert (cpu == nodes.cpu_alloc - nodes.cpu_free).all(), "CPU of placements and nodes disagree"
        assert (mem == nodes.mem_alloc - nodes.mem_free).all(), "memory of placements and nodes disagree"
        assert (placed[state == RUNNING] == self.pods[state == RUNNING]).all()
        if self.kueue is not None:
            tree = self.kueue.tree
            for queue in self.kueue.queues:
                node = tree.nodes[queue.policy.node]
                for f in range(tree.flavors):
                    assert node.usage[f] <= node.nominal[f] + node.borrowing_limit[f] + 1e-6, (
                        "over borrowingLimit"
                    )
            for node in tree.nodes:
                # a cohort hands out no more than its members lend (what lendingLimit caps)
                if not node.is_queue:
                    assert all(u <= q + 1e-6 for u, q in zip(node.usage, node.subtree, strict=True)), "cohort"


job_rows = st.lists(
    st.tuples(
        st.integers(0, 3000),  # submit
        st.integers(1, 2000),  # run time
        st.sampled_from([1, 1, 1, 2]),  # pods
        st.sampled_from([1, 2, 4, 8]),  # GPUs per pod
        st.sampled_from(["a", "b", "c"]),  # team
        st.sampled_from([1000, 1000, 500, 250]),  # GPU share of 1-GPU pods
        st.sampled_from(["", "urgent"]),  # priority class
        # companion pod sets (format_companions): none mostly, else a launcher, a driver asking
        # GPUs, or small pods
        st.sampled_from(
            ["", "", "", "1x0g/2000m/4096Mi", "1x2g/1000m/1024Mi", "2x0g/500m/1024Mi;1x1g/60000m/1024Mi"]
        ),
    ),
    min_size=1,
    max_size=40,
)


def queues(draw: Any) -> list[dict[str, Any]]:
    result = []
    for team in ("a", "b", "c"):
        flavor: dict[str, Any] = {"name": "gpu", "nominalQuota": draw(st.sampled_from([0, 4, 8, 16]))}
        if draw(st.booleans()):
            flavor["borrowingLimit"] = draw(st.sampled_from([0, 4, 8]))
        if draw(st.booleans()):
            flavor["lendingLimit"] = draw(st.sampled_from([0, 4]))
        result.append(
            {
                "name": team,
                "cohort": "org",
                "teams": [team],
                "flavors": [flavor],
                "queueingStrategy": draw(st.sampled_from(["StrictFIFO", "BestEffortFIFO"])),
                "preemption": {
                    "withinClusterQueue": draw(
                        st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
                    ),
                    "reclaimWithinCohort": draw(st.sampled_from(["Never", "LowerPriority", "Any"])),
                    "borrowWithinCohort": {"policy": draw(st.sampled_from(["Never", "LowerPriority"]))},
                },
            }
        )
    return result


def labels_of(values: list[str]) -> Labels:
    distinct = tuple(dict.fromkeys(values))
    return Labels(np.array([distinct.index(v) for v in values], np.int32), distinct)


@st.composite
def scenarios(draw: Any) -> tuple[JobTable, np.ndarray, KubernetesSettings, int]:
    rows = draw(job_rows)
    jobs = pods()
    for submit, run, job_pods, gpus, team, _, qos, _ in rows:
        jobs.job(at=float(submit), run=float(run), pods=job_pods, gpus=gpus, team=team, qos=qos)
    milli = np.array([r[5] if r[3] == 1 else 1000 for r in rows], np.int32)
    companions = [r[7] for r in rows]
    # a NoExecute taint on the pool, which some jobs tolerate for a while: the taint-eviction
    # controller evicts their pods, the Job controller replaces them up to their backoffLimit
    evicting = draw(st.booleans())
    tolerations = [f"dedicated|Exists||NoExecute|{draw(st.sampled_from(['', '300', '900']))}" for _ in rows]
    table = replace(
        jobs.table(),
        companion_pods=labels_of(companions),
        tolerations=labels_of(tolerations if evicting else [""] * len(rows)),
        backoff_limit=np.array([draw(st.sampled_from([-1, 0, 2, 6])) for _ in rows], np.int32),
    )
    kueue: dict[str, Any] = {"enable": draw(st.booleans())}
    if kueue["enable"]:
        kueue["clusterQueues"] = queues(draw)
        kueue["fairSharing"] = {"enable": draw(st.booleans())}
        if draw(st.booleans()):
            kueue["waitForPodsReady"] = {"enable": True, "timeout": "5m"}
    values = {
        "nodePools": [{"pool": "gpu", "taints": [{"key": "dedicated", "effect": "NoExecute"}]}]
        if evicting
        else [],
        "kueue": kueue,
        "scheduler": {"scoringStrategy": draw(st.sampled_from(["LeastAllocated", "MostAllocated"]))},
        "priorities": {
            "classes": [{"name": "urgent", "value": 10}, {"name": "batch", "value": 0}],
            "assign": {"urgent": "urgent"},
            "default": "batch",
        },
    }
    return table, milli, kubernetes_settings(**values), draw(st.integers(1, 4))


@pytest.mark.pure_python  # CheckedRun subclasses KubernetesRun
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_no_node_is_over_committed_and_quota_holds(
    case: tuple[JobTable, np.ndarray, KubernetesSettings, int],
) -> None:
    table, milli, config, nodes = case
    pool = node_pool(nodes, name="gpu", cpu_milli=64_000, memory_mib=512_000)
    run = CheckedRun(table, [pool], config, [], gpu_milli=milli)
    run.run()
    run.check()
    assert CheckedRun.checks > 0
    outcome = run.outcome(0.0)
    # every job ends (completes, or fails past its backoffLimit), is rejected, or is stuck in a
    # gang deadlock / behind quota it can never get
    gang = outcome.extra["kubernetes"]["gang"]
    if not config.kueue.enable and not gang["deadlocked"]:
        assert np.isin(outcome.state, [COMPLETED, REJECTED, PREEMPTED]).all()
    single_pod = (run.pods == 1).all()  # no companions either
    if single_pod and not config.kueue.enable:
        assert not gang["deadlocked"]  # one-pod jobs cannot deadlock
    done = outcome.state == COMPLETED
    assert (outcome.end_s[done] >= outcome.start_s[done] + outcome.jobs.duration_s[done] - 1e-9).all()
    assert (outcome.start_s[done] >= outcome.jobs.submit_s[done]).all()


class FullPasses(KubernetesRun):
    """A run whose every pass after capacity was freed goes over every pending pod."""

    def _still_stuck(self, stuck: list[Any]) -> bool:
        return False


class CountedSkips(KubernetesRun):
    """A run that counts the passes it skipped over pending pods that still fit nowhere."""

    skipped = 0

    def _still_stuck(self, stuck: list[Any]) -> bool:
        skip = super()._still_stuck(stuck)
        CountedSkips.skipped += skip
        return skip


def same_runs(table: JobTable, milli: np.ndarray | None, config: KubernetesSettings, nodes: int) -> None:
    pool = node_pool(nodes, name="gpu", cpu_milli=64_000, memory_mib=512_000)
    skipping, full = (cls(table, [pool], config, [], gpu_milli=milli) for cls in (CountedSkips, FullPasses))
    skipping.run()
    full.run()
    a, b = skipping.outcome(0.0), full.outcome(0.0)
    for column in ("start_s", "end_s", "state", "preemptions", "lost_gpu_s"):
        np.testing.assert_array_equal(getattr(a, column), getattr(b, column), err_msg=column)
    assert a.node_lists().to_pylist() == b.node_lists().to_pylist()
    assert a.events is not None and b.events is not None
    for column in ("job", "time_s"):
        np.testing.assert_array_equal(getattr(a.events, column), getattr(b.events, column))
    for column in ("event", "reason", "detail", "queue", "flavor"):
        assert getattr(a.events, column).values() == getattr(b.events, column).values(), column


@pytest.mark.pure_python  # subclasses KubernetesRun
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans())
def test_skipping_passes_over_pods_that_still_fit_nowhere_changes_nothing(
    case: tuple[JobTable, np.ndarray, KubernetesSettings, int], coscheduling: bool
) -> None:
    """After capacity is freed, a pass over pending pods whose requests all still fit nowhere (and
    may not preempt) is skipped, only new pods being tried: the run is the same as with every pass
    going over every pending pod, with priorities, preemption, Kueue and PodGroups in play."""
    table, milli, config, nodes = case
    if coscheduling:
        config = config.model_copy(
            update={"scheduler": config.scheduler.model_copy(update={"coscheduling": True})}
        )
    same_runs(table, milli, config, nodes)


@pytest.mark.pure_python  # subclasses KubernetesRun
def test_a_pass_over_pods_that_still_fit_nowhere_is_skipped() -> None:
    """One 8-GPU node: two 4-GPU jobs run, 8-GPU jobs wait. When the shorter one ends, 4 GPUs are
    free and no waiting pod fits: that pass is skipped, with the same run as without skipping."""
    jobs = pods(gpus=8)
    jobs.job(at=0.0, run=100.0, gpus=4).job(at=0.0, run=1000.0, gpus=4)
    for k in range(3):
        jobs.job(at=1.0 + k, run=500.0)
    jobs.job(at=150.0, run=50.0, gpus=4)  # new pods in a pass that still skips the waiting ones
    CountedSkips.skipped = 0
    same_runs(jobs.table(), None, kubernetes_settings(), 1)
    assert CountedSkips.skipped >= 2
