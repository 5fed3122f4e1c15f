"""Cluster autoscaler decisions for node pools (OKE node pools = autoscaler node groups).

Following the cluster autoscaler FAQ (kubernetes/autoscaler, cluster-autoscaler/FAQ.md):

- Scale-up: every ``--scan-interval`` (10 s), pods that kube-scheduler could not place are packed,
  in queue order, onto nodes the pool is already provisioning and then onto new template nodes of the
  first node pool whose nodes would fit them (the ``binpacking`` estimator; pools are tried in the
  scenario's order, like the ``priority`` expander), up to ``maxNodes``. A new node is Ready after
  the pool's provisioning delay (bare-metal GPU shapes take minutes).
- Scale-down: a node whose GPU requests are below ``--scale-down-utilization-threshold`` (0.5) of
  its GPUs, that runs no Job pod (Job pods are treated as ``safe-to-evict: false``) and whose pods
  fit elsewhere, is *unneeded*; after ``--scale-down-unneeded-time`` (10 min) unneeded, and not within
  ``--scale-down-delay-after-add`` (10 min) of a scale-up, it is removed (never below ``minNodes``).
  Empty nodes go in bulk; a node with pods goes one per scan, its Deployment pods recreated elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gpuplan.sim.kubernetes.cluster import MILLI, Nodes, free_at_start
from gpuplan.sim.kubernetes.scheduler import PodRequest


class _TemplateNode:
    """A node that does not exist yet, as the estimator packs pods onto it."""

    __slots__ = ("cpu", "gpu", "mem")

    def __init__(self, gpus: int, cpu: int, mem: int) -> None:
        self.gpu = [MILLI] * gpus
        self.cpu = free_at_start(cpu)  # a pool's unknown CPU or memory is not checked
        self.mem = free_at_start(mem)

    def take(self, pod: PodRequest) -> bool:
        if self.cpu < pod.cpu or self.mem < pod.mem:
            return False
        if pod.milli >= MILLI:
            free = [g for g, left in enumerate(self.gpu) if left == MILLI]
            if len(free) < pod.gpus:
                return False
            for g in free[: pod.gpus]:
                self.gpu[g] = 0
        elif pod.milli > 0:
            fitting = [(left, g) for g, left in enumerate(self.gpu) if left >= pod.milli]
            if not fitting:
                return False
            self.gpu[min(fitting)[1]] -= pod.milli
        self.cpu -= pod.cpu
        self.mem -= pod.mem
        return True


def scale_up(nodes: Nodes, provisioning: list[int], pending: Iterable[PodRequest]) -> dict[int, int]:
    """New nodes to launch per pool for the ``pending`` (unschedulable) pods; ``provisioning`` is the
    number of nodes each pool is already launching."""
    pools = nodes.pools
    up = nodes.nodes_up()
    room = [max(0, p.max_nodes - int(up[i]) - provisioning[i]) for i, p in enumerate(pools)]
    opened: list[list[_TemplateNode]] = [
        [_TemplateNode(p.gpus_per_node, p.cpu_milli, p.memory_mib) for _ in range(provisioning[i])]
        for i, p in enumerate(pools)
    ]
    fresh = [0] * len(pools)
    for pod in pending:
        for i, pool in enumerate(pools):
            if not pod.may_use(i):
                continue
            if any(node.take(pod) for node in opened[i]):
                break
            if fresh[i] < room[i]:
                template = _TemplateNode(pool.gpus_per_node, pool.cpu_milli, pool.memory_mib)
                if template.take(pod):
                    opened[i].append(template)
                    fresh[i] += 1
                    break
    return {i: count for i, count in enumerate(fresh) if count}


def scale_down_candidates(nodes: Nodes, threshold: float, autoscaled: np.ndarray) -> np.ndarray:
    """Nodes the autoscaler considers unneeded now (before the fit-elsewhere check)."""
    used = nodes.gpus_used()
    alloc = np.maximum(nodes.gpus.astype(np.int64) * MILLI, 1)
    return np.flatnonzero(
        nodes.up & autoscaled[nodes.pool] & (nodes.batch_pods_on == 0) & (used < threshold * alloc)
    )
