"""The ``models.<name>`` object of summary.json, computed from a model's run with array operations.

Definitions (DESIGN.md "Results"):
- wait = start - submit over jobs that started; percentiles interpolate linearly between ranks.
- bounded slowdown = max(1, (wait + run) / max(run, 10 s)) (Feitelson et al.'s bound of 10 s).
- The measuring window (``window``): the span every capacity figure is counted over. ``compare``
  gives every model of a scenario the same one, from t = 0 to the horizon or to the last end in any
  model, whichever is later (``remeasure``); alone, a run's own span from its first submit (t = 0
  when services run) to its last end.
- GPU utilisation = busy GPU-seconds / capacity GPU-seconds over the window; busy = jobs' GPUs x run
  time, plus the GPU-seconds of work lost to preemption, plus the GPUs of service replicas while they
  run; capacity = each pool's GPUs x the window (the GPU-hours an autoscaled pool's nodes were up).
  Idle GPU-hours = capacity - busy.
- cost: ``gpuplan.cost`` (a pool's node-hours up in the window x its price, by pricing option).
- Jain's fairness index over teams of x = GPU-hours / share: (sum x)^2 / (n sum x^2); 1 is even.
- work not done = the jobs rejected (they can never run on the model's cluster) and those unfinished
  (still queued or running when the run ended), with the GPU-hours they asked for (GPUs x run time),
  by workload (by team for a trace) and reason.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.sim.outcome import JOB_STATES, REJECTED, UNFINISHED, ModelRun
from gpuplan.workload.jobtable import Labels, unique_columns

BOUNDED_SLOWDOWN_MIN_RUN_S = 10.0
PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def wait_stats(waits: npt.NDArray[np.float64]) -> dict[str, float | None]:
    """Mean, p50, p95, p99 and max; all None when there is no wait to measure."""
    if len(waits) == 0:
        return {"mean": None, **dict.fromkeys(PERCENTILES), "max": None}
    ranks = np.percentile(waits, list(PERCENTILES.values()), method="linear")
    return {
        "mean": float(waits.mean()),
        **{name: float(value) for name, value in zip(PERCENTILES, ranks, strict=True)},
        "max": float(waits.max()),
    }


def jain_index(values: npt.NDArray[np.float64]) -> float | None:
    """Jain's fairness index of non-negative values; None when there is nothing to compare."""
    square_sum = float(np.square(values).sum())
    if len(values) == 0 or square_sum == 0.0:
        return None
    return float(values.sum() ** 2 / (len(values) * square_sum))


def _reason_counts(run: ModelRun) -> dict[str, int]:
    """Jobs per reason: refused at submit, or held pending by a limit (jobs.parquet "reason")."""
    if run.reason is None:
        return {}
    counts = np.bincount(run.reason.codes, minlength=len(run.reason.labels))
    return {label: int(n) for label, n in zip(run.reason.labels, counts, strict=True) if label and n}


def _work(rows: npt.NDArray[np.bool_], gpu_hours: npt.NDArray[np.float64]) -> dict[str, Any]:
    return {"jobs": int(rows.sum()), "gpu_hours": float(gpu_hours[rows].sum())}


def work_not_done(run: ModelRun) -> dict[str, Any]:
    """Jobs and GPU-hours rejected and unfinished, in all and by workload (team for a trace) and reason."""
    jobs = run.jobs
    asked_gpu_hours = jobs.gpus * jobs.duration_s / 3600.0
    rejected, unfinished = run.state == REJECTED, run.state == UNFINISHED
    undone = rejected | unfinished
    group = jobs.workload if jobs.workload is not None else jobs.team
    reason = run.reason or Labels.constant("", len(jobs))
    rows = np.flatnonzero(undone)
    # one entry per (workload, reason, unfinished) met among the undone jobs
    keys = np.stack([group.codes[rows], reason.codes[rows], unfinished[rows]]).astype(np.int64)
    distinct, inverse = unique_columns(keys)
    counts = np.bincount(inverse, minlength=distinct.shape[1])
    hours = np.bincount(inverse, weights=asked_gpu_hours[rows], minlength=distinct.shape[1])
    by_workload: dict[str, Any] = {}
    for (code, why_code, still_queued), count, gpu_hours in zip(
        distinct.T.tolist(), counts.tolist(), hours.tolist(), strict=True
    ):
        figures = by_workload.setdefault(group.labels[code], {"jobs": 0, "gpu_hours": 0.0, "reasons": {}})
        figures["jobs"] += count
        figures["gpu_hours"] += gpu_hours
        why = reason.labels[why_code] or ("still queued at the end" if still_queued else "rejected")
        figures["reasons"][why] = figures["reasons"].get(why, 0) + count
    return {
        **_work(undone, asked_gpu_hours),
        "workload_gpu_hours": float(asked_gpu_hours.sum()),  # what all the jobs ask: the scale of the above
        "rejected": _work(rejected, asked_gpu_hours),
        "unfinished": _work(unfinished, asked_gpu_hours),
        "by_workload": dict(sorted(by_workload.items())),
    }


def work_by_workload(work: dict[str, Any]) -> str:
    """``work_not_done.by_workload`` in words: ``nightly 28 (NodeConfigNotAvailable: 28); ...``."""
    return "; ".join(
        f"{name} {figures['jobs']:,} ("
        + ", ".join(f"{why}: {count:,}" for why, count in figures["reasons"].items())
        + ")"
        for name, figures in work.get("by_workload", {}).items()
    )


def summarize(
    run: ModelRun, team_shares: dict[str, float] | None = None, window: tuple[float, float] | None = None
) -> dict[str, Any]:
    """Summary figures of one model's run. ``team_shares`` (default: equal) weights fairness;
    ``window`` (begin, end in seconds) is the measuring window, by default the run's own span."""
    jobs = run.jobs
    started = run.started
    wait = (run.start_s - jobs.submit_s)[started]
    run_s = run.run_s[started]
    gpus = (jobs.gpus if run.job_gpus is None else run.job_gpus)[started].astype(np.float64)
    busy_gpu_s = gpus * run_s
    slowdown = np.maximum(1.0, (wait + run_s) / np.maximum(run_s, BOUNDED_SLOWDOWN_MIN_RUN_S))

    # The run's own span runs from the first submit (or t = 0 when services run) to the last end.
    begins = [float(jobs.submit_s.min())] if len(jobs) else []
    ends = [float(run.end_s[started].max())] if started.any() else []
    if run.services:
        begins.append(0.0)
        ends.extend(s.span_s for s in run.services)
    makespan_s = max(ends) - min(begins) if ends else 0.0
    first_s = min(begins) if begins else 0.0
    service_gpu_s = sum(s.gpu_hours for s in run.services) * 3600.0
    lost_gpu_s = float(run.lost_gpu_s.sum())
    gpu_hours = (float(busy_gpu_s.sum()) + lost_gpu_s + service_gpu_s) / 3600.0

    team_codes = jobs.team.codes
    team_names = jobs.team.labels
    team_gpu_hours = np.bincount(team_codes[started], weights=busy_gpu_s, minlength=len(team_names)) / 3600.0
    present = np.bincount(team_codes, minlength=len(team_names)) > 0
    # waits grouped by team: sort once, then slice each team's run
    by_team = np.argsort(team_codes[started], kind="stable")
    team_waits = wait[by_team]
    bounds = np.searchsorted(team_codes[started][by_team], np.arange(len(team_names) + 1))
    per_team: dict[str, Any] = {}
    for code in np.flatnonzero(present):
        per_team[team_names[code]] = {
            "wait_s": wait_stats(team_waits[bounds[code] : bounds[code + 1]]),
            "gpu_hours": float(team_gpu_hours[code]),
        }
    for service in run.services:
        figures = per_team.setdefault(service.team, {"wait_s": wait_stats(np.zeros(0)), "gpu_hours": 0.0})
        figures["gpu_hours"] += service.gpu_hours
    for figures in per_team.values():
        figures["share_of_gpu_hours"] = figures["gpu_hours"] / gpu_hours if gpu_hours > 0 else None
    team_usage = np.array([figures["gpu_hours"] for figures in per_team.values()])
    shares = np.array([(team_shares or {}).get(team, 1.0) for team in per_team])
    state_counts = np.bincount(run.state, minlength=len(JOB_STATES))

    # each pool's busy GPU-hours (its jobs', work lost to preemption, its services') and peak GPUs in use
    job_gpu_s = np.zeros(len(jobs))
    job_gpu_s[started] = busy_gpu_s
    job_gpu_s += run.lost_gpu_s
    service_by_pool: dict[str, float] = {}
    for service in run.services:
        service_by_pool[service.pool] = service_by_pool.get(service.pool, 0.0) + service.gpu_hours
    summary = {
        "settings": run.settings,
        "cluster": {
            "pools": {
                p.pool.name: {
                    "nodes": p.pool.nodes,
                    "gpus_per_node": p.pool.gpus_per_node,
                    "gpus": p.pool.gpus,
                    "origin": p.pool.origin or p.pool.name,  # the scenario's pool (a hybrid side's)
                    # autoscaled pools: the GPU-hours their nodes were up (else every GPU, always)
                    "gpu_hours_up": p.gpu_hours_up,
                    # Slurm's power saving: its batch nodes' GPU-hours up (the others are always up)
                    "power_saving": None if p.power is None else asdict(p.power),
                    "gpu_hours_busy": float(job_gpu_s[p.jobs].sum()) / 3600.0
                    + service_by_pool.get(p.pool.name, 0.0),
                    "peak_busy_gpus": int(p.schedule.timeline.busy_gpus.max(initial=0)) + p.service_gpus,
                }
                for p in run.pools
            },
            "gpus": run.total_gpus,
        },
        "jobs": {
            "submitted": len(jobs),
            **{name: int(count) for name, count in zip(JOB_STATES, state_counts, strict=True)},
        },
        "reasons": _reason_counts(run),
        "work_not_done": work_not_done(run),
        "preemption": {
            "events": int(run.preemptions.sum()),
            "jobs_preempted": int(np.count_nonzero(run.preemptions)),
            "lost_gpu_hours": lost_gpu_s / 3600.0,
        },
        "wait_s": wait_stats(wait),
        "bounded_slowdown": {
            "mean": float(slowdown.mean()) if len(slowdown) else None,
            "p95": float(np.percentile(slowdown, 95.0)) if len(slowdown) else None,
        },
        "gpu_hours": gpu_hours,
        "makespan_s": makespan_s,
        "last_end_s": first_s + makespan_s,
        "per_team": per_team,
        "fairness_jain": jain_index(team_usage / shares) if len(team_usage) else None,
        "services": {
            s.name: {
                "slo_attainment": s.slo_attainment,
                "mean_replicas": s.mean_replicas,
                "unmet_demand_fraction": s.unmet_demand_fraction,
            }
            for s in run.services
        },
        **run.extra,
    }
    begin, end = window if window is not None else (first_s, first_s + makespan_s)
    return remeasure(summary, begin, end)


def remeasure(summary: dict[str, Any], begin_s: float, end_s: float) -> dict[str, Any]:
    """Set the figures that depend on the measuring window (``window``, the pools' capacity,
    ``gpu_utilization``, ``idle_gpu_hours``) for the window [begin_s, end_s]; returns ``summary``,
    changed in place. The busy GPU-hours do not depend on it: a window holds every run it is
    measured over (from t = 0, or the first submit, to at least the last end). Cost, which reads
    these, is ``gpuplan.cost``'s."""
    span_h = max(end_s - begin_s, 0.0) / 3600.0
    capacity = 0.0
    for pool in summary["cluster"]["pools"].values():
        up, saving = pool["gpu_hours_up"], pool.get("power_saving")
        if up is None and saving is not None:  # nodes powered down are not up; the rest always are
            saved_gpus = saving["nodes"] * pool["gpus_per_node"]
            up = (pool["gpus"] - saved_gpus) * span_h + saving["gpu_hours_up"]
        pool["gpu_hours_available"] = pool["gpus"] * span_h if up is None else up
        capacity += pool["gpu_hours_available"]
    busy = summary["gpu_hours"]
    summary["window"] = {"begin_s": begin_s, "end_s": end_s, "gpu_hours": capacity}
    summary["gpu_utilization"] = busy / capacity if capacity > 0 else None
    summary["idle_gpu_hours"] = max(capacity - busy, 0.0)
    return summary
