"""The evidence the criteria read: organisation answers and targets from the scenario, workload figures
(``gpuplan inspect``'s plus a few the advisor derives from the scenario, under ``advisor``), and each
model's simulated outcome from ``summary.json``.

Every figure is looked up by a dotted path (``size.multi_node_share.gpu_hours``); ``*`` spans the keys
of a mapping (``services.*.slo_attainment``) and needs an aggregate. A missing figure is None: the
criterion then has no evidence, and says so, rather than failing the whole recommendation.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from gpuplan.errors import InputError
from gpuplan.scenario.load import ResolvedPool
from gpuplan.scenario.model import Scenario
from gpuplan.workload.characterize import characterize
from gpuplan.workload.services import DEMAND_STEP_S
from gpuplan.workload.workload import Workload

# kinds whose GPU-hours are a platform pattern (Deployments, pipeline controllers); the rest queue
PLATFORM_KINDS = ("service", "pipeline")
DEVELOPER_PERSONAS = ("app-developer", "ml-engineer", "platform")
BATCH_TEAM_SHARE = 0.10  # a team "shares batch capacity" from this share of the batch GPU-hours
MONTH_S = 30.44 * 86400.0

Aggregate = Literal["min", "max", "mean"]


@dataclass(frozen=True)
class Evidence:
    """Everything the scoring reads; ``outcomes`` maps each summary.json model to its figures."""

    outcomes: dict[str, dict[str, Any]]
    organisation: dict[str, str | None] = field(default_factory=dict)
    targets: dict[str, float | None] = field(default_factory=dict)
    workload: dict[str, Any] | None = None
    scenario: str | None = None
    source: str = "summary.json"  # named in error messages
    notes: tuple[str, ...] = ()
    # seed -> model -> that seed's figures, when the summary holds several seeds (``per_seed``)
    seeds: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def of_seed(self, seed: str) -> Evidence:
        """The same answers, targets and workload with one seed's outcomes."""
        return replace(self, outcomes=self.seeds[seed], seeds={})


def lookup(figures: Mapping[str, Any] | None, path: str, aggregate: Aggregate | None = None) -> float | None:
    """The number at ``path`` in ``figures`` (None when absent); with ``*``, ``aggregate`` over the keys."""
    values = _collect(figures, path.split("."))
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    numbers = [v for v in numbers if math.isfinite(v)]
    if not numbers:
        return None
    if aggregate is None or aggregate == "mean":
        return sum(numbers) / len(numbers) if aggregate else numbers[0]
    return min(numbers) if aggregate == "min" else max(numbers)


def _collect(node: Any, parts: list[str]) -> list[Any]:
    if not parts:
        return [node]
    if not isinstance(node, Mapping):
        return []
    head, rest = parts[0], parts[1:]
    if head == "*":
        return [v for key in sorted(node) for v in _collect(node[key], rest)]
    return _collect(node[head], rest) if head in node else []


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def advisor_figures(
    workload: Workload, scenario: Scenario | None = None, pools: Sequence[ResolvedPool] = ()
) -> dict[str, float | None]:
    """Figures the criteria need beyond ``inspect``'s: GPU-hours by pattern, team groups, personas (of
    the teams that state one; None when none does), autoscaling headroom and the RDMA share of the
    cluster. Shares are of all GPU-hours (jobs + services)."""
    jobs = workload.jobs
    limit = jobs.time_limit_s
    run = np.where((limit > 0) & (jobs.duration_s > limit), limit, jobs.duration_s)
    job_hours = jobs.gpus.astype(np.float64) * run / 3600.0

    hours: dict[tuple[str, str], float] = {}  # (team, kind) -> GPU-hours
    pairs = jobs.team.codes.astype(np.int64) * len(jobs.kind.labels) + jobs.kind.codes
    summed = np.bincount(pairs, weights=job_hours, minlength=len(jobs.team.labels) * len(jobs.kind.labels))
    for code in np.flatnonzero(summed):
        team, kind = divmod(int(code), len(jobs.kind.labels))
        hours[jobs.team.labels[team], jobs.kind.labels[kind]] = float(summed[code])
    for service in workload.services:
        key = (service.team, "service")
        hours[key] = hours.get(key, 0.0) + service.gpu_hours()
    total = sum(hours.values())

    def share_of(kinds: Sequence[str]) -> float | None:
        return _share(sum(h for (_, kind), h in hours.items() if kind in kinds), total)

    platform = _share(sum(h for (_, kind), h in hours.items() if kind in PLATFORM_KINDS), total)
    teams = sorted({team for team, _ in hours})
    team_platform = {
        t: sum(h for (team, k), h in hours.items() if team == t and k in PLATFORM_KINDS) for t in teams
    }
    team_queued = {
        t: sum(h for (team, k), h in hours.items() if team == t and k not in PLATFORM_KINDS) for t in teams
    }
    platform_group = sum(
        team_platform[t] + team_queued[t] for t in teams if team_platform[t] >= team_queued[t]
    )
    queued_total = sum(team_queued.values())

    # a persona counts only where the file states it: the model's default ("researcher") would tell a
    # Kubernetes team that wrote no persona it submits like researchers, and Slurm's criteria would
    # hold. Teams without one count in the whole but in no persona; when no team states one, no figure.
    personas = {
        team.name: team.persona
        for team in (scenario.teams if scenario is not None else ())
        if "persona" in team.model_fields_set
    }

    def persona_share(wanted: Sequence[str]) -> float | None:
        if not personas:
            return None
        return _share(sum(h for (team, _), h in hours.items() if personas.get(team) in wanted), total)

    headroom = None
    if workload.services:
        ideal = sum(service.gpu_hours() for service in workload.services)
        peak = sum(
            service.max_replicas * service.gpus_per_replica * len(service.demand_rps) * DEMAND_STEP_S / 3600
            for service in workload.services
        )
        headroom = 1.0 - ideal / peak if peak > 0 else None
    rdma_gpus = sum(pool.gpus for pool in pools if pool.rdma)
    all_gpus = sum(pool.gpus for pool in pools)
    return {
        "service_share": share_of(("service",)),
        "pipeline_share": share_of(("pipeline",)),
        "batch_share": None if platform is None else 1.0 - platform,
        "service_and_pipeline_share": platform,
        "services_with_jobs": None if platform is None else 2.0 * min(platform, 1.0 - platform),
        "both_groups": None if total <= 0 else 2.0 * min(platform_group, total - platform_group) / total,
        "researcher_share": persona_share(("researcher",)),
        "developer_share": persona_share(DEVELOPER_PERSONAS),
        "batch_teams": float(
            sum(1 for t in teams if queued_total and team_queued[t] >= BATCH_TEAM_SHARE * queued_total)
        ),
        "autoscaling_headroom": headroom,
        "rdma_gpu_share": _share(rdma_gpus, all_gpus),
    }


def workload_figures(
    workload: Workload, scenario: Scenario | None = None, pools: Sequence[ResolvedPool] = ()
) -> dict[str, Any]:
    """``inspect``'s characterisation plus the advisor's figures under ``advisor``."""
    with warnings.catch_warnings():
        # characterize takes means of empty arrays for a workload of services only (no jobs): NumPy
        # warns and the figure is None, which is what the criteria expect
        warnings.simplefilter("ignore", RuntimeWarning)
        figures = characterize(workload)
    return {**figures, "advisor": advisor_figures(workload, scenario, pools)}


def outcome_figures(model: Mapping[str, Any]) -> dict[str, Any]:
    """A summary.json model object plus the advisor's derived outcomes under ``advisor``."""
    per_month = lookup(model, "cost.usd_per_month")  # gpuplan.cost's, over the measuring window
    if per_month is None:  # a summary of an older gpuplan: its cost over the makespan
        cost, span = lookup(model, "cost_usd"), lookup(model, "makespan_s")
        per_month = cost * MONTH_S / span if cost is not None and span else None
    return {**model, "advisor": {"cost_usd_per_month": per_month}}


def gather(
    summary: Mapping[str, Any],
    *,
    scenario: Scenario | None = None,
    workload: dict[str, Any] | None = None,
    source: str = "summary.json",
    notes: Sequence[str] = (),
) -> Evidence:
    """The evidence of a summary.json object, with the scenario's answers and targets when known."""
    models = summary.get("models") if isinstance(summary, Mapping) else None
    if not isinstance(models, Mapping) or not models:
        raise InputError("no simulated model: 'models' must map model names to their figures", path=source)
    outcomes = {}
    for name, body in models.items():
        if not isinstance(body, Mapping):
            raise InputError("a model's figures must be a mapping", path=source, field=f"models.{name}")
        outcomes[str(name)] = outcome_figures(body)
    per_seed = summary.get("per_seed")
    seeds = {
        str(seed): {name: outcome_figures(figures[name]) for name in outcomes if name in figures}
        for seed, figures in (per_seed.items() if isinstance(per_seed, Mapping) else ())
        if isinstance(figures, Mapping) and all(isinstance(figures.get(name), Mapping) for name in outcomes)
    }
    name = scenario.name if scenario is not None else None
    if name is None and isinstance(summary.get("input"), Mapping):
        echoed = summary["input"].get("scenario")
        name = echoed if isinstance(echoed, str) else None
    return Evidence(
        outcomes=outcomes,
        organisation=dict(scenario.organisation.model_dump()) if scenario is not None else {},
        targets=scenario.targets.values() if scenario else {},
        workload=workload,
        scenario=name,
        source=source,
        notes=tuple(notes),
        seeds=seeds if len(seeds) > 1 else {},
    )
