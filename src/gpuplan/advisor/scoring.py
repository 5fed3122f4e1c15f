"""Scoring every simulated model against the criteria, checking targets, and choosing.

The recipe, for each model in the summary (one today; slurm, kubernetes, hybrid and variants later):
  1. tell its family from its name (criteria.yaml ``families``);
  2. per criterion: read the evidence, map it to a strength 0..1, multiply by the weight and the
     family's affinity -> contribution; the score is their sum;
  3. check the hard constraints: a model that misses one of the scenario's targets, or leaves work
     undone (jobs rejected or unfinished) that another model does, is not eligible;
  4. choose the highest-scoring eligible model (ties broken by name, and reported as ties); when
     none is eligible, the highest-scoring of those that do the most work, as "no model meets targets";
  5. explain: the criteria that separate the winner from the runner-up, and the single changes (an
     organisation answer, a target, a weight) that would change the choice.
Every number in the output is one a reader can recompute from recommendation.json alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from gpuplan import __version__
from gpuplan.advisor import format as fmt
from gpuplan.advisor.criteria import (
    Criteria,
    Criterion,
    OrganisationEvidence,
    OutcomeEvidence,
    Ramp,
    WorkloadEvidence,
    load_criteria,
)
from gpuplan.advisor.evidence import Evidence, lookup, outcome_figures
from gpuplan.advisor.recommendation import (
    CriterionScore,
    Decision,
    FamilyEstimate,
    ModelScore,
    Recommendation,
    TargetCheck,
    Tip,
)
from gpuplan.errors import InputError
from gpuplan.metrics.summary import work_by_workload

# Without a target, "lower is better" figures are compared with the best model as
# (best + floor) / (value + floor): a 20 s against a 0 s p95 wait is no real difference.
FLOORS = {"seconds": 300.0, "usd": 1.0, "share": 0.01, "ratio": 0.01, "count": 1.0}
TIE = 1e-9
PLAN_KEYS = ("split", "lending", "routing", "rerouted")
REASONS = 3
# work not done is compared in GPU-hours; below this the models do the same work
WORK_TOLERANCE_GPU_HOURS = 1e-6
# A share of the jobs' GPU-hours that matters: a model leaving more than this undone shows no target
# as met (its waits and utilisation count only the work that ran), and two models whose work not
# done differs by less than this (or than its spread over the seeds) do the same work. One job of a
# thousand-job month is noise a seed moves; one in a hundred of the GPU-hours is not.
MATERIAL_WORK_SHARE = 0.01


def _ramp(value: float, low: float, high: float) -> float:
    if high == low:
        return 1.0 if value >= high else 0.0
    return min(1.0, max(0.0, (value - low) / (high - low)))


def _relevance(ramp: Ramp | None, workload: Mapping[str, Any] | None) -> tuple[float | None, str]:
    if ramp is None:
        return None, ""
    figure = lookup(workload, ramp.field)
    if figure is None:
        return 1.0, f"relevance figure {ramp.field} unknown: counted in full"
    return _ramp(figure, *ramp.ramp), ""


def _quality(
    evidence: OutcomeEvidence, value: float, target: float | None, peers: list[float]
) -> tuple[float, str]:
    """How well a model does on an outcome, 0..1: against the target when there is one, else the best."""
    lower = evidence.better == "lower"
    if target is not None:
        if lower:
            return (1.0 if value <= 0 else min(1.0, target / value)), "target / value"
        return (min(1.0, max(0.0, value / target)) if target > 0 else 1.0), "value / target"
    if lower:
        floor = FLOORS[evidence.unit]
        best = min(peers)
        shown = fmt.value(floor, evidence.unit)
        return min(
            1.0, (max(best, 0.0) + floor) / (max(value, 0.0) + floor)
        ), f"no target: (best + {shown}) / (value + {shown})"
    if evidence.unit == "share":
        return min(1.0, max(0.0, value)), "no target: the share itself"
    best = max(peers)
    return (1.0 if best <= 0 else max(0.0, value / best)), "no target: value / best"


def _criterion(criterion: Criterion, family: str, model: str, evidence: Evidence) -> CriterionScore:
    spec = criterion.evidence
    affinity = criterion.favours.get(family, 0.0)
    unit: str | None = None
    raw: float | str | None
    strength: float | None = None
    note = ""
    if isinstance(spec, OrganisationEvidence):
        raw = evidence.organisation.get(spec.field)
        if raw is None:
            note = "not answered in the scenario's organisation section"
        elif raw not in spec.scale:
            note = f"answer {raw!r} is not on the criterion's scale"
        else:
            strength = spec.scale[raw]
    elif isinstance(spec, WorkloadEvidence):
        unit = spec.unit
        raw = lookup(evidence.workload, spec.field)
        if raw is None:
            note = "workload figure unavailable" if evidence.workload is not None else "no workload figures"
        else:
            strength = _ramp(raw, *spec.ramp)
    else:
        unit = spec.unit
        raw = lookup(evidence.outcomes[model], spec.field, spec.aggregate)
        target = evidence.targets.get(spec.target) if spec.target else None
        if raw is None:
            note = f"no {spec.field} in this model's summary" + (
                " (no pool price)" if "cost" in spec.field else ""
            )
        else:
            peers = [
                v
                for v in (lookup(o, spec.field, spec.aggregate) for o in evidence.outcomes.values())
                if v is not None
            ]
            strength, note = _quality(spec, raw, target, peers)
    relevance, relevance_note = _relevance(spec.relevance, evidence.workload)
    if strength is not None and relevance is not None:
        strength *= relevance
    note = "; ".join(n for n in (note, relevance_note) if n)
    contribution = 0.0 if strength is None else criterion.weight * strength * affinity
    return CriterionScore(
        id=criterion.id,
        title=criterion.title,
        group=criterion.group,
        dimension=criterion.dimension,
        source=spec.source,
        field=spec.field,
        evidence=raw,
        unit=unit,
        strength=strength,
        relevance=relevance,
        weight=criterion.weight,
        affinity=affinity,
        contribution=contribution,
        note=note,
    )


def _check(rule: Any, required: float, actual: float | None) -> Literal["met", "missed", "unknown"]:
    if actual is None:
        return "unknown"
    if rule.must_be == "at_most":
        return "met" if actual <= required else "missed"
    return "met" if actual >= required else "missed"


def _targets(
    criteria: Criteria,
    outcome: Mapping[str, Any],
    targets: Mapping[str, float | None],
    seeds: Sequence[Mapping[str, Any]],
    undone_share: float | None,
) -> list[TargetCheck]:
    """The targets against the outcome (the median over the seeds): met only when met in every seed,
    and never while a material share of the work is undone."""
    checks = []
    for rule in criteria.targets:
        required = targets.get(rule.target)
        if required is None:
            continue
        actual = lookup(outcome, rule.figure, rule.aggregate)
        status = _check(rule, required, actual)
        counts: dict[str, Any] = {}
        note = ""
        if seeds:
            values = [lookup(o, rule.figure, rule.aggregate) for o in seeds]
            statuses = [_check(rule, required, v) for v in values]
            known = [v for v in values if v is not None]
            worst = (max if rule.must_be == "at_most" else min)(known) if known else None
            counts = {"seeds": len(seeds), "seeds_met": statuses.count("met"), "worst": worst}
            if "missed" in statuses:
                status = "missed"
                note = f"missed in {statuses.count('missed')} of {len(seeds)} seeds"
        if undone_share is not None and undone_share > MATERIAL_WORK_SHARE and status == "met":
            status = "missed"
            note = (
                f"{undone_share:.1%} of the jobs' GPU-hours were not done: "
                "the figure counts only the work that ran"
            )
        checks.append(
            TargetCheck(
                target=rule.target,
                title=rule.title,
                required=required,
                must_be=rule.must_be,
                actual=actual,
                unit=rule.unit,
                status=status,
                note=note,
                **counts,
            )
        )
    return checks


def _plan(outcome: Mapping[str, Any]) -> dict[str, Any] | None:
    settings = outcome.get("settings")
    places = [outcome, settings if isinstance(settings, Mapping) else {}]
    plan = {key: place[key] for key in PLAN_KEYS for place in reversed(places) if key in place}
    return plan or None


def _family(criteria: Criteria, model: str, outcome: Mapping[str, Any], source: str) -> str:
    family = criteria.family_of(model, outcome.get("family"))
    if family is None:
        patterns = ", ".join(p for spec in criteria.families.values() for p in spec.names)
        raise InputError(
            f"cannot tell which operating model {model!r} is: name it after one of {patterns}, "
            "or give it a 'family' field",
            path=source,
            field=f"models.{model}",
        )
    return family


def _undone(outcome: Mapping[str, Any]) -> tuple[int | None, float | None]:
    jobs = lookup(outcome, "work_not_done.jobs")
    return (None if jobs is None else int(jobs)), lookup(outcome, "work_not_done.gpu_hours")


def _undone_share(outcome: Mapping[str, Any]) -> float | None:
    hours, asked = (
        lookup(outcome, "work_not_done.gpu_hours"),
        lookup(outcome, "work_not_done.workload_gpu_hours"),
    )
    return None if hours is None or not asked else hours / asked


def _more_undone(evidence: Evidence, model: str, least: str, hours: float, least_hours: float) -> list[float]:
    """The GPU-hours ``model`` leaves undone beyond ``least``, seed by seed (paired: the same jobs),
    or once on the figures given when there are no seeds."""
    if not evidence.seeds:
        return [hours - least_hours]
    pairs = [
        (lookup(o[model], "work_not_done.gpu_hours"), lookup(o[least], "work_not_done.gpu_hours"))
        for o in evidence.seeds.values()
    ]
    return [a - b for a, b in pairs if a is not None and b is not None] or [hours - least_hours]


def target_misses(
    outcome: Mapping[str, Any], targets: Mapping[str, float | None], criteria: Criteria | None = None
) -> int:
    """How many of the scenario's targets one run's figures miss (a material share of work left
    undone misses them all): what a search over a model's settings minimises.

    Example: ``target_misses(summary["models"]["hybrid"], {"p95_wait": 3600.0})``"""
    if "advisor" not in outcome:  # a summary as written: the advisor's derived figures (cost per month)
        outcome = outcome_figures(outcome)
    checks = _targets(criteria or load_criteria(), outcome, targets, [], _undone_share(outcome))
    return sum(1 for c in checks if c.status == "missed")


def score_models(evidence: Evidence, criteria: Criteria) -> list[ModelScore]:
    """Steps 1-3 for every model of the evidence, in the summary's order."""
    undone = {model: _undone(outcome) for model, outcome in evidence.outcomes.items()}
    known = {model: hours for model, (_, hours) in undone.items() if hours is not None}
    least_model = min(known, key=lambda m: known[m], default=None)
    asked = max(
        (lookup(o, "work_not_done.workload_gpu_hours") or 0.0 for o in evidence.outcomes.values()),
        default=0.0,
    )
    scores = []
    for model, outcome in evidence.outcomes.items():
        family = _family(criteria, model, outcome, evidence.source)
        rows = [_criterion(c, family, model, evidence) for c in criteria.criteria]
        static = sum(r.contribution for r in rows if r.source != "outcome")
        simulated = sum(r.contribution for r in rows if r.source == "outcome")
        share = _undone_share(outcome)
        seeds = [o[model] for o in evidence.seeds.values()]
        checks = _targets(criteria, outcome, evidence.targets, seeds, share)
        jobs, hours = undone[model]
        # The same work as the model that does the most: less than a material share of the workload
        # more undone, or not more in every seed (then the seeds, not the model, make the gap).
        most_work = hours is None or least_model is None or model == least_model
        if not most_work:
            assert hours is not None and least_model is not None
            more = _more_undone(evidence, model, least_model, hours, known[least_model])
            tolerance = max(WORK_TOLERANCE_GPU_HOURS, MATERIAL_WORK_SHARE * asked)
            most_work = sorted(more)[len(more) // 2] <= tolerance or min(more) <= WORK_TOLERANCE_GPU_HOURS
        scores.append(
            ModelScore(
                model=model,
                family=family,
                score=static + simulated,
                static_score=static,
                outcome_score=simulated,
                eligible=most_work and all(c.status != "missed" for c in checks),
                targets=checks,
                work_not_done_jobs=jobs,
                work_not_done_gpu_hours=hours,
                does_the_most_work=most_work,
                work_not_done_share=share,
                criteria=rows,
                plan=_plan(outcome) if family == "hybrid" else None,
            )
        )
    return scores


def _ranked(models: list[ModelScore]) -> list[ModelScore]:
    return sorted(models, key=lambda m: (-m.score, m.model))


def _choose(models: list[ModelScore], close_call: float) -> tuple[ModelScore, ModelScore | None, Decision]:
    """Step 4: the winner, the runner-up and the kind of decision."""
    eligible = [m for m in models if m.eligible]
    ranked = _ranked(eligible or [m for m in models if m.does_the_most_work] or models)
    winner, runner_up = ranked[0], (ranked[1] if len(ranked) > 1 else None)
    if not eligible:
        return winner, runner_up, "no_model_meets_targets"
    if len(models) == 1:
        return winner, None, "single_model"
    if runner_up is None:
        return winner, None, "clear"
    margin = winner.score - runner_up.score
    if margin <= TIE:
        return winner, runner_up, "tie"
    if margin < close_call * max(abs(winner.score), TIE):
        return winner, runner_up, "close_call"
    return winner, runner_up, "clear"


def _work_phrase(jobs: int | None, gpu_hours: float | None) -> str:
    return f"{jobs or 0:,} job(s) ({fmt.value(gpu_hours or 0.0, 'count')} GPU-hours)"


def work_warnings(evidence: Evidence, models: list[ModelScore]) -> list[str]:
    """One sentence per model that leaves work undone: how much, of which workloads, and why."""
    sentences = []
    best = [m.model for m in models if m.does_the_most_work and not m.work_not_done_jobs]
    for model in models:
        if not model.work_not_done_jobs:
            continue
        by_workload = work_by_workload(evidence.outcomes[model.model].get("work_not_done", {}))
        done_by = f"; {', '.join(best)} {'does' if len(best) == 1 else 'do'} all of it" if best else ""
        detail = f": {by_workload}" if by_workload else ""
        sentences.append(
            f"{model.model} leaves {_work_phrase(model.work_not_done_jobs, model.work_not_done_gpu_hours)} "
            f"undone{detail}{done_by}"
        )
    return sentences


def _reasons(
    winner: ModelScore, runner_up: ModelScore | None, models: list[ModelScore], criteria: Criteria
) -> list[str]:
    reasons = []
    most_work = min(
        (m for m in models if m.does_the_most_work), key=lambda m: m.work_not_done_gpu_hours or 0.0
    )
    for model in models:
        if not model.does_the_most_work:
            reasons.append(
                f"{model.model} cannot be recommended: it leaves "
                f"{_work_phrase(model.work_not_done_jobs, model.work_not_done_gpu_hours)} undone, "
                f"more than {most_work.model} "
                f"({_work_phrase(most_work.work_not_done_jobs, most_work.work_not_done_gpu_hours)})"
            )
    for model in models:
        hours = model.work_not_done_gpu_hours or 0.0
        if (
            model.does_the_most_work
            and hours > (most_work.work_not_done_gpu_hours or 0.0) + WORK_TOLERANCE_GPU_HOURS
        ):
            reasons.append(
                f"{model.model} leaves {_work_phrase(model.work_not_done_jobs, hours)} undone against "
                f"{most_work.model}'s "
                f"{_work_phrase(most_work.work_not_done_jobs, most_work.work_not_done_gpu_hours)}: "
                f"within {MATERIAL_WORK_SHARE:.0%} of the jobs' GPU-hours, or not more in every seed: "
                "counted as the same work (a tie, not a veto)"
            )
    for model in models:
        for check in model.targets:
            if check.status == "missed":
                side = "above" if check.must_be == "at_most" else "below"
                figure = check.actual
                if check.actual is not None and _check_met(check, check.actual) and check.worst is not None:
                    figure = check.worst  # the median meets it, a seed does not: show that seed's
                detail = f" ({check.note})" if check.note else ""
                if figure is not None and not _check_met(check, figure):
                    reasons.append(
                        f"{model.model} misses the {check.title} target: {fmt.value(figure, check.unit)} "
                        f"is {side} {fmt.value(check.required, check.unit)}{detail}"
                    )
                else:
                    reasons.append(f"{model.model} misses the {check.title} target{detail}")
    rival = {r.id: r for r in runner_up.criteria} if runner_up is not None else {}
    gaps = sorted(
        (
            (row.contribution - (rival[row.id].contribution if row.id in rival else 0.0), row)
            for row in winner.criteria
        ),
        key=lambda pair: (-pair[0], pair[1].id),
    )
    for gap, row in gaps[:REASONS]:
        if gap <= TIE:
            break
        reasons.append(_reason(row, gap, winner, runner_up, rival.get(row.id), criteria))
    return reasons


def _check_met(check: TargetCheck, value: float) -> bool:
    return value <= check.required if check.must_be == "at_most" else value >= check.required


def _reason(
    row: CriterionScore,
    gap: float,
    winner: ModelScore,
    runner_up: ModelScore | None,
    rival: CriterionScore | None,
    criteria: Criteria,
) -> str:
    """A criterion that separates the winner from the runner-up, as a sentence with its figure."""
    spec = next(c.evidence for c in criteria.criteria if c.id == row.id)
    evidence = fmt.value(row.evidence, row.unit)
    if isinstance(spec, OrganisationEvidence):
        fact = f"the organisation's answer to {row.field.replace('_', ' ')} is {evidence}"
    else:
        figure = spec.reads or f"the figure {row.field}"
        fact = f"{figure} is {evidence}"
        if isinstance(spec, OutcomeEvidence) and runner_up is not None and rival is not None:
            fact += (
                f" for {winner.model} against {fmt.value(rival.evidence, rival.unit)} for {runner_up.model}"
            )
    if runner_up is None:
        return f"{row.title}: {fact}, which adds {row.contribution:.2f} points to {winner.model}'s score."
    return f"{row.title}: {fact}, which favours {winner.model} over {runner_up.model} by {gap:.2f} points."


def _decide(
    evidence: Evidence, criteria: Criteria
) -> tuple[list[ModelScore], ModelScore, ModelScore | None, Decision]:
    models = score_models(evidence, criteria)
    winner, runner_up, decision = _choose(models, criteria.decision.close_call)
    return models, winner, runner_up, decision


def _seed_list(seeds: list[str]) -> str:
    return ", ".join(seeds)


def _over_seeds(
    evidence: Evidence, criteria: Criteria, models: list[ModelScore], winner: ModelScore, decision: Decision
) -> tuple[list[ModelScore], Decision, dict[str, str], list[str]]:
    """Step 4 over the seeds: the winner on each seed's figures alone, how often each model wins and
    the range of its score. The choice is "clear" only when one model wins in every seed and its
    lowest score over the seeds is above every other model's highest; when it wins every seed but
    the ranges overlap, "close_call"; when the seeds disagree, "seed_dependent", with what the
    choice depends on. Returns the models (with wins and score ranges), the decision, the winner per
    seed and the sentences that say so."""
    per_seed = {seed: _decide(evidence.of_seed(seed), criteria) for seed in evidence.seeds}
    seed_winners = {seed: decided[1].model for seed, decided in per_seed.items()}
    scores = {
        m.model: [next(x.score for x in d[0] if x.model == m.model) for d in per_seed.values()]
        for m in models
    }
    models = [
        m.model_copy(
            update={
                "wins": sum(1 for w in seed_winners.values() if w == m.model),
                "score_range": (min(scores[m.model]), max(scores[m.model])),
            }
        )
        for m in models
    ]
    count = len(per_seed)
    won = [seed for seed, w in seed_winners.items() if w == winner.model]
    others = sorted({w for w in seed_winners.values() if w != winner.model})
    reasons: list[str] = []
    if decision in ("no_model_meets_targets", "single_model"):
        return models, decision, seed_winners, reasons
    low = min(scores[winner.model])
    if not others:
        rivals = [m for m in models if m.model != winner.model and m.eligible]  # the others are out
        overlap = [m for m in rivals if m.score_range is not None and m.score_range[1] >= low]
        close = [seed for seed, decided in per_seed.items() if decided[3] != "clear"]
        if (overlap or close) and decision == "clear":
            decision = "close_call"
        if close:
            reasons.append(
                f"{winner.model} wins in all {count} seeds, but not clearly in seed(s) {_seed_list(close)} "
                f"({', '.join(sorted({per_seed[seed][3].replace('_', ' ') for seed in close}))})"
            )
        elif overlap:
            rival = max(overlap, key=lambda m: m.score_range[1] if m.score_range else 0.0)
            assert rival.score_range is not None
            reasons.append(
                f"{winner.model} wins in all {count} seeds, but its score over the seeds "
                f"({low:.2f} to {max(scores[winner.model]):.2f}) overlaps {rival.model}'s "
                f"({rival.score_range[0]:.2f} to {rival.score_range[1]:.2f}): "
                "the margin is within the seeds' spread"
            )
        else:
            reasons.append(
                f"{winner.model} wins in all {count} seeds, its lowest score over them ({low:.2f}) "
                "above every other eligible model's highest"
            )
        return models, decision, seed_winners, reasons
    decision = "seed_dependent"
    parts = [f"{winner.model} in {len(won)} of {count} seeds" + (f" ({_seed_list(won)})" if won else "")]
    for other in others:
        seeds = [seed for seed, w in seed_winners.items() if w == other]
        parts.append(f"{other} in {len(seeds)} ({_seed_list(seeds)})")
    reasons.append(
        "the choice depends on the seed: the best model on one seed's figures is " + ", ".join(parts)
    )
    for seed, (seed_models, seed_winner, _, _) in per_seed.items():
        if seed_winner.model == winner.model:
            continue
        mine = next(m for m in seed_models if m.model == winner.model)
        missed = [c for c in mine.targets if c.status == "missed"]
        if missed:
            why = "; ".join(
                f"misses the {c.title} target "
                f"({fmt.value(c.actual, c.unit)} against {fmt.value(c.required, c.unit)})"
                for c in missed
            )
        elif not mine.does_the_most_work:
            why = f"leaves {_work_phrase(mine.work_not_done_jobs, mine.work_not_done_gpu_hours)} undone"
        else:
            why = f"scores {mine.score:.2f} against {seed_winner.score:.2f}"
        reasons.append(f"in seed {seed}, {seed_winner.model} is chosen: {winner.model} {why}")
    return models, decision, seed_winners, reasons


def _organisation_tips(evidence: Evidence, criteria: Criteria, chosen: str) -> list[Tip]:
    """One answer changed at a time: per question, the nearest answer on its scale that changes the choice."""
    tips = []
    for question, answers in criteria.organisation_questions().items():
        current = evidence.organisation.get(question)
        scale = next(
            c.evidence.scale
            for c in criteria.criteria
            if isinstance(c.evidence, OrganisationEvidence) and c.evidence.field == question
        )
        here = scale.get(current, 0.0) if current is not None else None
        candidates = sorted(
            (a for a in answers if a != current),
            key=lambda a: (abs(scale.get(a, 0.0) - here) if here is not None else 0.0, answers.index(a)),
        )
        for answer in candidates:
            changed = replace(evidence, organisation={**evidence.organisation, question: answer})
            _, winner, _, _ = _decide(changed, criteria)
            if winner.model != chosen:
                was = current if current is not None else "unanswered"
                tips.append(
                    Tip(
                        kind="organisation",
                        change=f"organisation.{question}: {was} -> {answer}",
                        new_choice=winner.model,
                    )
                )
                break
    return tips


def _tip_value(figure: float, unit: str) -> str:
    """A figure for a target tip: a share below 100 % never reads as 100.0 % (a target just over a
    99.9996 % attainment is not one of "just over 100 %", which no model could meet)."""
    if unit == "share" and figure < 1:
        decimals = next((d for d in range(1, 7) if round(figure * 100, d) < 100), 6)
        return f"{figure:.{decimals}%}"
    return fmt.value(figure, unit)


def _target_tips(evidence: Evidence, criteria: Criteria, chosen: str) -> list[Tip]:
    """Per target, the nearest value that changes the choice: relaxed to admit a model it excludes, or
    tightened to exclude the chosen one. Candidates are the models' own figures: a target at a figure
    admits that model (the bounds are inclusive); one just past it excludes it."""
    tips = []
    for rule in criteria.targets:
        current = evidence.targets.get(rule.target)
        figures = sorted(
            {
                v
                for v in (lookup(o, rule.figure, rule.aggregate) for o in evidence.outcomes.values())
                if v is not None
            }
        )
        past = "under" if rule.must_be == "at_most" else "over"
        candidates = [(f, _tip_value(f, rule.unit)) for f in figures if f > 0]
        candidates += [
            (f * (1 - 1e-6 if past == "under" else 1 + 1e-6), f"just {past} {_tip_value(f, rule.unit)}")
            for f in figures
            if f > 0 and not (rule.unit == "share" and past == "over" and f >= 1)
        ]
        if current is not None:
            candidates = [c for c in candidates if abs(c[0] - current) > 1e-9 * max(1.0, current)]
        candidates.sort(key=lambda c: (abs(c[0] - current) if current is not None else c[0], c[0]))
        for candidate, shown in candidates:
            changed = replace(evidence, targets={**evidence.targets, rule.target: candidate})
            _, winner, _, decision = _decide(changed, criteria)
            if winner.model != chosen and decision != "no_model_meets_targets":
                was = fmt.value(current, rule.unit) if current is not None else "none"
                tips.append(
                    Tip(
                        kind="target",
                        change=f"targets.{rule.target}: {was} -> {shown}",
                        new_choice=winner.model,
                        detail=f"{rule.title} {rule.must_be.replace('_', ' ')} {shown}",
                    )
                )
                break
    return tips


def _weight_tips(winner: ModelScore, runner_up: ModelScore) -> list[Tip]:
    """For a close call: the weight a criterion would need for the runner-up to pass the winner."""
    margin = winner.score - runner_up.score
    rival = {r.id: r for r in runner_up.criteria}
    tips = []
    for row in winner.criteria:
        other = rival.get(row.id)
        if other is None:
            continue
        per_weight = (other.contribution - row.contribution) / row.weight
        if per_weight <= TIE:
            continue
        needed = row.weight + margin / per_weight
        tips.append(
            (
                needed / row.weight,
                Tip(
                    kind="weight",
                    change=f"criteria.{row.id}.weight: {row.weight:g} -> more than {needed:.2f}",
                    new_choice=runner_up.model,
                    detail=row.title,
                ),
            )
        )
    return [tip for _, tip in sorted(tips, key=lambda pair: (pair[0], pair[1].change))[:REASONS]]


def _not_simulated(evidence: Evidence, criteria: Criteria, models: list[ModelScore]) -> list[FamilyEstimate]:
    present = {m.family for m in models}
    estimates = []
    sample = next(iter(evidence.outcomes))
    for family in criteria.families:
        if family in present:
            continue
        rows = [
            _criterion(c, family, sample, evidence)
            for c in criteria.criteria
            if c.evidence.source != "outcome"
        ]
        estimates.append(FamilyEstimate(family=family, static_score=sum(r.contribution for r in rows)))
    return estimates


def _workload_evidence(evidence: Evidence, criteria: Criteria) -> dict[str, float | None]:
    """The workload figures the criteria read (their fields and relevance fields), by path."""
    paths: list[str] = []
    for criterion in criteria.criteria:
        spec = criterion.evidence
        for path in (
            spec.field if isinstance(spec, WorkloadEvidence) else None,
            spec.relevance and spec.relevance.field,
        ):
            if path and path not in paths:
                paths.append(path)
    return {path: lookup(evidence.workload, path) for path in paths}


def recommend(evidence: Evidence, criteria: Criteria | None = None) -> Recommendation:
    """Score every model of ``evidence`` and choose one (see the module docstring for the recipe)."""
    criteria = criteria or load_criteria()
    models, winner, runner_up, decision = _decide(evidence, criteria)
    seed_winners: dict[str, str] = {}
    seed_reasons: list[str] = []
    if evidence.seeds:
        models, decision, seed_winners, seed_reasons = _over_seeds(
            evidence, criteria, models, winner, decision
        )
    tips = _organisation_tips(evidence, criteria, winner.model)
    tips += _target_tips(evidence, criteria, winner.model)
    if runner_up is not None and decision in ("close_call", "tie"):
        tips += _weight_tips(winner, runner_up)
    warnings = work_warnings(evidence, models)
    notes = list(evidence.notes)
    not_simulated = _not_simulated(evidence, criteria, models)
    if not_simulated:
        families = ", ".join(e.family for e in not_simulated)
        notes.append(
            f"not simulated: {families}; their scores below count organisation and workload evidence only"
        )
        for estimate in not_simulated:
            if estimate.static_score > winner.static_score + TIE:
                notes.append(
                    f"on organisation and workload evidence alone, {estimate.family} scores higher than "
                    f"{winner.model} ({estimate.static_score:.2f} vs {winner.static_score:.2f}): simulate it"
                )
    if not evidence.organisation:
        notes.append("no organisation answers (scenario unknown): those criteria contribute nothing")
    return Recommendation(
        gpuplan_version=__version__,
        criteria_version=criteria.version,
        scenario=evidence.scenario,
        chosen=winner.model,
        chosen_family=winner.family,
        decision=decision,
        runner_up=runner_up.model if runner_up is not None else None,
        margin=winner.score - runner_up.score if runner_up is not None else None,
        scores={m.model: m.score for m in models},
        reasons=seed_reasons + _reasons(winner, runner_up, models, criteria),
        seeds=list(evidence.seeds),
        seed_winners=seed_winners,
        models=models,
        not_simulated=not_simulated,
        tips=tips,
        warnings=warnings,
        evidence={
            "organisation": evidence.organisation,
            "targets": evidence.targets,
            "workload": _workload_evidence(evidence, criteria),
        },
        notes=notes,
    )
