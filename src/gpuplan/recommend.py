"""``gpuplan recommend``: the main job. Compare every model on the scenario's workload, score them
against the decision criteria with that evidence, and write the architecture-review report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib.resources import as_file, files
from pathlib import Path

from gpuplan.advisor import Recommendation, advise, write_recommendation
from gpuplan.compare import DEFAULT_SEEDS, CompareRequest, compare
from gpuplan.progress import Clocks
from gpuplan.report import build_report
from gpuplan.results import manifest
from gpuplan.results.transaction import Stage, checkpoint, open_stage

BUNDLED_EXAMPLE = "mixed-org.yaml"  # a research group on Slurm and product teams serving models


@dataclass(frozen=True)
class RecommendRequest:
    scenario: Path | None = None  # None: the bundled example
    out: Path = Path("gpuplan-out")
    processes: int | None = None
    seeds: int = DEFAULT_SEEDS
    sets: tuple[str, ...] = ()  # --set PATH=VALUE
    model_sets: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per model (recommend --size)


@dataclass
class RecommendResult:
    scenario: Path
    recommendation: Recommendation
    files: list[Path]
    warnings: list[str] = field(default_factory=list)


def bundled_example() -> Path:
    """The example scenario installed with the package (a real file: its trace sits beside it)."""
    with as_file(files("gpuplan") / "examples" / BUNDLED_EXAMPLE) as path:
        return Path(path)


def recommend(
    request: RecommendRequest,
    on_step: Callable[[str], None] | None = None,
    on_start: Callable[[Clocks], None] | None = None,
) -> RecommendResult:
    """compare -> advise -> report, then the manifest of them all, replacing OUT's result as one
    transaction; ``on_step(what)`` is called after each model and each step, ``on_start`` as
    compare's."""
    scenario = request.scenario or bundled_example()
    with open_stage(request.out) as stage:
        result = _recommend(request, scenario, stage, on_step, on_start)
    return replace(result, files=stage.final(result.files))


def _recommend(
    request: RecommendRequest,
    scenario: Path,
    stage: Stage,
    on_step: Callable[[str], None] | None,
    on_start: Callable[[Clocks], None] | None,
) -> RecommendResult:
    compared = compare(
        CompareRequest(
            scenario,
            None,
            request.out,
            request.processes,
            "recommend",
            request.seeds,
            request.sets,
            request.model_sets,
        ),
        on_step,
        on_start,
        stage,
    )
    recommendation = advise(compared.summary, compared.loaded)
    recommendation_file = write_recommendation(stage.dir, recommendation)
    if on_step:
        on_step("scoring")
    checkpoint("report")
    report = build_report(stage.dir, loaded=compared.loaded, recommendation=recommendation)
    if on_step:
        on_step("report")
    files = [*compared.files, recommendation_file, *report.files]
    manifest.finish(stage.dir, compared.run, files)
    return RecommendResult(scenario, recommendation, files, [*compared.warnings, *report.warnings])
