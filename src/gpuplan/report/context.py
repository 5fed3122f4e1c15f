"""What the reports say, as data: sections of paragraphs, bullet lists, tables and charts.

Both report.html and report.md are rendered from the same sections, so the Markdown carries the same
content (every chart has a table beside it). Strings here are plain text; escaping is the renderer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuplan.advisor import format as fmt
from gpuplan.advisor.criteria import Criteria
from gpuplan.advisor.evidence import lookup
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.report import charts
from gpuplan.report.results import Columns
from gpuplan.report.series import timeline_series, wait_cdfs
from gpuplan.scenario.load import LoadedScenario
from gpuplan.workload.services import Service


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[str]]
    title: str = ""


@dataclass
class Section:
    id: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[charts.Chart] = field(default_factory=list)


@dataclass(frozen=True)
class ReportInputs:
    summary: dict[str, Any]
    jobs: Columns
    timeline: Columns
    recommendation: Recommendation
    criteria: Criteria
    workload: dict[str, Any] | None = None  # characterisation figures (inspect's, plus advisor's)
    scenario: LoadedScenario | None = None
    services: Sequence[Service] = ()  # synthesised services, for their demand curves


DECISIONS = {
    "clear": "a clear choice",
    "close_call": "a close call",
    "tie": "a tie",
    "single_model": "the only model simulated",
    "no_model_meets_targets": "no simulated model meets every target",
}


def _v(value: Any, unit: str | None = None) -> str:
    return fmt.value(value if isinstance(value, int | float | str) else None, unit)


def _models(inputs: ReportInputs) -> list[str]:
    return list(inputs.summary["models"])


def recommendation_section(inputs: ReportInputs) -> Section:
    rec = inputs.recommendation
    section = Section("recommendation", "Recommendation")
    family = inputs.criteria.families.get(rec.chosen_family or "")
    named = f"{rec.chosen}" + (f" — {family.title}" if family else "")
    headlines = {
        "single_model": f"Simulated: {named} (the only model in these results)",
        "no_model_meets_targets": f"No simulated model meets every target; the best-scoring is {named}",
    }
    section.paragraphs.append(headlines.get(rec.decision, f"Recommended: {named}"))
    verdict = f"Decision: {DECISIONS[rec.decision]}"
    if rec.runner_up is not None and rec.margin is not None:
        verdict += f"; {rec.margin:.2f} points ahead of {rec.runner_up}"
    section.paragraphs.append(verdict + ".")
    section.bullets = list(rec.reasons) + [f"note: {note}" for note in rec.notes]
    section.tables.append(
        Table(
            ["model", "family", "score", "organisation + workload", "simulated outcomes", "targets"],
            [
                [
                    m.model,
                    m.family,
                    f"{m.score:.2f}",
                    f"{m.static_score:.2f}",
                    f"{m.outcome_score:.2f}",
                    ", ".join(f"{c.title}: {c.status}" for c in m.targets) or "none set",
                ]
                for m in rec.models
            ],
            "Score per model",
        )
    )
    if rec.not_simulated:
        section.tables.append(
            Table(
                ["family", "score on organisation and workload evidence"],
                [[e.family, f"{e.static_score:.2f}"] for e in rec.not_simulated],
                "Families not simulated",
            )
        )
    if rec.tips:
        section.tables.append(
            Table(
                ["what changes", "new choice", "detail"],
                [[t.change, t.new_choice, t.detail] for t in rec.tips],
                "What would tip the decision",
            )
        )
    for model in rec.models:
        if model.plan:
            section.tables.append(
                Table(
                    ["setting", "value"],
                    [[k, str(v)] for k, v in model.plan.items()],
                    f"Plan of {model.model}",
                )
            )
    by_model = {
        m.model: {
            d: sum(r.contribution for r in m.criteria if r.dimension == d) for d in inputs.criteria.dimensions
        }
        for m in rec.models
    }
    section.charts.append(
        charts.contributions([m.model for m in rec.models], inputs.criteria.dimensions, by_model)
    )
    return section


def targets_section(inputs: ReportInputs) -> Section:
    section = Section("targets", "Targets (hard constraints)")
    rows = [
        [
            m.model,
            c.title,
            f"{c.must_be.replace('_', ' ')} {_v(c.required, c.unit)}",
            _v(c.actual, c.unit),
            c.status,
        ]
        for m in inputs.recommendation.models
        for c in m.targets
    ]
    if rows:
        section.tables.append(Table(["model", "target", "required", "actual", "status"], rows))
    else:
        section.paragraphs.append("The scenario sets no targets (or it could not be read).")
    return section


def workload_section(inputs: ReportInputs) -> Section:
    section = Section("workload", "Workload characterisation")
    figures = inputs.workload
    if figures is None:
        section.paragraphs.append(
            "Unavailable: the scenario or trace named in summary.json could not be read "
            "(gpuplan report --scenario FILE gives it)."
        )
        return section
    rows = [
        ["jobs / services", f"{figures.get('jobs', 0):,} / {figures.get('services', 0)}"],
        ["span", _v(lookup(figures, "span_s"), "seconds")],
        ["GPU-hours (jobs + services)", _v(lookup(figures, "gpu_hours.total"), "count")],
        ["share of GPU-hours in services", _v(lookup(figures, "gpu_hours.service_share"), "share")],
        ["share of GPU-hours in pipelines", _v(lookup(figures, "advisor.pipeline_share"), "share")],
        [
            "multi-node share of job GPU-hours",
            _v(lookup(figures, "size.multi_node_share.gpu_hours"), "share"),
        ],
        [
            "GPUs per job (p50 / p90)",
            " / ".join(_v(lookup(figures, f"size.gpus_per_job.{k}"), "ratio") for k in ("p50", "p90")),
        ],
        [
            "run time (p50 / p90)",
            " / ".join(_v(lookup(figures, f"duration_s.{k}"), "seconds") for k in ("p50", "p90")),
        ],
        ["arrivals per hour (CV)", _v(lookup(figures, "burstiness.arrivals_per_hour_cv"), "ratio")],
        ["offered load", _v(lookup(figures, "offered_load.load"), "ratio")],
        [
            "distinct user groups (2 x min of the groups' shares)",
            _v(lookup(figures, "advisor.both_groups"), "share"),
        ],
        ["GPUs on an RDMA cluster network", _v(lookup(figures, "advisor.rdma_gpu_share"), "share")],
    ]
    section.tables.append(Table(["figure", "value"], rows, "Key figures"))
    by_kind = {k: float(v.get("gpu_hours", 0.0)) for k, v in figures.get("by_kind", {}).items()}
    by_team = {k: float(v.get("gpu_hours", 0.0)) for k, v in figures.get("by_team", {}).items()}
    section.tables.append(
        Table(
            ["group", "GPU-hours", "share"],
            [
                [
                    f"kind: {k}",
                    _v(h, "count"),
                    _v(lookup(figures, f"by_kind.{k}.share_of_gpu_hours"), "share"),
                ]
                for k, h in by_kind.items()
            ]
            + [
                [
                    f"team: {t}",
                    _v(h, "count"),
                    _v(lookup(figures, f"by_team.{t}.share_of_gpu_hours"), "share"),
                ]
                for t, h in by_team.items()
            ],
            "GPU-hours by kind and team",
        )
    )
    if by_kind or by_team:
        section.charts.append(charts.workload_hours(by_kind, by_team))
    return section


SIDE_BY_SIDE = [
    ("GPU utilisation", "gpu_utilization", "share"),
    ("GPU-hours", "gpu_hours", "count"),
    ("makespan", "makespan_s", "seconds"),
    ("wait p50", "wait_s.p50", "seconds"),
    ("wait p95", "wait_s.p95", "seconds"),
    ("wait p99", "wait_s.p99", "seconds"),
    ("bounded slowdown (mean)", "bounded_slowdown.mean", "ratio"),
    ("fairness (Jain)", "fairness_jain", "ratio"),
    ("jobs completed", "jobs.completed", "count"),
    ("jobs killed at their limit", "jobs.killed_at_limit", "count"),
    ("jobs preempted", "jobs.preempted", "count"),
    ("jobs rejected", "jobs.rejected", "count"),
    ("GPU-hours lost to preemption", "preemption.lost_gpu_hours", "count"),
    ("worst service SLO attainment", "services.*.slo_attainment", "share"),
    ("cost (USD)", "cost_usd", "usd"),
]


def side_by_side_section(inputs: ReportInputs) -> Section:
    section = Section("models", "Models side by side")
    models = _models(inputs)
    rows = []
    for title, path, unit in SIDE_BY_SIDE:
        aggregate: Literal["min"] | None = "min" if "*" in path else None
        rows.append(
            [title] + [_v(lookup(inputs.summary["models"][m], path, aggregate), unit) for m in models]
        )
    section.tables.append(Table(["figure", *models], rows))
    return section


def _gpus_per_node(summary: dict[str, Any]) -> dict[tuple[str, str], int]:
    per_node = {}
    for model, body in summary["models"].items():
        pools = lookup_mapping(body, "cluster", "pools")
        for pool, spec in pools.items():
            value = spec.get("gpus_per_node") if isinstance(spec, dict) else None
            if isinstance(value, int) and value > 0:
                per_node[model, pool] = value
    return per_node


def lookup_mapping(body: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        body = body.get(key) if isinstance(body, dict) else None
    return body if isinstance(body, dict) else {}


def timeline_sections(inputs: ReportInputs) -> list[Section]:
    models = _models(inputs)
    series = timeline_series(inputs.timeline, _gpus_per_node(inputs.summary))
    utilisation = Section("utilisation", "GPU utilisation over time")
    queue = Section("queue", "Queue length over time")
    if not series:
        utilisation.paragraphs.append("timeline.parquet holds no rows.")
        return [utilisation, queue]
    rows, queue_rows = [], []
    for s in series:
        capacity = s.capacity_gpus
        mean = (
            float(s.busy_gpus.sum() / capacity.sum()) if capacity is not None and capacity.sum() > 0 else None
        )
        rows.append([s.model, s.pool, _v(mean, "share"), _v(float(s.busy_gpus.max()), "ratio")])
        queue_rows.append(
            [
                s.model,
                s.pool,
                _v(float(s.queued_jobs.mean()), "ratio"),
                _v(float(s.queued_jobs.max()), "ratio"),
            ]
        )
    utilisation.tables.append(Table(["model", "pool", "mean utilisation", "peak busy GPUs (bin mean)"], rows))
    if all(s.capacity_gpus is not None for s in series):
        utilisation.charts.append(charts.utilisation(series, models))
    else:
        utilisation.charts.append(charts.busy_gpus(series, models))
    queue.tables.append(
        Table(["model", "pool", "mean queued jobs", "peak queued jobs (bin mean)"], queue_rows)
    )
    queue.charts.append(charts.queue_length(series, models))
    return [utilisation, queue]


def waits_section(inputs: ReportInputs) -> Section:
    section = Section("waits", "Waits per team")
    cdfs = wait_cdfs(inputs.jobs)
    within = {(c.model, c.team): c for c in cdfs}
    rows = []
    for model, body in inputs.summary["models"].items():
        for team, figures in lookup_mapping(body, "per_team").items():
            cdf = within.get((model, team))
            rows.append(
                [model, team]
                + [_v(lookup(figures, f"wait_s.{k}"), "seconds") for k in ("p50", "p95", "max")]
                + [str(cdf.jobs) if cdf else "0", _v(cdf.within_hour if cdf else None, "share")]
            )
    section.tables.append(
        Table(["model", "team", "wait p50", "wait p95", "wait max", "jobs started", "waited ≤ 1 h"], rows)
    )
    teams = list(dict.fromkeys(c.team for c in cdfs))
    for index, model in enumerate(_models(inputs)):
        own = [c for c in cdfs if c.model == model]
        if own:
            section.charts.append(charts.wait_cdf(model, own, teams, index))
    return section


def services_section(inputs: ReportInputs) -> Section:
    section = Section("services", "Inference services")
    models = _models(inputs)
    figures = {
        (m, s): f for m in models for s, f in lookup_mapping(inputs.summary["models"][m], "services").items()
    }
    names = list(dict.fromkeys([s for _, s in figures] + [s.name for s in inputs.services]))
    if not names:
        section.paragraphs.append("The workload has no inference services.")
        return section
    needed = {s.name: s.replicas_needed() for s in inputs.services}
    rows = []
    for model in models:
        for name in names:
            f = figures.get((model, name), {})
            need = needed.get(name)
            rows.append(
                [
                    model,
                    name,
                    _v(lookup(f, "slo_attainment"), "share"),
                    _v(lookup(f, "mean_replicas"), "ratio"),
                    _v(lookup(f, "unmet_demand_fraction"), "share"),
                    _v(float(need.mean()) if need is not None else None, "ratio"),
                    _v(float(need.max()) if need is not None else None, "count"),
                ]
            )
    section.tables.append(
        Table(
            [
                "model",
                "service",
                "SLO attainment",
                "mean replicas",
                "unmet demand",
                "replicas needed (mean)",
                "replicas needed (peak)",
            ],
            rows,
        )
    )
    section.charts.append(
        charts.slo(models, names, {k: lookup(f, "slo_attainment") for k, f in figures.items()})
    )
    for index, service in enumerate(inputs.services):
        means = {m: lookup(figures.get((m, service.name), {}), "mean_replicas") for m in models}
        section.charts.append(
            charts.replicas(service.name, index, service.time_s, service.replicas_needed(), means, models)
        )
    return section


def cost_section(inputs: ReportInputs) -> Section:
    section = Section("cost", "Cost")
    prices = {p.name: p.price_per_gpu_hour for p in inputs.scenario.pools} if inputs.scenario else {}
    models = _models(inputs)
    by_pool: dict[tuple[str, str], float] = {}
    rows = []
    for model in models:
        body = inputs.summary["models"][model]
        hours = (lookup(body, "makespan_s") or 0.0) / 3600.0
        for pool, spec in lookup_mapping(body, "cluster", "pools").items():
            gpus = lookup(spec, "gpus")
            price = prices.get(pool)
            cost = gpus * price * hours if gpus is not None and price is not None else None
            if cost is not None:
                by_pool[model, pool] = cost
            available = gpus * hours if gpus is not None else None
            rows.append(
                [model, pool, _v(gpus, "count"), _v(price, "ratio"), _v(available, "count"), _v(cost, "usd")]
            )
        rows.append([model, "total (summary.json cost_usd)", "", "", "", _v(lookup(body, "cost_usd"), "usd")])
    section.tables.append(
        Table(["model", "pool", "GPUs", "USD per GPU-hour", "GPU-hours available", "cost"], rows)
    )
    if by_pool:
        pools = list(dict.fromkeys(pool for _, pool in by_pool))
        unpriced = sorted({row[1] for row in rows if row[3] == "-" and not row[1].startswith("total")})
        caption = f"Pools without a price are left out: {', '.join(unpriced)}." if unpriced else ""
        section.charts.append(charts.cost(models, pools, by_pool, caption))
    else:
        section.paragraphs.append(
            "No cost: no pool has a price (OCI list prices are not in the catalogue; set price_per_gpu_hour)."
        )
    return section


def criteria_section(inputs: ReportInputs) -> Section:
    section = Section("criteria", "Criteria and evidence")
    rec = inputs.recommendation
    section.paragraphs.append(
        "contribution = weight × strength × affinity of the model's family; strength is the evidence "
        "mapped to 0..1 (criteria.yaml says how). Outcome criteria read each model's own simulation."
    )
    models = [m.model for m in rec.models]
    first = rec.models[0]
    by_id = {m.model: {r.id: r for r in m.criteria} for m in rec.models}
    rows = []
    for row in first.criteria:
        outcome = row.source == "outcome"
        evidence = "per model" if outcome else _v(row.evidence, row.unit)
        strength = "per model" if outcome else ("-" if row.strength is None else f"{row.strength:.2f}")
        cells = [
            inputs.criteria.dimensions[row.dimension],
            row.title,
            f"{row.source}: {row.field}",
            evidence,
            strength,
            f"{row.weight:g}",
        ]
        for model in models:
            other = by_id[model][row.id]
            detail = f"{other.contribution:+.2f}"
            if outcome:
                detail += f" ({_v(other.evidence, other.unit)})"
            cells.append(detail)
        cells.append(row.note)
        rows.append(cells)
    rows.sort(key=lambda cells: list(inputs.criteria.dimensions.values()).index(cells[0]))
    section.tables.append(
        Table(
            ["dimension", "criterion", "evidence from", "evidence", "strength", "weight", *models, "note"],
            rows,
        )
    )
    section.tables.append(
        Table(
            ["criterion", "why"],
            [[c.title, " ".join(c.why.split())] for c in inputs.criteria.criteria],
            "Why each criterion counts",
        )
    )
    return section


def assumptions_section(inputs: ReportInputs) -> Section:
    section = Section("assumptions", "Assumptions")
    echoed = inputs.summary.get("input")
    info: dict[str, Any] = echoed if isinstance(echoed, dict) else {}
    section.tables.append(Table(["input", "value"], [[str(k), str(v)] for k, v in info.items()], "Input"))
    loaded = inputs.scenario
    if loaded is None and info.get("format", "scenario") != "scenario":
        section.paragraphs.append(
            f"The input is a {info['format']} trace: there are no scenario assumptions (pools, teams, "
            "organisation answers, targets) to list."
        )
    elif loaded is None:
        section.paragraphs.append("The scenario could not be read: its assumptions are not listed.")
    else:
        scenario = loaded.scenario
        section.paragraphs.append(
            f"Horizon {fmt.duration(scenario.horizon)}, seed {scenario.seed}, "
            f"start {scenario.start.isoformat()}. {scenario.description}".strip()
        )
        section.tables.append(
            Table(
                ["pool", "shape", "nodes", "GPUs per node", "GPU", "RDMA", "USD per GPU-hour"],
                [
                    [
                        p.name,
                        p.shape or "custom",
                        str(p.nodes),
                        str(p.gpus_per_node),
                        p.gpu_model or "-",
                        "yes" if p.rdma else "no",
                        _v(p.price_per_gpu_hour, "ratio"),
                    ]
                    for p in loaded.pools
                ],
                "Pools",
            )
        )
        section.tables.append(
            Table(
                ["team", "persona", "share", "users"],
                [[t.name, t.persona, f"{t.share:g}", str(t.users)] for t in scenario.teams],
                "Teams",
            )
        )
        section.tables.append(
            Table(
                ["workload", "kind", "team", "pool", "details"],
                [_workload_row(w) for w in scenario.workloads],
                "Workloads",
            )
        )
        organisation = scenario.organisation.model_dump()
        section.tables.append(
            Table(
                ["question", "answer"],
                [[k, v or "not answered"] for k, v in organisation.items()],
                "Organisation",
            )
        )
        targets = scenario.targets.model_dump()
        section.tables.append(
            Table(
                ["target", "value"],
                [[k, "none" if v is None else str(v)] for k, v in targets.items()],
                "Targets",
            )
        )
    for model, body in inputs.summary["models"].items():
        settings = body.get("settings")
        if isinstance(settings, dict) and settings:
            section.tables.append(
                Table(
                    ["setting", "value"], [[k, str(v)] for k, v in settings.items()], f"Settings of {model}"
                )
            )
    section.bullets = [
        "Nodes are allocated whole; a job of N nodes starts on all N at once.",
        "Under Slurm, a service runs as a peak-sized job (its max replicas) for the whole run.",
        "Waits are start minus submit of the jobs that started; unfinished jobs are left out.",
        "Cost = GPUs × price per GPU-hour × makespan (null when a pool has no price).",
    ]
    return section


def _workload_row(workload: Any) -> list[str]:
    data = workload.model_dump(mode="json", exclude_none=True)
    kind = data.pop("kind", "trace" if "trace" in data else "")
    name, team, pool = data.pop("name", ""), data.pop("team", "-"), data.pop("pool", "-")
    details = "; ".join(f"{k}: {v}" for k, v in data.items())
    return [name, kind, team, pool, details]


def build_sections(inputs: ReportInputs) -> list[Section]:
    return [
        recommendation_section(inputs),
        targets_section(inputs),
        workload_section(inputs),
        side_by_side_section(inputs),
        *timeline_sections(inputs),
        waits_section(inputs),
        services_section(inputs),
        cost_section(inputs),
        criteria_section(inputs),
        assumptions_section(inputs),
    ]


def title_of(inputs: ReportInputs) -> str:
    name = inputs.recommendation.scenario
    if name is None:
        info = inputs.summary.get("input")
        name = str(info.get("path")) if isinstance(info, dict) and info.get("path") else "saved results"
    return f"gpuplan report: {name}"
