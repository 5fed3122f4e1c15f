"""The reference model of Slurm 22.05's scheduling: the one oracle of gpuplan's Slurm model, for the
fidelity harness and for the tests.

It is not gpuplan's model and not Slurm's code. It was written from Slurm's documentation, from what
``slurmctld.log`` and the scheduling log showed in the replays, and from reading how Slurm 22.05.8
behaves in its source (each behaviour below names the parameter and the place, as file:function,
where it is decided; nothing is copied). README.md, "Semantics the engine must implement", states
the same rules as a numbered specification, in order of their measured effect. Slow, with lists,
sets and sorts only, independently of the compiled engine and its data structures: meant to be
obviously right.

One backfill cycle on named nodes (``backfill_cycle``: the node-space map, will-run, reservations)
and one node choice (``best_fit``) serve two drivers, which differ in their clocks only:

- ``simulate`` (``Model``), the harness's model of the controller: a discrete-event simulation in
  continuous time, with the loops' measured clocks, multifactor priority and Fair Tree.
  ``compare.py`` runs it beside gpuplan as the column ``ref``; ``FEATURES`` switches each behaviour
  off to measure its effect (``--ablate``).
- ``reference_schedule``, the tests' oracle of the engine: FIFO, EASY and Slurm's backfill in the
  subset gpuplan's engine implements (whole-second ticks from the controller's start at t = 0 and no
  drift, cycles every bf_interval while jobs wait, sched_interval, batch_sched_delay,
  default_queue_depth), on one pool of whole nodes. The tests compare the engine with it start by
  start.

The harness's model, in continuous time (seconds after the replay's start t0, as floats), because
Slurm's loops run on their own clocks and the order of events inside one second decides who starts
where. Times Slurm stores are whole seconds (``time(NULL)``): a job's start and end, the "now" of
every pass, --begin times; sacct prints those.

Event kinds, each at a float time:

- **Job end** at start + run + ``run_overhead_s`` (on this machine 0.04-0.07 s: launch, exit and
  the completion message). The job stops running (fair-share counts only running jobs); its nodes
  stay COMPLETING until slurmd's "already complete" answer, ``end_latency_s`` later; then they are
  free and a scheduling request is queued (agent.c calls queue_job_scheduler).
- **Background tick** (controller.c:_slurmctld_background): about once a second, at a phase that
  drifts 1-4 ms per second (the model takes the periodic passes measured in the replay's scheduling
  log and spreads the ticks between them, or a phase). A tick runs the main scheduler's full pass
  every ``sched_interval`` whole seconds, else a pass if a request is queued and ``batch_sched_delay``
  (3 s) passed since its last pass.
- **Backfill check**: the backfill thread (backfill.c:backfill_agent) wakes every second; it runs a
  cycle when at least ``bf_interval`` whole seconds passed since the previous cycle ended and
  something changed since then (backfill.c:_more_work: a job started, ended, was submitted, had its
  priority recomputed, was tested by a pass); after a cycle it sleeps ``bf_interval`` (plus the
  cycle's own duration, ``bf_cycle_shift_s``).
- **Decay tick** every ``PriorityCalcPeriod`` from slurmctld's start (priority_multifactor.c:
  _decay_thread): usage decays and grows by the running jobs' use, fair-share factors and every
  pending job's priority are recomputed. Between ticks priorities do not change.

``settings_from_replay`` builds the Settings of a replay: its slurm.conf values and its clocks
(``clocks_from_run`` reads them from the replay's logs).
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # the harness's jobs (workload.py, beside this file): the tests' are indices
    import workload

QueuedJob = TypeVar("QueuedJob")

# ---- one backfill cycle on named nodes, and the node choice: both drivers' --------------------------


def floor_res(t: float, res: float, epoch: int = 0) -> float:
    """``t`` rounded down to a multiple of ``res`` on the epoch clock (Slurm rounds time_t values):
    ``epoch`` is the Unix time of t = 0."""
    return math.floor((t + epoch) / res) * res - epoch


def best_fit(free: frozenset[int] | set[int], count: int, fit_runs: bool = True) -> frozenset[int] | None:
    """Nodes for a whole-node job (select/cons_tres, job_test.c:_eval_nodes): the free nodes form
    runs of consecutive numbers; take the smallest run with enough nodes (the first of equal runs),
    its lowest nodes; if no run is large enough, take the largest run (the first of equal ones)
    whole and repeat for the rest. ``fit_runs`` off: the lowest-numbered free nodes. None: fewer
    than ``count`` free."""
    if len(free) < count:
        return None
    ordered = sorted(free)
    if not fit_runs:
        return frozenset(ordered[:count])
    runs: list[list[int]] = []
    for node in ordered:
        if runs and runs[-1][-1] == node - 1:
            runs[-1].append(node)
        else:
            runs.append([node])
    chosen: list[int] = []
    while len(chosen) < count:
        want = count - len(chosen)
        fitting = [r for r in runs if len(r) >= want]
        best = min(fitting, key=len) if fitting else max(runs, key=len)  # first of equal ones
        chosen += best[:want]
        runs.remove(best)
    return frozenset(chosen)


@dataclass
class Rec:
    """One record of the backfill map (backfill.c node_space_map_t): nodes free of this cycle's
    reservations over [begin, end)."""

    begin: float
    end: float
    avail: frozenset[int]


@dataclass(frozen=True)
class CycleRules:
    """How a backfill cycle tests jobs: slurm.conf's SchedulerParameters (bf_resolution, bf_window
    in seconds, bf_max_job_test), the epoch of t = 0, and behaviours the harness can switch off
    (``FEATURES``)."""

    bf_resolution: float
    bf_window_s: float
    bf_max_job_test: float
    epoch: int = 0
    every_job_reserves: bool = True
    try_later: bool = True
    will_run_groups: bool = True
    best_fit: bool = True
    # gpuplan's shortcut (backfill_map.c, any_could_start): without a free node no job can start
    # now, so the cycle ends; the jobs it did not test would only have reserved. Not Slurm's: off
    # for the harness, whose plans are compared with Slurm's logged ones.
    stop_when_full: bool = False


@dataclass(frozen=True)
class Decision:
    """What a cycle did with one job: "start" now, over [now, now + limit], or "reserve" its
    will-run start ``when``, over [floor_res(when), floor_res(when + limit))."""

    kind: str
    job: Any
    when: float
    nodes: frozenset[int]
    begin: float
    end: float


@dataclass
class CycleOutcome:
    tested: int = 0  # jobs tested (each gets an expected start: the harness's last_job_update)
    decisions: list[Decision] = field(default_factory=list)
    stuck: int = 0  # jobs still retrying after 500 tries (never seen; Slurm ends at bf_max_time)


def add_reservation(plan: list[Rec], start: float, end: float, nodes: frozenset[int], res: float) -> None:
    """backfill.c:_add_reservation: split the map at start and end, take ``nodes`` out of the
    records in between; a reservation lasts at least one bf_resolution; then merge the first pair
    of neighbouring records that became equal."""
    start = max(start, plan[0].begin)
    end = max(end, start + res)
    placed, one_before, one_after, j = False, 0, None, 0
    while True:
        if plan[j].end > start:
            plan.insert(j + 1, Rec(start, plan[j].end, plan[j].avail))
            plan[j].end = start
            placed = True
            break
        if plan[j].end == start:
            placed = True
            break
        one_before = j
        j += 1
        if j >= len(plan):
            break
    while placed:
        j += 1
        if j >= len(plan):
            break
        if end < plan[j].end:
            plan.insert(j + 1, Rec(end, plan[j].end, plan[j].avail))
            plan[j].end = end
        plan[j].avail = plan[j].avail - nodes
        if end == plan[j].end:
            one_after = j + 1 if j + 1 < len(plan) else None
            break
    i = one_before
    while i != one_after and i + 1 < len(plan):
        if plan[i].avail == plan[i + 1].avail:
            plan[i].end = plan[i + 1].end
            del plan[i + 1]
            break
        i += 1


def overlaps(plan: list[Rec], nodes: frozenset[int], start: float, end: float) -> bool:
    """backfill.c:_test_resv_overlap: some record over [start, end) already lacks one of ``nodes``."""
    return any(rec.end > start and rec.begin < end and not nodes <= rec.avail for rec in plan)


def candidates(
    plan: list[Rec], at: float, limit: float, all_nodes: frozenset[int], try_later: bool = True
) -> tuple[frozenset[int], float | None]:
    """The nodes a job of time limit ``limit`` may use from ``at``: those of every record that ends
    after ``at`` and begins at or before ``at + limit``; and ``later``, the end of the first record
    (ending after ``at``) after which the next record frees a candidate node not free in it
    (backfill.c:_attempt_backfill's later_start), None if there is none or ``try_later`` is off."""
    avail = set(all_nodes)
    later = None
    for k, rec in enumerate(plan):
        frees = k + 1 < len(plan) and not plan[k + 1].avail <= (avail & rec.avail)
        if rec.end > at and later is None and frees and try_later:
            later = rec.end
        if rec.end <= at:
            continue
        if rec.begin > at + limit:
            break
        avail &= rec.avail
    return frozenset(avail), later


def will_run(
    avail: frozenset[int],
    count: int,
    now: float,
    free: set[int],
    running: Sequence[tuple[float, frozenset[int]]],
    rules: CycleRules,
) -> tuple[float, frozenset[int]] | None:
    """Earliest start of a ``count``-node job on ``avail`` (job_test.c:_will_run_test): now if it
    fits on free candidates; else release ``running`` jobs ((planned end = start + limit, nodes), in
    order of planned end) in groups: the first group ends at the first 30-s epoch boundary after the
    first job's end plus 30 s, later groups at that boundary plus 60, 120, 240 ... s (the window
    doubles at least once per group, until it reaches the next job's end); after each group test
    again; the start is the planned end of the last job released (now + 1 if that end has passed: the
    job still runs now). A job on none of ``avail`` is skipped, and then the next one joins the group
    whatever its end (as the source's loop does). ``will_run_groups`` off: test after each job."""
    fit = best_fit(avail & free, count, rules.best_fit)
    if fit is not None:
        return now, fit
    released = set(free)
    if not rules.will_run_groups:
        for planned, nodes in running:
            if not nodes & avail:
                continue
            released |= nodes
            fit = best_fit(avail & released, count, rules.best_fit)
            if fit is not None:
                return max(now + 1, planned), fit
        return None
    window, boundary, i = 30.0, None, 0
    while i < len(running):
        last, more = None, True
        while True:
            if i >= len(running):
                more = False
                break
            planned, nodes = running[i]
            i += 1
            if not nodes & avail:
                continue
            if boundary is None:
                boundary = planned + 30 - (planned + rules.epoch) % 30
            last = planned
            released |= nodes
            if i >= len(running):
                more = False
                break
            if running[i][0] > boundary + window:
                break
        if last is None:
            break
        window *= 2
        while i < len(running) and running[i][0] > boundary + window:  # type: ignore[operator]
            window *= 2
        fit = best_fit(avail & released, count, rules.best_fit)
        if fit is not None:
            return max(now + 1, last), fit
        if not more:
            break
    return None


def backfill_cycle(
    now: float,
    queue: Sequence[QueuedJob],
    *,
    count_of: Callable[[QueuedJob], int],
    limit_of: Callable[[QueuedJob], float],
    all_nodes: frozenset[int],
    free: set[int],
    running: list[tuple[float, frozenset[int]]],
    start: Callable[[QueuedJob, frozenset[int]], object],
    rules: CycleRules,
) -> CycleOutcome:
    """backfill.c:_attempt_backfill, on named nodes (README.md, "Semantics the engine must
    implement", items 3, 5, 11-13). The map starts as one record [floor_res(now), floor_res(now +
    bf_window)) with every node of ``all_nodes``: running jobs are not in it (they are known to
    will-run by their planned ends, ``running``), only this cycle's reservations and the jobs it
    starts. Jobs are tested in queue order, at most bf_max_job_test; each starts now (``start``
    takes its nodes out of ``free``) or reserves its will-run start. A job started joins ``running``
    after the jobs of equal planned end."""
    res = rules.bf_resolution
    plan = [
        Rec(floor_res(now, res, rules.epoch), floor_res(now + rules.bf_window_s, res, rules.epoch), all_nodes)
    ]
    outcome = CycleOutcome()
    reserved_one = False
    for tested, job in enumerate(queue):
        if tested >= rules.bf_max_job_test or (rules.stop_when_full and not free):
            break
        outcome.tested += 1
        limit = limit_of(job)
        at = now
        for _ in range(500):  # TRY_LATER; each retry moves to a later map boundary
            avail, later = candidates(plan, at, limit, all_nodes, rules.try_later)
            found = will_run(avail, count_of(job), now, free, running, rules)
            if found is None:
                if later is None:
                    break
                at = later
                continue
            when, chosen = max(found[0], at), found[1]
            if when <= now:
                start(job, chosen)
                ends_at = now + limit
                k = len(running)
                while k > 0 and running[k - 1][0] > ends_at:
                    k -= 1
                running.insert(k, (ends_at, chosen))
                outcome.decisions.append(Decision("start", job, now, chosen, now, now + limit))
                # a started whole-node job enters the map until its planned end, rounded down
                # (backfill.c:_bf_reserve_running)
                add_reservation(plan, plan[0].begin, floor_res(now + limit, res, rules.epoch), chosen, res)
                break
            if not rules.every_job_reserves and reserved_one:
                break  # EASY: only the first job that cannot start reserves
            if later is not None and when > later:
                at = later
                continue
            if when > now + rules.bf_window_s:
                break  # beyond the window: no reservation
            begin, end = floor_res(when, res, rules.epoch), floor_res(when + limit, res, rules.epoch)
            if overlaps(plan, chosen, begin, end):
                at = when  # backfill.c:_test_resv_overlap, then TRY_LATER
                continue
            outcome.decisions.append(Decision("reserve", job, when, chosen, begin, end))
            add_reservation(plan, begin, end, chosen, res)
            reserved_one = True
            break
        else:
            outcome.stuck += 1
    return outcome


# ---- the harness's model of the controller -------------------------------------------------------

# Behaviours that can be switched off (Settings.off) to measure their effect on agreement.
FEATURES = {
    "every_job_reserves": "backfill: every tested job that cannot start reserves (not only the first)",
    "will_run_groups": "backfill: planned starts release running jobs in 30-s-aligned, doubling groups",
    "try_later": "backfill: retry a job from the next map boundary where nodes free up (later_start)",
    "bf_resolution": "backfill: reservations rounded down to bf_resolution (epoch-aligned)",
    "best_fit": "node choice: best-fitting run of consecutive free nodes (not lowest-numbered)",
    "main_blocks": "main scheduler: the first job that does not fit blocks its partition's nodes",
    "periodic_loops": "two loops on their own clocks (not every event and every second)",
    "queued_end_passes": "a job end queues a main pass for the next background tick (batch_sched_delay)",
    "begin_at_pass": "--begin jobs are noticed only by the next pass",
    "bf_needs_work": "backfill skips a due cycle when nothing changed since the last one",
    "priority_tier": "queue order: PriorityTier of the partition before job priority",
    "fair_share": "multifactor priority: fair-share factor (Fair Tree)",
    "decay_ticks": "priorities recomputed only every PriorityCalcPeriod",
    "age": "multifactor priority: age factor",
    "tick_usage_only": "fair-share usage counted only for jobs running at a tick (no "
    "AccountingStorageEnforce=limits)",
    "root_user_assoc": "Fair Tree counts the root user's association among the siblings",
    "coarse_clock": "time(NULL) lags the log clock by a few ms (a pass at x.002 s stamps x - 1)",
}


@dataclass(frozen=True)
class Partition:
    name: str
    tier: int = 1  # PriorityTier
    job_factor: int = 1  # PriorityJobFactor


@dataclass(frozen=True)
class Settings:
    """slurm.conf settings (named as there) and the clocks of one replay."""

    nodes: int = 8
    cpus_per_node: int = 16  # billing = allocated CPUs (whole nodes)
    bf_interval: int = 30
    sched_interval: int = 60
    bf_resolution: int = 60
    bf_window_min: int = 1440
    bf_max_job_test: int = 500
    partitions: tuple[Partition, ...] = (Partition("gpu"),)
    priority: str = "basic"  # PriorityType: basic | multifactor
    weight_age: float = 0.0
    weight_fairshare: float = 0.0
    weight_partition: float = 0.0
    max_age_s: float = 7 * 86400.0
    decay_half_life_s: float = 7 * 86400.0
    calc_period_s: float = 300.0
    shares: tuple[tuple[str, float], ...] = ()  # (account, Fairshare); one user per account here
    root_user_assoc: bool = True  # `sacctmgr add cluster` makes user root under account root
    initial_fs: tuple[tuple[str, float], ...] = ()  # factors from the last tick before submission
    enforce_limits: bool = False  # AccountingStorageEnforce includes "limits"
    # clocks, in seconds relative to t0
    t0_epoch: int = 0  # rounding to bf_resolution and the 30-s will-run windows is epoch-aligned
    submit_s: float = -10.0  # when the jobs were submitted (sbatch), all at once
    main_phase_s: float = 0.5  # a periodic main pass at t0 + main_phase_s + k * sched_interval
    main_passes_s: tuple[float, ...] = ()  # measured periodic pass times (used instead, if given)
    bf_phase_s: float = 0.5  # fraction of a second at which the backfill thread wakes
    bf_last_cycle_s: float | None = None  # last backfill cycle before the jobs were submitted
    bf_cycle_shift_s: float = 0.001  # a cycle's own duration, added to the sleep after it
    decay_phase_s: float = 30.0  # a decay tick at t0 + decay_phase_s (+ k * calc_period_s)
    batch_sched_delay: int = 3  # SchedulerParameters batch_sched_delay
    coarse_clock_lag_s: float = 0.004
    run_overhead_s: float = 0.045  # from the pass that starts a job to its completion, minus the run
    end_latency_s: float = 0.005  # job end -> nodes free (slurmd's "already complete" answer)
    end_latencies: tuple[tuple[int, float], ...] = ()  # per job (job, latency): for noise studies
    off: frozenset[str] = frozenset()  # FEATURES switched off

    def on(self, feature: str) -> bool:
        return feature not in self.off


@dataclass
class Running:
    job: workload.Job
    nodes: frozenset[int]
    start: int  # whole second
    est_end: int  # start + time limit: what the schedulers plan with (job_record end_time)
    end_f: float  # when the nodes come back (float)


@dataclass(order=True)
class Event:
    time: float
    seq: int
    kind: str = field(compare=False)
    data: object = field(compare=False, default=None)


class Model:
    def __init__(self, jobs: list[workload.Job], s: Settings, run_s: dict[int, float] | None) -> None:
        self.s = s
        self.jobs = sorted(jobs, key=lambda j: j.job)
        self.run_s = {j.job: float((run_s or {}).get(j.job, j.run_s)) for j in jobs}
        self.part = {p.name: p for p in s.partitions}
        self.max_job_factor = max(p.job_factor for p in s.partitions) or 1
        self.all_nodes = frozenset(range(1, s.nodes + 1))
        self.free: set[int] = set(self.all_nodes)
        self.pending: dict[int, workload.Job] = {}
        self.running: dict[int, Running] = {}
        self.completing: dict[int, Running] = {}
        self.started: dict[int, tuple[int, tuple[int, ...], str]] = {}
        self.events: list[Event] = []
        self.seq = 0
        self.last_job_update = -(10**9)
        self.last_bf_sec = -(10**9)
        # fair share
        self.accounts = [a for a, _ in s.shares] or sorted({j.account for j in jobs})
        self.account_shares = dict(s.shares) or {a: 1.0 for a in self.accounts}
        self.usage = {a: 0.0 for a in self.accounts}
        # fair-share factors until the first decay tick: those of the controller's last tick
        self.fs = {a: 1.0 for a in self.accounts} | dict(s.initial_fs)
        self.last_decay: int | None = None
        self.df = 1 - 0.693 / s.decay_half_life_s if s.decay_half_life_s > 0 else 1.0
        self.priority: dict[int, int] = {}
        self.now_f = s.submit_s
        self.stuck = 0
        self.latency = dict(s.end_latencies)
        self.sched_requests = 1  # the submissions queued one (proc_req.c: queue_job_scheduler)
        self.last_full_sec = self.last_sched_sec = -(10**9)
        self.next_free_tick: float | None = None
        self.plans: list[tuple[int, int, float, tuple[int, ...]]] = []  # cycle, job, planned start, nodes
        self.reason_set: set[int] = set()

    # ---- clocks and events -----------------------------------------------------------------

    def push(self, t: float, kind: str, data: object = None) -> None:
        self.seq += 1
        heapq.heappush(self.events, Event(t, self.seq, kind, data))

    def sec(self, t: float) -> int:
        """Slurm's "now" at float time t: time(NULL) reads the kernel's coarse clock, which lags
        the log timestamps (gettimeofday) by up to a timer tick, so a pass logged at x.002 s
        still stamps second x - 1 (seen in both replays: starts 1 s before their log line)."""
        return math.floor(t - (self.s.coarse_clock_lag_s if self.s.on("coarse_clock") else 0.0))

    def touch(self, now: int) -> None:
        self.last_job_update = max(self.last_job_update, now)

    # ---- priority --------------------------------------------------------------------------

    def fair_tree(self) -> None:
        """Fair Tree (fair_tree.c:_calc_tree_fs): siblings under root are the root user's
        association and the accounts; Level Fairshare LF = S / U with S the shares normalised over
        the siblings and U the usage over the parent's; siblings ranked by LF (ties: users before
        accounts; tied accounts merged); a user's factor is rank / users, the rank counting down
        from the number of user associations, a tie keeping the rank."""
        s = self.s
        if not s.on("fair_share"):
            self.fs = {a: 1.0 for a in self.accounts}
            return
        root_user = 1 if s.root_user_assoc and s.on("root_user_assoc") else 0
        total_shares = root_user + sum(self.account_shares.values())
        root_usage = sum(self.usage.values())
        users = root_user + len(self.accounts)

        def lf(shares: float, usage: float) -> float:
            u = usage / root_usage if root_usage > 0 else 0.0
            return math.inf if u == 0 else (shares / total_shares) / u

        entries = [(lf(1.0, 0.0), 0, None)] if root_user else []  # (LF, 0 = user / 1 = account, name)
        entries += [(lf(self.account_shares[a], self.usage[a]), 1, a) for a in self.accounts]
        entries.sort(key=lambda e: (-e[0], e[1]))
        rank = rnt = users
        prev = None
        for lf_value, _, name in entries:
            tied = prev is not None and lf_value == prev
            if not tied:
                rank = rnt
            if name is not None:
                self.fs[name] = rank / users
            rnt -= 1
            prev = lf_value

    def compute_priority(self, job: workload.Job, now: int | None) -> int:
        """priority_multifactor.c:_get_priority_internal: sum of weighted factors, truncated to an
        integer. Age counts from the job's begin time (its accrue time without accounting limits,
        acct_policy.c:acct_policy_handle_accrue_time) to the tick, over PriorityMaxAge."""
        s = self.s
        if s.priority != "multifactor":
            return 10**9 - job.job  # priority/basic: one lower per submission
        age = 0.0
        if now is not None and s.on("age") and now > job.submit_s:
            age = min((now - job.submit_s) / s.max_age_s, 1.0)
        part = self.part[job.partition].job_factor / self.max_job_factor
        value = s.weight_age * age + s.weight_fairshare * self.fs.get(job.account, 1.0)
        value += s.weight_partition * part
        return max(1, int(value))

    def sort_key(self, job: workload.Job) -> tuple:
        """job_scheduler.c:sort_job_queue2: PriorityTier (high first), priority (high first),
        submit time, job id. Every job was submitted before t0 in trace order."""
        tier = self.part[job.partition].tier if self.s.on("priority_tier") else 0
        return (-tier, -self.priority[job.job], job.job)

    def decay_tick(self, t: float) -> None:
        now = self.sec(t)
        s = self.s
        if self.last_decay is not None and now > self.last_decay:
            factor = self.df ** (now - self.last_decay)
            for a in self.usage:
                self.usage[a] *= factor
            for r in self.running.values():  # usage of running jobs since the last tick
                self.add_usage(r, max(self.last_decay, r.start), now)
        self.last_decay = now
        self.fair_tree()
        for job in self.pending.values():
            self.priority[job.job] = self.compute_priority(job, now)
        if self.pending:
            self.touch(now)  # priority_multifactor.c:decay_apply_weighted_factors
        if s.priority == "multifactor":
            self.push(t + s.calc_period_s, "decay")

    def add_usage(self, r: Running, t_from: int, t_to: int) -> None:
        """priority_multifactor.c:_apply_new_usage: billable TRES (allocated CPUs) x seconds,
        times decay_factor ** seconds."""
        delta = max(0, t_to - t_from)
        self.usage[r.job.account] += delta * self.df**delta * r.job.nodes * self.s.cpus_per_node

    # ---- starting and ending jobs ------------------------------------------------------------

    def start(self, job: workload.Job, nodes: frozenset[int], t: float, by: str) -> Running:
        now = self.sec(t)
        self.free.difference_update(nodes)
        r = Running(
            job, nodes, now, now + job.time_limit_min * 60, t + self.run_s[job.job] + self.s.run_overhead_s
        )
        self.running[job.job] = r
        del self.pending[job.job]
        self.started[job.job] = (now, tuple(sorted(nodes)), by)
        self.touch(now)
        self.push(r.end_f, "end", job.job)
        return r

    def end(self, t: float, job_id: int) -> None:
        """The job's batch script ends (sacct End): it stops running (no more usage at ticks), but
        its nodes stay COMPLETING until slurmd's answer to the terminate request, ``end_latency_s``
        later (see release)."""
        r = self.running.pop(job_id)
        now = self.sec(t)
        self.completing[job_id] = r
        counted = self.s.enforce_limits or not self.s.on("tick_usage_only")
        if self.last_decay is not None and self.s.priority == "multifactor" and counted:
            # priority_multifactor.c:priority_p_job_end adds the use since the last tick, but
            # acct_policy.c:_adjust_limit_usage calls it only with AccountingStorageEnforce=limits;
            # without, the use of a job between its last tick and its end is never counted
            self.add_usage(r, max(self.last_decay, r.start), now)
        self.touch(now)
        self.push(t + self.latency.get(job_id, self.s.end_latency_s), "release", job_id)

    def release(self, t: float, job_id: int) -> None:
        """Epilog complete: the nodes are free. Usually slurmd answers the terminate request with
        "already complete" and the agent only queues a scheduling request (agent.c:
        queue_job_scheduler), served by the controller's next background tick (see tick)."""
        r = self.completing.pop(job_id)
        self.free.update(r.nodes)
        self.touch(self.sec(t))
        if not self.s.on("periodic_loops"):
            return
        if self.s.on("queued_end_passes"):
            self.sched_requests += 1
        else:
            self.main_pass(t)

    def schedule_ticks(self) -> None:
        """The controller's background thread (controller.c:_slurmctld_background) wakes about
        once a second (10 x 100 ms sleeps plus its work: its phase drifts by 1-4 ms per second).
        With measured periodic passes, the ticks between two of them are spread evenly; after the
        last one, and without measurements, ticks are 1 s apart from main_phase_s."""
        s = self.s
        passes = [p for p in s.main_passes_s]
        if passes:
            for a, b in itertools.pairwise(passes):
                n = max(1, round(b - a))
                self.push(a, "tick", True)
                for k in range(1, n):
                    self.push(a + k * (b - a) / n, "tick", False)
            self.push(passes[-1], "tick", True)
            self.last_full_sec = math.floor(passes[0]) - s.sched_interval
            self.next_free_tick = passes[-1] + 1.0
        else:
            first = math.floor(s.submit_s) + (s.main_phase_s % 1.0)
            self.push(first, "tick", None)
            # periodic passes at main_phase_s + k * sched_interval
            phase = math.floor(s.main_phase_s) % s.sched_interval
            k = (math.floor(first) - phase) % s.sched_interval
            self.last_full_sec = math.floor(first) - k
            if k == 0:
                self.last_full_sec -= s.sched_interval
            self.next_free_tick = None
        self.last_sched_sec = self.last_full_sec

    def tick(self, t: float, periodic: bool | None) -> None:
        """One background tick: the periodic full pass when sched_interval whole seconds passed
        since the last one; else, if a scheduling request is queued (job end, submission) and at
        least batch_sched_delay (3 s) passed since the thread's last pass, a pass."""
        s = self.s
        now = self.sec(t)
        if periodic is None:
            periodic = now - self.last_full_sec >= s.sched_interval
            self.push(t + 1.0, "tick", None)
        elif self.next_free_tick is not None and t == s.main_passes_s[-1]:
            self.push(self.next_free_tick, "tick", None)
        if t < s.submit_s:  # before the jobs exist: only the clock matters
            if periodic:
                self.last_full_sec = self.last_sched_sec = now
            return
        if periodic:
            self.last_full_sec = self.last_sched_sec = now
            self.sched_requests = 0
            self.main_pass(t)
        elif self.sched_requests and now - self.last_sched_sec >= s.batch_sched_delay:
            self.last_sched_sec = now
            self.sched_requests = 0
            self.main_pass(t)

    def eligible(self, now: int) -> list[workload.Job]:
        jobs = [j for j in self.pending.values() if j.submit_s <= now]
        return sorted(jobs, key=self.sort_key)

    # ---- the main scheduler ----------------------------------------------------------------

    def main_pass(self, t: float) -> None:
        """job_scheduler.c:_schedule: eligible jobs in queue order; each starts if it fits on free
        nodes of its partition; the first that does not fit marks its partition failed and takes
        the partition's nodes out of this pass, so every job of any partition over those nodes
        waits (here both partitions cover all nodes: the first blocked job stops the pass)."""
        now = self.sec(t)
        waiting = [j for j in self.pending if j not in self.reason_set]
        if waiting:  # the first pass gives new jobs a reason (BeginTime): last_job_update
            self.reason_set.update(waiting)
            self.touch(now)
        queue = self.eligible(now)
        if not queue:
            return
        self.touch(now)  # jobs' state reasons change (job_scheduler.c sets last_job_update)
        blocked = False  # every partition covers every node: one failure takes them all out
        for job in queue:
            if blocked:
                break
            nodes = best_fit(frozenset(self.free), job.nodes, self.s.on("best_fit"))
            if nodes is not None:
                self.start(job, nodes, t, "main")
            elif self.s.on("main_blocks"):
                blocked = True

    # ---- the backfill scheduler ------------------------------------------------------------

    def backfill_cycle(self, t: float) -> None:
        """backfill.c:_attempt_backfill (``backfill_cycle``) on the eligible jobs in queue order;
        the running jobs known to will-run by their planned ends (start + time limit)."""
        s = self.s
        now = self.sec(t)
        queue = self.eligible(now)
        if not queue:
            return  # "no jobs to backfill": nothing changes, so the next cycle waits for a change
        rules = CycleRules(
            bf_resolution=s.bf_resolution if s.on("bf_resolution") else 1,
            bf_window_s=s.bf_window_min * 60,
            bf_max_job_test=s.bf_max_job_test,
            epoch=s.t0_epoch,
            every_job_reserves=s.on("every_job_reserves"),
            try_later=s.on("try_later"),
            will_run_groups=s.on("will_run_groups"),
            best_fit=s.on("best_fit"),
        )
        running = sorted(self.running.values(), key=lambda r: r.est_end)  # ties: in start order
        outcome = backfill_cycle(
            now,
            queue,
            count_of=lambda job: job.nodes,
            limit_of=lambda job: job.time_limit_min * 60,
            all_nodes=self.all_nodes,
            free=self.free,
            running=[(r.est_end, r.nodes) for r in running],
            start=lambda job, nodes: self.start(job, nodes, t, "backfill"),
            rules=rules,
        )
        if outcome.tested:
            self.touch(now)  # the jobs' expected start is set: last_job_update
        for d in outcome.decisions:
            self.plans.append((now, d.job.job, d.when, tuple(sorted(d.nodes))))
        self.stuck += outcome.stuck

    # ---- the event loop ----------------------------------------------------------------------

    def run(self, horizon: float = 100_000.0) -> dict[int, tuple[int, tuple[int, ...], str]]:
        s = self.s
        for job in self.jobs:  # every job is submitted before t0 (sbatch --begin)
            self.pending[job.job] = job
            self.priority[job.job] = self.compute_priority(job, None)
        self.touch(math.floor(s.submit_s))
        if s.on("periodic_loops"):
            self.schedule_ticks()
            # the backfill thread: last cycle before the jobs came, then checks every second
            self.last_bf_sec = (
                math.floor(s.bf_last_cycle_s) if s.bf_last_cycle_s is not None else int(s.submit_s) - 100
            )
            first = math.floor(s.submit_s) + s.bf_phase_s
            if first < s.submit_s:
                first += 1
            self.push(first, "bf-check")
        else:  # both loops at every whole second (after the ends of that second)
            self.push(math.ceil(s.submit_s) + 0.5, "second")
        if s.priority == "multifactor":
            if s.on("decay_ticks"):
                k = math.floor((s.submit_s - s.decay_phase_s) / s.calc_period_s) + 1
                self.push(s.decay_phase_s + k * s.calc_period_s, "decay")
            self.last_decay = math.floor(s.submit_s)
        while self.events and (self.pending or self.running or self.completing):
            ev = heapq.heappop(self.events)
            t = ev.time
            if t > horizon:
                break
            self.now_f = t
            if ev.kind == "release":
                self.release(t, ev.data)
            elif ev.kind == "end":
                self.end(t, ev.data)
                if not s.on("decay_ticks") and s.priority == "multifactor":
                    self.decay_tick(t)  # recomputed at every event instead
            elif ev.kind == "main":
                self.main_pass(t)
            elif ev.kind == "tick":
                self.tick(t, ev.data)
            elif ev.kind == "bf-check":
                now = self.sec(t)
                due = now - self.last_bf_sec >= s.bf_interval
                work = self.last_job_update >= self.last_bf_sec or not s.on("bf_needs_work")
                if due and work:
                    if not s.on("decay_ticks") and s.priority == "multifactor":
                        self.decay_tick(t)
                    self.backfill_cycle(t)
                    self.last_bf_sec = now
                    self.push(t + s.bf_interval + s.bf_cycle_shift_s, "bf-check")
                else:
                    self.push(t + 1.0, "bf-check")
            elif ev.kind == "decay":
                self.decay_tick(t)
            elif ev.kind == "second":
                now = self.sec(t)
                if not s.on("decay_ticks") and s.priority == "multifactor":
                    self.decay_tick(t)
                self.main_pass(t)
                if now % s.bf_interval == 0:
                    self.backfill_cycle(t)
                self.push(t + 1.0, "second")
        return self.started

    def arrivals_at_begin(self) -> None:
        """With begin_at_pass off, a --begin time acts like a submission: a main pass then."""
        for job in self.jobs:
            self.push(job.submit_s + 0.001, "main")


def simulate(
    jobs: list[workload.Job],
    settings: Settings,
    run_s: dict[int, float] | None = None,
) -> dict[int, tuple[int, tuple[int, ...], str]]:
    """Start second, nodes (1-based) and starting loop ("main" or "backfill") of each job."""
    model = Model(jobs, settings, run_s)
    if not settings.on("begin_at_pass"):
        model.arrivals_at_begin()
    return model.run()


def _log_lines(path: Path, t0: int) -> list[tuple[float, str]]:
    """(time relative to t0, line) of a Slurm log's lines."""
    if not path.exists():
        return []
    stamp = re.compile(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\]")
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if m := stamp.search(line):
            out.append(
                (round(datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp() - t0, 3), line)
            )
    return out


def _log_times(path: Path, pattern: str, t0: int) -> list[float]:
    """Times relative to t0 of the log lines containing ``pattern``."""
    return [t for t, line in _log_lines(path, t0) if pattern in line]


def clocks_from_run(run_dir: Path, meta: dict) -> dict:
    """The clocks of Slurm's loops in one replay, from its logs (replay.py copies them): periodic
    main passes, the start of the backfill thread and its cycles (logged with
    DebugFlags=Backfill), and the decay tick replay.py aligned t0 to."""
    t0 = int(meta["t0"])
    loops = dict(meta.get("loops") or {})
    loops["main_periodic_passes_s"] = _log_times(run_dir / "sched.log", "for full queue", t0)
    loops["backfill_thread_start_s"] = (
        _log_times(run_dir / "sched.log", "Backfill scheduler plugin loaded", t0) or [None]
    )[-1]
    loops["backfill_cycles_s"] = _log_times(run_dir / "slurmctld.log", "_attempt_backfill: beginning", t0)
    # a job's run on this machine: from its start (the log line of the pass that started it) to
    # its completion message, minus the sleep; the trace's run times are in trace.csv
    started, completed = {}, {}
    for t, line in _log_lines(run_dir / "slurmctld.log", t0):
        m = re.search(r"(?:sched: Allocate JobId=|_start_job: Started JobId=)(\d+)", line)
        if m:
            started.setdefault(m.group(1), t)
        m = re.search(r"_job_complete: JobId=(\d+) done", line)
        if m:
            completed[m.group(1)] = t
    loops["run_spans_s"] = {j: completed[j] - started[j] for j in started if j in completed}
    loops["init_prio"] = {
        m.group(1): int(m.group(2))
        for _, line in _log_lines(run_dir / "slurmctld.log", t0)
        if (m := re.search(r"_slurm_rpc_submit_batch_job: JobId=(\d+) InitPrio=(\d+)", line))
    }
    # the backfill thread sleeps bf_interval after a cycle ends, so each cycle's own duration
    # (a few ms, more with more jobs) shifts the next one: the mean shift per cycle
    cycles = loops["backfill_cycles_s"]
    interval = int(meta["bf_interval"])
    shifts = [b - a - interval for a, b in itertools.pairwise(cycles) if abs(b - a - interval) < 0.2]
    if shifts:
        loops["backfill_cycle_shift_s"] = round(sum(shifts) / len(shifts), 4)
    if loops.get("decay_tick_s") is None:
        # the decay thread's first tick is at the controller's start (priority_multifactor.c:
        # _decay_thread reads the last decay time, then runs at once)
        started = _log_times(run_dir / "slurmctld.log", "_read_last_decay_ran", t0)
        started = started or _log_times(run_dir / "slurmctld.log", "slurmctld version", t0)
        if started:
            loops["decay_tick_s"] = started[-1]
    return loops


def settings_from_replay(
    meta: dict, jobs: list[workload.Job], real_rows: dict | None = None, loops: dict | None = None, **over
) -> Settings:
    """The Settings of a replay (replay.json), with its measured clocks when it has them."""
    config = meta.get("config", "a")
    loops = loops if loops is not None else (meta.get("loops") or {})
    kw: dict = dict(
        nodes=int(meta["nodes"]),
        bf_interval=int(meta["bf_interval"]),
        sched_interval=int(meta["sched_interval"]),
        bf_resolution=int(meta["bf_resolution"]),
        t0_epoch=int(meta["t0"]),
    )
    if config == "b":
        kw |= dict(
            partitions=(Partition("batch", 1, 1), Partition("high", 10, 10)),
            priority="multifactor",
            weight_age=1000,
            weight_fairshare=10000,
            weight_partition=1000,
            max_age_s=600,
            decay_half_life_s=600,
            calc_period_s=float(meta.get("priority_calc_period_s", 60)),
            shares=(("team1", 1.0), ("team2", 1.0)),
        )
    else:
        kw |= dict(partitions=(Partition("gpu"),))
    sbatch = [float(r["sbatch_s"]) for r in (real_rows or {}).values() if r.get("sbatch_s")]
    if sbatch:
        kw["submit_s"] = min(sbatch)
    if config == "b" and real_rows:
        # the factors the jobs were submitted with (InitPrio in slurmctld.log): a replay that resets
        # usage after the controller's last tick is submitted with that tick's factors
        by_id = {r["slurm_id"]: k for k, r in real_rows.items()}
        part_norm = {"batch": 0.1, "high": 1.0}
        account = {j.job: (j.account, j.partition) for j in jobs}
        initial = {}
        for slurm_id, prio in (loops.get("init_prio") or {}).items():
            if slurm_id in by_id:
                acct, part = account[by_id[slurm_id]]
                initial.setdefault(acct, round((prio - 1000 * part_norm[part]) / 10000, 3))
        if initial:
            kw["initial_fs"] = tuple(sorted(initial.items()))
    if real_rows and loops.get("run_spans_s"):
        run = {j.job: j.run_s for j in jobs}
        extra = sorted(
            span - run[int(r["job"])]
            for r in real_rows.values()
            if (span := loops["run_spans_s"].get(r["slurm_id"])) is not None
        )
        if extra:
            kw["run_overhead_s"] = round(extra[len(extra) // 2] - 0.005, 3)
    main = loops.get("main_periodic_passes_s") or []
    if main:
        kw["main_passes_s"] = tuple(main)
        kw["main_phase_s"] = main[0] % int(meta["sched_interval"])
    bf = [c for c in loops.get("backfill_cycles_s") or []]
    if bf:
        kw["bf_phase_s"] = bf[0] % 1.0
    if loops.get("backfill_cycle_shift_s") is not None:
        kw["bf_cycle_shift_s"] = float(loops["backfill_cycle_shift_s"])
    start = loops.get("backfill_thread_start_s")
    before = [c for c in bf if c < kw.get("submit_s", -10)]
    if before:
        kw["bf_last_cycle_s"] = before[-1]
    elif start is not None:  # the thread counts its start as the last cycle
        kw["bf_last_cycle_s"] = start
        if not bf:
            kw["bf_phase_s"] = start % 1.0
    if loops.get("decay_tick_s") is not None:
        period = float(meta.get("priority_calc_period_s", 60))
        kw["decay_phase_s"] = loops["decay_tick_s"] % period
    kw |= over
    return Settings(**kw)


def ablate(settings: Settings) -> dict[str, Settings]:
    """One Settings per feature, with that feature switched off."""
    return {name: replace(settings, off=settings.off | {name}) for name in FEATURES}


# ---- the tests' oracle of gpuplan's engine ---------------------------------------------------------


def reference_schedule(
    submit: Sequence[float],
    run: Sequence[float],
    estimate: Sequence[float],
    nodes: Sequence[int],
    job_id: Sequence[int],
    total_nodes: int,
    backfill: str,
    bf: dict[str, float] | None = None,
    plans: list[tuple[float, str, int, frozenset[int], float, float]] | None = None,
) -> tuple[list[float | None], dict[int, list[float]]]:
    """Start time of each job (None if it never ran), and the reservations each job was given (EASY:
    the shadow times while it was the blocked head; slurm: the reserved start times), under the
    rules of issue 2 (``none``: strict FIFO, ``easy``: EASY backfill, both counting nodes) or
    Slurm's backfill on named nodes (``slurm``). Jobs larger than the cluster are rejected. ``bf``:
    bf_interval, bf_window (s), bf_resolution, bf_max_job_test, and optionally sched_interval (60),
    batch_sched_delay (3) and default_queue_depth (100) for the slurm mode, whose main scheduler runs
    on slurmctld's background ticks (every whole second from the controller's start at 0): a full
    pass every sched_interval, else a pass of at most default_queue_depth + 1 jobs when a submission
    or a job end asked for one and batch_sched_delay passed since the last pass. Other modes pass at
    every instant. ``plans``, if given, gets each backfill cycle's decisions in order: (cycle time,
    "start" or "reserve", job, nodes, from, until), a start's window being [now, now + limit], a
    reservation's [floor_res(T), floor_res(T + limit))."""
    n = len(submit)
    order = sorted(range(n), key=lambda j: (submit[j], job_id[j], j))
    start: list[float | None] = [None] * n
    end: dict[int, float] = {}  # running job -> end time
    ends: list[tuple[float, int]] = []  # heap of (end time, job)
    queue: list[int] = []
    reservations: dict[int, list[float]] = {}
    free = total_nodes
    next_arrival = 0

    # the nodes themselves, for Slurm's backfill, which plans on named nodes (FIFO and EASY count)
    track_nodes = backfill == "slurm"
    all_nodes = frozenset(range(total_nodes))
    free_set = set(all_nodes) if track_nodes else set()
    nodes_of: dict[int, frozenset[int]] = {}

    def slurm_cycle(now: float, queue: list[int], bf: dict[str, float]) -> list[int]:
        """One backfill cycle (``backfill_cycle``) with gpuplan's shortcut of ending it once no
        node is free; the jobs left waiting, in queue order."""
        rules = CycleRules(bf["bf_resolution"], bf["bf_window"], bf["bf_max_job_test"], stop_when_full=True)
        running = sorted(end, key=lambda r: (start[r] + estimate[r], r))  # type: ignore[operator]
        outcome = backfill_cycle(
            now,
            queue,
            count_of=lambda j: nodes[j],
            limit_of=lambda j: estimate[j],
            all_nodes=all_nodes,
            free=free_set,
            running=[(start[r] + estimate[r], nodes_of[r]) for r in running],  # type: ignore[operator]
            start=lambda j, chosen: begin(j, now, chosen),
            rules=rules,
        )
        for d in outcome.decisions:
            if d.kind == "reserve":
                reservations.setdefault(d.job, []).append(d.when)
            if plans is not None:
                plans.append((now, d.kind, d.job, d.nodes, d.begin, d.end))
        return [j for j in queue if j not in end]  # not started

    def begin(j: int, now: float, chosen: frozenset[int] | None = None) -> None:
        nonlocal free
        start[j] = now
        end[j] = now + run[j]
        heapq.heappush(ends, (end[j], j))
        free -= nodes[j]
        if track_nodes:
            nodes_of[j] = chosen if chosen is not None else best_fit(free_set, nodes[j])  # type: ignore[assignment]
            free_set.difference_update(nodes_of[j])

    # slurm mode: when the next backfill cycle is due; slurmctld starts at 0 and its backfill thread
    # runs the first cycle bf_interval later
    next_cycle = bf["bf_interval"] if bf else 0.0
    wake: float | None = 0.0 if backfill == "slurm" else None  # slurm: the background thread ticks
    sched_interval = bf.get("sched_interval", 60) if bf else 0
    last_full = last_pass = 0.0  # the main scheduler's thread starts with the controller
    requested = False
    while next_arrival < n or ends or queue:
        upcoming = [ends[0][0]] if ends else []
        if next_arrival < n:
            upcoming.append(submit[order[next_arrival]])
        if wake is not None:
            upcoming.append(wake)
        now = min(upcoming)
        if wake is not None and now >= wake:
            wake = None
        # 1. all ends at this instant
        while ends and ends[0][0] <= now:
            _, j = heapq.heappop(ends)
            del end[j]
            free += nodes[j]
            requested = True
            if track_nodes:
                free_set.update(nodes_of.pop(j))
        # 2. all arrivals (queue order: submit time, then job id)
        while next_arrival < n and submit[order[next_arrival]] <= now:
            j = order[next_arrival]
            next_arrival += 1
            if nodes[j] <= total_nodes:
                queue.append(j)
                requested = True
        # 3. one scheduling pass: start from the head while the head fits
        depth = math.inf
        if backfill == "slurm":
            assert bf is not None
            tick = now == math.floor(now)
            if sched_interval > 0 and tick and now - last_full >= sched_interval:
                last_full = last_pass = now
                requested = False
            elif requested and tick and now - last_pass >= bf.get("batch_sched_delay", 3):
                last_pass = now
                requested = False
                depth = bf.get("default_queue_depth", 100) + 1
            else:
                depth = 0  # no pass at this instant
        started = 0
        while started < min(len(queue), depth) and nodes[queue[started]] <= free:
            begin(queue[started], now)
            started += 1
        del queue[:started]
        if backfill == "slurm":
            assert bf is not None
            tick_next = math.floor(now) + 1  # the background thread ticks every second
            wake = tick_next if wake is None else min(wake, tick_next)
            if now >= next_cycle:
                # cycles fall on multiples of bf_interval whether or not jobs wait: a job that
                # arrives between two cycles waits for the next one
                boundary = math.floor(now / bf["bf_interval"]) * bf["bf_interval"]
                if queue and now == boundary:
                    queue = slurm_cycle(now, queue, bf)
                next_cycle = boundary + bf["bf_interval"]
            if queue:
                wake = next_cycle if wake is None else min(wake, next_cycle)
            continue
        if backfill == "none" or not queue:
            continue
        head = queue[0]
        free_then = free
        shadow = now
        for r in sorted(end, key=lambda r: (start[r] + estimate[r], job_id[r], r)):  # type: ignore[operator]
            if free_then >= nodes[head]:
                break
            free_then += nodes[r]
            shadow = start[r] + estimate[r]  # type: ignore[operator]
        extra = free_then - nodes[head]
        reservations.setdefault(head, []).append(shadow)
        backfilled = set()
        for j in queue[1:]:
            if nodes[j] > free:
                continue
            if now + estimate[j] <= shadow:
                pass
            elif nodes[j] <= extra:
                extra -= nodes[j]
            else:
                continue
            begin(j, now)
            backfilled.add(j)
        if backfilled:
            queue = [j for j in queue if j not in backfilled]
    return start, reservations
