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
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum

from gpuplan.sim.kubernetes.quota import QuotaTree

# Why a workload is pending: Kueue's QuotaReserved=False reasons (apis/kueue/v1beta2/workload_types.go,
# set by pkg/scheduler/scheduler.go: schedule and waitForPodsReadyIfNeeded). WaitingForQuota: tried and
# its ClusterQueue (with what it may borrow) lacks unused quota; WaitingForPodsReady:
# waitForPodsReady.blockAdmission holds admission until the admitted workloads' pods are ready;
# PendingEvaluation: not tried yet (behind a StrictFIFO head).
WAITING_FOR_QUOTA = "WaitingForQuota"
WAITING_FOR_PODS_READY = "WaitingForPodsReady"
PENDING_EVALUATION = "PendingEvaluation"


class Mode(IntEnum):
    """Flavor assignment outcome, worst to best (Kueue's FlavorAssignmentMode)."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


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

    @property
    def preempts(self) -> bool:
        return (self.within_cluster_queue, self.reclaim_within_cohort, self.borrow_within_cohort) != (
            "Never",
            "Never",
            "Never",
        )


@dataclass(frozen=True)
class Decision:
    job: int
    queue: int
    flavor: int
    mode: Mode
    victims: tuple[int, ...] = ()


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

    def pending(self) -> int:
        return sum(len(heap) for heap in self.classes.values())


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
    ) -> None:
        self.tree = tree
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
        self.queue_of: dict[int, int] = {}
        self.flavor_of: dict[int, int] = {}
        self.admitted_at: dict[int, float] = {}
        self.admit_seq: dict[int, int] = {}  # admission order (preemption takes the newest first)
        self.admissions = 0
        self.borrowing_admissions = 0  # admissions that took quota beyond the ClusterQueue's nominal
        self.roots = [tree.root(policy.node) for policy in policies]
        self.pushes = 0
        self.settled: tuple[int, int] | None = None  # (pushes, quota changes) when nothing could be admitted
        self.peak_borrowed = [0.0] * len(policies)
        # when a workload was tried and lacked quota: per (ClusterQueue, request) for BestEffortFIFO,
        # as Kueue gives every equivalent workload the head's reason (SchedulingEquivalenceHashing,
        # pkg/cache/queue/cluster_queue.go: requeueIfNotPresent); per workload for a StrictFIFO head
        self.no_quota: dict[tuple[int, float] | int, _Marks] = {}
        self.blocked_marks = _Marks()  # when blockAdmission held workloads pending
        self.now = 0.0

    # -- queue manager ---------------------------------------------------------------------------

    def push(self, job: int, queue: int, timestamp: float) -> None:
        q = self.queues[queue]
        heapq.heappush(q.classes.setdefault(self.request[job], []), (-self.priority[job], timestamp, job))
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
        marks = self.no_quota.get(self._no_quota_key(job, self.queue_of[job]))
        if marks is not None and marks.latest_before(until) >= since:
            return WAITING_FOR_QUOTA
        return WAITING_FOR_PODS_READY if self.blocked_marks.latest_before(until) >= since else ""

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
        flavor = self.flavor_of.pop(job)
        self.queues[queue].admitted[self.priority[job]].pop(job, None)
        self.admitted_at.pop(job, None)
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
        q = self.queues[queue]
        node, request = q.policy.node, self.request[job]
        allowed = None if self.flavors_of_job is None else self.flavors_of_job[job]
        flavors = [f for f in q.policy.flavors if allowed is None or f in allowed]
        for flavor in flavors:
            if self._fits(node, flavor, request):
                return Decision(job, queue, flavor, Mode.FIT)
        if q.policy.preempts:
            for flavor in flavors:
                victims = self._preemption_targets(job, queue, flavor)
                if victims:
                    return Decision(job, queue, flavor, Mode.PREEMPT, tuple(victims))
        return Decision(job, queue, -1, Mode.NO_FIT)

    # -- preemption --------------------------------------------------------------------------------

    def _admitted_on(
        self, queue: int, flavor: int, keep: Callable[[int], bool], other: bool
    ) -> Iterator[tuple[tuple[bool, int, int], int]]:
        """A ClusterQueue's admitted workloads on ``flavor`` whose priority ``keep`` accepts, in
        preemption order (lowest priority first, most recently admitted first), lazily."""
        buckets = self.queues[queue].admitted
        for priority in sorted(buckets):
            if keep(priority):
                for victim in reversed(buckets[priority]):
                    if self.flavor_of[victim] == flavor:
                        yield (not other, priority, -self.admit_seq[victim]), victim

    def _candidates(
        self, job: int, queue: int, flavor: int, others: bool = True, threshold: bool = False
    ) -> Iterator[int]:
        """Admitted workloads the policies let ``job`` preempt on ``flavor``, lazily, in Kueue's order:
        from other (borrowing) ClusterQueues of the cohort first, lowest priority first, most recently
        admitted first. ``threshold``: other queues' only below the preemptor's priority and at most
        borrowWithinCohort.maxPriorityThreshold."""
        policy = self.queues[queue].policy
        priority, timestamp = self.priority[job], self.timestamp[job]
        streams = []
        rule = policy.within_cluster_queue
        if rule == "LowerPriority":
            streams.append(self._admitted_on(queue, flavor, lambda p: p < priority, False))
        elif rule == "LowerOrNewerEqualPriority":
            newer = (
                (key, v)
                for key, v in self._admitted_on(queue, flavor, lambda p: p <= priority, False)
                if self.priority[v] < priority or self.timestamp[v] > timestamp
            )
            streams.append(newer)
        if others and policy.reclaim_within_cohort != "Never":
            limit = policy.max_priority_threshold
            for other in self._borrowing_queues(queue, flavor):
                if threshold:
                    streams.append(
                        self._admitted_on(
                            other, flavor, lambda p: p < priority and (limit is None or p <= limit), True
                        )
                    )
                elif policy.reclaim_within_cohort == "Any":
                    streams.append(self._admitted_on(other, flavor, lambda p: True, True))
                else:
                    streams.append(self._admitted_on(other, flavor, lambda p: p < priority, True))
        return (victim for _, victim in heapq.merge(*streams))

    def _borrowing_queues(self, queue: int, flavor: int) -> list[int]:
        root = self.roots[queue]
        return [
            other
            for other, q in enumerate(self.queues)
            if other != queue and self.roots[other] == root and self.tree.borrowing(q.policy.node, flavor)
        ]

    def _greedy(
        self, node: int, flavor: int, request: float, candidates: Iterable[int], allow_borrow: bool
    ) -> list[int]:
        """Remove candidates in order until the request fits; then drop, in reverse, those not needed."""
        tree = self.tree
        removed: list[int] = []
        fits = False
        for victim in candidates:
            vnode = self.queues[self.queue_of[victim]].policy.node
            if vnode != node and not tree.borrowing(vnode, flavor):
                continue  # its ClusterQueue no longer borrows: reclaiming stops there
            tree.remove_usage(vnode, flavor, self.request[victim])
            removed.append(victim)
            if self._fits(node, flavor, request, allow_borrow):
                fits = True
                break
        targets = list(removed)
        if fits:
            for victim in reversed(removed[:-1]):
                vnode = self.queues[self.queue_of[victim]].policy.node
                tree.add_usage(vnode, flavor, self.request[victim])
                if self._fits(node, flavor, request, allow_borrow):
                    targets.remove(victim)  # not needed: leave its usage in place
                else:
                    tree.remove_usage(vnode, flavor, self.request[victim])
        for victim in targets:  # undo the what-if
            tree.add_usage(self.queues[self.queue_of[victim]].policy.node, flavor, self.request[victim])
        return targets if fits else []

    def _preemption_targets(self, job: int, queue: int, flavor: int) -> list[int]:
        """Classic preemption's targets, by the heuristics of Kueue's preemption page, in order:
        (1) only own-queue candidates: greedily, borrowing allowed; (2) borrowWithinCohort: others'
        below the threshold too, borrowing allowed; (3) when the workload fits the queue's nominal
        quota: reclaim from borrowing queues, no borrowing; (4) own-queue candidates, borrowing."""
        policy = self.queues[queue].policy
        node, request = policy.node, self.request[job]
        tree = self.tree
        borrow_within = policy.borrow_within_cohort != "Never"
        if self.fair_sharing:  # may preempt while borrowing, as long as the strategies allow
            candidates = list(self._candidates(job, queue, flavor))
            return self._fair_targets(job, queue, flavor, candidates) if candidates else []
        if request > tree.nodes[node].subtree[flavor] + 1e-9 and not borrow_within:
            return []  # needs more than the nominal quota and may not preempt while borrowing
        own = self._candidates(job, queue, flavor, others=False)
        if policy.reclaim_within_cohort == "Never" or not self._borrowing_queues(queue, flavor):
            return self._greedy(node, flavor, request, own, allow_borrow=True)
        if borrow_within:
            targets = self._greedy(
                node, flavor, request, self._candidates(job, queue, flavor, threshold=True), allow_borrow=True
            )
            if targets:
                return targets
        if tree.nodes[node].usage[flavor] + request <= tree.nodes[node].subtree[flavor] + 1e-9:
            targets = self._greedy(
                node, flavor, request, self._candidates(job, queue, flavor), allow_borrow=False
            )
            if targets:
                return targets
        return self._greedy(node, flavor, request, own, allow_borrow=True)

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
                tree.remove_usage(
                    self.queues[self.queue_of[victim]].policy.node, flavor, self.request[victim]
                )
                removed.append(victim)
        fits = self._fits(node, flavor, request)
        for victim in removed:
            tree.add_usage(self.queues[self.queue_of[victim]].policy.node, flavor, self.request[victim])
        return removed if fits else []

    # -- the admission cycle -----------------------------------------------------------------------

    def _head(self, queue: int) -> Decision | None:
        """The ClusterQueue's next admissible head, or None (it is blocked until quota changes)."""
        q = self.queues[queue]
        heads = sorted((heap[0], size) for size, heap in q.classes.items() if heap)
        for (_, _, job), _size in heads:
            decision = self._assign(job, queue)
            if decision.mode == Mode.NO_FIT:
                self._no_fit(job, queue)
            if decision.mode != Mode.NO_FIT or q.policy.strict_fifo:
                return decision if decision.mode != Mode.NO_FIT else None
        return None

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
        self.now = now
        if self.settled == (self.pushes, tree.changes):
            return 0  # nothing was queued and no quota changed since nothing fitted
        while not blocked():
            entries: list[tuple[tuple[float, ...], Decision]] = []
            for index, q in enumerate(self.queues):
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
                else:
                    borrows = not self._fits(
                        q.policy.node, decision.flavor, self.request[job], allow_borrow=False
                    )
                    order = (float(borrows), -self.priority[job], self.timestamp[job], job)
                entries.append((order, decision))
            if not entries:
                break
            entries.sort(key=lambda entry: entry[0])
            progressed = False
            for _, first in entries:
                decision = self._assign(first.job, first.queue)  # quota may have changed this cycle
                if decision.mode == Mode.NO_FIT:
                    self._no_fit(first.job, first.queue)
                if decision.mode == Mode.NO_FIT or (decision.mode == Mode.PREEMPT and progressed):
                    continue  # retried in the next cycle
                for victim in decision.victims:
                    if self.queue_of[victim] == decision.queue:
                        self.within_queue_preemptions += 1
                    else:
                        self.reclaims += 1
                    evict(victim)
                self._admit(decision, now)
                admit(decision)
                admitted += 1
                progressed = True
                if blocked():
                    break
            if not progressed:
                break
        if not blocked():
            self.settled = (self.pushes, tree.changes)
        elif self.pending():
            self.blocked_marks.mark(now)  # the workloads left pending wait for the admitted ones' pods
        return admitted

    def _admit(self, decision: Decision, now: float) -> None:
        q = self.queues[decision.queue]
        heap = q.classes[self.request[decision.job]]
        popped = heapq.heappop(heap)
        assert popped[2] == decision.job
        node = q.policy.node
        if not self._fits(node, decision.flavor, self.request[decision.job], allow_borrow=False):
            self.borrowing_admissions += 1
        self.tree.add_usage(node, decision.flavor, self.request[decision.job])
        q.admitted.setdefault(self.priority[decision.job], {})[decision.job] = None
        self.admit_seq[decision.job] = self.admissions
        self.admissions += 1
        self.flavor_of[decision.job] = decision.flavor
        self.admitted_at[decision.job] = now
        self.peak_borrowed[decision.queue] = max(self.peak_borrowed[decision.queue], self.tree.borrowed(node))
