"""The advisor's entry points for commands: a recommendation for a summary and the input it came
from, and recommendation.json on disk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuplan.advisor.criteria import Criteria
from gpuplan.advisor.evidence import gather, workload_figures
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.advisor.scoring import recommend
from gpuplan.inputs import Input
from gpuplan.results.files import write_json

RECOMMENDATION_FILE = "recommendation.json"


def input_figures(loaded: Input) -> dict[str, Any]:
    """Workload figures of a loaded scenario or trace (personas and RDMA need a scenario)."""
    scenario = loaded.scenario
    return workload_figures(
        loaded.workload,
        scenario.scenario if scenario is not None else None,
        scenario.pools if scenario is not None else (),
    )


def advise(
    summary: Mapping[str, Any],
    loaded: Input | None = None,
    *,
    figures: dict[str, Any] | None = None,
    criteria: Criteria | None = None,
    source: str = "summary.json",
    notes: Sequence[str] = (),
) -> Recommendation:
    """Score every model of ``summary`` with the evidence of ``loaded`` (its scenario's answers and
    targets, its workload's figures); without ``loaded``, on the simulated outcomes alone."""
    if figures is None and loaded is not None:
        figures = input_figures(loaded)
    scenario = loaded.scenario.scenario if loaded is not None and loaded.scenario is not None else None
    evidence = gather(summary, scenario=scenario, workload=figures, source=source, notes=notes)
    return recommend(evidence, criteria)


def write_recommendation(out: Path, recommendation: Recommendation) -> Path:
    return write_json(out / RECOMMENDATION_FILE, recommendation.model_dump(mode="json"))
