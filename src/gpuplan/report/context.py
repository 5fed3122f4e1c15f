"""What the reports say, as data: sections of alerts, a headline, paragraphs, bullet lists, tables and
charts, in the order they are read.

Both report.html and report.md are rendered from the same sections, so the Markdown carries the same
content (every chart has a table beside it). Strings here are plain text, written for an architecture
review: figures with their units, settings in words, never a Python value's repr. Escaping is the
renderer's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, ClassVar, Literal

from gpuplan.advisor import format as fmt
from gpuplan.advisor.criteria import Criteria
from gpuplan.advisor.evidence import lookup
from gpuplan.advisor.recommendation import ModelScore, Recommendation, TargetCheck, Tip
from gpuplan.metrics.diagnose import diagnosis_sentence
from gpuplan.report import charts
from gpuplan.report.results import Columns
from gpuplan.report.series import chart_bin_s, timeline_end_s, timeline_series, wait_cdfs
from gpuplan.report.words import (
    arrivals,
    batch_other,
    demand,
    humanise,
    join_words,
    number,
    plural,
    run_time,
    setting_value,
    sizes,
    time_limit,
    trace_teams,
    trace_window,
)
from gpuplan.scenario.load import LoadedScenario
from gpuplan.scenario.model import (
    BatchWorkload,
    JobListWorkload,
    ServiceWorkload,
    TraceWorkload,
)
from gpuplan.workload.services import Service

# ---- the report's building blocks ------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    kind: ClassVar[str] = "table"
    columns: list[str]
    rows: list[list[str]]
    title: str = ""


@dataclass(frozen=True)
class Paragraph:
    kind: ClassVar[str] = "paragraph"
    text: str


@dataclass(frozen=True)
class Bullets:
    kind: ClassVar[str] = "bullets"
    items: list[str]
    title: str = ""


@dataclass(frozen=True)
class ChartGroup:
    """Charts drawn side by side (HTML); in Markdown each is named with its caption."""

    kind: ClassVar[str] = "charts"
    charts: list[charts.Chart]


Block = Table | Paragraph | Bullets | ChartGroup


@dataclass(frozen=True)
class Alert:
    """A notice that must be read before the rest: shown in a warning style, labelled."""

    label: str  # "Warning", "Incomplete comparison"
    text: str


@dataclass
class Section:
    id: str
    title: str
    alerts: list[Alert] = field(default_factory=list)
    headline: str = ""
    headline_warning: bool = False  # the headline is not a plain recommendation: style it as a warning
    blocks: list[Block] = field(default_factory=list)

    def paragraph(self, text: str) -> None:
        self.blocks.append(Paragraph(text))

    def bullets(self, items: Sequence[str], title: str = "") -> None:
        if items:
            self.blocks.append(Bullets(list(items), title))

    def table(self, table: Table) -> None:
        self.blocks.append(table)

    def chart(self, chart: charts.Chart) -> None:
        """A chart beside the previous one when nothing came between them."""
        if self.blocks and isinstance(self.blocks[-1], ChartGroup):
            self.blocks[-1].charts.append(chart)
        else:
            self.blocks.append(ChartGroup([chart]))

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def charts(self) -> list[charts.Chart]:
        return [c for b in self.blocks if isinstance(b, ChartGroup) for c in b.charts]

    @property
    def paragraphs(self) -> list[str]:
        return [b.text for b in self.blocks if isinstance(b, Paragraph)]


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
    "seed_dependent": "it depends on the seed (different models win on different draws of the workload)",
    "single_model": "the only model simulated",
    "no_model_meets_targets": "no simulated model meets every target",
}
SIDE_NAMES = {"slurm": "Slurm", "kubernetes": "Kubernetes"}
# the scenario's organisation questions as a reader says them (criteria.yaml's own questions)
QUESTIONS = {
    "kubernetes_skills": "Kubernetes skills",
    "containerised": "containerised workloads",
    "existing_slurm_scripts": "existing Slurm job scripts",
    "cicd_gitops": "CI/CD and GitOps",
    "self_service": "self-service for teams",
    "security_compliance": "security and compliance regime",
    "operational_maturity": "operational maturity",
    "platform_today": "the platform the teams run today",
}
# the hybrid model's settings that make its plan (shown under the recommendation, not as settings)
PLAN_SETTINGS = ("split", "split_source", "routing", "lending", "rerouted")


# ---- words and figures -----------------------------------------------------------------------------


def _v(value: Any, unit: str | None = None) -> str:
    return fmt.value(value if isinstance(value, int | float | str) else None, unit)


def _is_scalar_like(key: str, value: Any) -> bool:
    """A value one table cell holds: a scalar, a list of scalars or a few named scalars (a side's
    settings, or many of them, get a table of their own)."""
    if isinstance(value, Mapping):
        few = len(value) <= 4 and key not in SIDE_NAMES
        return few and all(not isinstance(v, Mapping | list | tuple) for v in value.values())
    if isinstance(value, list | tuple):
        return all(not isinstance(v, Mapping | list | tuple) for v in value)
    return True


def settings_tables(title: str, settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[Table]:
    """Settings as tables: scalars as rows of one table; a list of records (QoS, partitions) as a
    table of its own with a column per field; a nested group (a hybrid side) as tables of its own."""
    rows: list[list[str]] = []
    nested: list[Table] = []
    for key, value in settings.items():
        if key in skip:
            continue
        if _is_scalar_like(key, value):
            rows.append([key, setting_value(key, value)])
        elif isinstance(value, list | tuple) and all(isinstance(v, Mapping) for v in value):
            columns = list(dict.fromkeys(str(k) for record in value for k in record))
            nested.append(
                Table(
                    columns,
                    [[setting_value(c, record.get(c)) for c in columns] for record in value],
                    f"{title}: {humanise(key)}",
                )
            )
        elif isinstance(value, Mapping):
            side = f"{SIDE_NAMES[key]} side" if key in SIDE_NAMES else humanise(key)
            nested += settings_tables(f"{title}: {side}", value)
        else:  # a list mixing records and values: one row per item
            rows += [[f"{key} {i + 1}", setting_value(key, v)] for i, v in enumerate(value)]
    return ([Table(["setting", "value"], rows, title)] if rows else []) + nested


# ---- the input named in the header -----------------------------------------------------------------


def _is_bundled(path: str) -> bool:
    """The example scenario installed with gpuplan, as ``gpuplan recommend`` without a scenario names
    it (an absolute path into the package). Paths are compared as written, symbolic links not
    followed: a checkout's ``examples`` may link to the package's, and a user who names a file there
    gave their own path."""
    examples = os.path.normpath(str(files("gpuplan") / "examples"))
    return os.path.isabs(path) and os.path.dirname(os.path.normpath(path)) == examples


def input_shown(summary: Mapping[str, Any]) -> str | None:
    """The input as the header names it: the scenario's name and its file as the user gave it, or
    "the bundled example NAME" for the example installed with gpuplan (its install path means nothing
    to a reader); a trace by its format and file."""
    info = summary.get("input")
    if not isinstance(info, Mapping) or not isinstance(info.get("path"), str):
        return None
    path = info["path"]
    where = f"the bundled example {Path(path).name}" if _is_bundled(path) else path
    fmt_name = info.get("format")
    if fmt_name in (None, "scenario"):
        name = info.get("scenario")
        shown = f"scenario {name} from {where}" if isinstance(name, str) else where
        sets = info.get("set")
        if isinstance(sets, list) and sets:  # the fields changed for the run (--set)
            shown += " with " + ", ".join(f"--set {s}" for s in sets if isinstance(s, str))
        return shown
    return f"{fmt_name} trace {where}"


def title_of(inputs: ReportInputs) -> str:
    name = inputs.recommendation.scenario
    if name is None:
        info = inputs.summary.get("input")
        path = info.get("path") if isinstance(info, dict) else None
        name = Path(path).name if isinstance(path, str) and path else "saved results"
    return f"gpuplan report: {name}"


# ---- figures read from summary.json ----------------------------------------------------------------


def _models(inputs: ReportInputs) -> list[str]:
    return list(inputs.summary["models"])


def lookup_mapping(body: Any, *keys: str) -> dict[str, Any]:
    """The mapping at ``keys`` in ``body`` ({} when absent or not a mapping)."""
    for key in keys:
        body = body.get(key) if isinstance(body, Mapping) else None
    return dict(body) if isinstance(body, Mapping) else {}


@dataclass(frozen=True)
class Work:
    """A model's work not done (summary.json ``work_not_done``; the job counts when it is absent)."""

    rejected_jobs: int
    rejected_gpu_hours: float | None
    unfinished_jobs: int
    unfinished_gpu_hours: float | None
    by_workload: dict[str, Any]
    detailed: bool  # from work_not_done (else only the counts of jobs.rejected and jobs.unfinished)

    @property
    def jobs(self) -> int:
        return self.rejected_jobs + self.unfinished_jobs

    @property
    def gpu_hours(self) -> float | None:
        if self.rejected_gpu_hours is None or self.unfinished_gpu_hours is None:
            return None
        return self.rejected_gpu_hours + self.unfinished_gpu_hours


def work_of(body: Mapping[str, Any]) -> Work:
    work = body.get("work_not_done")
    if isinstance(work, Mapping):

        def part(name: str) -> tuple[int, float | None]:
            figures = lookup_mapping(work, name)
            hours = lookup(figures, "gpu_hours")
            return int(lookup(figures, "jobs") or 0), hours

        rejected, rejected_hours = part("rejected")
        unfinished, unfinished_hours = part("unfinished")
        by_workload = work.get("by_workload")
        return Work(
            rejected,
            rejected_hours,
            unfinished,
            unfinished_hours,
            dict(by_workload) if isinstance(by_workload, Mapping) else {},
            True,
        )
    jobs = lookup_mapping(body, "jobs")
    return Work(
        int(lookup(jobs, "rejected") or 0), None, int(lookup(jobs, "unfinished") or 0), None, {}, False
    )


def _work_phrase(work: Work) -> str:
    """``28 jobs (56 GPU-hours)``."""
    hours = work.gpu_hours
    return plural(work.jobs, "job") + (f" ({_v(hours, 'count')} GPU-hours)" if hours is not None else "")


def work_sentence(inputs: ReportInputs) -> str | None:
    """One sentence for the first screen when a model leaves work undone; None when none does."""
    works = {m: work_of(body) for m, body in inputs.summary["models"].items()}
    undone = {m: w for m, w in works.items() if w.jobs}
    if not undone:
        return None
    parts = [
        f"{model} leaves {_work_phrase(w)} undone ({w.rejected_jobs:,} rejected, "
        f"{w.unfinished_jobs:,} still queued or running at the end)"
        for model, w in undone.items()
    ]
    done = [m for m in works if m not in undone]
    rest = f"; {join_words(done)} {'does' if len(done) == 1 else 'do'} all the work" if done else ""
    return f"Work not done: {'; '.join(parts)}{rest}. The section Work not done lists the workloads and why."


def replications_sentence(summary: Mapping[str, Any]) -> str | None:
    """What the figures are: medians over the seeds (with their ranges), or one run."""
    replications = summary.get("replications")
    if not isinstance(replications, Mapping):
        return None
    seeds = [str(s) for s in replications.get("seeds") or []]
    if len(seeds) > 1:
        return (
            f"Every figure is the median over {len(seeds)} draws of the scenario's workload (seeds "
            f"{', '.join(seeds)}), with its range over them as (low to high); a target "
            "is met only when it is met in every seed. The job, timeline and event files hold seed "
            f"{seeds[0]}, the scenario's own."
        )
    note = replications.get("note")
    return f"One run, seed {seeds[0]}" + (f": {note}." if note else ".") if seeds else None


def _score_range(model: ModelScore) -> str:
    low_high = model.score_range
    return "" if low_high is None else f" ({low_high[0]:.2f} to {low_high[1]:.2f})"


def _target_status(check: TargetCheck) -> str:
    seeds, met = check.seeds, check.seeds_met
    status = f"{check.title}: {check.status}"
    if seeds:
        status += f" (met in {met} of {seeds} seeds)"
    note = check.note
    if note and "seeds" not in note:
        status += f" ({note})"
    return status


def _refused_alert(summary: Mapping[str, Any]) -> list[Alert]:
    refused = summary.get("refused")
    if not isinstance(refused, Mapping):
        return []
    return [
        Alert("Model refused", f"{name} refused the scenario, so it is not compared: {why}")
        for name, why in refused.items()
    ]


def _partial_alert(summary: Mapping[str, Any]) -> Alert | None:
    partial = summary.get("partial")
    if not isinstance(partial, Mapping):
        return None
    missing = [str(m) for m in partial.get("missing_models") or []]
    why = partial.get("why")
    cause = "the run was interrupted" if why == "interrupted" else f"the run ended early ({why})"
    present = join_words(list(summary["models"]))
    named = join_words(missing) if missing else "some models"
    verb = "is" if len(missing) == 1 else "are"
    return Alert(
        "Incomplete comparison",
        f"{named} {verb} missing: {cause} before {'it' if len(missing) == 1 else 'they'} finished, so this "
        f"report compares only {present}. Run the same command again to compare every model.",
    )


# ---- the recommendation ----------------------------------------------------------------------------


def _tip_sentence(tip: Tip) -> str:
    """A tip as a sentence: what would have to change, from what, and the choice it would give."""
    subject, _, change = tip.change.partition(": ")
    was, arrow, now = change.partition(" -> ")
    if not arrow:
        return f"{tip.detail or humanise(tip.change)}: that would make {_recommending(tip)}."
    path = subject.split(".")
    instead = f"instead of {was}"
    if tip.kind == "organisation":
        question = QUESTIONS.get(path[-1], humanise(path[-1]))
        if was == "unanswered":
            instead = "it is unanswered now"
        return f"Answering {now} on {question} ({instead}) would make {_recommending(tip)}."
    if tip.kind == "target":
        target = tip.detail or f"{humanise(path[-1])} {now}"
        if was == "none":
            instead = "none is set now"
        return f"A target of {target} ({instead}) would make {_recommending(tip)}."
    if tip.kind == "weight":
        criterion = tip.detail or humanise(path[1] if len(path) > 1 else subject)
        return f"Weighing the criterion {criterion} at {now} ({instead}) would make {_recommending(tip)}."
    return f"Changing {humanise(subject)} to {now} ({instead}) would make {_recommending(tip)}."


def _recommending(tip: Tip) -> str:
    return f"gpuplan recommend {tip.new_choice}"


def _routing_sentences(routing: Any) -> list[str]:
    default = "services and pipelines go to Kubernetes, other jobs to Slurm"
    if not isinstance(routing, list) or not routing:
        return [f"Routing: {default} (the default)."]
    kinds = {"batch": "batch jobs", "interactive": "interactive jobs", "pipeline": "pipelines"}
    rules = []
    for rule in routing:
        if not isinstance(rule, Mapping):
            continue
        kind = rule.get("kind")
        what = "services" if kind == "service" else kinds.get(str(kind), "jobs")
        if rule.get("multi_node") is True:
            what = f"multi-node {what}"
        elif rule.get("multi_node") is False:
            what = f"single-node {what}"
        if rule.get("workload") is not None:
            what += f" of workload {rule['workload']}"
        if rule.get("team") is not None:
            what += f" of team {rule['team']}"
        rules.append(f"{what} go to {SIDE_NAMES.get(str(rule.get('to')), str(rule.get('to')))}")
    numbered = "; ".join(f"({i}) {text}" for i, text in enumerate(rules, 1))
    return [f"Routing, first matching rule first: {numbered}; then the default: {default}."]


def _rerouted_sentences(rerouted: Any) -> list[str]:
    if not isinstance(rerouted, Mapping) or not rerouted:
        return []
    moved = [
        f"{plural(int(lookup(entry, 'jobs') or 0), 'job')} of {workload} to "
        f"{SIDE_NAMES.get(str(entry.get('to')), str(entry.get('to')))}"
        for workload, entry in rerouted.items()
        if isinstance(entry, Mapping)
    ]
    return [
        f"Moved to the side where they fit (the default routing's side has too few nodes of their "
        f"pool for them): {join_words(moved)}."
    ]


def _lending_sentences(lending: Any, scenario: LoadedScenario | None) -> list[str]:
    if not isinstance(lending, Mapping) or lending.get("policy") in (None, "none"):
        return ["Lending: none. The split is static: every node stays on its side for the whole run."]
    if lending.get("policy") != "kubernetes_borrows":
        return [f"Lending: {setting_value('policy', lending.get('policy'))}."]
    text = (
        "Lending: Kubernetes borrows Slurm nodes when services' pods cannot be placed (idle nodes first) "
        "and gives them back once unneeded"
    )
    if scenario is not None:
        settings = scenario.scenario.models.hybrid.lending
        limit = (
            "all of a pool's Slurm nodes"
            if settings.max_nodes is None
            else (f"at most {plural(settings.max_nodes, 'node')} of each pool")
        )
        text += (
            f"; Slurm may lend {limit}; a node leaving Slurm drains for {fmt.duration(settings.grace_time)} "
            f"(jobs still on it are requeued) and takes {fmt.duration(settings.move_time)} to move either way"
        )
    sentences = [text + "."]
    moves = lending.get("moves_to_kubernetes")
    hours = lending.get("node_hours_lent")
    if isinstance(moves, Mapping) and moves:
        per_pool = [
            f"pool {pool}: {plural(int(n), 'move')}"
            + (
                f", {_v(lookup(hours, str(pool)), 'count')} node-hours lent"
                if isinstance(hours, Mapping)
                else ""
            )
            for pool, n in moves.items()
        ]
        in_transit = lookup(lending, "gpu_hours_in_transit")
        sentences.append(
            f"In this run: {'; '.join(per_pool)}"
            + (f"; {_v(in_transit, 'count')} GPU-hours spent draining and moving" if in_transit else "")
            + "."
        )
    return sentences


def plan_blocks(
    model: str, plan: Mapping[str, Any], settings: Mapping[str, Any], scenario: LoadedScenario | None
) -> list[Block]:
    """The hybrid plan in words: nodes of each pool per side (proposed or given), routing, lending."""
    blocks: list[Block] = []
    split = plan.get("split", settings.get("split"))
    source = lookup_mapping(settings, "split_source")
    if isinstance(split, Mapping) and split:
        sources = {"proposed": "proposed by gpuplan", "scenario": "given in the scenario"}
        blocks.append(
            Table(
                ["pool", "Slurm nodes", "Kubernetes nodes", "split"],
                [
                    [
                        str(pool),
                        _v(lookup(sides, "slurm"), "count"),
                        _v(lookup(sides, "kubernetes"), "count"),
                        sources.get(str(source.get(pool)), setting_value("", source.get(pool, "not said"))),
                    ]
                    for pool, sides in split.items()
                    if isinstance(sides, Mapping)
                ],
                f"Plan of {model}: nodes of each pool per side",
            )
        )
    sentences = _routing_sentences(plan.get("routing", settings.get("routing")))
    sentences += _rerouted_sentences(plan.get("rerouted", settings.get("rerouted")))
    sentences += _lending_sentences(plan.get("lending", settings.get("lending")), scenario)
    blocks += [Paragraph(s) for s in sentences]
    return blocks


def _score_work(model: ModelScore, body: Mapping[str, Any]) -> str:
    jobs = getattr(model, "work_not_done_jobs", None)
    hours = getattr(model, "work_not_done_gpu_hours", None)
    if jobs is None:
        work = work_of(body)
        jobs, hours = work.jobs, work.gpu_hours
    if not jobs:
        return "none"
    return plural(int(jobs), "job") + (f" ({_v(hours, 'count')} GPU-hours)" if hours is not None else "")


def recommendation_section(inputs: ReportInputs) -> Section:
    rec = inputs.recommendation
    section = Section("recommendation", "Recommendation")
    partial = _partial_alert(inputs.summary)
    if partial is not None:
        section.alerts.append(partial)
    section.alerts += _refused_alert(inputs.summary)
    section.alerts += [
        Alert("Pathology", diagnosis_sentence(model, diagnosis))
        for model, body in inputs.summary["models"].items()
        for diagnosis in body.get("diagnoses") or []
        if isinstance(diagnosis, Mapping) and {"title", "detail", "fix"} <= set(diagnosis)
    ]
    warnings = list(getattr(rec, "warnings", None) or [])
    section.alerts += [Alert("Warning", text) for text in warnings]
    family = inputs.criteria.families.get(rec.chosen_family or "")
    named = f"{rec.chosen}" + (f" — {family.title}" if family else "")
    headlines = {
        "single_model": f"Simulated: {named} (the only model in these results)",
        "no_model_meets_targets": f"No simulated model meets every target; the best-scoring is {named}",
    }
    if rec.decision == "seed_dependent":
        headlines["seed_dependent"] = (
            f"Best on the median figures: {named}, but the choice depends on the seed"
        )
    section.headline = headlines.get(rec.decision, f"Recommended: {named}")
    # the headline reads as settled only when the decision is and nothing must be read first
    section.headline_warning = rec.decision in ("no_model_meets_targets", "seed_dependent") or bool(warnings)
    verdict = f"Decision: {DECISIONS[rec.decision]}"
    if rec.runner_up is not None and rec.margin is not None:
        verdict += f"; {rec.margin:.2f} points ahead of {rec.runner_up}"
    section.paragraph(verdict + ".")
    replications = replications_sentence(inputs.summary)
    if replications is not None:
        section.paragraph(replications)
    work = work_sentence(inputs)
    if work is not None:
        section.paragraph(work)
    section.bullets(list(rec.reasons) + [f"Note: {note}" for note in rec.notes])
    by_model = {
        m.model: {
            d: sum(r.contribution for r in m.criteria if r.dimension == d) for d in inputs.criteria.dimensions
        }
        for m in rec.models
    }
    section.chart(charts.contributions([m.model for m in rec.models], inputs.criteria.dimensions, by_model))
    section.table(
        Table(
            [
                "model",
                "family",
                "score",
                "organisation + workload",
                "simulated outcomes",
                "targets",
                "work not done",
                "seeds won",
            ],
            [
                [
                    m.model,
                    m.family,
                    f"{m.score:.2f}" + _score_range(m),
                    f"{m.static_score:.2f}",
                    f"{m.outcome_score:.2f}",
                    ", ".join(_target_status(c) for c in m.targets) or "none set",
                    _score_work(m, inputs.summary["models"].get(m.model, {})),
                    "-" if m.wins is None else f"{m.wins} of {len(rec.seeds)}",
                ]
                for m in rec.models
            ]
            + [
                [name, "", "refused", "", "", "", "", ""]
                for name in (inputs.summary.get("refused") or {})
                if name not in {m.model for m in rec.models}
            ],
            "Score per model",
        )
    )
    if rec.not_simulated:
        section.table(
            Table(
                ["family", "score on organisation and workload evidence"],
                [[e.family, f"{e.static_score:.2f}"] for e in rec.not_simulated],
                "Families not simulated",
            )
        )
    section.bullets([_tip_sentence(t) for t in rec.tips], "What would tip the decision")
    for model in rec.models:
        body = inputs.summary["models"].get(model.model, {})
        settings = body.get("settings") if isinstance(body.get("settings"), Mapping) else {}
        # the advisor's plan, else what the settings echo of it (a recommendation of an older gpuplan)
        plan = model.plan or {key: settings[key] for key in PLAN_SETTINGS if key in settings}
        if plan:
            section.blocks += plan_blocks(model.model, plan, settings, inputs.scenario)
    return section


# ---- work not done ---------------------------------------------------------------------------------


def work_section(inputs: ReportInputs) -> Section:
    section = Section("work", "Work not done")
    works = {m: work_of(body) for m, body in inputs.summary["models"].items()}
    section.paragraph(
        "Jobs a model rejects (they can never run on its cluster) or leaves unfinished (still queued or "
        "running when the run ends), with the GPU-hours they asked for (GPUs x run time). Waits and "
        "utilisation count only the work that ran, so a model that leaves work undone looks better "
        "there than it is."
    )
    if not any(w.detailed for w in works.values()):
        section.paragraph(
            "summary.json has no work_not_done figures (results of an older gpuplan): the job counts are "
            "known, not the GPU-hours or the workloads. Simulate again for the details."
        )
    section.table(
        Table(
            [
                "model",
                "jobs rejected",
                "GPU-hours rejected",
                "jobs unfinished",
                "GPU-hours unfinished",
                "jobs not done",
                "GPU-hours not done",
            ],
            [
                [
                    model,
                    f"{w.rejected_jobs:,}",
                    _v(w.rejected_gpu_hours, "count"),
                    f"{w.unfinished_jobs:,}",
                    _v(w.unfinished_gpu_hours, "count"),
                    f"{w.jobs:,}",
                    _v(w.gpu_hours, "count"),
                ]
                for model, w in works.items()
            ],
            "Work not done per model",
        )
    )
    for model, w in works.items():
        if not w.by_workload:
            continue
        rows = []
        for workload, figures in w.by_workload.items():
            reasons = lookup_mapping(figures, "reasons")
            why = "; ".join(
                f"{reason} ({plural(int(n), 'job')})"
                for reason, n in reasons.items()
                if isinstance(n, int | float)
            )
            rows.append(
                [
                    str(workload),
                    f"{int(lookup(figures, 'jobs') or 0):,}",
                    _v(lookup(figures, "gpu_hours"), "count"),
                    why or "-",
                ]
            )
        section.table(Table(["workload", "jobs", "GPU-hours", "why"], rows, f"Work {model} leaves undone"))
    done = [m for m, w in works.items() if not w.jobs]
    if done:
        verb = "does" if len(done) == 1 else "do"
        section.paragraph(f"{join_words(done)} {verb} all the work: no job rejected or left unfinished.")
    return section


# ---- targets, workload, models side by side --------------------------------------------------------


def targets_section(inputs: ReportInputs) -> Section:
    section = Section("targets", "Targets (hard constraints)")
    seeds = len(inputs.recommendation.seeds)
    rows = [
        [
            m.model,
            c.title,
            f"{c.must_be.replace('_', ' ')} {_v(c.required, c.unit)}",
            _v(c.actual, c.unit),
            c.status + (f" ({c.note})" if c.note else ""),
        ]
        + ([_v(c.worst, c.unit), f"{c.seeds_met} of {c.seeds}"] if seeds else [])
        for m in inputs.recommendation.models
        for c in m.targets
    ]
    if rows:
        columns = ["model", "target", "required", "actual", "status"]
        if seeds:
            section.paragraph(
                f"Over {seeds} seeds: the actual figure is the median, and a target is met only when it is "
                "met in every seed (the worst seed's figure beside it)."
            )
            columns = ["model", "target", "required", "actual (median)", "status", "worst seed", "seeds met"]
        section.table(Table(columns, rows))
    else:
        section.paragraph("The scenario sets no targets (or it could not be read).")
    return section


def workload_section(inputs: ReportInputs) -> Section:
    section = Section("workload", "Workload characterisation")
    figures = inputs.workload
    if figures is None:
        section.paragraph(
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
    by_kind = {k: float(v.get("gpu_hours", 0.0)) for k, v in figures.get("by_kind", {}).items()}
    by_team = {k: float(v.get("gpu_hours", 0.0)) for k, v in figures.get("by_team", {}).items()}
    if by_kind or by_team:
        section.chart(charts.workload_hours(by_kind, by_team))
    section.table(Table(["figure", "value"], rows, "Key figures"))
    section.table(
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
    return section


SIDE_BY_SIDE = [
    ("GPU utilisation (one window for every model)", "gpu_utilization", "share"),
    ("GPU-hours busy", "gpu_hours", "count"),
    ("GPU-hours idle", "idle_gpu_hours", "count"),
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
    ("jobs unfinished", "jobs.unfinished", "count"),
    ("GPU-hours not done (rejected + unfinished)", "work_not_done.gpu_hours", "count"),
    ("GPU-hours lost to preemption", "preemption.lost_gpu_hours", "count"),
    ("worst service SLO attainment", "services.*.slo_attainment", "share"),
    ("cost (USD)", "cost_usd", "usd"),
]


def _spread(body: Mapping[str, Any], path: str, unit: str) -> str:
    """`` (low to high)`` over the seeds where they differ (summary.json ``replications.spread``)."""
    spreads = lookup_mapping(body, "replications", "spread")
    figure = spreads.get(path) if isinstance(spreads, Mapping) else None
    if not isinstance(figure, Mapping) or figure.get("min") == figure.get("max"):
        return ""
    return f" ({_v(figure.get('min'), unit)} to {_v(figure.get('max'), unit)})"


def side_by_side_section(inputs: ReportInputs) -> Section:
    section = Section("models", "Models side by side")
    models = _models(inputs)
    rows = []
    for title, path, unit in SIDE_BY_SIDE:
        aggregate: Literal["min"] | None = "min" if "*" in path else None
        rows.append(
            [title]
            + [
                _v(lookup(inputs.summary["models"][m], path, aggregate), unit)
                + _spread(inputs.summary["models"][m], path, unit)
                for m in models
            ]
        )
    section.table(Table(["figure", *models], rows))
    return section


# ---- over time -------------------------------------------------------------------------------------


def _gpus_per_node(summary: dict[str, Any]) -> dict[tuple[str, str], int]:
    per_node = {}
    for model, body in summary["models"].items():
        pools = lookup_mapping(body, "cluster", "pools")
        for pool, spec in pools.items():
            value = spec.get("gpus_per_node") if isinstance(spec, dict) else None
            if isinstance(value, int) and value > 0:
                per_node[model, pool] = value
    return per_node


def timeline_sections(inputs: ReportInputs) -> list[Section]:
    models = _models(inputs)
    series = timeline_series(inputs.timeline, _gpus_per_node(inputs.summary))
    utilisation = Section("utilisation", "GPU utilisation over time")
    queue = Section("queue", "Queue length over time")
    if not series:
        utilisation.paragraph("timeline.parquet holds no rows.")
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
    bin_s = chart_bin_s(timeline_end_s(inputs.timeline))
    smoothed = timeline_series(inputs.timeline, _gpus_per_node(inputs.summary), bin_s)
    if all(s.capacity_gpus is not None for s in smoothed):
        utilisation.chart(charts.utilisation(smoothed, models, fmt.duration(bin_s)))
    else:
        utilisation.chart(charts.busy_gpus(smoothed, models, fmt.duration(bin_s)))
    utilisation.table(Table(["model", "pool", "mean utilisation", "peak busy GPUs (bin mean)"], rows))
    queue.chart(charts.queue_length(smoothed, models, fmt.duration(bin_s)))
    queue.table(Table(["model", "pool", "mean queued jobs", "peak queued jobs (bin mean)"], queue_rows))
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
                + [f"{cdf.jobs:,}" if cdf else "0", _v(cdf.within_hour if cdf else None, "share")]
            )
    teams = list(dict.fromkeys(c.team for c in cdfs))
    # one x range for every panel, so the models' curves compare by eye
    longest_s = max((float(c.wait_s[-1]) for c in cdfs), default=0.0)
    if cdfs:
        section.paragraph(
            f"One panel per model, all on the same wait axis (0 to {fmt.duration(longest_s)}, the longest "
            "wait of any team under any model); jobs that never started are not in them."
        )
    for index, model in enumerate(_models(inputs)):
        own = [c for c in cdfs if c.model == model]
        if own:
            section.chart(charts.wait_cdf(model, own, teams, index, longest_s))
    section.table(
        Table(["model", "team", "wait p50", "wait p95", "wait max", "jobs started", "waited ≤ 1 h"], rows)
    )
    return section


# ---- services and cost -----------------------------------------------------------------------------


def services_section(inputs: ReportInputs) -> Section:
    section = Section("services", "Inference services")
    models = _models(inputs)
    figures = {
        (m, s): f for m in models for s, f in lookup_mapping(inputs.summary["models"][m], "services").items()
    }
    names = list(dict.fromkeys([s for _, s in figures] + [s.name for s in inputs.services]))
    if not names:
        section.paragraph("The workload has no inference services.")
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
    section.chart(charts.slo(models, names, {k: lookup(f, "slo_attainment") for k, f in figures.items()}))
    for index, service in enumerate(inputs.services):
        means = {m: lookup(figures.get((m, service.name), {}), "mean_replicas") for m in models}
        section.chart(
            charts.replicas(service.name, index, service.time_s, service.replicas_needed(), means, models)
        )
    section.table(
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
    return section


@dataclass(frozen=True)
class PoolCost:
    pool: str
    gpus: float | None
    price: float | None
    gpu_hours: float | None  # GPU-hours available
    cost: float | None
    idle_cost: float | None = None
    option: str | None = None
    source: str | None = None
    peak_share: float | None = None  # peak GPUs in use over the pool's GPUs
    underused: bool = False


def pool_costs(body: Mapping[str, Any]) -> list[PoolCost]:
    """Each pool's GPUs, price, GPU-hours available and cost, as summary.json's ``cluster.pools``
    gives them (gpuplan.metrics.summary: the hybrid model's ``POOL/SIDE`` parts, an autoscaled pool's
    hours up and a lending pool's hours lent are already counted there)."""
    return [
        PoolCost(
            pool,
            lookup(spec, "gpus"),
            lookup(spec, "price_per_gpu_hour"),
            lookup(spec, "gpu_hours_available"),
            lookup(spec, "cost_usd"),
            lookup(spec, "idle_cost_usd"),
            spec.get("pricing_option") if isinstance(spec.get("pricing_option"), str) else None,
            spec.get("price_source") if isinstance(spec.get("price_source"), str) else None,
            lookup(spec, "peak_share"),
            spec.get("underused") is True,
        )
        for pool, spec in lookup_mapping(body, "cluster", "pools").items()
        if isinstance(spec, Mapping)
    ]


def cost_section(inputs: ReportInputs) -> Section:
    section = Section("cost", "Cost")
    models = _models(inputs)
    by_pool: dict[tuple[str, str], float] = {}
    rows = []
    unpriced: list[str] = []
    sources: list[str] = []  # where each price comes from
    flags: list[str] = []  # pools sized well above their load
    saving: list[str] = []  # pools under Slurm's power saving
    for model in models:
        body = inputs.summary["models"][model]
        for pool, spec in lookup_mapping(body, "cluster", "pools").items():
            power = spec.get("power_saving") if isinstance(spec, Mapping) else None
            if isinstance(power, Mapping):
                saving.append(
                    f"{model}'s pool {pool}: {_v(power.get('nodes'), 'count')} nodes power down after "
                    f"{_v(power.get('suspend_time_s'), 'seconds')} idle (SuspendTime) and take "
                    f"{_v(power.get('boot_s'), 'seconds')} to boot, paid, while the job given them waits; "
                    f"{_v(power.get('boots'), 'count')} boots, {_v(power.get('gpu_hours_up'), 'count')} "
                    "GPU-hours up."
                )
        for c in pool_costs(body):
            if c.cost is not None:
                by_pool[model, c.pool] = c.cost
            elif c.pool not in unpriced:
                unpriced.append(c.pool)
            rows.append(
                [
                    model,
                    c.pool,
                    _v(c.gpus, "count"),
                    c.option.replace("_", " ") if c.option else "-",
                    _v(c.price, "ratio"),
                    _v(c.gpu_hours, "count"),
                    _v(c.cost, "usd"),
                    _v(c.idle_cost, "usd"),
                    _v(c.peak_share, "share") + (" (underused)" if c.underused else ""),
                ]
            )
            # the source's title and date (its address is in summary.json: a commit id is no figure)
            shown = re.sub(r" <[^>]*>", "", c.source) if c.source else None
            if shown and shown not in sources:
                sources.append(shown)
            if c.underused and c.peak_share is not None:
                flags.append(
                    f"{model}'s pool {c.pool} never uses more than {_v(c.peak_share, 'share')} of its "
                    f"{_v(c.gpus, 'count')} GPUs at once (median over the seeds), and its idle cost is "
                    f"{_v(c.idle_cost, 'usd')}: it is sized well above its load."
                )
        per_month = lookup(body, "cost.usd_per_month")
        total = [model, "total (summary.json cost_usd)", "", "", "", "", _v(lookup(body, "cost_usd"), "usd")]
        rows.append([*total, _v(lookup(body, "cost.idle_usd"), "usd"), f"{_v(per_month, 'usd')} per month"])
    if by_pool:
        pools = list(dict.fromkeys(pool for _, pool in by_pool))
        caption = f"Pools without a price are left out: {', '.join(unpriced)}." if unpriced else ""
        section.chart(charts.cost(models, pools, by_pool, caption))
    else:
        section.paragraph(
            "No cost: no pool has a price (a custom pool has no list price: set its price_per_gpu_hour)."
        )
    if unpriced and by_pool:
        section.paragraph(
            f"No total where a pool has no price ({', '.join(unpriced)}): set price_per_gpu_hour on "
            "every pool."
        )
    seeds = lookup_mapping(inputs.summary, "replications").get("seeds") or []
    if len(seeds) > 1:
        section.paragraph(
            f"Each figure is its median over the {len(seeds)} seeds, so a model's pools need not add up to "
            "its total exactly (each seed's do, in summary.json per_seed). Every model is counted over "
            "the same measuring window, from the start to the horizon or the last end in any model."
        )
    section.paragraph(
        "A pool costs its node-hours up in the measuring window times the node-hour price its pricing "
        "option pays: every node over the window, or the hours an autoscaled, lent or power-saved "
        "pool's nodes were up (a power-saved node until it powers down after its last job). Idle cost "
        "is the part its busy GPU-hours do not use."
    )
    section.bullets(sources, "Where the prices come from")
    section.bullets(saving, "Power saving (Slurm)")
    section.bullets(flags, "Pools sized well above their load")
    columns = ["model", "pool", "GPUs", "pricing", "USD per GPU-hour", "GPU-hours available", "cost"]
    section.table(Table([*columns, "idle cost", "peak use"], rows))
    return section


# ---- criteria --------------------------------------------------------------------------------------


def criteria_section(inputs: ReportInputs) -> Section:
    section = Section("criteria", "Criteria and evidence")
    rec = inputs.recommendation
    section.paragraph(
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
    section.table(
        Table(
            ["dimension", "criterion", "evidence from", "evidence", "strength", "weight", *models, "note"],
            rows,
        )
    )
    section.table(
        Table(
            ["criterion", "why"],
            [[c.title, " ".join(c.why.split())] for c in inputs.criteria.criteria],
            "Why each criterion counts",
        )
    )
    return section


# ---- assumptions: the scenario in words ------------------------------------------------------------


def workload_tables(loaded: LoadedScenario) -> list[Table]:
    """The scenario's workloads in words: rates per day or hour, sizes, durations with units."""
    workloads = loaded.scenario.workloads
    batch = [w for w in workloads if isinstance(w, BatchWorkload)]
    services = [w for w in workloads if isinstance(w, ServiceWorkload)]
    traces = [w for w in workloads if isinstance(w, TraceWorkload)]
    tables = []
    if batch:
        tables.append(
            Table(
                [
                    "workload",
                    "kind",
                    "team",
                    "pool",
                    "arrivals",
                    "sizes (nodes x GPUs)",
                    "run time",
                    "time limit requested",
                    "other",
                ],
                [
                    [
                        w.name,
                        w.kind,
                        w.team,
                        w.pool or "first that fits",
                        arrivals(w.arrival),
                        sizes(w),
                        run_time(w.duration),
                        time_limit(w.time_limit),
                        batch_other(w),
                    ]
                    for w in batch
                ],
                "Batch, interactive and pipeline workloads",
            )
        )
    if services:
        tables.append(
            Table(
                ["service", "team", "pool", "replicas", "demand", "served per replica", "SLO target"],
                [
                    [
                        w.name,
                        w.team,
                        w.pool or "first that fits",
                        f"{w.replicas.min} to {w.replicas.max} of {plural(w.gpus_per_replica, 'GPU')}",
                        demand(w),
                        f"{number(w.throughput_per_replica)} requests/s",
                        f"demand served {fmt.value(w.slo_target, 'share')} of the time",
                    ]
                    for w in services
                ],
                "Inference services",
            )
        )
    if traces:
        tables.append(
            Table(
                ["workload", "kind", "pool", "trace", "format", "window", "arrivals", "teams"],
                [
                    [
                        w.name,
                        w.kind,
                        w.pool or "first that fits",
                        str(w.trace.path),
                        w.trace.format or "from the file name",
                        trace_window(w),
                        (
                            "as recorded"
                            if w.trace.load_scale == 1
                            else f"x{number(w.trace.load_scale)} as fast"
                        )
                        + ("; submitted ahead (sbatch --begin)" if w.trace.submitted_early else ""),
                        trace_teams(w),
                    ]
                    for w in traces
                ],
                "Replayed traces",
            )
        )
    listed = [w for w in workloads if isinstance(w, JobListWorkload)]
    if listed:
        tables.append(
            Table(
                ["workload", "kind", "jobs", "teams"],
                [[w.name, w.kind, str(w.jobs), "each job's namespace"] for w in listed],
                "Listed jobs (Kubernetes manifests or CSV: queue, priority, pods and times as written)",
            )
        )
    return tables


def _targets_rows(loaded: LoadedScenario, criteria: Criteria) -> list[list[str]]:
    targets = loaded.scenario.targets
    rules = {rule.target: rule for rule in criteria.targets}
    rows = []
    for key in type(targets).model_fields:
        value = getattr(targets, key)  # seconds, shares and dollars as numbers (not as written)
        rule = rules.get(key)
        if rule is None:
            rows.append([humanise(key), setting_value(key, value)])
            continue
        shown = "none" if value is None else f"{rule.must_be.replace('_', ' ')} {_v(value, rule.unit)}"
        rows.append([rule.title, shown])
    return rows


def assumptions_section(inputs: ReportInputs) -> Section:
    section = Section("assumptions", "Assumptions")
    echoed = inputs.summary.get("input")
    info: dict[str, Any] = echoed if isinstance(echoed, dict) else {}
    section.bullets(
        [
            "Nodes are allocated whole; a job of N nodes starts on all N at once.",
            "Under Slurm, a service runs as a peak-sized job (its max replicas) for the whole run.",
            "Waits are start minus submit of the jobs that started; jobs rejected or unfinished are left "
            "out of them and counted under Work not done.",
            "One measuring window for every model: from the start to the horizon or the last end in any "
            "model, whichever is later; utilisation, idle GPU-hours and cost are counted over it.",
            "Cost = node-hours each pool is up in the window × the node-hour price of its pricing "
            "option (on demand by default: the catalogue's list price by shape, or the pool's own "
            "price_per_gpu_hour); none when a pool has no price.",
        ]
    )
    configured = [
        f"{model}: {assumption}"
        for model, body in inputs.summary["models"].items()
        for assumption in lookup_mapping(body, "settings").get("assumptions") or []
    ]
    section.bullets(configured, "What gpuplan configured where the scenario did not (as documented)")
    for model, body in inputs.summary["models"].items():
        search = lookup_mapping(body, "split_search")
        if search:
            tried = "; ".join(
                f"{', '.join(f'{pool} {nodes}' for pool, nodes in c['split'].items())} Slurm nodes: "
                f"{c['target_misses']} target miss(es)"
                for c in search.get("candidates", [])
            )
            section.paragraph(
                f"The {model} split was sized by simulation on the same seeds: the proposed split missed a "
                f"target in some seed, so these candidates ran ({tried}); the one missing the fewest runs."
            )
    input_rows = [["file", input_shown(inputs.summary) or "-"]]
    input_rows += [[humanise(str(k)), setting_value(str(k), v)] for k, v in info.items() if k != "path"]
    section.table(Table(["input", "value"], input_rows, "Input"))
    loaded = inputs.scenario
    if loaded is None and info.get("format", "scenario") != "scenario":
        section.paragraph(
            f"The input is a {info['format']} trace: there are no scenario assumptions (pools, teams, "
            "organisation answers, targets) to list."
        )
    elif loaded is None:
        section.paragraph("The scenario could not be read: its assumptions are not listed.")
    else:
        scenario = loaded.scenario
        section.paragraph(
            f"Horizon {fmt.duration(scenario.horizon)}, seed {scenario.seed}, "
            f"start {scenario.start.isoformat()}. {scenario.description}".strip()
        )
        section.table(
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
        section.table(
            Table(
                ["team", "persona", "fair-share weight", "users"],
                [
                    # a persona the file does not state counts as unknown to the advisor: not shown as one
                    [
                        t.name,
                        t.persona if "persona" in t.model_fields_set else "not stated",
                        number(t.share),
                        str(t.users),
                    ]
                    for t in scenario.teams
                ],
                "Teams",
            )
        )
        for table in workload_tables(loaded):
            section.table(table)
        organisation = scenario.organisation.model_dump()
        section.table(
            Table(
                ["question", "answer"],
                [[QUESTIONS.get(k, humanise(k)), v or "not answered"] for k, v in organisation.items()],
                "Organisation",
            )
        )
        section.table(Table(["target", "value"], _targets_rows(loaded, inputs.criteria), "Targets"))
    for model, body in inputs.summary["models"].items():
        settings = body.get("settings")
        if isinstance(settings, Mapping) and settings:
            planned = [key for key in PLAN_SETTINGS if key in settings]
            for table in settings_tables(f"Settings of {model}", settings, skip=planned):
                section.table(table)
            if planned:
                section.paragraph(
                    f"The split, routing and lending of {model} are under Recommendation, as its plan."
                )
    return section


def build_sections(inputs: ReportInputs) -> list[Section]:
    return [
        recommendation_section(inputs),
        work_section(inputs),
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
