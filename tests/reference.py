"""A straightforward pure-Python implementation of the FIFO, EASY and Slurm backfill rules, as a
test oracle.

Written from the rules in issue 2 and, for Slurm's backfill, from the specification that
bench/fidelity_slurm/README.md derives from a real Slurm 22.05, independently of the compiled engine
and without its data structures: lists, sets and sorts only. Slow, and meant to be obviously right.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any


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
    the shadow times while it was the blocked head; slurm: the reserved start times). Jobs larger
    than the cluster are rejected. ``bf``: bf_interval, bf_window (s), bf_resolution,
    bf_max_job_test, and optionally sched_interval (60), batch_sched_delay (3) and
    default_queue_depth (100) for the slurm mode, whose main scheduler runs on slurmctld's
    background ticks (every whole second from the controller's start at 0): a full pass every
    sched_interval, else a pass of at most default_queue_depth + 1 jobs when a submission or a job
    end asked for one and batch_sched_delay passed since the last pass. Other modes pass at every
    instant. ``plans``, if given, gets each backfill cycle's decisions in order: (cycle time,
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
    free_set = set(range(total_nodes)) if track_nodes else set()
    nodes_of: dict[int, frozenset[int]] = {}

    def slurm_cycle(now: float, queue: list[int], bf: dict[str, float]) -> list[int]:
        """Slurm's backfill cycle on named nodes (bench/fidelity_slurm/README.md, "Semantics the
        engine must implement", items 3, 5, 11-13): a map of records [begin, end, nodes free of this
        cycle's reservations]; each tested job starts now or reserves its will-run start."""
        res = bf["bf_resolution"]

        def floor_res(t: float) -> float:
            return math.floor(t / res) * res

        plan = [[floor_res(now), floor_res(now + bf["bf_window"]), frozenset(range(total_nodes))]]
        running = sorted(end, key=lambda r: (start[r] + estimate[r], r))  # type: ignore[operator]
        left = []
        for tested, j in enumerate(queue):
            if tested >= bf["bf_max_job_test"] or not free_set:
                left.extend(queue[tested:])
                break
            limit = estimate[j]
            at = now
            for _ in range(500):
                avail = set(range(total_nodes))
                later = None
                for k, (begin_k, end_k, nodes_k) in enumerate(plan):
                    frees = k + 1 < len(plan) and not plan[k + 1][2] <= (avail & nodes_k)
                    if end_k > at and later is None and frees:
                        later = end_k
                    if end_k <= at:
                        continue
                    if begin_k > at + limit:
                        break
                    avail &= nodes_k
                found = _will_run(
                    frozenset(avail), nodes[j], now, running, free_set, nodes_of, start, estimate
                )
                if found is None:
                    if later is None:
                        break
                    at = later
                    continue
                when, chosen = max(found[0], at), found[1]
                if when <= now:
                    begin(j, now, chosen)
                    ends_at = start[j] + estimate[j]  # type: ignore[operator]
                    k = len(running)
                    while k > 0 and start[running[k - 1]] + estimate[running[k - 1]] > ends_at:  # type: ignore[operator]
                        k -= 1
                    running.insert(k, j)
                    _add_reservation(plan, plan[0][0], floor_res(now + limit), chosen, res)
                    if plans is not None:
                        plans.append((now, "start", j, chosen, now, now + limit))
                    break
                if later is not None and when > later:
                    at = later
                    continue
                if when > now + bf["bf_window"]:
                    break
                from_, until = floor_res(when), floor_res(when + limit)
                if any(e > from_ and b < until and not chosen <= n for b, e, n in plan):
                    at = when
                    continue
                reservations.setdefault(j, []).append(when)
                if plans is not None:
                    plans.append((now, "reserve", j, chosen, from_, until))
                _add_reservation(plan, from_, until, chosen, res)
                break
            if j not in end:  # not started
                left.append(j)
        return left

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


def best_fit(free: set[int] | frozenset[int], count: int) -> frozenset[int] | None:
    """Slurm's node choice for whole-node jobs (job_test.c:_eval_nodes): the free nodes form runs of
    consecutive numbers; take the smallest run with enough nodes (the first of equal ones), its lowest
    nodes; if no run is large enough, the largest run (the first of equal ones) whole, and repeat."""
    if len(free) < count:
        return None
    runs: list[list[int]] = []
    for node in sorted(free):
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


def _will_run(
    avail: frozenset[int],
    count: int,
    now: float,
    running: list[int],
    free: set[int],
    nodes_of: dict[int, frozenset[int]],
    start: list[float | None],
    estimate: Sequence[float],
) -> tuple[float, frozenset[int]] | None:
    """job_test.c:_will_run_test: now if the job fits on free candidates; else release running jobs by
    planned end in groups (the first ends at the 30-s boundary after the first job's end plus 30 s,
    each next window twice as long), testing after each group; the start is the last one's end. A job
    on no candidate is skipped, and then the next one joins the group whatever its end."""
    fit = best_fit(avail & free, count)
    if fit is not None:
        return now, fit
    planned = [start[r] + estimate[r] for r in running]  # type: ignore[operator]
    released = set(free)
    window, boundary, i = 30.0, None, 0
    while i < len(running):
        last, more = None, True
        while True:
            if i >= len(running):
                more = False
                break
            r = running[i]
            i += 1
            if not nodes_of[r] & avail:
                continue
            if boundary is None:
                boundary = planned[i - 1] + 30 - planned[i - 1] % 30
            last = i - 1
            released |= nodes_of[r]
            if i >= len(running):
                more = False
                break
            if planned[i] > boundary + window:
                break
        if last is None:
            break
        window *= 2
        while i < len(running) and planned[i] > boundary + window:  # type: ignore[operator]
            window *= 2
        fit = best_fit(avail & released, count)
        if fit is not None:
            return max(now + 1, planned[last]), fit  # a job past its planned end still runs now
        if not more:
            break
    return None


def _add_reservation(
    plan: list[list[Any]], start: float, end: float, nodes: frozenset[int], res: float
) -> None:
    """backfill.c:_add_reservation: split the plan at start and end (at least one resolution apart),
    take ``nodes`` out of the records in between, then merge the first pair of equal neighbours."""
    start = max(start, plan[0][0])
    end = max(end, start + res)
    placed, one_before, one_after, j = False, 0, None, 0
    while True:
        if plan[j][1] > start:
            plan.insert(j + 1, [start, plan[j][1], plan[j][2]])
            plan[j][1] = start
            placed = True
            break
        if plan[j][1] == start:
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
        if end < plan[j][1]:
            plan.insert(j + 1, [end, plan[j][1], plan[j][2]])
            plan[j][1] = end
        plan[j][2] = plan[j][2] - nodes
        if end == plan[j][1]:
            one_after = j + 1 if j + 1 < len(plan) else None
            break
    i = one_before
    while i != one_after and i + 1 < len(plan):
        if plan[i][2] == plan[i + 1][2]:
            plan[i][1] = plan[i + 1][1]
            del plan[i + 1]
            break
        i += 1
