"""Several seeds of one scenario, as one set of figures: the median of each figure over the seeds,
and the spread (min-max) of the headline figures.

A scenario's synthesis draws its jobs and demand from random streams (``workload.synthesis``); a
decision read off one draw can flip with the next. ``compare`` runs every model on the same seeds
(``replication_seeds``) and summarises each (model, seed) as ``metrics.summary`` does; this module
folds those summaries into the ``models.<name>`` object of summary.json:

- every number is the median over the seeds (NumPy's, the mean of the two middle values for an
  even count), an integer where every seed's is one and the median is whole;
- a flag (``true``/``false``) is true when it is in any seed (a deadlock in one seed is a deadlock);
- anything else (settings, names) is the first seed's, which is the scenario's own seed;
- ``replications`` holds the seeds and, for each headline figure, ``{median, min, max, values}``.

Example::

    folded = fold([summary_seed_1, summary_seed_2, summary_seed_3], seeds=[1, 2, 3])
    folded["wait_s"]["p95"]                           # the median p95 wait
    folded["replications"]["spread"]["wait_s.p95"]    # {"median", "min", "max", "values"}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# Figures an architecture review reads first: each gets its spread over seeds (paths into a model's
# summary; per-team waits and per-service SLO attainment are added by name).
HEADLINE = (
    "gpu_utilization",
    "gpu_hours",
    "idle_gpu_hours",
    "wait_s.p50",
    "wait_s.p95",
    "bounded_slowdown.mean",
    "fairness_jain",
    "cost_usd",
    "cost.usd_per_month",
    "cost.idle_usd",
    "work_not_done.jobs",
    "work_not_done.gpu_hours",
    "preemption.events",
    "preemption.lost_gpu_hours",
)
# the most seeds a comparison runs (--seeds): more would only repeat the spread
MAX_SEEDS = 64
SEED_LIMIT = 2**63  # scenario seeds are 64-bit: seed + k wraps below this


def lookup(summary: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path (``wait_s.p95``), None where any part is missing."""
    value: Any = summary
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def headline_paths(summary: Mapping[str, Any]) -> list[str]:
    """HEADLINE, plus each team's p50 and p95 wait and each service's SLO attainment."""
    paths = list(HEADLINE)
    for team in summary.get("per_team", {}):
        paths += [f"per_team.{team}.wait_s.p50", f"per_team.{team}.wait_s.p95"]
    for service in summary.get("services", {}):
        paths.append(f"services.{service}.slo_attainment")
    return paths


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _median(values: Sequence[Any]) -> Any:
    """One value for one figure over the seeds (see the module docstring)."""
    first = values[0]
    if all(isinstance(v, bool) for v in values):
        return any(values)
    if all(_is_number(v) for v in values):
        middle = float(np.median(np.asarray(values, dtype=np.float64)))
        if all(isinstance(v, int) for v in values) and middle.is_integer():
            return int(middle)
        return middle
    if all(isinstance(v, Mapping) for v in values):
        keys = list(first)
        for other in values[1:]:  # a key some seeds lack (a team with no job in one draw)
            keys += [k for k in other if k not in keys]
        return {k: _median([v[k] for v in values if k in v]) for k in keys}
    return first


def spread(summaries: Sequence[Mapping[str, Any]], path: str) -> dict[str, Any] | None:
    """``{median, min, max, values}`` of one figure over the seeds; None when no seed has it.
    ``values`` holds None for a seed without the figure (its median and bounds leave it out)."""
    values = [lookup(s, path) for s in summaries]
    known = [float(v) for v in values if _is_number(v)]
    if not known:
        return None
    return {
        "median": float(np.median(known)),
        "min": min(known),
        "max": max(known),
        "values": [float(v) if _is_number(v) else None for v in values],
    }


def fold(summaries: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """The summaries of one model over ``seeds`` (same order) as one ``models.<name>`` object."""
    if len(summaries) != len(seeds) or not summaries:
        raise ValueError("one summary per seed, at least one")
    folded: dict[str, Any] = _median(list(summaries))
    paths = headline_paths(folded)
    spreads = {path: s for path in paths if (s := spread(summaries, path)) is not None}
    folded["replications"] = {"seeds": list(seeds), "spread": spreads}
    return folded


def replication_seeds(seed: int, count: int) -> list[int]:
    """``count`` seeds starting at the scenario's own: seed, seed + 1, ... (wrapping at 2**63)."""
    return [(seed + k) % SEED_LIMIT for k in range(count)]
