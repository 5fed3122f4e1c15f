"""A straightforward pure-Python implementation of the FIFO and EASY rules, as a test oracle.

Written from the rules in issue 2, independently of the compiled engine and without its data
structures: lists, sorts and counters only. Slow, and meant to be obviously right.
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
) -> tuple[list[float | None], dict[int, list[float]]]:
    """Start time of each job (None if it never ran), and the reservations each job was given (EASY:
    the shadow times while it was the blocked head; slurm: the reserved start times). Jobs larger
    than the cluster are rejected. ``bf``: bf_interval, bf_window (s), bf_resolution,
    bf_max_job_test for the slurm mode."""
    n = len(submit)
    order = sorted(range(n), key=lambda j: (submit[j], job_id[j], j))
    start: list[float | None] = [None] * n
    end: dict[int, float] = {}  # running job -> end time
    ends: list[tuple[float, int]] = []  # heap of (end time, job)
    queue: list[int] = []
    reservations: dict[int, list[float]] = {}
    free = total_nodes
    next_arrival = 0

    def slurm_cycle(
        now: float, queue: list[int], bf: dict[str, float], start_job: Any, reserved: dict[int, list[float]]
    ) -> list[int]:
        resolution = bf["bf_resolution"]
        # free nodes over time: now, then at each running job's limit rounded up to the resolution
        profile = [(now, free)]
        for r in sorted(end, key=lambda r: (start[r] + estimate[r], job_id[r], r)):  # type: ignore[operator]
            t = math.ceil((start[r] + estimate[r]) / resolution) * resolution  # type: ignore[operator]
            if t <= now:  # started this instant with no time to run: still holds its nodes now
                t = (math.floor(now / resolution) + 1) * resolution
            profile.append((t, profile[-1][1] + nodes[r]))
        left = []
        for tested, j in enumerate(queue):
            if tested >= bf["bf_max_job_test"]:
                left.append(j)
                continue
            chosen = None
            for t, _ in sorted(profile):
                if t >= now + bf["bf_window"]:
                    break
                duration = max(estimate[j], 1)  # a slot lasts at least a second
                stop = math.floor((t + duration + resolution - 1) / resolution) * resolution
                points = [t] + [time for time, _ in profile if t < time < stop]
                if all(_profile_free(sorted(profile), p) >= nodes[j] for p in points):
                    chosen = (t, stop)
                    break
            if chosen is None:
                left.append(j)
                continue
            t, stop = chosen
            # take the nodes over [t, stop): rebuild the profile with the two new breakpoints
            times = sorted({time for time, _ in profile} | {t, stop})
            ordered = sorted(profile)
            profile = [
                (time, _profile_free(ordered, time) - (nodes[j] if t <= time < stop else 0)) for time in times
            ]
            if t == now:
                start_job(j, now)
            else:
                reserved.setdefault(j, []).append(t)
                left.append(j)
        return left

    def begin(j: int, now: float) -> None:
        nonlocal free
        start[j] = now
        end[j] = now + run[j]
        heapq.heappush(ends, (end[j], j))
        free -= nodes[j]

    next_cycle = 0.0  # slurm mode: when the next backfill cycle is due
    wake: float | None = None
    while next_arrival < n or ends:
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
        # 2. all arrivals (queue order: submit time, then job id)
        while next_arrival < n and submit[order[next_arrival]] <= now:
            j = order[next_arrival]
            next_arrival += 1
            if nodes[j] <= total_nodes:
                queue.append(j)
        # 3. one scheduling pass: start from the head while the head fits
        started = 0
        while started < len(queue) and nodes[queue[started]] <= free:
            begin(queue[started], now)
            started += 1
        del queue[:started]
        if backfill == "slurm":
            assert bf is not None
            if now >= next_cycle:
                # cycles fall on multiples of bf_interval whether or not jobs wait: a job that
                # arrives between two cycles waits for the next one
                boundary = math.floor(now / bf["bf_interval"]) * bf["bf_interval"]
                if queue and now == boundary:
                    queue = slurm_cycle(now, queue, bf, begin, reservations)
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


def _profile_free(profile: list[tuple[float, int]], t: float) -> int:
    """Free nodes at time t in a step profile [(time, free from then on)]."""
    return [free for time, free in profile if time <= t][-1]
