"""``gpuplan recommend [SCENARIO]``: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gpuplan.cli.common import OutOption, ProcessesOption, QuietOption, call, steps, warn


def recommend(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario file (.yaml) [default: the bundled mixed-org example].")
    ] = None,
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

    request = RecommendRequest(scenario, out, processes)
    with steps("simulating the models", quiet) as done:
        result = call(lambda: run_recommend(request, done))
    warn(result.warnings, quiet)
    rec = result.recommendation
    if not quiet:
        console = Console()
        console.print(f"scenario: {result.scenario}", highlight=False, soft_wrap=True)
        console.print(
            f"recommended: [bold]{rec.chosen}[/] ({rec.decision.replace('_', ' ')})", highlight=False
        )
        for name, score in rec.scores.items():
            console.print(f"  score {name}: {score:.2f}", highlight=False)
        for reason in rec.reasons[:5]:
            console.print(f"  - {reason}", highlight=False, soft_wrap=True)
        console.print("wrote " + ", ".join(str(f) for f in result.files), highlight=False, soft_wrap=True)
    if rec.decision == "no_model_meets_targets":
        raise typer.Exit(1)
