"""Time series and distributions for the report, computed with array operations.

- Timeline rows are step functions: a row's value holds until the next row of the same model and
  pool. Each series is averaged over equal time bins (time-weighted, exactly, through the integral's
  breakpoints), so a month of events draws as a few hundred points.
- Wait-time CDFs per team are read at fixed quantiles, so their size does not grow with the jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.report.results import Columns

Float64 = npt.NDArray[np.float64]
TIME_BINS = 300
CDF_POINTS = 101
# charts draw coarser bins than the tables: about this many, of a round width
CHART_BINS = 200
ROUND_BIN_S = (600.0, 1800.0, 3600.0, 7200.0, 3 * 3600.0, 6 * 3600.0, 12 * 3600.0, 86400.0, 2 * 86400.0,
               7 * 86400.0)  # fmt: skip


@dataclass(frozen=True)
class Series:
    model: str
    pool: str
    time_s: Float64  # bin starts
    busy_gpus: Float64  # time-weighted mean per bin
    queued_jobs: Float64
    capacity_gpus: Float64 | None  # nodes up x GPUs per node (None: GPUs per node unknown)

    @property
    def utilization(self) -> Float64 | None:
        if self.capacity_gpus is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.capacity_gpus > 0, self.busy_gpus / self.capacity_gpus, np.nan)


def _binned_means(time_s: Float64, values: Float64, edges: Float64) -> Float64:
    """Time-weighted mean of the step function (time_s, values) over each bin between ``edges``."""
    order = np.argsort(time_s, kind="stable")
    t, v = time_s[order], values[order]
    integral = np.concatenate([[0.0], np.cumsum(v[:-1] * np.diff(t))])  # the integral at each breakpoint
    # after the last row its value holds to the end of the axis
    t_end = np.append(t, max(edges[-1], t[-1]))
    integral = np.append(integral, integral[-1] + v[-1] * (t_end[-1] - t[-1]))
    at_edges = np.interp(edges, t_end, integral, left=0.0)
    widths = np.diff(edges)
    return np.asarray(np.where(widths > 0, np.diff(at_edges) / np.where(widths > 0, widths, 1), 0.0))


def timeline_end_s(timeline: Columns) -> float:
    return float(np.nanmax(timeline["time_s"])) if len(timeline) else 0.0


def chart_bin_s(end_s: float) -> float:
    """The round bin width (10 min ... 1 week) that cuts ``end_s`` into at most about CHART_BINS bins:
    means over a few hours smooth a one-node pool's 0-or-100 % steps and keep the day's shape."""
    for width in ROUND_BIN_S:
        if end_s / width <= CHART_BINS:
            return width
    return ROUND_BIN_S[-1]


def timeline_series(
    timeline: Columns, gpus_per_node: dict[tuple[str, str], int], bin_s: float | None = None
) -> list[Series]:
    """One binned series per (model, pool), in order of first appearance: TIME_BINS equal bins over
    the run, or bins of ``bin_s`` seconds from t = 0 (the last one ends at or after the run's end)."""
    if len(timeline) == 0:
        return []
    models, pools, time_s = timeline["model"], timeline["pool"], timeline["time_s"]
    end = timeline_end_s(timeline)
    if bin_s is None:
        edges = np.linspace(0.0, end if end > 0 else 1.0, TIME_BINS + 1)
    else:
        edges = np.arange(max(int(np.ceil(end / bin_s)), 1) + 1, dtype=np.float64) * bin_s
    keys = list(dict.fromkeys(zip(models.tolist(), pools.tolist(), strict=True)))
    series = []
    for model, pool in keys:
        rows = (models == model) & (pools == pool)
        t = time_s[rows]
        capacity = None
        per_node = gpus_per_node.get((model, pool))
        if per_node is not None and "nodes_up" in timeline:
            capacity = _binned_means(t, timeline["nodes_up"][rows] * per_node, edges)
        series.append(
            Series(
                model=model,
                pool=pool,
                time_s=edges[:-1],
                busy_gpus=_binned_means(t, timeline["busy_gpus"][rows], edges),
                queued_jobs=_binned_means(t, timeline["queued_jobs"][rows], edges),
                capacity_gpus=capacity,
            )
        )
    return series


@dataclass(frozen=True)
class WaitCdf:
    model: str
    team: str
    jobs: int
    wait_s: Float64  # the wait at each probability of ``probability``
    probability: Float64
    within_hour: float  # share of the team's started jobs that waited at most an hour


def wait_cdfs(jobs: Columns) -> list[WaitCdf]:
    """Per model and team, the distribution of waits (start - submit) of the jobs that started."""
    started = np.isfinite(jobs["start_s"])
    waits = jobs["start_s"] - jobs["submit_s"]
    probability = np.linspace(0.0, 1.0, CDF_POINTS)
    keys = list(dict.fromkeys(zip(jobs["model"].tolist(), jobs["team"].tolist(), strict=True)))
    cdfs = []
    for model, team in keys:
        rows = started & (jobs["model"] == model) & (jobs["team"] == team)
        if not rows.any():
            continue
        team_waits = np.maximum(waits[rows], 0.0)
        cdfs.append(
            WaitCdf(
                model=model,
                team=team,
                jobs=int(rows.sum()),
                wait_s=np.quantile(team_waits, probability),
                probability=probability,
                within_hour=float((team_waits <= 3600).mean()),
            )
        )
    return cdfs


def summary_stats(values: Float64 | None) -> dict[str, Any]:
    if values is None:
        return {"mean": None, "max": None}
    finite = values[np.isfinite(values)]
    if not len(finite):
        return {"mean": None, "max": None}
    return {"mean": float(finite.mean()), "max": float(finite.max())}
