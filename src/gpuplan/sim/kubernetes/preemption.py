"""kube-scheduler's DefaultPreemption (the PostFilter plugin) for a pod no node can take.

For each node, the pod's lower-priority victims are removed lowest priority first (then the most
recently started) until the pod fits; the node chosen is the one whose victims have the lowest highest
priority, then the fewest victims, then the lowest number (kube-scheduler's ``pickOneNodeForPreemption``
ranks by highest victim priority, sum of priorities, count, ...; ties here go to the lowest node).
Victims are whole Jobs: a distributed job stops when one of its pods is evicted. Job pods are the
only victims here (inference replicas have the highest PriorityClass in practice).

``PodIndex`` keeps, per node, the jobs with pods on it and, per priority value, the GPU, CPU and
memory their pods use, so nodes where preemption cannot help are ruled out with array arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuplan.sim.kubernetes.cluster import MILLI, Nodes
from gpuplan.sim.kubernetes.scheduler import PodRequest
from gpuplan.workload.jobtable import Int64


class PodIndex:
    """Jobs per node, and resources used per node by each priority value a preemptor can evict.

    A pod is a victim only of a higher-priority pod, so the pods at or above the highest priority
    any pod (job or replica) has are never looked at and are not kept: with one priority, nothing is.
    """

    def __init__(self, nodes: int, priorities: list[int], preemptor_priorities: list[int]) -> None:
        self.values = sorted(set(priorities))
        self.lowest = self.values[0] if self.values else 0  # no pod at or below this can preempt
        highest = max(preemptor_priorities, default=self.lowest)
        self.jobs_on: list[dict[int, int]] = [{} for _ in range(nodes)]  # node -> {job: pods}
        kept = [v for v in self.values if v < highest]
        self.gpu: dict[int, Int64] = {v: np.zeros(nodes, np.int64) for v in kept}
        self.cpu: dict[int, Int64] = {v: np.zeros(nodes, np.int64) for v in kept}
        self.mem: dict[int, Int64] = {v: np.zeros(nodes, np.int64) for v in kept}

    def add(self, node: int, job: int, priority: int, pod: PodRequest) -> None:
        gpu = self.gpu.get(priority)
        if gpu is None:
            return  # no pod can preempt it
        on = self.jobs_on[node]
        on[job] = on.get(job, 0) + 1
        gpu[node] += pod.gpu_milli_total
        self.cpu[priority][node] += pod.cpu
        self.mem[priority][node] += pod.mem

    def remove(self, node: int, job: int, priority: int, pod: PodRequest) -> None:
        gpu = self.gpu.get(priority)
        if gpu is None:
            return
        on = self.jobs_on[node]
        on[job] -= 1
        if not on[job]:
            del on[job]
        gpu[node] -= pod.gpu_milli_total
        self.cpu[priority][node] -= pod.cpu
        self.mem[priority][node] -= pod.mem

    def could_fit(self, nodes: Nodes, pod: PodRequest, priority: int) -> np.ndarray:
        """Nodes where removing every lower-priority pod would leave enough GPU, CPU and memory (a
        necessary condition; the exact check follows per node)."""
        lower = [v for v in self.values if v < priority]
        if not lower:
            return np.zeros(0, np.int64)
        gpu = nodes.gpu_free_total + sum(self.gpu[v] for v in lower)
        cpu = nodes.cpu_free + sum(self.cpu[v] for v in lower)
        mem = nodes.mem_free + sum(self.mem[v] for v in lower)
        ok = nodes.up & (gpu >= pod.gpu_milli_total) & (cpu >= pod.cpu) & (mem >= pod.mem)
        if pod.pool >= 0:
            ok &= nodes.pool == pod.pool
        if pod.pools:
            ok &= np.isin(nodes.pool, pod.pools)
        return np.flatnonzero(ok)


def choose_victims(
    nodes: Nodes,
    index: PodIndex,
    pod: PodRequest,
    priority: int,
    job_priority: Callable[[int], int],
    freed_on: Callable[[int, int], tuple[list[int], int, int]],
    started: Callable[[int], float],
) -> tuple[int, list[int]]:
    """The node to preempt on and the jobs to evict there, or (-1, []) when preemption cannot help.

    ``freed_on(job, node)`` gives the GPUs (bit positions), CPU and memory a job's pods free on a node,
    with each GPU bit repeated per pod share; ``started(job)`` orders equal-priority victims."""
    best: tuple[tuple[int, int, int], int, list[int]] | None = None
    for node in index.could_fit(nodes, pod, priority).tolist():
        victims = sorted(
            (j for j in index.jobs_on[node] if job_priority(j) < priority),
            key=lambda j: (job_priority(j), -started(j), -j),
        )
        row = nodes.gpu_free[node].copy()
        cpu, mem = int(nodes.cpu_free[node]), int(nodes.mem_free[node])
        chosen: list[int] = []
        for victim in victims:
            gpus, vcpu, vmem = freed_on(victim, node)
            for g, share in zip(gpus[::2], gpus[1::2], strict=True):
                row[g] += share
            cpu, mem = cpu + vcpu, mem + vmem
            chosen.append(victim)
            if cpu < pod.cpu or mem < pod.mem:
                continue
            fits = (
                int(np.count_nonzero(row == MILLI)) >= pod.gpus
                if pod.milli >= MILLI
                else int(row.max()) >= pod.milli
            )
            if fits:
                key = (max(job_priority(v) for v in chosen), len(chosen), node)
                if best is None or key < best[0]:
                    best = (key, node, list(chosen))
                break
    return (-1, []) if best is None else (best[1], best[2])
