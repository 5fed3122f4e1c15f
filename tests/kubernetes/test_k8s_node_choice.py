"""kube-scheduler's compiled node choice (sim/kubernetes/_core/nodes.c) against a plain restatement
of NodeResourcesFit's Filter and Score, on random clusters, requests and binding histories.

The reference follows pkg/scheduler/framework/plugins/noderesources: least_allocated.go
(allocatable - requested) x 100 / allocatable, most_allocated.go requested x 100 / allocatable,
requested_to_capacity_ratio.go's broken line (helper.BuildBrokenLinearFunction, Go's truncating
division), the weighted mean over the resources a node has (RequestedToCapacityRatio: over those
scoring above 0, math.Round), and the first of the best nodes (selectHost's tie, made
reproducible)."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.kubernetes.cluster import MILLI, UNKNOWN, Nodes
from gpuplan.sim.kubernetes.scheduler import (
    SCORING_STRATEGIES,
    NodeChooser,
    PodRequest,
    Scoring,
    node_scores,
    select_node,
)

from builders import node_pool


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates towards zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def resource_score(scoring: Scoring, alloc: int, used: int) -> int:
    if scoring.strategy == "LeastAllocated":
        return 0 if used > alloc else (alloc - used) * 100 // alloc
    if scoring.strategy == "MostAllocated":
        return min(used, alloc) * 100 // alloc
    utilization = 100 if used >= alloc else max(used, 0) * 100 // alloc
    points = [(u, score * 10) for u, score in scoring.shape]
    if utilization <= points[0][0]:
        return points[0][1]
    for (u0, s0), (u1, s1) in pairwise(points):
        if utilization <= u1:
            return s0 + go_div((s1 - s0) * (utilization - u0), u1 - u0)
    return points[-1][1]


def reference_score(nodes: Nodes, node: int, pod: PodRequest, scoring: Scoring) -> int:
    gpu_alloc = int(nodes.gpus[node]) * MILLI
    resources = [
        (
            scoring.cpu_weight,
            int(nodes.cpu_alloc[node]),
            int(nodes.cpu_alloc[node] - nodes.cpu_free[node]) + pod.cpu,
        ),
        (
            scoring.memory_weight,
            int(nodes.mem_alloc[node]),
            int(nodes.mem_alloc[node] - nodes.mem_free[node]) + pod.mem,
        ),
        (scoring.gpu_weight, gpu_alloc, gpu_alloc - int(nodes.gpu_free_total[node]) + pod.gpu_milli_total),
    ]
    total = weights = 0
    for weight, alloc, used in resources:
        if weight and alloc > 0:
            score = resource_score(scoring, alloc, used)
            total += weight * score
            if scoring.strategy != "RequestedToCapacityRatio" or score > 0:
                weights += weight
    if not weights:
        return 0
    if scoring.strategy == "RequestedToCapacityRatio":
        return math.floor(Fraction(total, weights) + Fraction(1, 2))  # math.Round: half away from 0
    return total // weights


def reference_fits(nodes: Nodes, node: int, pod: PodRequest) -> bool:
    free = [int(v) for v in nodes.gpu_free[node]]
    gpus_ok = (
        free.count(MILLI) >= pod.gpus if pod.milli >= MILLI else pod.milli <= 0 or max(free) >= pod.milli
    )
    return (
        bool(nodes.up[node])
        and int(nodes.cpu_free[node]) >= pod.cpu
        and int(nodes.mem_free[node]) >= pod.mem
        and gpus_ok
        and (pod.pool < 0 or pod.pool == nodes.pool[node])  # NodeAffinity: its node selector
        and (not pod.pools or nodes.pool[node] in pod.pools)  # TaintToleration
    )


def reference_choice(nodes: Nodes, pod: PodRequest, scoring: Scoring) -> int:
    best, best_score = -1, -1
    for node in range(nodes.count):  # in pool order: the pools a pod may use are numbered together
        if reference_fits(nodes, node, pod):
            score = reference_score(nodes, node, pod, scoring)
            if score > best_score:
                best, best_score = node, score
    return best


shapes = st.lists(st.integers(0, 100), min_size=1, max_size=4, unique=True).flatmap(
    lambda us: st.tuples(*(st.tuples(st.just(u), st.integers(0, 10)) for u in sorted(us)))
)
scorings = st.builds(
    Scoring,
    strategy=st.sampled_from(list(SCORING_STRATEGIES)),
    cpu_weight=st.integers(0, 3),
    memory_weight=st.integers(0, 3),
    gpu_weight=st.integers(0, 5),
    shape=shapes,
)
pools = st.lists(
    st.builds(
        lambda gpus, nodes, cpu, mem: (gpus, nodes, cpu, mem),
        st.sampled_from([1, 2, 4, 8]),
        st.integers(1, 4),
        st.sampled_from([UNKNOWN, 16_000, 64_000]),
        st.sampled_from([UNKNOWN, 4_096, 65_536]),
    ),
    min_size=1,
    max_size=3,
)
requests = st.builds(
    lambda whole, gpus, milli, cpu, mem: (gpus, MILLI, cpu, mem) if whole else (1, milli, cpu, mem),
    st.booleans(),
    st.integers(0, 4),
    st.integers(1, 999),
    st.sampled_from([0, 1_000, 8_000]),
    st.sampled_from([0, 512, 4_096]),
)


def nodes_of(specs: list[tuple[int, int, int, int]]) -> Nodes:
    """Pools of (GPUs per node, nodes, CPU millicores, MiB)."""
    return Nodes(
        [
            node_pool(count, gpus=gpus, name=f"p{i}", cpu_milli=cpu, memory_mib=mem)
            for i, (gpus, count, cpu, mem) in enumerate(specs)
        ]
    )


@settings(max_examples=150, deadline=None)
@given(pools, scorings, st.lists(requests, min_size=1, max_size=25), st.data())
def test_the_compiled_choice_is_node_resources_fit(
    specs: list[tuple[int, int, int, int]],
    scoring: Scoring,
    asked: list[tuple[int, int, int, int]],
    data: st.DataObject,
) -> None:
    nodes = nodes_of(specs)
    nodes.up[data.draw(st.sampled_from(range(nodes.count)))] = data.draw(st.booleans())
    bound: list[tuple[int, int, PodRequest]] = []
    for gpus, milli, cpu, mem in asked:
        pool = data.draw(st.integers(-1, len(specs) - 1))
        # the pools whose taints it tolerates, ascending as setup.tolerated_pools gives them
        some = st.sets(st.integers(0, len(specs) - 1), min_size=1).map(lambda s: tuple(sorted(s)))
        tolerated = data.draw(st.one_of(st.just(()), some, st.just((-1,))))
        pod = PodRequest(gpus, milli, cpu, mem, pool, tolerated)
        expected = reference_choice(nodes, pod, scoring)
        assert select_node(nodes, pod, scoring) == expected
        candidates = [n for n in range(nodes.count) if reference_fits(nodes, n, pod)]
        assert node_scores(nodes, pod, scoring, candidates) == [
            reference_score(nodes, n, pod, scoring) for n in candidates
        ]
        if expected >= 0:
            mask = nodes.take(expected, gpus, milli, cpu, mem, True)
            bound.append((expected, mask, pod))
        if bound and data.draw(st.booleans()):  # a pod leaves: its GPUs, CPU and memory are free again
            node, mask, left = bound.pop(data.draw(st.integers(0, len(bound) - 1)))
            nodes.give_back(node, mask, left.milli, left.cpu, left.mem, True)
    for node, mask, pod in bound:
        nodes.give_back(node, mask, pod.milli, pod.cpu, pod.mem, True)
    fresh = Nodes(nodes.pools)
    assert nodes.gpu_free.tolist() == fresh.gpu_free.tolist()
    assert nodes.whole_free.tolist() == fresh.whole_free.tolist()
    assert nodes.gpu_free_total.tolist() == fresh.gpu_free_total.tolist()
    assert nodes.cpu_free.tolist() == fresh.cpu_free.tolist() and nodes.pods_on.sum() == 0


@settings(max_examples=150, deadline=None)
@given(pools, scorings, st.lists(requests, min_size=1, max_size=8, unique=True), st.data())
def test_the_choice_among_nodes_that_gained_room_is_the_choice_among_all(
    specs: list[tuple[int, int, int, int]],
    scoring: Scoring,
    asked: list[tuple[int, int, int, int]],
    data: st.DataObject,
) -> None:
    # a request that fitted nowhere since the epoch before is looked for only among the nodes that
    # gained room since (pods left, nodes became Ready): the same node as a search of every node
    nodes = nodes_of(specs)
    chooser = NodeChooser(nodes, scoring)
    pods = [
        PodRequest(g, milli, cpu, mem, data.draw(st.integers(-1, len(specs) - 1)))
        for g, milli, cpu, mem in asked
    ]
    bound: list[tuple[int, int, PodRequest]] = []
    restricted = 0
    for _ in range(40):
        action = data.draw(st.sampled_from(["bind", "bind", "bind", "leave", "epoch", "down", "up"]))
        if action == "bind":
            pod = data.draw(st.sampled_from(pods))
            restricted += id(pod) in chooser.fitless
            node = chooser.select(pod)
            assert node == select_node(nodes, pod, scoring)
            if node >= 0:
                bound.append((node, nodes.take(node, pod.gpus, pod.milli, pod.cpu, pod.mem, True), pod))
        elif action == "leave" and bound:
            node, mask, left = bound.pop(data.draw(st.integers(0, len(bound) - 1)))
            nodes.give_back(node, mask, left.milli, left.cpu, left.mem, True)
        elif action == "epoch":
            chooser.new_epoch()
        else:  # the cluster autoscaler removes a node or a new one becomes Ready
            nodes.set_up(data.draw(st.integers(0, nodes.count - 1)), action == "up")
    if restricted:  # the restricted search was exercised; also on the next pass's first try
        pod = data.draw(st.sampled_from(pods))
        assert chooser.select(pod) == select_node(nodes, pod, scoring)


def test_the_restricted_choice_keeps_the_lowest_numbered_of_the_best_nodes() -> None:
    # nodes gain room in any order; among equal scores the lowest-numbered wins, as in select
    nodes = Nodes([node_pool(4, gpus=8)])
    chooser = NodeChooser(nodes, Scoring())
    whole = PodRequest(8, MILLI, 0, 0, -1)
    masks = [nodes.take(n, 8, MILLI, 0, 0, True) for n in range(4)]
    assert chooser.select(whole) == -1 and id(whole) in chooser.fitless
    for n in (3, 1, 2):
        nodes.give_back(n, masks[n], MILLI, 0, 0, True)
    assert chooser.select(whole) == select_node(nodes, whole, Scoring()) == 1
    chooser.new_epoch()
    chooser.new_epoch()  # two epochs on, the failure is forgotten: every node is searched again
    assert id(whole) not in chooser.fitless
    nodes.take(1, 8, MILLI, 0, 0, True)
    assert chooser.select(whole) == 2


def test_a_strategy_the_core_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="no strategy"):
        Scoring("Balanced")


def test_every_registered_strategy_is_compiled() -> None:
    from gpuplan.sim.engine._batchcore import scoring_strategies

    assert list(SCORING_STRATEGIES) == scoring_strategies()


def test_a_runs_nodes_survive_pickling() -> None:
    # a run's outcome keeps its Nodes (PoolPlacement): it crosses process boundaries by pickle
    import pickle

    nodes = Nodes([node_pool(2, gpus=4)])
    nodes.take(0, 3, MILLI, 0, 0, True)
    copy = pickle.loads(pickle.dumps(nodes))
    pod = PodRequest(2, MILLI, 0, 0, -1)
    assert select_node(copy, pod, Scoring()) == select_node(nodes, pod, Scoring()) == 1
    copy.take(1, 4, MILLI, 0, 0, True)
    assert select_node(copy, pod, Scoring()) == -1 and select_node(nodes, pod, Scoring()) == 1


@pytest.mark.pure_python  # vars() of a Python object; compiled, a Nodes has none
def test_a_nodes_pickles_every_attribute_but_its_compiled_state() -> None:
    from gpuplan.sim.kubernetes.cluster import _PICKLED

    assert set(vars(Nodes([node_pool(2, gpus=4)]))) == {*_PICKLED, "core"}
