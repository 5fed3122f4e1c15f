"""The ``models.<name>`` object of summary.json, computed from a model's run with array operations.

Definitions (DESIGN.md "Results"):
- wait = start - submit over jobs that started; percentiles interpolate linearly between ranks.
- bounded slowdown = max(1, (wait + run) / max(run, 10 s)) (Feitelson et al.'s bound of 10 s).
- GPU utilisation = busy GPU-seconds / (GPUs of the pool x makespan), with the makespan from the
  first submit to the last end.
- Jain's fairness index over teams of x = GPU-hours / share: (sum x)^2 / (n sum x^2); 1 is even.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.sim.outcome import COMPLETED, KILLED_AT_LIMIT, REJECTED, ModelRun

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


def summarize(run: ModelRun, team_shares: dict[str, float] | None = None) -> dict[str, Any]:
    """Summary figures of one model's run. ``team_shares`` (default: equal) weights fairness."""
    jobs, schedule = run.jobs, run.schedule
    started = run.started
    wait = (schedule.start_s - jobs.submit_s)[started]
    run_s = run.run_s[started]
    gpus = jobs.gpus[started].astype(np.float64)
    busy_gpu_s = gpus * run_s
    slowdown = np.maximum(1.0, (wait + run_s) / np.maximum(run_s, BOUNDED_SLOWDOWN_MIN_RUN_S))

    makespan_s = float(schedule.end_s[started].max() - jobs.submit_s.min()) if started.any() else 0.0
    available_gpu_s = run.pool.gpus * makespan_s
    gpu_hours = float(busy_gpu_s.sum() / 3600.0)

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
            "share_of_gpu_hours": float(team_gpu_hours[code] / gpu_hours) if gpu_hours > 0 else None,
        }
    shares = np.array([(team_shares or {}).get(team_names[c], 1.0) for c in np.flatnonzero(present)])
    state_counts = np.bincount(run.state, minlength=3)

    return {
        "settings": run.settings,
        "cluster": {
            "pool": run.pool.name,
            "nodes": run.pool.nodes,
            "gpus_per_node": run.pool.gpus_per_node,
            "gpus": run.pool.gpus,
        },
        "jobs": {
            "submitted": len(jobs),
            "completed": int(state_counts[COMPLETED]),
            "killed_at_limit": int(state_counts[KILLED_AT_LIMIT]),
            "preempted": 0,
            "rejected": int(state_counts[REJECTED]),
            "unfinished": 0,
        },
        "wait_s": wait_stats(wait),
        "bounded_slowdown": {
            "mean": float(slowdown.mean()) if len(slowdown) else None,
            "p95": float(np.percentile(slowdown, 95.0)) if len(slowdown) else None,
        },
        "gpu_utilization": float(busy_gpu_s.sum() / available_gpu_s) if available_gpu_s > 0 else None,
        "gpu_hours": gpu_hours,
        "makespan_s": makespan_s,
        "per_team": per_team,
        "fairness_jain": jain_index(team_gpu_hours[present] / shares),
        "services": {},
        "cost_usd": None,
    }
