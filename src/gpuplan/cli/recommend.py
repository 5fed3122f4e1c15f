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
    SetOption,
    call,
    console,
    model_steps,
    styled,
    warn,
)

if TYPE_CHECKING:
    from gpuplan.advisor import Recommendation


def sized(
    scenario: Path | None, out: Path, processes: int | None, seeds: int, sets: tuple[str, ...], quiet: bool
) -> dict[str, tuple[str, ...]]:
    """``recommend --size``: each model's least-cost size (``gpuplan size`` into OUT/size), as the
    --set each model runs with."""
    from gpuplan.advisor.format import value
    from gpuplan.recommend import bundled_example
    from gpuplan.sizing.size import SizeRequest, size
    from gpuplan.sweep.executors import LocalExecutor

    request = SizeRequest(
        scenario or bundled_example(), out / "size", None, seeds, sets, LocalExecutor(processes)
    )
    result = call(lambda: size(request))
    warn(result.warnings, quiet)
    if not quiet:
        stdout = console()
        for s in result.sizes:
            nodes = ", ".join(f"{pool} {count}" for pool, count in s.nodes.items())
            cost = value(s.figures["cost_usd_per_month"], "usd")
            stdout.print(f"size of {s.model}: {nodes} nodes, {cost} a month ({s.verdict()})", soft_wrap=True)
    return {s.model: tuple(s.sets) for s in result.sizes}


def recommend(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario file (.yaml) [default: the bundled mixed-org example].")
    ] = None,
    seeds: SeedsOption = 5,
    set_: SetOption = None,
    at_size: Annotated[
        bool,
        typer.Option(
            "--size",
            help="Compare the models at their least-cost sizes (gpuplan size first, into OUT/size): the "
            "fewest nodes that meet the targets in every seed, each model its own.",
        ),
    ] = False,
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

    model_sets: dict[str, tuple[str, ...]] = {}
    if at_size:
        model_sets = sized(scenario, out, processes, seeds, tuple(set_ or ()), quiet)
    request = RecommendRequest(scenario, out, processes, seeds, tuple(set_ or ()), model_sets)
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
