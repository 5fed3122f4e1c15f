"""Kueue admission: LocalQueues -> ClusterQueues, an admission cycle, flavor assignment and preemption.

One cycle (as Kueue's ``scheduler.schedule()``): (1) take each ClusterQueue's head, (2) assign a
flavor to it -- the first of the ClusterQueue's flavors whose quota fits, borrowing from the cohort
if needed (``flavorFungibility`` defaults: whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor),
else the first where preemption would make room --, (3) order the heads (classical: those that need
not borrow first, then priority, then queue time; with fair sharing: lowest weighted share after
admission first), (4) admit or preempt in that order against the updated quota, (5) repeat while
anything was admitted. Workloads are ordered in a ClusterQueue by priority, then queue timestamp
(creation, or eviction after a waitForPodsReady timeout), then job id. ``StrictFIFO``: a head that
cannot be admitted blocks the ones behind it; ``BestEffortFIFO`` (the default): it does not.

A workload is one batch Job: all its pods' GPUs are admitted together (all-or-nothing quota). Only
``nvidia.com/gpu`` is a covered resource. Preemption follows
https://kueue.sigs.k8s.io/docs/concepts/preemption/ ("Classic Preemption" and "Fair Sharing").
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, TypeVar

from gpuplan.sim.kubernetes.quota import NO_LIMIT, QuotaTree

# Why a workload is pending: Kueue's QuotaReserved=False reasons (apis/kueue/v1beta2/workload_types.go,
# set by pkg/scheduler/scheduler.go: schedule and waitForPodsReadyIfNeeded). WaitingForQuota: tried and
# its ClusterQueue (with what it may borrow) lacks unused quota; WaitingForPodsReady:
# waitForPodsReady.blockAdmission holds admission until the admitted workloads' pods are ready;
# PendingEvaluation: not tried yet (behind a StrictFIFO head).
WAITING_FOR_QUOTA = "WaitingForQuota"
# its ClusterQueue's stopPolicy held it (workload_controller.go: QuotaReserved=False "Suspended",
# "ClusterQueue ... is stopped")
SUSPENDED = "Suspended"
WAITING_FOR_PODS_READY = "WaitingForPodsReady"
PENDING_EVALUATION = "PendingEvaluation"

T = TypeVar("T")


class Mode(IntEnum):
    """Flavor assignment outcome, worst to best (Kueue's flavorassigner preemptionMode):
    NO_CANDIDATES is noPreemptionCandidates, a flavor where preemption was simulated and found
    nothing to preempt."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    FIT = 3


# evictions of one workload by Kueue at one instant after which it may not preempt until a later one
REPREEMPTIONS_PER_INSTANT = 2


@dataclass(frozen=True)
class QueuePolicy:
    """A ClusterQueue's queueing strategy, flavors (in order) and preemption policies."""

    node: int  # index in the quota tree
    strict_fifo: bool
    flavors: tuple[int, ...]
    within_cluster_queue: str = "Never"  # Never | LowerPriority | LowerOrNewerEqualPriority
    reclaim_within_cohort: str = "Never"  # Never | LowerPriority | Any
    borrow_within_cohort: str = "Never"  # Never | LowerPriority
    max_priority_threshold: int | None = None
    # flavorFungibility (whenCanBorrow, whenCanPreempt, preference), with Kueue's defaults
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str = "BorrowingOverPreemption"

    @property
    def preempts(self) -> bool:
        return (self.within_cluster_queue, self.reclaim_within_cohort, self.borrow_within_cohort) != (
            "Never",
            "Never",
            "Never",
        )


class Decision:
    """A workload's flavor assignment: its mode, the workloads it preempts and, under Topology
    Aware Scheduling, the (node, pods) its pods go to ((): no TAS). Never changed once made.
    (A plain class, like ``_Candidate``: one is made per try, and compiled by mypyc its
    ``__init__`` is C, where a dataclass's stays Python.)"""

    def __init__(
        self,
        job: int,
        queue: int,
        flavor: int,
        mode: Mode,
        victims: tuple[int, ...] = (),
        placement: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.job = job
        self.queue = queue
        self.flavor = flavor
        self.mode = mode
        self.victims = victims
        self.placement = placement


# Where a TAS workload's pods fit on a flavor now: (node, pods) pairs, () when the flavor or the
# workload does not use TAS, None when the pods do not fit the topology.
Placement = Callable[[int, int], tuple[tuple[int, int], ...] | None]


# How a candidate may be preempted (classical/hierarchical_preemption.go preemptionVariant) and the
# reason its eviction gets (the Preempted condition's reason, apis/kueue/v1beta2 workload_types.go).
WITHIN_CLUSTER_QUEUE, HIERARCHICAL_RECLAIM, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(4)
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
PREEMPTION_REASON = {
    WITHIN_CLUSTER_QUEUE: IN_CLUSTER_QUEUE,
    HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


class _Candidate:
    """A workload classical preemption may take: how it may be taken, and the cohort below which
    its queues must use more than their quota (-1: the preemptor's own ClusterQueue)."""

    def __init__(self, victim: int, variant: int, lca: int) -> None:
        self.victim = victim
        self.variant = variant
        self.lca = lca

    @property
    def reason(self) -> str:
        return PREEMPTION_REASON[self.variant]


# which candidates a preemption policy accepts: only priorities below a bound (None: any), and a
# test of each (None: all)
_Rule = tuple[int | None, Callable[[int], bool] | None]


# A flavor's rank in the flavor assigner (flavorassigner.go granularMode): its preemptionMode, worst
# to best, and its borrowingLevel (0: within the ClusterQueue's quota; higher: from further up).
_NO_FIT, _NO_CANDIDATES, _PREEMPT, _RECLAIM, _FIT = range(5)
_Rank = tuple[int, float]
_WORST: _Rank = (_NO_FIT, math.inf)


def _seconds(pairs: Iterable[tuple[Any, T]]) -> Iterator[T]:
    """The second items of ``pairs``, lazily (a generator function: mypyc makes a list of a
    generator expression that is returned, and a preemption search takes only what it needs)."""
    for _, second in pairs:
        yield second


def _preferred(a: _Rank, b: _Rank, preference: str) -> bool:
    """Whether rank ``a`` beats ``b`` (flavorassigner.go isPreferred): NoFit never; a flavor without
    preemption candidates below any viable one; then by mode and borrowing level, in the order
    ``flavorFungibility.preference`` gives."""
    if a[0] == _NO_FIT:
        return False
    if b[0] == _NO_FIT:
        return True
    if (a[0] == _NO_CANDIDATES) != (b[0] == _NO_CANDIDATES):
        return a[0] != _NO_CANDIDATES
    if preference == "PreemptionOverBorrowing":
        return a[1] < b[1] if a[1] != b[1] else a[0] > b[0]
    return a[0] > b[0] if a[0] != b[0] else a[1] < b[1]  # BorrowingOverPreemption


def _try_next_flavor(rank: _Rank, policy: QueuePolicy) -> bool:
    """Whether the search goes on past a flavor of ``rank`` (flavorassigner.go shouldTryNextFlavor):
    always past one that needs preemption but has no candidates; past one that preempts when
    whenCanPreempt is TryNextFlavor, and past one that borrows when whenCanBorrow is."""
    if rank[0] in (_NO_FIT, _NO_CANDIDATES):
        return True
    if rank[0] in (_PREEMPT, _RECLAIM) and policy.when_can_preempt == "TryNextFlavor":
        return True
    return rank[1] > 0 and policy.when_can_borrow == "TryNextFlavor"


def _above_threshold(candidate: int, incoming: int, threshold: int | None) -> bool:
    """A candidate that may be reclaimed only without borrowing (hierarchical_preemption.go
    isAboveBorrowingThreshold): not below the preemptor's priority, or above
    borrowWithinCohort.maxPriorityThreshold."""
    if candidate >= incoming:
        return True
    return threshold is not None and candidate > threshold


@dataclass
class _Marks:
    """When something held pending workloads: the last time, and the one before that instant (a
    workload admitted at ``now`` was held only by what held it before ``now``)."""

    last: float = -math.inf
    before: float = -math.inf

    def mark(self, now: float) -> None:
        if self.last < now:
            self.before, self.last = self.last, now

    def latest_before(self, until: float) -> float:
        return self.last if self.last < until else self.before


@dataclass
class _Queue:
    policy: QueuePolicy
    # pending workloads by request size: a heap of (-priority, timestamp, job id) per size
    classes: dict[float, list[tuple[int, float, int]]] = field(default_factory=dict)
    admitted: dict[int, dict[int, None]] = field(default_factory=dict)  # priority -> jobs, by admission
    seen_version: int = -1
    stale: bool = True
    waiting: int = 0  # pending workloads (in ``classes``)

    def pending(self) -> int:
        return self.waiting


class Kueue:
    """Pending and admitted workloads of every ClusterQueue, and the quota they use."""

    def __init__(
        self,
        tree: QuotaTree,
        policies: list[QueuePolicy],
        request: list[float],
        priority: list[int],
        fair_sharing: bool = False,
        strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
        flavors_of_job: list[tuple[int, ...]] | None = None,
        placement: Placement | None = None,
    ) -> None:
        self.tree = tree
        self.placement = placement
        self.queues = [_Queue(policy) for policy in policies]
        self.request = request  # per job: thousandths of GPUs
        # flavors whose nodes can hold the job's pods (its node selector / affinity); None: any
        self.flavors_of_job = flavors_of_job
        self.reclaims = 0  # workloads of other ClusterQueues preempted to give quota back
        self.within_queue_preemptions = 0
        self.priority = priority
        self.fair_sharing = fair_sharing
        self.strategies = strategies
        self.timestamp: dict[int, float] = {}
        self.queue_of: list[int] = [-1] * len(request)  # per job: its ClusterQueue once pushed
        self.flavor_of: list[int] = [-1] * len(request)  # per job: its flavor while admitted, else -1
        self.admit_seq: dict[int, int] = {}  # admission order (preemption takes the newest first)
        self.admissions = 0
        self.borrowing_admissions = 0  # admissions that took quota beyond the ClusterQueue's nominal
        self.roots = [tree.root(policy.node) for policy in policies]
        self.queue_at = {policy.node: q for q, policy in enumerate(policies)}  # quota-tree node -> queue
        self.preemption_reasons: dict[int, str] = {}  # victim -> the reason of its last preemption
        self.pushes = 0
        self.settled: tuple[int, int] | None = None  # (pushes, quota changes) when nothing could be admitted
        self.peak_borrowed = [0.0] * len(policies)
        # when a workload was tried and lacked quota: per (ClusterQueue, request) for BestEffortFIFO,
        # as Kueue gives every equivalent workload the head's reason (SchedulingEquivalenceHashing,
        # pkg/cache/queue/cluster_queue.go: requeueIfNotPresent); per workload for a StrictFIFO head
        self.no_quota: dict[tuple[int, float] | int, _Marks] = {}
        self.blocked_marks = _Marks()  # when blockAdmission held workloads pending
        self.stopped = [False] * len(policies)  # stopPolicy Hold or HoldAndDrain: nothing admitted
        self.dirty: set[int] = set(range(len(policies)))  # queues whose usage or pending changed
        self.stopped_marks = [_Marks() for _ in policies]  # when a stopped queue held workloads
        self.now = 0.0
        # per workload, its preemptions by Kueue this instant (see schedule)
        self.evicted_now: dict[int, int] = {}

    # -- queue manager ---------------------------------------------------------------------------

    def push(self, job: int, queue: int, timestamp: float) -> None:
        q = self.queues[queue]
        heapq.heappush(q.classes.setdefault(self.request[job], []), (-self.priority[job], timestamp, job))
        q.waiting += 1
        self.dirty.add(queue)
        self.timestamp[job] = timestamp
        self.queue_of[job] = queue
        q.stale = True
        self.pushes += 1

    def pending(self) -> int:
        return sum(q.pending() for q in self.queues)

    def held_reason(self, job: int, since: float, until: float = math.inf) -> str:
        """Why ``job``, pending from ``since``, was held before ``until``: WAITING_FOR_QUOTA if it was
        tried and lacked quota; else WAITING_FOR_PODS_READY if blockAdmission held admission (Kueue
        gives that reason to a workload that fits but must wait); "" when nothing did (it was admitted
        when first tried, or never tried)."""
        queue = self.queue_of[job]
        marks = self.no_quota.get(self._no_quota_key(job, queue))
        quota = marks.latest_before(until) if marks is not None else -math.inf
        if self.stopped_marks[queue].latest_before(until) >= max(since, quota):
            return SUSPENDED  # the later of the two held it last
        if quota >= since:
            return WAITING_FOR_QUOTA
        return WAITING_FOR_PODS_READY if self.blocked_marks.latest_before(until) >= since else ""

    def set_stopped(self, queue: int, stopped: bool) -> list[int]:
        """A ClusterQueue's stopPolicy changed (stopped: Hold or HoldAndDrain); its admitted
        workloads, for the caller to evict under HoldAndDrain."""
        self.stopped[queue] = stopped
        self.queues[queue].stale = True
        self.tree.changes += 1  # admission may find something new
        return [job for jobs in self.queues[queue].admitted.values() for job in jobs]

    def _no_quota_key(self, job: int, queue: int) -> tuple[int, float] | int:
        return job if self.queues[queue].policy.strict_fifo else (queue, self.request[job])

    def _no_fit(self, job: int, queue: int) -> None:
        key = self._no_quota_key(job, queue)
        marks = self.no_quota.get(key)
        if marks is None:
            marks = self.no_quota[key] = _Marks()
        marks.mark(self.now)

    def release(self, job: int) -> None:
        """A workload finished or was evicted: its quota goes back."""
        queue = self.queue_of[job]
        self.dirty.add(queue)
        flavor = self.flavor_of[job]
        self.flavor_of[job] = -1
        self.queues[queue].admitted[self.priority[job]].pop(job, None)
        self.tree.remove_usage(self.queues[queue].policy.node, flavor, self.request[job])

    # -- flavor assignment -------------------------------------------------------------------------

    def _fits(self, node: int, flavor: int, request: float, allow_borrow: bool = True) -> bool:
        tree = self.tree
        if tree.available(node, flavor) + 1e-9 < request:
            return False
        return (
            allow_borrow
            or tree.nodes[node].usage[flavor] + request <= tree.nodes[node].subtree[flavor] + 1e-9
        )

    def _assign(self, job: int, queue: int) -> Decision:
        """The flavor for ``job``, as Kueue's flavor assigner searches them (flavorassigner.go
        findFlavorForPodSets): in the ClusterQueue's order, each flavor's mode (Fit, Preempt or
        reclaim, noPreemptionCandidates, NoFit) and borrowing level; the search stops at a flavor
        that fits without borrowing, or where ``flavorFungibility`` says it may
        (shouldTryNextFlavor), else takes the best flavor seen (isPreferred)."""
        q = self.queues[queue]
        allowed = None if self.flavors_of_job is None else self.flavors_of_job[job]
        flavors = [f for f in q.policy.flavors if allowed is None or f in allowed]
        if len(flavors) == 1:  # nothing to compare: no borrowing level, no search
            return self._flavor_mode(job, queue, flavors[0], ranked=False)[0]
        best, best_rank = Decision(job, queue, -1, Mode.NO_FIT), _WORST
        for flavor in flavors:
            decision, rank = self._flavor_mode(job, queue, flavor)
            if decision.mode == Mode.NO_FIT:
                continue
            if not _try_next_flavor(rank, q.policy):
                return decision
            if _preferred(rank, best_rank, q.policy.preference):
                best, best_rank = decision, rank
        return best

    def _flavor_mode(self, job: int, queue: int, flavor: int, ranked: bool = True) -> tuple[Decision, _Rank]:
        """The decision on one flavor and its rank (preemption mode, borrowing level), as
        flavorassigner.go fitsResourceQuota and the preemption oracle (preemption_oracle.go
        SimulatePreemption: Preempt when a target is in the own ClusterQueue, else Reclaim, with the
        borrowing level once the targets are gone)."""
        policy = self.queues[queue].policy
        node, request = policy.node, self.request[job]
        if self._fits(node, flavor, request):
            placed = () if self.placement is None else self.placement(job, flavor)
            if placed is None:  # the quota fits, the topology does not (TAS: the flavor does not fit)
                return Decision(job, queue, flavor, Mode.NO_FIT), _WORST
            rank = (_FIT, self.tree.borrow_height(node, flavor, request) if ranked else 0)
            return Decision(job, queue, flavor, Mode.FIT, placement=placed), rank
        if not self._may_preempt(policy, flavor, request):
            return Decision(job, queue, flavor, Mode.NO_FIT), _WORST
        victims = self._preemption_targets(job, queue, flavor) if policy.preempts else []
        if not victims:
            height = self.tree.borrow_height(node, flavor, request) if ranked else 0
            return Decision(job, queue, flavor, Mode.NO_CANDIDATES), (_NO_CANDIDATES, height)
        height = 0
        if ranked:
            for victim in victims:
                self._take_out(victim, flavor)
            height = self.tree.borrow_height(node, flavor, request)
            for victim in victims:
                self._put_back(victim, flavor)
        kind = _PREEMPT if any(self.queue_of[v] == queue for v in victims) else _RECLAIM
        return Decision(job, queue, flavor, Mode.PREEMPT, tuple(victims)), (kind, height)

    def _may_preempt(self, policy: QueuePolicy, flavor: int, request: float) -> bool:
        """Whether Kueue simulates preemption for ``request`` on ``flavor`` when it does not fit
        (flavorassigner.go fitsResourceQuota): not above the most the ClusterQueue could ever get;
        and within its nominal quota, or reclaimable lower in a cohort tree
        (FindHeightOfLowestSubtreeThatFits), or allowed to preempt while borrowing
        (borrowWithinCohort, or fair sharing with reclaimWithinCohort)."""
        tree = self.tree
        node = tree.nodes[policy.node]
        if request > tree.potential_available(policy.node, flavor) + 1e-9:
            return False  # ExceedsMaxQuota
        if request <= node.subtree[flavor] + 1e-9:
            return True
        if policy.borrow_within_cohort != "Never" or (
            self.fair_sharing and policy.reclaim_within_cohort != "Never"
        ):
            return True
        # the lowest cohort that holds what the ClusterQueue would borrow, if it is not the root
        remaining = request - tree.local_available(policy.node, flavor)
        at = node.parent
        while at >= 0:
            cohort = tree.nodes[at]
            if cohort.usage[flavor] + remaining <= cohort.subtree[flavor] + 1e-9:
                return cohort.parent >= 0
            remaining -= tree.local_available(at, flavor)
            at = cohort.parent
        return False

    def _reservation(self, decision: Decision) -> float:
        """The quota a head that must preempt, but found nothing to preempt, keeps from the rest of
        the admission cycle (scheduler.go reserveCapacityForUnreclaimablePreempt and
        quotaResourcesToReserve): 0 when reclaimWithinCohort is Any (it can always reclaim); else
        up to its nominal quota, or, when it would borrow, up to its borrowingLimit."""
        policy = self.queues[decision.queue].policy
        if policy.reclaim_within_cohort == "Any":
            return 0.0
        node, flavor = self.tree.nodes[policy.node], decision.flavor
        request, usage = self.request[decision.job], node.usage[flavor]
        if usage + request > node.subtree[flavor] + 1e-9:  # it would borrow
            limit = node.borrowing_limit[flavor]
            return request if limit == NO_LIMIT else min(request, node.subtree[flavor] + limit - usage)
        return max(0.0, min(request, node.subtree[flavor] - usage))

    # -- preemption --------------------------------------------------------------------------------

    def _admitted_on(
        self, queue: int, flavor: int, rule: _Rule, other: bool
    ) -> Iterator[tuple[tuple[bool, int, int], int]]:
        """A ClusterQueue's admitted workloads on ``flavor`` that ``rule`` (``_rule``) accepts, in
        preemption order (lowest priority first, most recently admitted first), lazily, with their
        order key."""
        below, keep = rule
        buckets = self.queues[queue].admitted
        for priority in sorted(buckets):
            if below is not None and priority >= below:
                break
            for victim in reversed(buckets[priority]):
                if self.flavor_of[victim] == flavor and (keep is None or keep(victim)):
                    yield (not other, priority, -self.admit_seq[victim]), victim

    def _candidates(self, job: int, queue: int, flavor: int) -> Iterator[int]:
        """Fair sharing's candidates on ``flavor``, lazily: other (borrowing) ClusterQueues' workloads
        that reclaimWithinCohort lets ``job`` preempt, then its own that withinClusterQueue does,
        each lowest priority first, most recently admitted first."""
        policy = self.queues[queue].policy
        streams = []
        if policy.reclaim_within_cohort != "Never":
            root, rule = self.roots[queue], self._rule(job, policy.reclaim_within_cohort)
            for other, q in enumerate(self.queues):
                borrowing = self.tree.borrowing(q.policy.node, flavor)
                if other != queue and self.roots[other] == root and borrowing:
                    streams.append(self._admitted_on(other, flavor, rule, True))
        if policy.within_cluster_queue != "Never":
            streams.append(
                self._admitted_on(queue, flavor, self._rule(job, policy.within_cluster_queue), False)
            )
        return _seconds(heapq.merge(*streams))

    def _rule(self, job: int, policy: str) -> _Rule:
        """Which candidates preemption policy ``policy`` lets ``job`` preempt (Kueue's
        preemption/common/preemption_policy.go SatisfiesPreemptionPolicy): LowerPriority, a lower
        priority; LowerOrNewerEqualPriority, that or an equal priority queued after ``job``; Any,
        all. As (only priorities below this, else None; a test of each candidate, else None)."""
        priority, timestamp = self.priority[job], self.timestamp[job]
        if policy == "LowerPriority":
            return priority, None
        if policy == "LowerOrNewerEqualPriority":
            return priority + 1, lambda v: self.priority[v] < priority or self.timestamp[v] > timestamp
        return None, None

    def _over_nominal_queues(self, cohort: int, skip: int, flavor: int) -> Iterator[int]:
        """The ClusterQueues under ``cohort`` (not under its child ``skip``) using more than their
        quota on ``flavor``, through child cohorts that do too (classical/hierarchical_preemption.go
        collectCandidatesInSubtree)."""
        tree = self.tree
        for child in tree.nodes[cohort].children:
            if child == skip or not tree.borrowing(child, flavor):
                continue
            if tree.nodes[child].is_queue:
                yield self.queue_at[child]
            else:
                yield from self._over_nominal_queues(child, -1, flavor)

    def _classical_candidates(
        self, job: int, queue: int, flavor: int
    ) -> tuple[Callable[[bool], Iterator[_Candidate]], bool, bool]:
        """Classical preemption's candidates for ``job`` on ``flavor``, in Kueue's order
        (classical/candidate_generator.go NewCandidateIterator): other ClusterQueues' over which it
        has a hierarchical advantage first, then other ClusterQueues' by priority, then its own;
        each group lowest priority first, most recently admitted first (common/ordering.go
        CandidatesOrdering). Returns a maker of that sequence (made lazily: an attempt takes only as
        many as it needs), whether any candidate is another queue's, and whether any has the
        advantage."""
        tree = self.tree
        policy = self.queues[queue].policy
        node, request, priority = policy.node, self.request[job], self.priority[job]
        sources: list[tuple[int, int, bool]] = []  # other queues: (queue, common cohort, advantage)
        cohort = tree.nodes[node].parent
        if cohort >= 0 and policy.reclaim_within_cohort != "Never":
            # collectCandidatesForHierarchicalReclaim: the preemptor has an advantage over the
            # workloads using the quota of the lowest subtree (from its own queue up) that holds it
            advantage = tree.nodes[node].usage[flavor] + request <= tree.nodes[node].subtree[flavor] + 1e-9
            remaining = max(0.0, request - tree.local_available(node, flavor))
            previous = node
            while cohort >= 0:
                sources += [
                    (other, cohort, advantage)
                    for other in self._over_nominal_queues(cohort, previous, flavor)
                ]
                cohort_node = tree.nodes[cohort]
                fits = cohort_node.usage[flavor] + remaining <= cohort_node.subtree[flavor] + 1e-9
                remaining = max(0.0, remaining - tree.local_available(cohort, flavor))
                advantage = advantage or fits
                previous, cohort = cohort, cohort_node.parent
        reclaim = self._rule(job, policy.reclaim_within_cohort)
        forbidden = policy.borrow_within_cohort == "Never"
        threshold = policy.max_priority_threshold

        def from_queue(
            other: int, lca: int, advantaged: bool, borrow: bool | None
        ) -> Iterator[tuple[tuple[int, int], _Candidate]]:
            # for an attempt (``borrow`` not None) the queue's candidates end once it no longer
            # borrows (removals only lower usage), and those it may reclaim only without borrowing
            # are left out when it borrows: what _valid would refuse, not made at all
            other_node = self.queues[other].policy.node
            for key, victim in self._admitted_on(other, flavor, reclaim, True):
                if advantaged:
                    variant = HIERARCHICAL_RECLAIM
                elif forbidden or _above_threshold(self.priority[victim], priority, threshold):
                    variant = RECLAIM_WITHOUT_BORROWING
                else:
                    variant = RECLAIM_WHILE_BORROWING
                if borrow is not None:
                    if not self._borrowing_below(other_node, lca, flavor):
                        return
                    if borrow and variant == RECLAIM_WITHOUT_BORROWING:
                        continue
                yield key[1:], _Candidate(victim, variant, lca)

        def group(advantaged: bool, borrow: bool | None = None) -> Iterator[_Candidate]:
            if borrow and forbidden and not advantaged:
                return iter(())  # all of them reclaimable only without borrowing
            streams = [from_queue(q, lca, a, borrow) for q, lca, a in sources if a == advantaged]
            return _seconds(heapq.merge(*streams, key=lambda item: item[0]))

        def own() -> Iterator[_Candidate]:
            if policy.within_cluster_queue == "Never":
                return
            for _, victim in self._admitted_on(
                queue, flavor, self._rule(job, policy.within_cluster_queue), False
            ):
                yield _Candidate(victim, WITHIN_CLUSTER_QUEUE, -1)

        has_advantaged = next(group(True), None) is not None
        from_others = has_advantaged or next(group(False), None) is not None

        def candidates(borrow: bool) -> Iterator[_Candidate]:
            return itertools.chain(group(True, borrow), group(False, borrow), own())

        return candidates, from_others, has_advantaged

    def _valid(self, candidate: _Candidate, queue: int, flavor: int, borrow: bool) -> bool:
        """Whether a candidate may still go (candidate_generator.go candidateIsValid): one of the own
        queue always; another queue's only while it and its cohorts below the common ancestor use more
        than their quota, and, when the preemptor may borrow, not one it may reclaim only without."""
        victim_queue = self.queue_of[candidate.victim]
        if victim_queue == queue:
            return True
        if borrow and candidate.variant == RECLAIM_WITHOUT_BORROWING:
            return False
        return self._borrowing_below(self.queues[victim_queue].policy.node, candidate.lca, flavor)

    def _borrowing_below(self, node: int, lca: int, flavor: int) -> bool:
        """Whether quota node ``node`` and its cohorts below ``lca`` all use more than their quota."""
        while node != lca:
            if not self.tree.borrowing(node, flavor):
                return False
            node = self.tree.nodes[node].parent
        return True

    def _take_out(self, victim: int, flavor: int) -> None:
        """What-if: the victim's quota freed (undone by ``_put_back`` before anything else runs)."""
        node = self.queues[self.queue_of[victim]].policy.node
        self.tree.remove_usage(node, flavor, self.request[victim], counted=False)

    def _put_back(self, victim: int, flavor: int) -> None:
        node = self.queues[self.queue_of[victim]].policy.node
        self.tree.add_usage(node, flavor, self.request[victim], counted=False)

    def _minimal(
        self, job: int, queue: int, flavor: int, candidates: Iterator[_Candidate], borrow: bool
    ) -> list[_Candidate]:
        """One attempt of classicalPreemptions (preemption.go): remove valid candidates in order until
        the workload fits (without borrowing unless ``borrow``), then add back, newest removal but
        one first, those it fits without (fillBackWorkloads). The quota is left as it was."""
        node, request = self.queues[queue].policy.node, self.request[job]
        removed: list[_Candidate] = []
        fits = False
        for candidate in candidates:
            if not self._valid(candidate, queue, flavor, borrow):
                continue
            self._take_out(candidate.victim, flavor)
            removed.append(candidate)
            if self._fits(node, flavor, request, borrow):
                fits = True
                break
        targets = list(removed)
        if fits:
            for candidate in reversed(removed[:-1]):
                self._put_back(candidate.victim, flavor)
                if self._fits(node, flavor, request, borrow):
                    targets.remove(candidate)  # not needed: its usage stays
                else:
                    self._take_out(candidate.victim, flavor)
        for candidate in targets:  # undo the what-if
            self._put_back(candidate.victim, flavor)
        return targets if fits else []

    def _preemption_targets(self, job: int, queue: int, flavor: int) -> list[int]:
        """The workloads to preempt so ``job`` fits on ``flavor``, or [] when none would do.

        Classical preemption as Kueue's preemption.go classicalPreemptions: the candidates above, and
        up to two attempts, one letting the preemptor borrow and one not. Only the one that borrows
        when no other ClusterQueue has a candidate, or when borrowWithinCohort is Never and the
        ClusterQueue already uses its nominal quota; not borrowing first when borrowWithinCohort is
        Never and no candidate has a hierarchical advantage; else borrowing first."""
        if self.fair_sharing:  # may preempt while borrowing, as long as the strategies allow
            fair = list(self._candidates(job, queue, flavor))
            chosen = self._fair_targets(job, queue, flavor, fair) if fair else []
            self.preemption_reasons.update(
                (v, IN_CLUSTER_QUEUE if self.queue_of[v] == queue else IN_COHORT_FAIR_SHARING) for v in chosen
            )
            return chosen
        policy = self.queues[queue].policy
        node = self.tree.nodes[policy.node]
        candidates, from_others, advantaged = self._classical_candidates(job, queue, flavor)
        forbidden = policy.borrow_within_cohort == "Never"
        under_nominal = node.usage[flavor] < node.subtree[flavor] - 1e-9
        attempts: tuple[bool, ...]
        if not from_others or (forbidden and not under_nominal):
            attempts = (True,)
        elif forbidden and not advantaged:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for borrow in attempts:
            targets = self._minimal(job, queue, flavor, candidates(borrow), borrow)
            if targets:
                self.preemption_reasons.update((c.victim, c.reason) for c in targets)
                return [c.victim for c in targets]
        return []

    def _fair_targets(self, job: int, queue: int, flavor: int, candidates: list[int]) -> list[int]:
        """Fair-sharing preemption: other ClusterQueues' workloads go only while the strategies hold
        (LessThanOrEqualToFinalShare: preemptor's share with the workload <= target's share without
        the victim; LessThanInitialShare: < target's share now), targets with the highest share first."""
        tree = self.tree
        node, request = self.queues[queue].policy.node, self.request[job]
        removed: list[int] = []
        for strategy in self.strategies:
            while not self._fits(node, flavor, request):
                best: tuple[float, int] | None = None
                mine = tree.share(node, request, flavor)
                for victim in candidates:
                    if victim in removed:
                        continue
                    vnode = self.queues[self.queue_of[victim]].policy.node
                    if vnode != node:
                        if not tree.borrowing(vnode, flavor):
                            continue
                        before = tree.share(vnode)
                        after = tree.share(vnode, -self.request[victim], flavor)
                        if strategy == "LessThanOrEqualToFinalShare" and not mine <= after + 1e-12:
                            continue
                        if strategy == "LessThanInitialShare" and not mine < before - 1e-12:
                            continue
                        key = -before
                    else:
                        key = float("inf")  # own workloads after other queues'
                    if best is None or key < best[0]:
                        best = (key, victim)
                if best is None:
                    break
                victim = best[1]
                self._take_out(victim, flavor)
                removed.append(victim)
        fits = self._fits(node, flavor, request)
        for victim in removed:
            self._put_back(victim, flavor)
        return removed if fits else []

    # -- the admission cycle -----------------------------------------------------------------------

    def _head(self, queue: int) -> Decision | None:
        """The ClusterQueue's head for this admission cycle, or None (it is blocked until quota
        changes). A BestEffortFIFO queue moves past heads that do not fit, or must preempt and found
        nothing to preempt (they become inadmissible until the cluster changes,
        pkg/cache/queue/cluster_queue.go RequeueIfNotPresent); a StrictFIFO queue keeps its head,
        which holds the quota it waits for (``_reservation``)."""
        q = self.queues[queue]
        if not q.waiting:
            return None
        heads = sorted((heap[0], size) for size, heap in q.classes.items() if heap)
        for (_, _, job), _size in heads:
            decision = self._assign(job, queue)
            if decision.mode <= Mode.NO_CANDIDATES:
                self._no_fit(job, queue)
            if decision.mode >= Mode.PREEMPT:
                return decision
            if q.policy.strict_fifo:
                return decision if decision.mode == Mode.NO_CANDIDATES else None
        return None

    def _borrows(self, decision: Decision) -> bool:
        """Whether the workload borrows once admitted, after its own ClusterQueue's victims go
        (flavorassigner Assignment.Borrows: the borrowing left after preemption)."""
        node = self.queues[decision.queue].policy.node
        usage = self.tree.nodes[node].usage[decision.flavor] - sum(
            self.request[v] for v in decision.victims if self.queue_of[v] == decision.queue
        )
        return usage + self.request[decision.job] > self.tree.nodes[node].subtree[decision.flavor] + 1e-9

    def schedule(
        self,
        now: float,
        admit: Callable[[Decision], None],
        evict: Callable[[int], None],
        blocked: Callable[[], bool],
    ) -> int:
        """Admit what fits at ``now``. For a decision that preempts, ``evict`` is called for each
        victim (which must ``release`` it) before the admission; ``admit`` is called after each
        admission. ``blocked`` says whether waitForPodsReady.blockAdmission holds admission back.
        Returns the number admitted."""
        admitted = 0
        tree = self.tree
        if now != self.now:
            self.evicted_now.clear()
        self.now = now
        if self.settled == (self.pushes, tree.changes):
            return 0  # nothing was queued and no quota changed since nothing fitted
        while not blocked():
            entries: list[tuple[tuple[float, ...], Decision]] = []
            for index, q in enumerate(self.queues):
                if self.stopped[index]:
                    if q.pending():
                        self.stopped_marks[index].mark(now)
                    continue
                version = tree.version[self.roots[index]]
                if not q.stale and q.seen_version == version:
                    continue
                decision = self._head(index)
                if decision is None:
                    q.stale, q.seen_version = False, version
                    continue
                job = decision.job
                if self.fair_sharing:
                    order: tuple[float, ...] = (
                        tree.share(q.policy.node, self.request[job], decision.flavor),
                        -self.priority[job],
                        self.timestamp[job],
                        job,
                    )
                else:  # scheduler.go makeClassicalIterator: not borrowing first, priority, FIFO
                    order = (float(self._borrows(decision)), -self.priority[job], self.timestamp[job], job)
                entries.append((order, decision))
            if not entries:
                break
            entries.sort(key=lambda entry: entry[0])
            progressed = False
            reserved: list[tuple[int, int, float]] = []  # (quota node, flavor, GPUs) for this cycle
            heads_changes = tree.changes  # the quota the heads were assigned against
            for _, first in entries:
                # quota may have changed this cycle: assigned again, unless nothing did and the
                # head fits without preempting (a preemptor's targets also set their reasons)
                unchanged = tree.changes == heads_changes and not reserved
                reuse = unchanged and first.mode == Mode.FIT and not first.victims
                decision = first if reuse else self._assign(first.job, first.queue)
                if decision.mode <= Mode.NO_CANDIDATES:
                    self._no_fit(first.job, first.queue)
                if decision.mode == Mode.NO_CANDIDATES and self.queues[first.queue].policy.strict_fifo:
                    amount = self._reservation(decision)
                    if amount > 0:
                        node = self.queues[first.queue].policy.node
                        tree.add_usage(node, decision.flavor, amount, counted=False)
                        reserved.append((node, decision.flavor, amount))
                if decision.mode <= Mode.NO_CANDIDATES or (decision.mode == Mode.PREEMPT and progressed):
                    continue  # retried in the next cycle
                if decision.victims and self.evicted_now.get(decision.job, 0) >= REPREEMPTIONS_PER_INSTANT:
                    # Kueue requeues a victim once its pods are gone, so a chain of preemptions takes
                    # time: here it is instant, and a cycle (A reclaims from B, which preempts C while
                    # borrowing, which reclaims from A...) would never end. A workload evicted twice
                    # this instant preempts again at a later one.
                    continue
                for victim in decision.victims:
                    if self.queue_of[victim] == decision.queue:
                        self.within_queue_preemptions += 1
                    else:
                        self.reclaims += 1
                    self.evicted_now[victim] = self.evicted_now.get(victim, 0) + 1
                    evict(victim)
                self._admit(decision)
                admit(decision)
                admitted += 1
                progressed = True
                if blocked():
                    break
            for node, flavor, amount in reversed(reserved):
                tree.remove_usage(node, flavor, amount, counted=False)
            if not progressed:
                break
        if not blocked():
            self.settled = (self.pushes, tree.changes)
        elif self.pending():
            self.blocked_marks.mark(now)  # the workloads left pending wait for the admitted ones' pods
        return admitted

    def _admit(self, decision: Decision) -> None:
        q = self.queues[decision.queue]
        heap = q.classes[self.request[decision.job]]
        popped = heapq.heappop(heap)
        q.waiting -= 1
        self.dirty.add(decision.queue)
        assert popped[2] == decision.job
        node = q.policy.node
        if not self._fits(node, decision.flavor, self.request[decision.job], allow_borrow=False):
            self.borrowing_admissions += 1
        self.tree.add_usage(node, decision.flavor, self.request[decision.job])
        q.admitted.setdefault(self.priority[decision.job], {})[decision.job] = None
        self.admit_seq[decision.job] = self.admissions
        self.admissions += 1
        self.flavor_of[decision.job] = decision.flavor
        self.peak_borrowed[decision.queue] = max(self.peak_borrowed[decision.queue], self.tree.borrowed(node))
