"""kube-scheduler for one pod: Filter (``NodeResourcesFit``, node selector to a pool) and Score
(``NodeResourcesFit`` with ``scoringStrategy.type`` LeastAllocated, the default, or MostAllocated).

Both run over all nodes at once as array operations. Scores follow the plugin's integer formula per
resource in ``scoringStrategy.resources``: LeastAllocated = (allocatable - requested) x 100 /
allocatable, MostAllocated = requested x 100 / allocatable, where requested includes the pod; the node
score is the weighted mean over the resources the node has (integer division by the sum of their
weights; a resource whose allocatable is 0, here also one whose capacity is unknown, is left out and a
node with none scores 0: least_allocated.go leastResourceScorer, most_allocated.go
mostResourceScorer). A node's unknown CPU or memory (cluster.UNKNOWN) is never short: the Filter
passes it. kube-scheduler picks at random among the best-scoring nodes (``selectHost``);
here ties go to the lowest-numbered node so that runs are reproducible.

GPU pools are tainted (``nvidia.com/gpu:NoSchedule`` on OKE GPU nodes) and every pod here requests GPUs
and tolerates it, so the TaintToleration filter never removes a node; it is not modelled further.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpuplan.sim.kubernetes.cluster import MILLI, Nodes
from gpuplan.sim.registry import Registry

MAX_NODE_SCORE = 100


@dataclass(frozen=True)
class PodRequest:
    """What one pod asks: ``gpus`` whole GPUs, or ``milli`` thousandths of one GPU when < 1000."""

    gpus: int
    milli: int  # per GPU: 1000 for whole GPUs
    cpu: int  # millicores
    mem: int  # MiB
    pool: int  # node selector: the pool (ResourceFlavor) the pod must run in; -1: any

    @property
    def gpu_milli_total(self) -> int:
        return self.gpus * self.milli if self.milli >= MILLI else self.milli


Int64Array = npt.NDArray[np.int64]
# one resource's score per node from its allocatable and requested figures (nodes with a known figure)
ResourceScorer = Callable[[Int64Array, Int64Array], Int64Array]


def least_allocated(alloc: Int64Array, used: Int64Array) -> Int64Array:
    """least_allocated.go leastResourceScorer: (allocatable - requested) x 100 / allocatable; 0 past
    the allocatable."""
    return np.where(used > alloc, 0, (alloc - used) * MAX_NODE_SCORE // alloc)


def most_allocated(alloc: Int64Array, used: Int64Array) -> Int64Array:
    """most_allocated.go mostResourceScorer: requested x 100 / allocatable; 100 past the allocatable."""
    return np.minimum(used, alloc) * MAX_NODE_SCORE // alloc


# NodeResourcesFit's scoringStrategy.type, by the names KubeSchedulerConfiguration uses
SCORING_STRATEGIES = Registry[ResourceScorer]("scoringStrategy.type")
SCORING_STRATEGIES.register("LeastAllocated", least_allocated)
SCORING_STRATEGIES.register("MostAllocated", most_allocated)


@dataclass(frozen=True)
class Scoring:
    """``NodeResourcesFit`` args: ``scoringStrategy.type`` and the weight of cpu, memory and
    nvidia.com/gpu."""

    strategy: str = "LeastAllocated"
    cpu_weight: int = 1
    memory_weight: int = 1
    gpu_weight: int = 0


def feasible(nodes: Nodes, pod: PodRequest, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Filter: nodes ``start:stop`` that are Ready and have room for the pod's requests."""
    window = slice(start, stop)
    ok = nodes.up[window] & (nodes.cpu_free[window] >= pod.cpu) & (nodes.mem_free[window] >= pod.mem)
    if pod.milli >= MILLI:
        ok &= nodes.whole_free[window] >= pod.gpus
    elif pod.milli > 0:
        ok &= nodes.best_free[window] >= pod.milli
    return ok


def _resource_score(alloc: Int64Array, requested: Int64Array, scorer: ResourceScorer) -> Int64Array:
    """One resource's score per node; 0 where the allocatable is 0 (the caller leaves those out)."""
    known = alloc > 0
    safe = np.where(known, alloc, 1)
    used = np.where(known, requested, 0)  # an unknown node's figure is never multiplied
    return np.where(known, scorer(safe, used), 0)


def select_node(nodes: Nodes, pod: PodRequest, scoring: Scoring) -> int:
    """The node kube-scheduler binds the pod to, or -1 when no node passes the filters. A pod with a
    node selector only looks at its pool's nodes (a pool's nodes are numbered together)."""
    start, stop = 0, nodes.count
    if pod.pool >= 0:  # NodeAffinity filter: the pool's nodes only
        start, stop = int(nodes.pool_first[pod.pool]), int(nodes.pool_first[pod.pool + 1])
    candidates = np.flatnonzero(feasible(nodes, pod, start, stop)) + start
    if len(candidates) <= 1:
        return int(candidates[0]) if len(candidates) else -1
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
    scorer = SCORING_STRATEGIES.get(scoring.strategy)
    for weight, alloc, used in resources:
        total += weight * _resource_score(alloc, used, scorer)
        weights += weight * (alloc > 0)
    score = np.where(weights > 0, total // np.maximum(weights, 1), 0)
    return int(candidates[int(score.argmax())])
