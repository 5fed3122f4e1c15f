"""Node pools and node state, as arrays: what kube-scheduler's NodeInfo cache holds for each node.

Every node has GPUs (the extended resource ``nvidia.com/gpu``), CPU (millicores) and memory (MiB).
A GPU is tracked in thousandths (``gpu_milli``): a whole-GPU pod takes 1000 of a GPU, and a pod of the
Alibaba trace with ``gpu_milli`` < 1000 takes that share of one GPU, as GPU sharing (time slicing,
MIG, Alibaba's gpushare) offers; such a pod goes to the GPU with the least room that still fits it
(gpushare's binpack), so fractions fill GPUs before starting new ones.

An autoscaled pool has ``max_nodes`` slots; slots beyond those up are nodes the cluster autoscaler may
add (``up`` False until they are Ready).

A node's CPU or memory may be unknown (``UNKNOWN``: no node list, and a scenario pool without a shape,
``cpus_per_node`` or ``memory_gb``). That resource is then not a constraint on the node: pods' requests
of it are not checked (its free amount starts at ``UNCHECKED_FREE``, which no sum of requests uses
up), and kube-scheduler's scoring leaves it out, as NodeResourcesFit does for a resource whose
allocatable is 0. The run echoes which pools had unknown resources (settings "node_resources").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from gpuplan.sim.cluster import UNKNOWN as UNKNOWN  # a node's CPU or memory not known: not checked
from gpuplan.sim.engine._batchcore import NodeState
from gpuplan.workload.jobtable import Bool, Int32, Int64

if TYPE_CHECKING:
    from gpuplan.sim.kubernetes.scheduler import PodRequest

MILLI = 1000  # thousandths of a GPU (Alibaba's gpu_milli)
# free CPU or memory of a node whose capacity is UNKNOWN: more than any pods' requests add up to
# (a pod asks at most workload.jobtable's MAX_CPUS_PER_NODE, MAX_MEMORY_MIB_PER_NODE), and far
# from int64 overflow when a preemption check adds the requests of a node's pods to it
UNCHECKED_FREE = 2**62


def free_at_start(capacity: int) -> int:
    """What an empty node has free of a resource with ``capacity`` (UNKNOWN: never runs out)."""
    return capacity if capacity != UNKNOWN else UNCHECKED_FREE


@dataclass(frozen=True)
class NodePoolSpec:
    """One OKE node pool (a cluster autoscaler node group) of identical nodes."""

    name: str
    gpus_per_node: int
    cpu_milli: int  # allocatable CPU per node; UNKNOWN (0): not known, not checked
    memory_mib: int  # allocatable memory per node; UNKNOWN (0): not known, not checked
    nodes: int  # nodes up at t = 0
    min_nodes: int
    max_nodes: int
    provision_delay_s: float = 600.0
    origin: str = ""  # the scenario's pool its nodes are (sim.cluster.Pool.origin)
    node_names: tuple[str, ...] = ()  # real names (a node list); default f"{name}-{i}"

    def __reduce__(self) -> tuple[type[NodePoolSpec], tuple[object, ...]]:
        """Pickled by its fields: compiled by mypyc, a frozen dataclass cannot be restored
        attribute by attribute."""
        return NodePoolSpec, tuple(getattr(self, spec.name) for spec in fields(self))

    @property
    def autoscaled(self) -> bool:
        return self.max_nodes != self.min_nodes or self.max_nodes != self.nodes

    def name_of(self, slot: int) -> str:
        return self.node_names[slot] if slot < len(self.node_names) else f"{self.name}-{slot}"


# what a Nodes is made of, but its compiled state (``core``)
_PICKLED = (
    "pools", "count", "pool", "slot", "gpus", "max_gpus", "cpu_alloc", "mem_alloc", "up", "gpu_free",
    "cpu_free", "mem_free", "whole_free", "best_free", "gpu_free_total", "pods_on", "batch_pods_on",
    "pool_first", "_ranges",
)  # fmt: skip


class Nodes:
    """Allocatable and free resources of every node slot, one array per resource."""

    def __init__(self, pools: list[NodePoolSpec]) -> None:
        self.pools = pools
        slots = [max(p.max_nodes, p.nodes) for p in pools]
        n = sum(slots)
        self.count = n
        self.pool: Int32 = np.repeat(np.arange(len(pools), dtype=np.int32), slots)
        self.slot: Int32 = (
            np.concatenate([np.arange(s, dtype=np.int32) for s in slots]) if n else np.zeros(0, np.int32)
        )
        self.gpus: Int32 = np.repeat(np.array([p.gpus_per_node for p in pools], np.int32), slots)
        self.max_gpus = int(self.gpus.max()) if n else 1
        self.cpu_alloc: Int64 = np.repeat(np.array([p.cpu_milli for p in pools], np.int64), slots)
        self.mem_alloc: Int64 = np.repeat(np.array([p.memory_mib for p in pools], np.int64), slots)
        self.up: Bool = (
            np.concatenate([np.arange(s) < p.nodes for s, p in zip(slots, pools, strict=True)])
            if n
            else np.zeros(0, bool)
        )
        # per GPU: free thousandths; -1 for GPUs a node does not have
        index = np.arange(self.max_gpus)
        self.gpu_free = np.where(index[None, :] < self.gpus[:, None], MILLI, -1).astype(np.int32)
        # unknown capacity (allocatable UNKNOWN): free never runs out, and scoring leaves it out
        self.cpu_free: Int64 = np.where(self.cpu_alloc != UNKNOWN, self.cpu_alloc, UNCHECKED_FREE)
        self.mem_free: Int64 = np.where(self.mem_alloc != UNKNOWN, self.mem_alloc, UNCHECKED_FREE)
        self.whole_free: Int32 = self.gpus.copy()  # GPUs with nothing on them
        self.best_free: Int32 = np.where(self.gpus > 0, MILLI, 0).astype(np.int32)  # most free on one GPU
        self.gpu_free_total: Int64 = self.gpus.astype(np.int64) * MILLI
        self.pods_on: Int32 = np.zeros(n, np.int32)  # pods placed on each node
        self.batch_pods_on: Int32 = np.zeros(n, np.int32)  # of them, Job pods (not Deployment replicas)
        self.pool_first = np.concatenate([[0], np.cumsum(slots)]).astype(np.int64)
        # kube-scheduler's node choice and binding work on these arrays in place (never rebind them)
        self.core = NodeState(self)
        self._ranges: dict[tuple[int, tuple[int, ...]], tuple[int, ...]] = {}

    def __reduce__(self) -> tuple[Callable[..., Nodes], tuple[list[NodePoolSpec], dict[str, object]]]:
        """Pickled (a run's outcome keeps its Nodes) without the compiled state, rebuilt on load;
        attribute by attribute, as compiled by mypyc a Nodes has no ``__dict__``."""
        return _unpickled, (self.pools, {name: getattr(self, name) for name in _PICKLED})

    # -- placement bookkeeping: compiled (sim/kubernetes/_core/nodes.c) -------------------------

    def take(self, node: int, gpus: int, milli: int, cpu: int, mem: int, batch: bool) -> int:
        """Allocate a pod on ``node``: ``gpus`` whole GPUs (lowest-numbered free ones) or, when
        ``milli`` < 1000, that share of the GPU with the least room that holds it (gpushare's
        binpack). Returns the bitmask of the GPUs taken."""
        return self.core.take(node, gpus, milli, cpu, mem, batch)

    def give_back(self, node: int, mask: int, milli: int, cpu: int, mem: int, batch: bool) -> None:
        """A pod bound by ``take`` (which gave ``mask``) leaves ``node``."""
        self.core.give_back(node, mask, milli, cpu, mem, batch)

    def set_up(self, node: int, up: bool) -> None:
        """The node becomes Ready (``up``) or is removed; a Ready node has gained room (``core.gained``)."""
        self.up[node] = up
        if up:
            self.core.gained(node)

    def ranges(self, pod: PodRequest) -> tuple[int, ...]:
        """The nodes the pod may use (``PodRequest.may_use``: its node selector and the pools whose
        taints it tolerates) as (start, stop, start, stop, ...): a pool's nodes are numbered
        together, and neighbouring pools make one range."""
        key = (pod.pool, pod.pools)
        found = self._ranges.get(key)
        if found is None:
            bounds: list[int] = []
            for p in range(len(self.pools)):
                if pod.may_use(p):
                    start, stop = int(self.pool_first[p]), int(self.pool_first[p + 1])
                    if bounds and bounds[-1] == start:
                        bounds[-1] = stop
                    else:
                        bounds += [start, stop]
            found = self._ranges[key] = tuple(bounds)
        return found

    # -- what the summary and the autoscaler read --------------------------------------------------

    def gpus_used(self) -> Int64:
        """Thousandths of GPUs requested by pods on each node."""
        return self.gpus.astype(np.int64) * MILLI - self.gpu_free_total

    def nodes_up(self) -> npt.NDArray[np.int32]:
        return np.bincount(self.pool[self.up], minlength=len(self.pools)).astype(np.int32)

    def name(self, node: int) -> str:
        return self.pools[int(self.pool[node])].name_of(int(self.slot[node]))


def hostlist(names: list[str]) -> str:
    """A Slurm-style host list: ``h100-[0-3,7]`` from ``h100-0 .. h100-3, h100-7``; other names as
    they are, comma-separated."""
    groups: dict[str, list[tuple[int, int]]] = {}
    plain: list[str] = []
    for name in names:
        stem = name.rstrip("0123456789")
        digits = name[len(stem) :]
        if digits and (digits == "0" or not digits.startswith("0")):
            groups.setdefault(stem, []).append((int(digits), 0))
        else:
            plain.append(name)
    parts = []
    for stem, numbers in groups.items():
        values = sorted({n for n, _ in numbers})
        ranges: list[str] = []
        first = last = values[0]
        for v in values[1:]:
            if v == last + 1:
                last = v
                continue
            ranges.append(f"{first}-{last}" if last > first else str(first))
            first = last = v
        ranges.append(f"{first}-{last}" if last > first else str(first))
        parts.append(f"{stem}[{','.join(ranges)}]" if len(values) > 1 else f"{stem}{values[0]}")
    return ",".join(parts + plain)


def _unpickled(pools: list[NodePoolSpec], state: dict[str, object]) -> Nodes:
    # made whole, then given the pickled arrays: a mypyc class cannot be made without __init__
    nodes = Nodes(pools)
    for name, value in state.items():
        setattr(nodes, name, value)
    nodes.core = NodeState(nodes)  # on the arrays just set
    return nodes
