"""Kueue's quota tree: ClusterQueues and (hierarchical) cohorts, their quotas and usage per flavor.

Follows Kueue's resource-node arithmetic (pkg/cache/scheduler/resource_node.go, described in
https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/ and .../hierarchical_cohorts/):

- ``SubtreeQuota`` of a ClusterQueue is its ``nominalQuota``; of a cohort, its own quota plus each
  child's SubtreeQuota minus the child's *local quota*.
- *local quota* = SubtreeQuota - ``lendingLimit`` (0 when no lendingLimit): capacity a node keeps for
  itself and never lends to its cohort.
- Usage past a node's local quota is stored in its parent (so the cohort sees what its members borrow
  from the shared pool).
- ``available`` = local quota not used + what the parent has available, the latter capped by
  ``borrowingLimit``: stored in parent - used in parent + borrowingLimit. A root's available is its
  SubtreeQuota - Usage.
- ``potential_available`` (Kueue's PotentialAvailable, the "maximum capacity" of the flavor
  assigner's ExceedsMaxQuota check): the same with no usage anywhere, the largest workload the node
  could ever admit.

Quantities are thousandths of ``nvidia.com/gpu`` (integers); ``math.inf`` is "no limit".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

NO_LIMIT = math.inf


@dataclass
class QuotaNode:
    """A ClusterQueue (``is_queue``) or a cohort."""

    name: str
    is_queue: bool
    nominal: list[float]  # per flavor
    borrowing_limit: list[float]  # NO_LIMIT when unset
    lending_limit: list[float]  # NO_LIMIT when unset (everything can be lent)
    parent: int = -1
    weight: float = 1.0  # fairSharing.weight
    subtree: list[float] = field(default_factory=list)
    usage: list[float] = field(default_factory=list)
    children: list[int] = field(default_factory=list)


class QuotaTree:
    """Quotas and usage of every ClusterQueue and cohort, per flavor (pool)."""

    def __init__(self, nodes: list[QuotaNode], flavors: int) -> None:
        self.nodes = nodes
        self.flavors = flavors
        for i, node in enumerate(nodes):
            node.usage = [0.0] * flavors
            if node.parent >= 0:
                nodes[node.parent].children.append(i)
        for i, node in enumerate(nodes):
            if node.parent < 0:
                self._accumulate(i)
        self.heights = [self._height(i) for i in range(len(nodes))]
        self.version = [0] * len(nodes)  # bumped at the root of a tree whenever usage in it changes
        self.changes = 0  # usage changes anywhere

    def _accumulate(self, i: int) -> None:
        node = self.nodes[i]
        node.subtree = list(node.nominal)
        for child in node.children:
            self._accumulate(child)
            for f in range(self.flavors):
                node.subtree[f] += self.nodes[child].subtree[f] - self.local_quota(child, f)

    def set_quota(self, i: int, f: int, nominal: float, borrowing: float, lending: float) -> None:
        """Node ``i``'s quota of flavor ``f`` changed (an edited ClusterQueue or Cohort): the subtree
        quotas of its tree again, and what each cohort holds of its members' usage, from the
        ClusterQueues' own usage, which does not change (nothing admitted is evicted for it)."""
        node = self.nodes[i]
        node.nominal[f], node.borrowing_limit[f], node.lending_limit[f] = nominal, borrowing, lending
        self._refresh(self.root(i))

    def quotas(self) -> list[tuple[list[float], list[float], list[float]]]:
        """Every node's nominal quota, borrowing and lending limits, for ``restore``."""
        return [(list(n.nominal), list(n.borrowing_limit), list(n.lending_limit)) for n in self.nodes]

    def restore(self, quotas: list[tuple[list[float], list[float], list[float]]]) -> None:
        """The quotas ``quotas()`` gave, back (each tree recomputed once)."""
        for node, (nominal, borrowing, lending) in zip(self.nodes, quotas, strict=True):
            node.nominal, node.borrowing_limit, node.lending_limit = (
                list(nominal),
                list(borrowing),
                list(lending),
            )
        for i, node in enumerate(self.nodes):
            if node.parent < 0:
                self._refresh(i)

    def _refresh(self, root: int) -> None:
        """The subtree quotas of ``root``'s tree, and its cohorts' stored usage, after a quota change."""
        self._accumulate(root)
        self._stored_usage(root)
        self.changes += 1
        self.version[root] += 1

    def _stored_usage(self, i: int) -> None:
        """A cohort's usage: what passes each member's local quota (as add_usage stores it)."""
        node = self.nodes[i]
        if node.is_queue:
            return
        for child in node.children:
            self._stored_usage(child)
        node.usage = [
            sum(max(0.0, self.nodes[c].usage[f] - self.local_quota(c, f)) for c in node.children)
            for f in range(self.flavors)
        ]

    def root(self, i: int) -> int:
        while self.nodes[i].parent >= 0:
            i = self.nodes[i].parent
        return i

    def local_quota(self, i: int, f: int) -> float:
        node = self.nodes[i]
        lending = node.lending_limit[f]
        if lending == NO_LIMIT:
            return 0.0
        return max(0.0, node.subtree[f] - lending)

    def local_available(self, i: int, f: int) -> float:
        return max(0.0, self.local_quota(i, f) - self.nodes[i].usage[f])

    def available(self, i: int, f: int) -> float:
        """What node ``i`` can still admit on flavor ``f``, borrowing included."""
        node = self.nodes[i]
        if node.parent < 0:
            return node.subtree[f] - node.usage[f]
        parent_available = self.available(node.parent, f)
        borrowing = node.borrowing_limit[f]
        if borrowing != NO_LIMIT:
            local = self.local_quota(i, f)
            stored_in_parent = node.subtree[f] - local
            used_in_parent = max(0.0, node.usage[f] - local)
            parent_available = min(stored_in_parent - used_in_parent + borrowing, parent_available)
        return self.local_available(i, f) + parent_available

    def potential_available(self, i: int, f: int) -> float:
        """The most node ``i`` could ever admit on flavor ``f``, with nothing admitted anywhere: its
        local quota plus what its parent could lend, capped at SubtreeQuota + borrowingLimit
        (resource_node.go potentialAvailable)."""
        node = self.nodes[i]
        if node.parent < 0:
            return node.subtree[f]
        most = self.local_quota(i, f) + self.potential_available(node.parent, f)
        if node.borrowing_limit[f] != NO_LIMIT:
            most = min(node.subtree[f] + node.borrowing_limit[f], most)
        return most

    def add_usage(self, i: int, f: int, value: float, counted: bool = True) -> None:
        """Usage of ``value`` on flavor ``f`` at node ``i``, and what passes its local quota in its
        parent. ``counted=False`` for a what-if that is undone before anything reads the counters
        (``changes`` and ``version``, which say that admission may find something new)."""
        if counted:
            self.changes += 1
        local_available = self.local_available(i, f)
        node = self.nodes[i]
        node.usage[f] += value
        if node.parent >= 0 and value > local_available:
            self.add_usage(node.parent, f, value - local_available, counted)
        elif counted:
            self.version[self.root(i)] += 1

    def remove_usage(self, i: int, f: int, value: float, counted: bool = True) -> None:
        if counted:
            self.changes += 1
        node = self.nodes[i]
        stored_in_parent = node.usage[f] - self.local_quota(i, f)
        node.usage[f] -= value
        if stored_in_parent <= 0 or node.parent < 0:
            if counted:
                self.version[self.root(i)] += 1
            return
        self.remove_usage(node.parent, f, min(value, stored_in_parent), counted)

    def _height(self, i: int) -> int:
        """Distance from node ``i`` to its furthest leaf, a ClusterQueue counting as one level below
        its cohort (hierarchical_preemption.go getNodeHeight)."""
        node = self.nodes[i]
        cohorts = [child for child in node.children if not self.nodes[child].is_queue]
        return max([min(len(node.children), 1), *(self._height(child) + 1 for child in cohorts)])

    def borrow_height(self, i: int, f: int, value: float) -> int:
        """How far up ClusterQueue ``i`` must go for ``value`` more of flavor ``f``: 0 within its own
        quota (or with no cohort), else the height of the lowest cohort whose subtree holds it, or of
        the root when none does (hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits; the
        flavor assigner's borrowingLevel)."""
        node = self.nodes[i]
        if node.usage[f] + value <= node.subtree[f] + 1e-9 or node.parent < 0:
            return 0
        remaining = value - self.local_available(i, f)
        at = node.parent
        while at >= 0:
            cohort = self.nodes[at]
            if cohort.usage[f] + remaining <= cohort.subtree[f] + 1e-9:
                return self.heights[at]
            remaining -= self.local_available(at, f)
            at = cohort.parent
        return self.heights[self.root(i)]

    def borrowing(self, i: int, f: int) -> bool:
        """Usage above its own quota on ``f`` (Kueue's IsBorrowing)."""
        node = self.nodes[i]
        return node.usage[f] > node.subtree[f] + 1e-9

    def borrowed(self, i: int) -> float:
        """Quota used above the node's own, over all flavors."""
        node = self.nodes[i]
        total = 0.0
        for f in range(self.flavors):
            over = node.usage[f] - node.subtree[f]
            if over > 0:
                total += over
        return total

    def share(self, i: int, extra: float = 0.0, flavor: int = -1) -> float:
        """Weighted dominant resource share (fair_sharing.go): GPUs used above the node's quota over
        what its cohort can lend, / ``fairSharing.weight``; 0 when not borrowing. ``extra`` adds a
        workload's request on ``flavor`` first."""
        node = self.nodes[i]
        if node.parent < 0:
            return 0.0
        borrowed = 0.0
        for f in range(self.flavors):
            usage = node.usage[f] + (extra if f == flavor else 0.0)
            borrowed += max(0.0, usage - node.subtree[f])
        if borrowed <= 0:
            return 0.0
        lendable = sum(self.nodes[node.parent].subtree)
        if node.weight == 0:
            return math.inf
        return borrowed / max(lendable, 1e-9) * 1000.0 / node.weight
