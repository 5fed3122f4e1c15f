"""kube-scheduler for one pod: Filter (``NodeResourcesFit``, node selector to a pool) and Score
(``NodeResourcesFit`` with ``scoringStrategy.type`` LeastAllocated, the default, MostAllocated or
RequestedToCapacityRatio).

Both run over all nodes at once as array operations. Scores follow the plugin's integer formula per
resource in ``scoringStrategy.resources``: LeastAllocated = (allocatable - requested) x 100 /
allocatable, MostAllocated = requested x 100 / allocatable, where requested includes the pod; the node
score is the weighted mean over the resources the node has (integer division by the sum of their
weights; a resource whose allocatable is 0, here also one whose capacity is unknown, is left out and a
node with none scores 0: least_allocated.go leastResourceScorer, most_allocated.go
mostResourceScorer). RequestedToCapacityRatio (requested_to_capacity_ratio.go): each resource scores
the broken line through ``shape`` (scores x 10) at its utilisation with the pod, requested x 100 /
allocatable in integers (helper.BuildBrokenLinearFunction, Go's truncating division); the mean
weighs only the resources that score above 0 and is rounded, half away from zero. A node's
unknown CPU or memory (cluster.UNKNOWN) is never short: the Filter passes it. kube-scheduler picks
at random among the best-scoring nodes (``selectHost``); here ties go to the lowest-numbered node so
that runs are reproducible.

The TaintToleration filter works on whole pools: a node pool's taints are on all its nodes, and a
pod's ``PodRequest.pools`` are the pools whose taints it tolerates (setup.tolerated_pools).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpuplan.sim.kubernetes.cluster import MILLI, Nodes
from gpuplan.sim.registry import Registry

MAX_NODE_SCORE = 100


NO_POOL = -1  # PodRequest.pools of a pod that tolerates no pool's taints


@dataclass(frozen=True)
class PodRequest:
    """What one pod asks: ``gpus`` whole GPUs, or ``milli`` thousandths of one GPU when < 1000."""

    gpus: int
    milli: int  # per GPU: 1000 for whole GPUs
    cpu: int  # millicores
    mem: int  # MiB
    pool: int  # node selector: the pool (ResourceFlavor) the pod must run in; -1: any
    # the pools whose taints it tolerates when that is not all ((): all; (NO_POOL,): none)
    pools: tuple[int, ...] = ()

    def may_use(self, pool: int) -> bool:
        """Whether the pod may run in ``pool``: its node selector, and the pools' taints."""
        return (self.pool < 0 or self.pool == pool) and (not self.pools or pool in self.pools)

    @property
    def gpu_milli_total(self) -> int:
        return self.gpus * self.milli if self.milli >= MILLI else self.milli


Int64Array = npt.NDArray[np.int64]
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10  # a shape point's highest score (config.MaxCustomPriorityScore)


@dataclass(frozen=True)
class Scoring:
    """``NodeResourcesFit`` args: ``scoringStrategy.type``, the weight of cpu, memory and
    nvidia.com/gpu, and for RequestedToCapacityRatio its shape as (utilization, score) points."""

    strategy: str = "LeastAllocated"
    cpu_weight: int = 1
    memory_weight: int = 1
    gpu_weight: int = 0
    shape: tuple[tuple[int, int], ...] = ()


def least_allocated(alloc: Int64Array, used: Int64Array, scoring: Scoring) -> Int64Array:
    """least_allocated.go leastResourceScorer: (allocatable - requested) x 100 / allocatable; 0 past
    the allocatable."""
    return np.where(used > alloc, 0, (alloc - used) * MAX_NODE_SCORE // alloc)


def most_allocated(alloc: Int64Array, used: Int64Array, scoring: Scoring) -> Int64Array:
    """most_allocated.go mostResourceScorer: requested x 100 / allocatable; 100 past the allocatable."""
    return np.minimum(used, alloc) * MAX_NODE_SCORE // alloc


def requested_to_capacity_ratio(alloc: Int64Array, used: Int64Array, scoring: Scoring) -> Int64Array:
    """requested_to_capacity_ratio.go: the shape's broken line at the utilisation (100 past the
    allocatable)."""
    utilization = np.where(used >= alloc, MAX_UTILIZATION, np.maximum(used, 0) * MAX_UTILIZATION // alloc)
    points = np.array([u for u, _ in scoring.shape], np.int64)
    scores = np.array([v for _, v in scoring.shape], np.int64) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)
    upper = np.searchsorted(points, utilization, side="left")  # the first point at or past it
    inner = np.clip(upper, 1, len(points) - 1)
    lower = inner - 1
    rise = (scores[inner] - scores[lower]) * (utilization - points[lower])
    run = np.maximum(points[inner] - points[lower], 1)
    step = np.sign(rise) * (np.abs(rise) // run)  # Go's integer division truncates towards zero
    inside = np.where(upper >= len(points), scores[-1], scores[lower] + step)
    result: Int64Array = np.where(upper == 0, scores[0], inside).astype(np.int64)
    return result


@dataclass(frozen=True)
class ScoringStrategy:
    """A ``scoringStrategy.type``: each resource's score per node, and how the node's score combines
    them: the weighted mean over the resources the node has, truncated; or, ``positive_only``, over
    those that score above 0, rounded (requested_to_capacity_ratio.go)."""

    resource_score: Callable[[Int64Array, Int64Array, Scoring], Int64Array]
    positive_only: bool = False


# NodeResourcesFit's scoringStrategy.type, by the names KubeSchedulerConfiguration uses
SCORING_STRATEGIES = Registry[ScoringStrategy]("scoringStrategy.type")
SCORING_STRATEGIES.register("LeastAllocated", ScoringStrategy(least_allocated))
SCORING_STRATEGIES.register("MostAllocated", ScoringStrategy(most_allocated))
SCORING_STRATEGIES.register(
    "RequestedToCapacityRatio", ScoringStrategy(requested_to_capacity_ratio, positive_only=True)
)


def feasible(nodes: Nodes, pod: PodRequest, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Filter: nodes ``start:stop`` that are Ready and have room for the pod's requests."""
    window = slice(start, stop)
    ok = nodes.up[window] & (nodes.cpu_free[window] >= pod.cpu) & (nodes.mem_free[window] >= pod.mem)
    if pod.milli >= MILLI:
        ok &= nodes.whole_free[window] >= pod.gpus
    elif pod.milli > 0:
        ok &= nodes.best_free[window] >= pod.milli
    return ok


def _resource_score(
    alloc: Int64Array, requested: Int64Array, scoring: Scoring, strategy: ScoringStrategy
) -> Int64Array:
    """One resource's score per node; 0 where the allocatable is 0 (the caller leaves those out)."""
    known = alloc > 0
    safe = np.where(known, alloc, 1)
    used = np.where(known, requested, 0)  # an unknown node's figure is never multiplied
    return np.where(known, strategy.resource_score(safe, used, scoring), 0)


def node_scores(nodes: Nodes, pod: PodRequest, scoring: Scoring, candidates: Int64Array) -> Int64Array:
    """NodeResourcesFit's score of each candidate node for the pod."""
    total = np.zeros(len(candidates), np.int64)
    weights = np.zeros(len(candidates), np.int64)
    resources = []
    if scoring.cpu_weight:
        alloc = nodes.cpu_alloc[candidates]
        resources.append((scoring.cpu_weight, alloc, alloc - nodes.cpu_free[candidates] + pod.cpu))
    if scoring.memory_weight:
        alloc = nodes.mem_alloc[candidates]
        resources.append((scoring.memory_weight, alloc, alloc - nodes.mem_free[candidates] + pod.mem))
    if scoring.gpu_weight:
        alloc = nodes.gpus[candidates].astype(np.int64) * MILLI
        used = alloc - nodes.gpu_free_total[candidates] + pod.gpu_milli_total
        resources.append((scoring.gpu_weight, alloc, used))
    strategy = SCORING_STRATEGIES.get(scoring.strategy)
    for weight, alloc, used in resources:
        score = _resource_score(alloc, used, scoring, strategy)
        total += weight * score
        counted = (alloc > 0) & (score > 0) if strategy.positive_only else alloc > 0
        weights += weight * counted
    if strategy.positive_only:  # math.Round of the float64 mean: half away from zero
        mean = total / np.maximum(weights, 1)
        whole = np.floor(mean)
        rounded = (whole + (mean - whole >= 0.5)).astype(np.int64)
        return np.where(weights > 0, rounded, 0)
    return np.where(weights > 0, total // np.maximum(weights, 1), 0)


def select_node(nodes: Nodes, pod: PodRequest, scoring: Scoring) -> int:
    """The node kube-scheduler binds the pod to, or -1 when no node passes the filters. A pod with a
    node selector only looks at its pool's nodes (a pool's nodes are numbered together), one that
    does not tolerate some pools' taints only at the others'."""
    if pod.pools:  # TaintToleration filter, with NodeAffinity: the pools it may use
        usable = [p for p in pod.pools if p >= 0 and pod.may_use(p)]
        ranges = [(int(nodes.pool_first[p]), int(nodes.pool_first[p + 1])) for p in usable]
        found = [np.flatnonzero(feasible(nodes, pod, a, b)) + a for a, b in ranges]
        candidates = np.concatenate(found) if found else np.zeros(0, np.int64)
    else:  # NodeAffinity filter: a pod with a node selector sees its pool's nodes only
        start, stop = 0, nodes.count
        if pod.pool >= 0:
            start, stop = int(nodes.pool_first[pod.pool]), int(nodes.pool_first[pod.pool + 1])
        candidates = np.flatnonzero(feasible(nodes, pod, start, stop)) + start
    if len(candidates) <= 1:
        return int(candidates[0]) if len(candidates) else -1
    return int(candidates[int(node_scores(nodes, pod, scoring, candidates).argmax())])
