"""The advisor: the criteria file, auditable scoring, targets as hard constraints, clear-cut and close
cases, and summaries with any number of models (built by hand and by running the simulator)."""

from __future__ import annotations

import json
import typing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuplan.advisor import advise, gather, load_criteria, recommend, write_recommendation
from gpuplan.advisor.advise import input_figures
from gpuplan.advisor.criteria import OrganisationEvidence, parse_criteria
from gpuplan.advisor.evidence import Evidence, lookup
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.errors import InputError
from gpuplan.inputs import Input, load_input
from gpuplan.scenario.model import Organisation
from gpuplan.simulate import SimulateRequest, simulate

from builders import DATA, ROOT

CRITERIA = load_criteria()


def outcome(
    *, p95: float = 3600.0, utilisation: float = 0.6, slo: float | None = None, cost: float | None = None
) -> dict[str, Any]:
    """A summary.json model object with the figures the outcome criteria read."""
    services = {} if slo is None else {"svc": {"slo_attainment": slo, "mean_replicas": 2.0}}
    return {
        "wait_s": {"mean": p95 / 3, "p50": p95 / 4, "p95": p95},
        "gpu_utilization": utilisation,
        "per_team": {"a": {"wait_s": {"p95": p95}}},
        "services": services,
        "makespan_s": 30.44 * 86400.0,
        "cost_usd": cost,
    }


def summary_of(**models: dict[str, Any]) -> dict[str, Any]:
    return {"gpuplan_version": "test", "input": {}, "models": models}


def scenario_input(name: str) -> Input:
    return load_input(DATA / f"{name}.yaml")


def three_equal_models() -> dict[str, Any]:
    """Slurm, Kubernetes and hybrid with identical outcomes: organisation and workload decide."""
    return summary_of(slurm=outcome(), kubernetes=outcome(), hybrid=outcome())


# ---- the criteria file ---------------------------------------------------------------------------


def test_criteria_cover_the_decision_guide() -> None:
    groups = {
        group: [c.title for c in CRITERIA.criteria if c.group == group] for group in ("kubernetes", "slurm")
    }
    assert len(groups["kubernetes"]) == 9
    assert len(groups["slurm"]) == 8
    assert [c.title for c in CRITERIA.criteria if c.group == "hybrid"] == [
        "Distinct user groups with both patterns"
    ]
    assert set(CRITERIA.dimensions) >= {
        "workload_patterns", "user_personas", "scheduling", "data_flows",
        "networking", "storage", "security", "operational_maturity",
    }  # fmt: skip
    used = {c.dimension for c in CRITERIA.criteria}
    assert used == set(CRITERIA.dimensions), "every dimension has at least one criterion"
    assert {c.evidence.source for c in CRITERIA.criteria} == {"organisation", "workload", "outcome"}


def test_every_organisation_scale_knows_every_answer() -> None:
    for criterion in CRITERIA.criteria:
        if isinstance(criterion.evidence, OrganisationEvidence):
            annotation = Organisation.model_fields[criterion.evidence.field].annotation
            literal = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
            assert set(criterion.evidence.scale) == set(typing.get_args(literal)), criterion.id


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dimension": "vibes"}, "unknown dimension 'vibes'"),
        ({"favours": {"mainframe": 1}}, "unknown families"),
        (
            {"evidence": {"source": "organisation", "field": "kubernetes_skils", "scale": {}}},
            "unknown organisation",
        ),
        ({"favours": {"slurm": 2}}, "outside -1..1"),
    ],
    ids=["unknown dimension", "unknown family", "misspelt organisation question", "affinity out of range"],
)
def test_a_bad_criteria_file_is_refused_naming_the_problem(change: dict[str, Any], message: str) -> None:
    raw = CRITERIA.model_dump()
    raw["criteria"][0] = {**raw["criteria"][0], **change}
    with pytest.raises(InputError, match=message):
        parse_criteria(raw, "criteria.yaml")


# ---- auditable scoring ---------------------------------------------------------------------------


def test_every_contribution_is_weight_times_strength_times_affinity() -> None:
    loaded = scenario_input("advisor_two_groups")
    rec = advise(summary_of(slurm=outcome(p95=7200), kubernetes=outcome(p95=900), hybrid=outcome()), loaded)
    for model in rec.models:
        for row in model.criteria:
            expected = 0.0 if row.strength is None else row.weight * row.strength * row.affinity
            assert row.contribution == pytest.approx(expected)
            criterion = next(c for c in CRITERIA.criteria if c.id == row.id)
            assert (row.weight, row.affinity) == (criterion.weight, criterion.favours.get(model.family, 0.0))
        assert model.score == pytest.approx(sum(r.contribution for r in model.criteria))
        assert model.score == pytest.approx(model.static_score + model.outcome_score)
        assert rec.scores[model.model] == model.score


def test_outcome_criteria_read_each_models_own_simulation() -> None:
    loaded = scenario_input("advisor_mpi_research")
    rec = advise(
        summary_of(slurm=outcome(p95=1800), kubernetes=outcome(p95=7200), hybrid=outcome(p95=3600)), loaded
    )
    waits = {m.model: next(r for r in m.criteria if r.id == "predictable-batch") for m in rec.models}
    assert {m: w.evidence for m, w in waits.items()} == {"slurm": 1800, "kubernetes": 7200, "hybrid": 3600}
    # no target: against the best model, (best + 300 s) / (value + 300 s)
    assert waits["kubernetes"].strength == pytest.approx((1800 + 300) / (7200 + 300))
    assert waits["slurm"].strength == pytest.approx(1.0)


def test_recommendation_json_round_trips(tmp_path: Path) -> None:
    rec = advise(three_equal_models(), scenario_input("advisor_two_groups"))
    path = write_recommendation(tmp_path, rec)
    again = Recommendation.model_validate_json(path.read_text())
    assert again == rec
    saved = json.loads(path.read_text())
    assert saved["chosen"] == rec.chosen and set(saved["scores"]) == {"slurm", "kubernetes", "hybrid"}
    first = saved["models"][0]["criteria"][0]
    assert {"weight", "evidence", "strength", "contribution"} <= set(first)


# ---- clear-cut cases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("advisor_mpi_research", "slurm"),
        ("advisor_inference", "kubernetes"),
        ("advisor_two_groups", "hybrid"),
    ],
    ids=["all MPI research -> Slurm", "all inference -> Kubernetes", "both groups -> hybrid"],
)
def test_clear_cut_scenarios_get_the_expected_model(scenario: str, expected: str) -> None:
    rec = advise(three_equal_models(), scenario_input(scenario))
    assert rec.chosen == expected
    assert rec.decision == "clear"
    assert rec.reasons, "a choice comes with its reasons"


# ---- a close call, and what tips it --------------------------------------------------------------


def close_call() -> Evidence:
    loaded = scenario_input("advisor_close_call")
    assert loaded.scenario is not None
    return gather(three_equal_models(), scenario=loaded.scenario.scenario, workload=input_figures(loaded))


def test_close_call_is_reported_with_what_would_tip_it() -> None:
    rec = recommend(close_call())
    assert rec.decision == "close_call"
    assert {rec.chosen, rec.runner_up} == {"kubernetes", "slurm"}
    assert rec.margin is not None and 0 < rec.margin < CRITERIA.decision.close_call * rec.scores[rec.chosen]
    kinds = {tip.kind for tip in rec.tips}
    assert {"organisation", "weight"} <= kinds
    assert all(tip.new_choice != rec.chosen for tip in rec.tips)


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("kubernetes_skills", "none", "slurm"),
        ("kubernetes_skills", "high", "kubernetes"),
        ("existing_slurm_scripts", "none", "kubernetes"),
        ("cicd_gitops", "high", "kubernetes"),
        ("containerised", "none", "slurm"),
        ("platform_today", "kubernetes", "kubernetes"),
        ("platform_today", "slurm", "slurm"),
    ],
    ids=[
        "no Kubernetes skills -> Slurm",
        "strong Kubernetes skills -> Kubernetes",
        "no Slurm scripts -> Kubernetes",
        "GitOps -> Kubernetes",
        "nothing containerised -> Slurm",
        "on Kubernetes today -> Kubernetes",
        "on Slurm today -> Slurm",
    ],
)
def test_one_organisation_answer_moves_the_close_call_the_way_the_criteria_say(
    question: str, answer: str, expected: str
) -> None:
    evidence = close_call()
    changed = replace(evidence, organisation={**evidence.organisation, question: answer})
    assert recommend(changed).chosen == expected


def test_a_target_the_leader_misses_moves_the_close_call() -> None:
    evidence = close_call()
    leader = recommend(evidence).chosen
    other = "slurm" if leader == "kubernetes" else "kubernetes"
    outcomes = {**evidence.outcomes, leader: {**evidence.outcomes[leader], "wait_s": {"p95": 5 * 3600.0}}}
    outcomes[other] = {**outcomes[other], "wait_s": {"p95": 3600.0}}
    without_target = recommend(replace(evidence, outcomes=outcomes))
    with_target = recommend(
        replace(evidence, outcomes=outcomes, targets={**evidence.targets, "p95_wait": 4 * 3600.0})
    )
    assert with_target.chosen == other
    leader_score = next(m for m in with_target.models if m.model == leader)
    assert not leader_score.eligible
    assert [c.status for c in leader_score.targets if c.target == "p95_wait"] == ["missed"]
    assert any(f"{leader} misses the p95 wait target" in reason for reason in with_target.reasons)
    assert without_target.chosen in (leader, other)  # the target, not the outcome, decides


# ---- who the teams are and what they run today ---------------------------------------------------


def two_groups_with(tmp_path: Path, research: str | None, product: str | None) -> Input:
    """advisor_two_groups with each team's ``persona:`` as given (None: left out of the file)."""
    text = (DATA / "advisor_two_groups.yaml").read_text()
    for team, was, persona in (("research", "researcher", research), ("product", "app-developer", product)):
        stated = "" if persona is None else f" persona: {persona},"
        text = text.replace(f"{{name: {team}, persona: {was},", f"{{name: {team},{stated}")
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return load_input(path)


def test_a_persona_left_out_is_unknown_not_researcher(tmp_path: Path) -> None:
    """A team that states no persona is not counted as researchers (the model's default): with no
    persona stated, the persona criteria have no evidence and say so."""
    figures = input_figures(two_groups_with(tmp_path, None, None))["advisor"]
    assert figures["researcher_share"] is None and figures["developer_share"] is None
    rec = advise(three_equal_models(), two_groups_with(tmp_path, None, None))
    rows = {r.id: r for r in rec.models[0].criteria}
    for criterion in ("scheduler-submission", "shared-storage", "cloud-integration"):
        assert rows[criterion].strength is None and rows[criterion].contribution == 0, criterion
        assert rows[criterion].note == "workload figure unavailable"
    # the bundled Kueue cohort example names its teams without personas
    cohort = input_figures(load_input(ROOT / "src" / "gpuplan" / "examples" / "k8s-cohort.yaml"))
    assert cohort["advisor"]["researcher_share"] is None


def test_stated_personas_still_count(tmp_path: Path) -> None:
    both = input_figures(two_groups_with(tmp_path, "researcher", "app-developer"))["advisor"]
    assert both["researcher_share"] is not None and both["developer_share"] is not None
    assert 0 < both["researcher_share"] < 1
    assert both["researcher_share"] + both["developer_share"] == pytest.approx(1.0)
    # one team states its persona: it counts; the other counts in the whole but in no persona
    research_only = input_figures(two_groups_with(tmp_path, "researcher", None))["advisor"]
    assert research_only["researcher_share"] == pytest.approx(both["researcher_share"])
    assert research_only["developer_share"] == 0.0
    # a persona stated as the default value is stated
    assert input_figures(scenario_input("advisor_mpi_research"))["advisor"]["researcher_share"] == 1.0


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("kubernetes", "kubernetes"), ("slurm", "slurm")],
    ids=["teams on Kubernetes today -> Kubernetes", "teams on Slurm today -> Slurm"],
)
def test_what_the_teams_run_today_moves_a_neutral_choice(answer: str, expected: str) -> None:
    neutral = gather(three_equal_models())
    assert recommend(neutral).decision == "tie"
    rec = recommend(replace(neutral, organisation={"platform_today": answer}))
    assert rec.chosen == expected and rec.decision == "clear"
    rows = {r.id: r for r in next(m for m in rec.models if m.model == expected).criteria}
    assert rows[f"runs-{expected}-today"].contribution == 1.5
    # both: each side's criterion holds at half strength, no side gains on the others
    both = recommend(replace(neutral, organisation={"platform_today": "both"}))
    assert len({round(score, 9) for score in both.scores.values()}) == 1
    none = recommend(replace(neutral, organisation={"platform_today": "none"}))
    assert none.scores == recommend(neutral).scores


# ---- targets as hard constraints -----------------------------------------------------------------


def test_no_model_meeting_the_targets_is_said_so() -> None:
    evidence = replace(
        gather(summary_of(slurm=outcome(p95=9000), kubernetes=outcome(p95=8000))),
        targets={"p95_wait": 3600.0},
    )
    rec = recommend(evidence)
    assert rec.decision == "no_model_meets_targets"
    assert rec.chosen is not None
    assert all(not m.eligible for m in rec.models)
    assert sum("misses the p95 wait target" in reason for reason in rec.reasons) == 2


def test_a_relaxed_target_that_would_admit_a_better_model_is_a_tip() -> None:
    evidence = replace(
        gather(
            summary_of(
                slurm=outcome(p95=7200, utilisation=0.9), kubernetes=outcome(p95=1800, utilisation=0.3)
            )
        ),
        targets={"p95_wait": 3600.0},
    )
    rec = recommend(evidence)
    assert rec.chosen == "kubernetes"
    tips = [t for t in rec.tips if t.kind == "target"]
    assert tips and tips[0].new_choice == "slurm" and tips[0].change == "targets.p95_wait: 60 min -> 2.0 h"


def test_slo_and_budget_targets() -> None:
    evidence = replace(
        gather(
            summary_of(slurm=outcome(slo=1.0, cost=50_000.0), kubernetes=outcome(slo=0.95, cost=20_000.0))
        ),
        targets={"slo_attainment": 0.99, "budget_usd_per_month": 30_000.0},
    )
    checks = {m.model: {c.target: c.status for c in m.targets} for m in recommend(evidence).models}
    assert checks == {
        "slurm": {"slo_attainment": "met", "budget_usd_per_month": "missed"},
        "kubernetes": {"slo_attainment": "missed", "budget_usd_per_month": "met"},
    }


# ---- any number of models ------------------------------------------------------------------------


def test_one_model_today(tmp_path: Path) -> None:
    """What simulate writes today: models.slurm alone; the other families are estimated, not chosen."""
    loaded = scenario_input("advisor_two_groups")
    rec = advise(summary_of(slurm=outcome()), loaded)
    assert rec.chosen == "slurm" and rec.decision == "single_model"
    assert {e.family for e in rec.not_simulated} == {"kubernetes", "hybrid"}
    estimate = {e.family: e.static_score for e in rec.not_simulated}
    assert estimate["hybrid"] > rec.models[0].static_score  # the evidence points elsewhere, and says so
    assert any("not simulated" in note for note in rec.notes)
    assert any(
        note.startswith("on organisation and workload evidence alone, hybrid scores higher")
        for note in rec.notes
    )


def test_slurm_variants_from_real_simulations_are_ranked_by_their_outcomes(tmp_path: Path) -> None:
    """Two Slurm settings standing in for two models: same family, so only their simulated outcomes differ."""
    scenario = DATA / "advisor_mpi_research.yaml"
    models = {}
    for backfill in ("none", "easy"):
        result = simulate(SimulateRequest(input=scenario, backfill=backfill, out=tmp_path / backfill))
        models[f"slurm-{backfill}"] = result.summary["models"]["slurm"]
    loaded = scenario_input("advisor_mpi_research")
    rec = advise(summary_of(**models), loaded)
    by_model = {m.model: m for m in rec.models}
    assert by_model["slurm-none"].static_score == pytest.approx(by_model["slurm-easy"].static_score)
    better_waits = min(models, key=lambda name: (lookup(models[name], "wait_s.p95"), name))
    outcome_scores = {name: m.outcome_score for name, m in by_model.items()}
    assert outcome_scores[better_waits] >= min(outcome_scores.values())
    assert rec.chosen == max(by_model, key=lambda name: (by_model[name].score, name == rec.chosen))
    assert rec.chosen_family == "slurm"
    assert {e.family for e in rec.not_simulated} == {"kubernetes", "hybrid"}


def test_identical_models_are_a_tie_broken_by_name() -> None:
    rec = recommend(gather(summary_of(**{"slurm-b": outcome(), "slurm-a": outcome()})))
    assert rec.decision == "tie"
    assert rec.chosen == "slurm-a" and rec.runner_up == "slurm-b"


def test_a_model_of_unknown_family_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError, match=r"models\.mainframe: cannot tell which operating model"):
        recommend(gather(summary_of(mainframe=outcome())))
    rec = recommend(gather(summary_of(mainframe={**outcome(), "family": "slurm"})))
    assert rec.chosen_family == "slurm"


def test_hybrid_plan_is_carried_from_the_summary() -> None:
    split = {"h100": {"slurm": 24, "kubernetes": 8}}
    hybrid = {**outcome(), "settings": {"split": split, "lending": "reclaim after 1h"}}
    rec = advise(summary_of(slurm=outcome(), hybrid=hybrid), scenario_input("advisor_two_groups"))
    plan = next(m.plan for m in rec.models if m.model == "hybrid")
    assert plan == {"split": split, "lending": "reclaim after 1h"}
    assert next(m.plan for m in rec.models if m.model == "slurm") is None


def test_missing_evidence_counts_nothing_and_says_why() -> None:
    rec = recommend(gather(summary_of(slurm=outcome(), kubernetes=outcome())))
    rows = {r.id: r for r in rec.models[0].criteria}
    assert rows["kubernetes-skills"].strength is None and rows["kubernetes-skills"].contribution == 0
    assert "not answered" in rows["kubernetes-skills"].note
    assert rows["mpi-large-jobs"].note == "no workload figures"
    assert any("no organisation answers" in note for note in rec.notes)


def test_a_criteria_file_is_read_with_bounds_and_line_numbers(tmp_path: Path) -> None:
    packaged = ROOT / "src" / "gpuplan" / "advisor" / "criteria.yaml"
    text = packaged.read_text()
    bad = tmp_path / "criteria.yaml"
    bad.write_text(text.replace("weight: 3.5", "weight: -3.5"))
    line = text[: text.index("weight: 3.5")].count("\n") + 1
    with pytest.raises(InputError, match=rf"criteria\.yaml:{line}: criteria\.\d+\.weight"):
        load_criteria(bad)
    bomb = tmp_path / "bomb.yaml"
    rows = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for name, alias in zip("bcdef", "abcde", strict=True):
        rows.append(f"{name}: &{name} [{', '.join([f'*{alias}'] * 9)}]")
    bomb.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError, match=r"bomb\.yaml:\d+: more than"):
        load_criteria(bomb)


def test_target_misses_reads_the_cost_per_month_of_a_summary_as_written() -> None:
    # the budget target's figure is the advisor's (advisor.cost_usd_per_month), derived from cost
    from gpuplan.advisor.scoring import target_misses

    summary = {"cost": {"usd_per_month": 50_000.0}, "wait_s": {"p95": 60.0}}
    assert target_misses(summary, {"budget_usd_per_month": 40_000.0}) == 1
    assert target_misses(summary, {"budget_usd_per_month": 60_000.0}) == 0
