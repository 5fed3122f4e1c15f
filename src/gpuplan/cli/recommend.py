"""``gpuplan recommend [SCENARIO]``: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from gpuplan.cli.common import OutOption, QuietOption, call, warn


def recommend(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario file (.yaml) [default: the bundled mixed-org example].")
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(help="Worker processes [default: one per model, at most one per core].", min=1),
    ] = None,
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
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=quiet,
        transient=True,
    ) as progress:
        task = progress.add_task("simulating the models", total=None)

        def step(what: str) -> None:
            progress.update(task, advance=1, description=f"{what} done")

        result = call(lambda: run_recommend(request, step))
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
