"""Kueue's Topology Aware Scheduling: which nodes of a topology the pods of a workload go to.

As pkg/cache/scheduler/tas_flavor_snapshot.go (Kueue v0.19) finds a TopologyAssignment for one pod
set without slices or leaders, with the default feature gates (TASProfileMixed on, balanced
placement off): BestFit for ``required`` and ``preferred`` requests, LeastFreeCapacity for
``unconstrained`` ones.

- Each node holds as many more pods as its free capacity allows; a domain (a block, a rack, ...)
  the sum of its nodes (``fillInCounts``).
- At the requested level the domains are sorted by that capacity, most first (least first when
  unconstrained), then by their labels' values (``sortedDomains``). If the first holds every pod,
  the one that holds them most tightly is taken (``findBestFitDomain``). Else a ``required``
  request does not fit; a ``preferred`` one tries the level above, and at the top is spread over as
  many domains as it needs, in that order, the last one chosen tightly
  (``findLevelWithFitDomains``).
- Then, level by level down to the nodes, each chosen domain's pods go to its children the same
  way (``updateCountsToMinimumGeneric``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from gpuplan.sim.kubernetes.cluster import MILLI, Nodes
from gpuplan.sim.kubernetes.scheduler import PodRequest

Mode = Literal["required", "preferred", "unconstrained"]


@dataclass
class _Domain:
    values: tuple[str, ...]  # its labels' values from the top level down (Kueue's domain ID)
    children: list[_Domain] = field(default_factory=list)
    node: int = -1  # at the lowest level: the node's index
    capacity: int = 0  # pods it can still hold


def _sorted(domains: Sequence[_Domain], least_free: bool) -> list[_Domain]:
    return sorted(domains, key=lambda d: (d.capacity if least_free else -d.capacity, d.values))


def _best_fit(domains: Sequence[_Domain], needed: int) -> _Domain:
    """The first domain with the least capacity that holds ``needed``; the first if none does."""
    best = None
    for domain in domains:
        if domain.capacity >= needed and (best is None or domain.capacity < best.capacity):
            best = domain
    return domains[0] if best is None else best


def _to_minimum(domains: list[_Domain], count: int, best_fit: bool) -> list[tuple[_Domain, int]]:
    """``count`` pods over ``domains`` in their order, each taking all it holds, the last chosen
    tightly (BestFit); [] if they cannot hold them."""
    result: list[tuple[_Domain, int]] = []
    remaining = count
    for i, domain in enumerate(domains):
        if best_fit and domain.capacity >= remaining:
            domain = _best_fit(domains[i:], remaining)
        if domain.capacity >= remaining:
            result.append((domain, remaining))
            return result
        if domain.capacity > 0:
            result.append((domain, domain.capacity))
        remaining -= domain.capacity
    return []


class Topology:
    """The domains of a flavor's nodes, a tree from the top level down to the nodes."""

    def __init__(self, levels: Sequence[str], paths: Sequence[tuple[str, ...]]) -> None:
        """``paths[n]``: node n's label values, one per level, top first (the last, its hostname)."""
        self.levels = list(levels)
        self.per_level: list[list[_Domain]] = [[] for _ in levels]
        self.nodes: list[_Domain] = []
        index: dict[tuple[str, ...], _Domain] = {}
        for node, path in enumerate(paths):
            if len(path) != len(levels):
                raise ValueError(f"node {node} has {len(path)} topology labels, not {len(levels)}")
            parent: _Domain | None = None
            for level in range(len(levels)):
                values = tuple(path[: level + 1])
                domain = index.get(values)
                if domain is None:
                    domain = index[values] = _Domain(values)
                    self.per_level[level].append(domain)
                    if parent is not None:
                        parent.children.append(domain)
                parent = domain
            assert parent is not None
            if parent.node >= 0:
                raise ValueError(f"nodes {parent.node} and {node} have the same labels {path}")
            parent.node = node
            self.nodes.append(parent)

    def level(self, label: str) -> int:
        return self.levels.index(label)

    def _fill(self, capacity: Sequence[int]) -> None:
        for level in reversed(range(len(self.levels))):
            for domain in self.per_level[level]:
                if domain.node >= 0:
                    domain.capacity = max(int(capacity[domain.node]), 0)
                else:
                    domain.capacity = sum(child.capacity for child in domain.children)

    def _fit_level(self, level: int, count: int, mode: Mode) -> tuple[int, list[_Domain]]:
        """The level the pods fit at and the domains that hold them (findLevelWithFitDomains)."""
        unconstrained = mode == "unconstrained"
        ordered = _sorted(self.per_level[level], least_free=unconstrained)
        if not ordered:
            return level, []
        if unconstrained:  # LeastFreeCapacity: the emptiest-first domain that holds them all
            fitting = next((d for d in ordered if d.capacity >= count), None)
            if fitting is not None:
                return level, [fitting]
        top = ordered[0]
        if not unconstrained and top.capacity >= count:
            return level, [_best_fit(ordered, count)]
        if mode == "required":
            return level, []
        if level > 0 and not unconstrained:
            return self._fit_level(level - 1, count, mode)
        return level, [domain for domain, _ in _to_minimum(ordered, count, best_fit=not unconstrained)]

    def assign(
        self, capacity: Sequence[int], count: int, label: str | None, mode: Mode
    ) -> dict[int, int] | None:
        """Pods per node for ``count`` pods, each node holding ``capacity[node]`` more, all within
        one domain at ``label``'s level (``required``), preferably (``preferred``), or anywhere
        (``unconstrained``, at the nodes' level); None when they do not fit. Below the level they
        fit at, the children of the domains chosen are taken together, level by level, as
        findTopologyAssignment descends (the pods' count as a whole, not per domain)."""
        self._fill(capacity)
        lowest = len(self.levels) - 1
        start = lowest if label is None or mode == "unconstrained" else self.level(label)
        level, chosen = self._fit_level(start, count, mode)
        best_fit = mode != "unconstrained"
        placed = _to_minimum(chosen, count, best_fit)
        for _ in range(level, lowest):
            children = [child for domain, _ in placed for child in domain.children]
            placed = _to_minimum(_sorted(children, least_free=not best_fit), count, best_fit)
        if not placed:
            return None
        return {domain.node: pods for domain, pods in placed}


def tas_flavors(
    flavors: tuple[int, ...],
    request: tuple[Mode, str | None] | None,
    topologies: Sequence[Topology | None],
    queue_flavors: tuple[int, ...],
) -> tuple[int, ...]:
    """Of ``flavors``, those a workload may use as Topology Aware Scheduling matches them
    (tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS): a workload asking TAS (``request``:
    mode and level) only TAS flavors having its level; one that does not, no TAS flavor, unless
    its ClusterQueue (``queue_flavors``) has only TAS flavors (TAS implied). ``topologies[f]`` is
    flavor f's Topology (None: no TAS; flavors past the list have none)."""

    def topology(f: int) -> Topology | None:
        return topologies[f] if f < len(topologies) else None

    tas_only = all(topology(f) is not None for f in queue_flavors)
    kept = []
    for f in flavors:
        found = topology(f)
        if request is not None:
            if found is None or (request[1] is not None and request[1] not in found.levels):
                continue
        elif found is not None and not tas_only:
            continue
        kept.append(f)
    return tuple(kept)


def pod_capacity(nodes: Nodes, pod: PodRequest, first: int, stop: int) -> list[int]:
    """How many more of ``pod`` each of nodes ``first:stop`` holds, by its free GPUs (or shares of
    one), CPU and memory; 0 on a node not up."""
    if pod.milli >= MILLI:
        capacity = (
            nodes.whole_free[first:stop] // max(pod.gpus, 1) if pod.gpus else np.full(stop - first, 1 << 30)
        )
    else:  # shares of one GPU: as many as each GPU's free thousandths hold
        free = np.maximum(nodes.gpu_free[first:stop], 0)
        capacity = (free // max(pod.milli, 1)).sum(axis=1)
    if pod.cpu > 0:
        capacity = np.minimum(capacity, nodes.cpu_free[first:stop] // pod.cpu)
    if pod.mem > 0:
        capacity = np.minimum(capacity, nodes.mem_free[first:stop] // pod.mem)
    counts: list[int] = np.where(nodes.up[first:stop], capacity, 0).tolist()
    return counts
