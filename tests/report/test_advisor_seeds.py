"""The advisor over several seeds: how often each model wins, "clear" only when the seeds agree by more
than their spread, targets met only when met in every seed, work not done compared to the workload."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.advisor import advise
from gpuplan.advisor.evidence import gather
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.advisor.scoring import recommend
from gpuplan.metrics.replications import fold


def outcome(p95: float, *, undone: float = 0.0, asked: float = 10_000.0) -> dict[str, Any]:
    """A summary.json model object with the figures the outcome criteria and the targets read."""
    return {
        "wait_s": {"mean": p95 / 3, "p50": p95 / 4, "p95": p95},
        "gpu_utilization": 0.6,
        "per_team": {"a": {"wait_s": {"p95": p95}}},
        "services": {},
        "makespan_s": 86400.0,
        "cost_usd": None,
        "work_not_done": {
            "jobs": int(undone > 0),
            "gpu_hours": undone,
            "workload_gpu_hours": asked,
            "by_workload": {},
        },
    }


def with_targets(summary: dict[str, Any], **targets: float) -> Recommendation:
    """The recommendation for ``summary`` under the scenario targets ``targets``."""
    return recommend(replace(gather(summary), targets=targets))


def replicated(per_seed: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """A summary of several seeds, folded as compare folds them."""
    seeds = list(per_seed)
    models = {
        name: fold([per_seed[seed][name] for seed in seeds], [int(s) for s in seeds])
        for name in per_seed[seeds[0]]
    }
    return {"gpuplan_version": "test", "input": {}, "models": models, "per_seed": per_seed}


def test_seeds_that_agree_by_more_than_their_spread_give_a_clear_choice() -> None:
    per_seed = {
        seed: {"slurm": outcome(600.0 + 60 * k), "kubernetes": outcome(40_000.0 + 600 * k)}
        for k, seed in enumerate(("1", "2", "3"))
    }
    rec = advise(replicated(per_seed))
    assert rec.chosen == "slurm" and rec.decision == "clear"
    assert rec.seeds == ["1", "2", "3"] and rec.seed_winners == {"1": "slurm", "2": "slurm", "3": "slurm"}
    slurm, kubernetes = rec.models
    assert slurm.wins == 3 and kubernetes.wins == 0
    assert slurm.score_range is not None and kubernetes.score_range is not None
    assert slurm.score_range[0] > kubernetes.score_range[1]
    assert any("wins in all 3 seeds" in r for r in rec.reasons)


def test_seeds_that_disagree_give_no_clear_choice_and_say_what_it_depends_on() -> None:
    waits = {"1": (600.0, 20_000.0), "2": (20_000.0, 600.0), "3": (700.0, 20_000.0)}
    per_seed = {seed: {"slurm": outcome(a), "kubernetes": outcome(b)} for seed, (a, b) in waits.items()}
    rec = advise(replicated(per_seed))
    assert rec.decision == "seed_dependent"
    assert rec.seed_winners == {"1": "slurm", "2": "kubernetes", "3": "slurm"}
    assert {m.model: m.wins for m in rec.models} == {"slurm": 2, "kubernetes": 1}
    assert "the choice depends on the seed" in rec.reasons[0]
    assert "slurm in 2 of 3 seeds (1, 3)" in rec.reasons[0] and "kubernetes in 1 (2)" in rec.reasons[0]
    assert any(r.startswith("in seed 2, kubernetes is chosen") for r in rec.reasons)


def test_a_winner_in_every_seed_whose_score_range_overlaps_is_a_close_call() -> None:
    waits = {"1": (3000.0, 3010.0), "2": (3600.0, 3620.0), "3": (2700.0, 2705.0)}
    per_seed = {seed: {"slurm": outcome(a), "kubernetes": outcome(b)} for seed, (a, b) in waits.items()}
    rec = advise(replicated(per_seed))
    assert rec.chosen == "slurm" and set(rec.seed_winners.values()) == {"slurm"}
    assert rec.decision == "close_call"
    assert any(
        "wins in all 3 seeds, but not clearly in seed(s) 1, 2, 3 (close call)" in r for r in rec.reasons
    )


def test_a_target_is_met_only_when_met_in_every_seed() -> None:
    per_seed = {
        "1": {"slurm": outcome(3000.0), "kubernetes": outcome(3000.0)},
        "2": {"slurm": outcome(3100.0), "kubernetes": outcome(3100.0)},
        "3": {"slurm": outcome(9000.0), "kubernetes": outcome(3200.0)},  # slurm misses in one seed
    }
    summary = replicated(per_seed)
    assert summary["models"]["slurm"]["wait_s"]["p95"] == 3100.0  # the median meets a 1 h target
    rec = with_targets(summary, p95_wait=3600.0)
    slurm = next(m for m in rec.models if m.model == "slurm")
    (check,) = [c for c in slurm.targets if c.target == "p95_wait"]
    assert check.status == "missed" and check.seeds == 3 and check.seeds_met == 2 and check.worst == 9000.0
    assert check.note == "missed in 1 of 3 seeds"
    assert rec.chosen == "kubernetes"
    assert any(
        "slurm misses the p95 wait target: 2.5 h" in r and "missed in 1 of 3 seeds" in r for r in rec.reasons
    )


def test_a_model_leaving_material_work_undone_shows_no_target_as_met() -> None:
    summary = {
        "gpuplan_version": "test",
        "input": {},
        "models": {"slurm": outcome(60.0, undone=3000.0), "kubernetes": outcome(60.0, undone=2950.0)},
    }
    rec = with_targets(summary, p95_wait=3600.0)
    for model in rec.models:
        (check,) = [c for c in model.targets if c.target == "p95_wait"]
        assert check.status == "missed" and "% of the jobs' GPU-hours were not done" in check.note
        assert model.work_not_done_share is not None and model.work_not_done_share > 0.29
    assert rec.decision == "no_model_meets_targets"


def test_work_not_done_within_a_share_of_the_workload_is_a_tie_not_a_veto() -> None:
    # 66 jobs against 65: 2 GPU-hours of 10,000 apart, far below 1 % of the work
    summary = {
        "gpuplan_version": "test",
        "input": {},
        "models": {"slurm": outcome(600.0, undone=132.0), "hybrid": outcome(30_000.0, undone=130.0)},
    }
    rec = advise(summary)
    assert all(m.does_the_most_work for m in rec.models)
    assert rec.chosen == "slurm"
    assert any("counted as the same work (a tie, not a veto)" in r for r in rec.reasons)
    # 5 % of the work apart is a veto
    summary["models"]["slurm"] = outcome(600.0, undone=630.0)
    rec = advise(summary)
    slurm = next(m for m in rec.models if m.model == "slurm")
    assert not slurm.does_the_most_work and rec.chosen == "hybrid"
