"""``recommendation.json``: the chosen model, a score per model and, per criterion, its weight, the
evidence and the contribution, so that a reader can redo every sum by hand."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

EvidenceValue = float | str | None
Decision = Literal["clear", "close_call", "tie", "seed_dependent", "no_model_meets_targets", "single_model"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionScore(_Record):
    """One criterion for one model: contribution = weight x strength x affinity."""

    id: str
    title: str
    group: str
    dimension: str
    source: Literal["organisation", "workload", "outcome"]
    field: str
    evidence: EvidenceValue  # the answer or figure as read (None: no evidence)
    unit: str | None
    strength: float | None  # 0..1 after the scale or ramp and the relevance (None: no evidence)
    relevance: float | None  # the relevance factor already inside strength (None: none applies)
    weight: float
    affinity: float
    contribution: float
    note: str = ""


class TargetCheck(_Record):
    """A scenario target as a hard constraint: met, missed, or unknown (the model lacks the figure)."""

    target: str
    title: str
    required: float
    must_be: Literal["at_most", "at_least"]
    actual: float | None
    unit: str
    status: Literal["met", "missed", "unknown"]
    # over several seeds: met only when met in every seed; actual is the median, worst the worst seed's
    seeds: int | None = None
    seeds_met: int | None = None
    worst: float | None = None
    note: str = ""


class ModelScore(_Record):
    model: str
    family: str
    score: float
    static_score: float  # organisation and workload criteria: the same for every model of a family
    outcome_score: float  # simulated outcomes: this model's own
    eligible: bool  # no target missed, and no work left undone that another model does
    targets: list[TargetCheck]
    # jobs rejected or unfinished and the GPU-hours they asked for (None: the summary does not say)
    work_not_done_jobs: int | None = None
    work_not_done_gpu_hours: float | None = None
    does_the_most_work: bool = True  # leaves no more work undone than the model that does the most
    # the share of the jobs' GPU-hours left undone (None: the summary does not say)
    work_not_done_share: float | None = None
    # over several seeds: the seeds it wins and the range of its score
    wins: int | None = None
    score_range: tuple[float, float] | None = None
    criteria: list[CriterionScore]
    plan: dict[str, Any] | None = None  # for hybrid: the split and lending policy the summary carries


class FamilyEstimate(_Record):
    """A family the summary holds no simulation of, scored on organisation and workload evidence only."""

    family: str
    static_score: float


class Tip(_Record):
    """A single change that would change the choice."""

    kind: Literal["organisation", "weight", "target"]
    change: str  # e.g. "organisation.kubernetes_skills: low -> high"
    new_choice: str
    detail: str = ""


class Recommendation(_Record):
    gpuplan_version: str
    criteria_version: int
    scenario: str | None
    chosen: str | None  # a key of summary.json's models; None when no model was scored
    chosen_family: str | None
    decision: Decision
    runner_up: str | None
    margin: float | None  # chosen score minus runner-up score
    scores: dict[str, float]
    reasons: list[str]
    models: list[ModelScore]
    not_simulated: list[FamilyEstimate]
    tips: list[Tip]
    # what must be read before the choice: work a model leaves undone, a partial comparison
    warnings: list[str] = []
    seeds: list[str] = []  # the seeds the figures are medians over ([] : one run)
    seed_winners: dict[str, str] = {}  # seed -> the model chosen on that seed's figures alone
    evidence: dict[str, Any]  # organisation answers, targets and the workload figures the criteria read
    notes: list[str]
