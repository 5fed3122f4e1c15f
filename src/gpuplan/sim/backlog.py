"""Figures of a run's work that every model reports the same way, in its ``extra`` (summary.json),
for ``gpuplan.metrics.diagnose``:

- ``backlog``: the jobs queued (submitted, not started, not rejected) at fractions of the horizon,
  and the jobs and GPU-hours still queued at it: a queue that never drains, and whether it grew;
- ``work_figures``: one run's work in all (GPU-hours asked and not done, busy and available, p95
  wait), for each side of the hybrid: a side starved while the other idles.

Both are read from the run's arrays alone, so they are the same for every model and bit-deterministic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.sim.outcome import REJECTED, UNFINISHED, ModelRun

# where the queue is sampled, as fractions of the horizon: four points show whether it grows
BACKLOG_SAMPLES = (0.25, 0.5, 0.75, 1.0)


def _gpus(run: ModelRun) -> npt.NDArray[np.float64]:
    return (run.jobs.gpus if run.job_gpus is None else run.job_gpus).astype(np.float64)


def _queued_at(run: ModelRun, at_s: float) -> npt.NDArray[np.bool_]:
    """Jobs submitted by ``at_s`` that had not started by then and were not refused."""
    started_by = run.start_s <= at_s  # NaN (never started) compares False
    queued: npt.NDArray[np.bool_] = (run.jobs.submit_s <= at_s) & ~started_by & (run.state != REJECTED)
    return queued


def backlog(run: ModelRun, horizon_s: float | None) -> dict[str, Any]:
    """The queue at the horizon and before it:

    >>> backlog(run, 7 * 86400.0)["queued_at_horizon"]
    {'jobs': 12, 'gpu_hours': 960.0}

    ``queued_jobs`` counts the jobs queued at each of BACKLOG_SAMPLES of the horizon (``at_s``);
    ``queued_at_horizon``: the jobs and GPU-hours queued at it; ``submitted_gpu_hours``: GPU-hours
    asked by the jobs submitted by then (not refused), its measure. Without a horizon (a trace,
    ``horizon_s`` None) the samples are of the span of submits, and ``queued_at_horizon`` counts the
    jobs still queued when the run ended (never started)."""
    jobs = run.jobs
    asked = _gpus(run) * jobs.duration_s / 3600.0
    span = horizon_s if horizon_s is not None and horizon_s > 0 else None
    sampled = span if span is not None else (float(jobs.submit_s.max()) if len(jobs) else 0.0)
    samples = [
        {"at_s": sampled * f, "jobs": int(_queued_at(run, sampled * f).sum())} for f in BACKLOG_SAMPLES
    ]
    at_end = _queued_at(run, span if span is not None else math.inf)
    submitted = (jobs.submit_s <= (span if span is not None else math.inf)) & (run.state != REJECTED)
    return {
        "horizon_s": span,
        "queued_jobs": samples,
        "queued_at_horizon": {"jobs": int(at_end.sum()), "gpu_hours": float(asked[at_end].sum())},
        "submitted_gpu_hours": float(asked[submitted].sum()),
    }


def span_s(run: ModelRun) -> float:
    """From the first submit (t = 0 when services run) to the last end: the span a pool that is not
    autoscaled is counted up for, as summary.json's makespan."""
    jobs, started = run.jobs, run.started
    begins = [float(jobs.submit_s.min())] if len(jobs) else []
    ends = [float(run.end_s[started].max())] if started.any() else []
    if run.services:
        begins.append(0.0)
        ends.extend(s.span_s for s in run.services)
    return max(ends) - min(begins) if ends else 0.0


def work_figures(run: ModelRun, over_s: float) -> dict[str, Any]:
    """One run's work: jobs, GPU-hours asked and not done (refused or unfinished), the p95 wait of
    the jobs that started, and the GPU-hours its pools were busy and available over ``over_s``
    seconds (an autoscaled pool: the GPU-hours its nodes were up)."""
    jobs, started = run.jobs, run.started
    gpus = _gpus(run)
    asked = gpus * jobs.duration_s / 3600.0
    undone = (run.state == REJECTED) | (run.state == UNFINISHED)
    waits = (run.start_s - jobs.submit_s)[started]
    busy = float((gpus[started] * run.run_s[started]).sum() + run.lost_gpu_s.sum()) / 3600.0
    busy += sum(s.gpu_hours for s in run.services)
    available = sum(
        p.pool.gpus * over_s / 3600.0 if p.gpu_hours_up is None else p.gpu_hours_up for p in run.pools
    )
    return {
        "jobs": len(jobs),
        "gpu_hours_asked": float(asked.sum()),
        "gpu_hours_not_done": float(asked[undone].sum()),
        "wait_p95_s": float(np.percentile(waits, 95.0)) if len(waits) else None,
        "gpu_hours_busy": busy,
        "gpu_hours_available": float(available),
    }
