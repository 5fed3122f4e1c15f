"""A small reference model of Slurm's scheduling loops, written from Slurm's documentation and from
what the harness saw in slurmctld.log, to tell which of gpuplan's gaps explain the differences.

It is not gpuplan's model and not Slurm's code; it exists so compare.py can show how close a model
with these documented behaviours comes to the real replay (the column ``ref``):

- Discrete time in whole seconds (sacct's resolution; ``--begin`` and trace times are whole
  seconds). At each second: jobs whose run is over end and free their nodes; then the main
  scheduler; then, every ``bf_interval`` seconds, the backfill scheduler.
- Main scheduler (``sched_interval``, and on every job end or arrival): pending eligible jobs in
  priority order; start each that fits now on the lowest-numbered free nodes; the first job that
  does not fit blocks every lower-priority job of its partition for this pass (no backfill here).
- Backfill scheduler (``sched/backfill``): walks the pending jobs in priority order with a plan
  that holds only the reservations made so far in this pass (running jobs are not in it: they
  are known by their planned end, start + limit, not their real end). For each job: take the nodes
  free in the plan over [t, t + limit) (t = now first), ask for its earliest start on them
  ("will run": running jobs are released in order of planned end, those ending within 30 s of the
  first one together), and check its chosen nodes are free in the plan over its own window; if
  not, retry from the next plan boundary. A job whose start is now is started, every other job
  keeps its window as a reservation, so a later job may not take nodes that an earlier job's
  reservation needs. This is "every tested job reserves" (conservative backfill), where EASY
  reserves only for the head of the queue.
- Nodes are tracked one by one (a reservation names nodes, as Slurm's does), lowest-numbered first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import workload


@dataclass
class Run:
    job: int
    nodes: tuple[int, ...]
    start: int
    est_end: int  # start + time limit: what the scheduler plans with
    end: int  # start + measured run: when the nodes come back


def simulate(
    jobs: list[workload.Job],
    n_nodes: int,
    run_s: dict[int, int] | None = None,
    bf_interval: int = 1,
    bf_resolution: int = 1,
    will_run_window: int = 30,
    backfill: bool = True,
    horizon: int = 100_000,
) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Start second and nodes (1-based) of each job, jobs in priority order = trace order."""
    queue = sorted(jobs, key=lambda j: (j.submit_s, j.job))
    runs = {j.job: (run_s or {}).get(j.job, j.run_s) for j in jobs}
    free = set(range(1, n_nodes + 1))
    running: list[Run] = []
    pending = list(queue)
    started: dict[int, tuple[int, tuple[int, ...]]] = {}

    def start(job: workload.Job, nodes: tuple[int, ...], now: int) -> None:
        free.difference_update(nodes)
        running.append(Run(job.job, nodes, now, now + job.time_limit_min * 60, now + runs[job.job]))
        started[job.job] = (now, nodes)
        pending.remove(job)

    def main_pass(now: int) -> None:
        blocked: set[str] = set()
        for job in list(pending):
            if job.submit_s > now or job.partition in blocked:
                continue
            if job.nodes <= len(free):
                start(job, tuple(sorted(free)[: job.nodes]), now)
            else:
                blocked.add(job.partition)

    def will_run(job: workload.Job, avail: set[int], at: int) -> tuple[int, tuple[int, ...]] | None:
        """Earliest start >= ``at`` on ``avail`` nodes given the running jobs' planned ends, and
        the nodes. Running jobs are released in order of planned end, and every job that ends
        within ``will_run_window`` s of the first one released is released with it (so the start
        is the latest end of that group: seen in DebugFlags=Backfill logs)."""
        busy_until = {n: r.est_end for r in running for n in r.nodes if n in avail}
        ready = sorted(n for n in avail if busy_until.get(n, 0) <= at)
        if len(ready) >= job.nodes:
            return at, tuple(ready[: job.nodes])
        ends = sorted({t for t in busy_until.values() if t > at})
        i = 0
        while i < len(ends):
            anchor = ends[i]
            while i < len(ends) and ends[i] <= anchor + will_run_window:
                i += 1
            when = ends[i - 1]
            ready = sorted(n for n in avail if busy_until.get(n, 0) <= when)
            if len(ready) >= job.nodes:
                return when, tuple(ready[: job.nodes])
        return None

    def backfill_pass(now: int) -> None:
        res = bf_resolution

        def up(t: float) -> int:
            return int(math.ceil(t / res) * res)

        plan: list[tuple[int, int, frozenset[int]]] = []  # reservations: from, to, nodes

        def avail_during(t0: int, t1: int) -> set[int]:
            nodes = set(range(1, n_nodes + 1))
            for a, b, taken in plan:
                # a window ending at T clashes with a reservation starting at T, but a window
                # starting at T does not clash with one ending at T (seen in BackfillMap logs)
                if a <= t1 and t0 < b:
                    nodes -= taken
            return nodes

        for job in list(pending):
            if job.submit_s > now:
                continue
            limit = job.time_limit_min * 60
            at = now
            for _ in range(200):  # bounded: each retry moves to a later plan boundary
                found = will_run(job, avail_during(at, at + limit), at)
                if found is not None:
                    when, chosen = found
                    if set(chosen) <= avail_during(when, when + limit):
                        if when == now:
                            start(job, chosen, now)
                        plan.append((when, up(when + limit), frozenset(chosen)))
                        break
                later = sorted({b for _, b, _ in plan if b > at} | {a for a, _, _ in plan if a > at})
                if not later:
                    break
                at = later[0]

    for now in range(horizon):
        for r in [r for r in running if r.end <= now]:
            running.remove(r)
            free.update(r.nodes)
        if not pending and not running:
            break
        # The main loop runs every sched_interval s and also on each job end and arrival; with
        # whole-second events and sched_interval=1 that is every second.
        main_pass(now)
        if backfill and now % bf_interval == 0:
            backfill_pass(now)
    return started
