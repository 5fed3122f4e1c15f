"""kube-scheduler for one pod: Filter (``NodeResourcesFit``, node selector to a pool) and Score
(``NodeResourcesFit`` with ``scoringStrategy.type`` LeastAllocated, the default, MostAllocated or
RequestedToCapacityRatio).

Both are compiled (sim/kubernetes/_core/nodes.c: one pass over the nodes a pod may use, each
strategy a piece registered by its name). Scores follow the plugin's integer formula per
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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpuplan.sim.engine._batchcore import Scorer
from gpuplan.sim.kubernetes.cluster import MILLI, Nodes
from gpuplan.sim.registry import Registry

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

    def __hash__(self) -> int:  # the dataclass's own, but compiled (mypyc): requests key dicts
        return hash((self.gpus, self.milli, self.cpu, self.mem, self.pool, self.pools))

    def may_use(self, pool: int) -> bool:
        """Whether the pod may run in ``pool``: its node selector, and the pools' taints."""
        return (self.pool < 0 or self.pool == pool) and (not self.pools or pool in self.pools)

    @property
    def gpu_milli_total(self) -> int:
        return self.gpus * self.milli if self.milli >= MILLI else self.milli


class Scoring:
    """``NodeResourcesFit`` args: ``scoringStrategy.type``, the weight of cpu, memory and
    nvidia.com/gpu, and for RequestedToCapacityRatio its shape as (utilization, score) points;
    ``scorer`` is the compiled strategy with these args (nodes.c STRATEGIES)."""

    def __init__(
        self,
        strategy: str = "LeastAllocated",
        cpu_weight: int = 1,
        memory_weight: int = 1,
        gpu_weight: int = 0,
        shape: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.strategy = strategy
        self.cpu_weight = cpu_weight
        self.memory_weight = memory_weight
        self.gpu_weight = gpu_weight
        self.shape = shape
        self.scorer = Scorer(strategy, cpu_weight, memory_weight, gpu_weight, shape)


# NodeResourcesFit's scoringStrategy.type, by the names KubeSchedulerConfiguration uses: each a piece
# of the compiled core (nodes.c STRATEGIES), described here
SCORING_STRATEGIES = Registry[str]("scoringStrategy.type")
SCORING_STRATEGIES.register("LeastAllocated", "(allocatable - requested) x 100 / allocatable: spreads")
SCORING_STRATEGIES.register("MostAllocated", "requested x 100 / allocatable: packs")
SCORING_STRATEGIES.register(
    "RequestedToCapacityRatio", "the shape's broken line at the utilisation, in percent"
)


def node_scores(nodes: Nodes, pod: PodRequest, scoring: Scoring, candidates: npt.ArrayLike) -> list[int]:
    """NodeResourcesFit's score of each candidate node for the pod."""
    return nodes.core.scores(
        scoring.scorer, pod.gpus, pod.milli, pod.cpu, pod.mem, np.asarray(candidates).tolist()
    )


class NodeChooser:
    """``select_node`` for the scheduler's passes, which looks only where a pod can fit.

    A pod whose request fitted no node at some moment can later fit only on a node that has gained
    room since (a pod left it, it became Ready): the others have only lost room. The compiled node
    state keeps the nodes that gained room in this epoch and the one before (an epoch begins with each
    pass over every pending pod, ``new_epoch``); a request that failed in either epoch is looked for
    among those nodes alone (``NodeState.select_gained``), with the same result as over every node.
    This is what kube-scheduler's unschedulable queue and its queueing hints do for the pods it parks
    (pkg/scheduler/backend/queue: a pod goes back to the active queue on an event that may make it
    schedulable), here as a search restricted to the nodes such events touched."""

    def __init__(self, nodes: Nodes, scoring: Scoring) -> None:
        self.nodes = nodes
        self.scoring = scoring
        # ids of interned requests (they live as long as the run) that fitted nowhere in the epoch
        # before this one or in this one, and of those that did in this one
        self.fitless: set[int] = set()
        self.fitless_now: set[int] = set()

    def select(self, pod: PodRequest) -> int:
        """The node kube-scheduler binds the pod to, or -1 (``select_node``)."""
        core, scorer = self.nodes.core, self.scoring.scorer
        ranges = self.nodes.ranges(pod)
        if id(pod) in self.fitless:
            node = core.select_gained(scorer, pod.gpus, pod.milli, pod.cpu, pod.mem, ranges)
        else:
            node = core.select(scorer, pod.gpus, pod.milli, pod.cpu, pod.mem, ranges)
        if node < 0:
            self.fitless.add(id(pod))
            self.fitless_now.add(id(pod))
        return node

    def new_epoch(self) -> None:
        """Forget what fitted nowhere before the epoch now ending."""
        self.nodes.core.new_epoch()
        self.fitless, self.fitless_now = self.fitless_now, set()


def select_node(nodes: Nodes, pod: PodRequest, scoring: Scoring) -> int:
    """The node kube-scheduler binds the pod to, or -1 when no node passes the filters. A pod with a
    node selector only looks at its pool's nodes (NodeAffinity), one that does not tolerate some
    pools' taints only at the others' (TaintToleration)."""
    return nodes.core.select(scoring.scorer, pod.gpus, pod.milli, pod.cpu, pod.mem, nodes.ranges(pod))
