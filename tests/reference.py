"""A straightforward pure-Python implementation of the FIFO and EASY rules, as a test oracle.

Written from the rules in issue 2, independently of the compiled engine and without its data
structures: lists, sorts and counters only. Slow, and meant to be obviously right.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def reference_schedule(
    submit: Sequence[float],
    run: Sequence[float],
    estimate: Sequence[float],
    nodes: Sequence[int],
    job_id: Sequence[int],
    total_nodes: int,
    backfill: str,
) -> tuple[list[float | None], dict[int, list[float]]]:
    """Start time of each job (None if it never ran), and with EASY the shadow times each job was
    given while it was the blocked head. Jobs larger than the cluster are rejected."""
    n = len(submit)
    order = sorted(range(n), key=lambda j: (submit[j], job_id[j], j))
    start: list[float | None] = [None] * n
    end: dict[int, float] = {}  # running job -> end time
    ends: list[tuple[float, int]] = []  # heap of (end time, job)
    queue: list[int] = []
    reservations: dict[int, list[float]] = {}
    free = total_nodes
    next_arrival = 0

    def begin(j: int, now: float) -> None:
        nonlocal free
        start[j] = now
        end[j] = now + run[j]
        heapq.heappush(ends, (end[j], j))
        free -= nodes[j]

    while next_arrival < n or ends:
        upcoming = [ends[0][0]] if ends else []
        if next_arrival < n:
            upcoming.append(submit[order[next_arrival]])
        now = min(upcoming)
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
