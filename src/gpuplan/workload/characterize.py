"""Workload characterisation: the figures an architect (and the advisor) reads before choosing an
operating model. All computed with array operations over the job table.

- GPU-hours of a job = GPUs x run time, the run time cut at the time limit when there is one.
- Burstiness = coefficient of variation of arrivals per hour over the arrival span.
- Offered load = GPU-hours demanded (batch jobs plus services at the replicas their demand needs)
  over GPU-hours available (cluster GPUs x span); > 1 means the queue grows without bound.
- Estimate accuracy = run time / time limit for jobs with a limit (users over-request: the median
  is often 0.2-0.5), and the share of jobs that reach their limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.workload.jobtable import Float64
from gpuplan.workload.workload import Workload

# GPUs-per-job bins: (label, lowest, highest)
SIZE_BINS = [("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-8", 5, 8), ("9-16", 9, 16), ("17-64", 17, 64)]
SIZE_BINS += [("65-256", 65, 256), ("257+", 257, np.iinfo(np.int64).max)]


def _stats(values: Float64, percentiles: tuple[int, ...] = (10, 50, 90, 99)) -> dict[str, float | None]:
    if len(values) == 0:
        return {"mean": None, **{f"p{p}": None for p in percentiles}, "max": None}
    ranks = np.percentile(values, percentiles)
    return {
        "mean": float(values.mean()),
        **{f"p{p}": float(r) for p, r in zip(percentiles, ranks, strict=True)},
        "max": float(values.max()),
    }


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def characterize(workload: Workload, cluster_gpus: int | None = None) -> dict[str, Any]:
    """Figures describing ``workload``; ``cluster_gpus`` (default: the workload's) sets the load."""
    jobs = workload.jobs
    gpus = jobs.gpus.astype(np.float64)
    limit = jobs.time_limit_s
    has_limit = limit > 0
    run = np.where(has_limit & (jobs.duration_s > limit), limit, jobs.duration_s)
    gpu_hours = gpus * run / 3600.0
    batch_gpu_hours = float(gpu_hours.sum())
    service_gpu_hours = sum(service.gpu_hours() for service in workload.services)

    submit = np.sort(jobs.submit_s)
    if workload.horizon_s is not None:
        span = workload.horizon_s
    else:
        span = float(submit[-1] - submit[0]) if len(submit) > 1 else 0.0

    def by(labels_codes: Any, labels: tuple[str, ...]) -> dict[str, Any]:
        counts = np.bincount(labels_codes, minlength=len(labels))
        hours = np.bincount(labels_codes, weights=gpu_hours, minlength=len(labels))
        return {
            labels[code]: {
                "jobs": int(counts[code]),
                "gpu_hours": float(hours[code]),
                "share_of_gpu_hours": _share(float(hours[code]), batch_gpu_hours),
            }
            for code in np.flatnonzero(counts)
        }

    by_kind = by(jobs.kind.codes, jobs.kind.labels)
    by_team = by(jobs.team.codes, jobs.team.labels)
    for service in workload.services:
        hours = service.gpu_hours()
        by_kind.setdefault("service", {"jobs": 0, "gpu_hours": 0.0, "services": 0})
        by_kind["service"]["gpu_hours"] += hours
        by_kind["service"]["services"] = by_kind["service"].get("services", 0) + 1
        by_team.setdefault(service.team, {"jobs": 0, "gpu_hours": 0.0})
        by_team[service.team]["gpu_hours"] += hours
    total_gpu_hours = batch_gpu_hours + service_gpu_hours
    for group in (by_kind, by_team):
        for figures in group.values():
            figures["share_of_gpu_hours"] = _share(figures["gpu_hours"], total_gpu_hours)

    sizes = {}
    for label, low, high in SIZE_BINS:
        inside = (gpus >= low) & (gpus <= high)
        if inside.any():
            sizes[label] = {
                "jobs_share": float(inside.mean()),
                "gpu_hours_share": _share(float(gpu_hours[inside].sum()), batch_gpu_hours),
            }
    multi_node = jobs.nodes > 1

    gaps = np.diff(submit)
    hourly: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
    if len(submit) and span > 0:
        hourly = np.bincount(
            ((submit - submit[0]) // 3600).astype(np.int64), minlength=int(np.ceil(span / 3600))
        )
    clock = submit + (workload.epoch_s or 0.0)
    hour_of_day = np.bincount(((clock % 86400) // 3600).astype(np.int64), minlength=24)[:24]
    day_of_week = np.bincount(
        ((clock // 86400 + 3) % 7).astype(np.int64), minlength=7
    )  # 1970-01-01: Thursday

    capacity = cluster_gpus if cluster_gpus is not None else workload.capacity_gpus
    ratio = (jobs.duration_s / limit)[has_limit & (jobs.duration_s > 0)]
    return {
        "jobs": len(jobs),
        "services": len(workload.services),
        "span_s": span,
        "gpu_hours": {
            "total": total_gpu_hours,
            "batch": batch_gpu_hours,
            "services": service_gpu_hours,
            "service_share": _share(service_gpu_hours, total_gpu_hours),
        },
        "by_kind": by_kind,
        "by_team": by_team,
        "size": {
            "gpus_per_job": _stats(gpus, (50, 90)),
            "bins": sizes,
            "multi_node_share": {
                "jobs": float(multi_node.mean()) if len(jobs) else None,
                "gpu_hours": _share(float(gpu_hours[multi_node].sum()), batch_gpu_hours),
            },
        },
        "duration_s": _stats(run),
        "interarrival_s": {
            **_stats(gaps, (50, 90)),
            "cv": float(gaps.std() / gaps.mean()) if len(gaps) and gaps.mean() else None,
        },
        "burstiness": {
            "arrivals_per_hour_mean": float(hourly.mean()) if len(hourly) else None,
            "arrivals_per_hour_max": int(hourly.max()) if len(hourly) else None,
            "arrivals_per_hour_cv": float(hourly.std() / hourly.mean())
            if len(hourly) and hourly.mean()
            else None,
        },
        "diurnal_profile": [float(x) for x in hour_of_day / max(len(jobs), 1)],
        "weekly_profile": [float(x) for x in day_of_week / max(len(jobs), 1)],
        "profile_clock": "UTC wall clock" if workload.epoch_s is not None else "hours from the trace start",
        "offered_load": {
            "cluster_gpus": capacity,
            "load": _share(total_gpu_hours * 3600, capacity * span) if capacity else None,
        },
        "estimates": {
            "jobs_with_limit": int(has_limit.sum()),
            "run_over_limit": _stats(ratio, (10, 50, 90)),
            "share_using_under_half": float((ratio < 0.5).mean()) if len(ratio) else None,
            "share_reaching_limit": float((jobs.duration_s[has_limit] >= limit[has_limit]).mean())
            if has_limit.any()
            else None,
        },
    }
