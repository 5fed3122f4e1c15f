"""``gpuplan recommend [SCENARIO]``: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from gpuplan.cli.common import (
    OutOption,
    ProcessesOption,
    QuietOption,
    SeedsOption,
    call,
    console,
    model_steps,
    styled,
    warn,
)

if TYPE_CHECKING:
    from gpuplan.advisor import Recommendation


def recommend(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario file (.yaml) [default: the bundled mixed-org example].")
    ] = None,
    seeds: SeedsOption = 5,
    processes: ProcessesOption = None,
    out: OutOption = Path("gpuplan-out"),
    quiet: QuietOption = False,
) -> None:
    """Simulate Slurm, Kubernetes and hybrid on the scenario's workload, recommend one with its reasons,
    and write OUT/report.html, report.md, summary.json, recommendation.json (plus jobs.parquet and
    timeline.parquet). Exit code 1 when no model meets the scenario's targets.

    Examples: gpuplan recommend; gpuplan recommend my-org.yaml --out review/
    """
    from gpuplan.recommend import RecommendRequest
    from gpuplan.recommend import recommend as run_recommend

    request = RecommendRequest(scenario, out, processes, seeds)
    with model_steps("simulating the models", quiet) as (done, watch):
        result = call(lambda: run_recommend(request, done, watch))
    warn(result.warnings, quiet)
    rec = result.recommendation
    if not quiet:
        stdout = console()
        stdout.print(f"scenario: {result.scenario}", soft_wrap=True)
        print_recommendation(stdout, rec, scores=True)
        stdout.print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)
    if rec.decision == "no_model_meets_targets":
        raise typer.Exit(1)


def print_recommendation(
    out: Console, rec: Recommendation, *, scores: bool = False, reasons: int = 5
) -> None:
    """What must be read first (work left undone), the choice, the scores and the top reasons."""
    for warning in rec.warnings:
        out.print(styled(("attention: ", "bold yellow"), warning), soft_wrap=True)
    out.print(styled("recommended: ", (str(rec.chosen), "bold"), f" ({rec.decision.replace('_', ' ')})"))
    if scores:
        for name, score in rec.scores.items():
            out.print(f"  score {name}: {score:.2f}")
    for reason in rec.reasons[:reasons]:
        out.print(f"  - {reason}", soft_wrap=True)
