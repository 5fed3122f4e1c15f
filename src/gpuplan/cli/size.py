"""``gpuplan size SCENARIO``: the least-cost cluster per model that meets the scenario's targets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuplan.cli.common import (
    OutOption,
    ProcessesOption,
    QuietOption,
    SeedsOption,
    SetOption,
    call,
    console,
    err,
    warn,
)
from gpuplan.cli.sweep import AddressOption, EngineOption, make_executor

if TYPE_CHECKING:
    from gpuplan.sweep.points import Progress


def size(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (.yaml) with targets.")],
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", help="A model to size (repeatable) [default: the scenario's models.compare]."
        ),
    ] = None,
    seeds: SeedsOption = 5,
    quantile: Annotated[
        float,
        typer.Option(
            help="A target holds where it holds in at least this share of the seeds [default: 1: in every "
            "seed].",
            min=0.01,
            max=1.0,
        ),
    ] = 1.0,
    set_: SetOption = None,
    engine: EngineOption = "local",
    address: AddressOption = None,
    processes: ProcessesOption = None,
    out: OutOption = Path("gpuplan-out"),
    quiet: QuietOption = False,
) -> None:
    """Find, per model, the least-cost node counts whose runs meet the scenario's targets in every seed
    (bisection per pool, coordinate descent over the pools); print them with their cost and the
    number of simulations, and write OUT/size.json and size.html. Exit code 1 when no model meets them.

    Example: gpuplan size examples/research-lab.yaml --out size-out
    """
    from gpuplan.advisor.format import value
    from gpuplan.sizing.size import SizeRequest
    from gpuplan.sizing.size import size as run_size

    executor = make_executor(engine, address, processes)
    request = SizeRequest(
        scenario, out, tuple(model) if model else None, seeds, tuple(set_ or ()), executor, quantile
    )

    def judged(model: str, nodes: dict[str, int], meets: bool, so_far: Progress) -> None:
        if not quiet:
            sizes = ", ".join(f"{pool} {count}" for pool, count in nodes.items())
            verdict = "meets the wait and SLO targets" if meets else "misses"
            err.print(f"{model}: {sizes} nodes {verdict} ({so_far.total} simulations so far)", soft_wrap=True)

    result = call(lambda: run_size(request, judged))
    warn(result.warnings, quiet)
    if not quiet:
        stdout = console()
        for s in result.sizes:
            nodes = ", ".join(f"{pool} {count} nodes" for pool, count in s.nodes.items())
            stdout.print(
                f"{s.model}: {nodes} ({value(s.figures['gpus'], 'count')} GPUs), "
                f"{value(s.figures['cost_usd_per_month'], 'usd')} a month, p95 wait "
                f"{value(s.figures['p95_wait_s'], 'seconds')}: {s.verdict()} ({s.simulations} simulations)",
                soft_wrap=True,
            )
        cheapest, runner = result.summary["cheapest"], result.summary["runner_up"]
        if cheapest is not None:
            line = f"cheapest that meets the targets: {cheapest}"
            if runner is not None:
                more = runner["usd_per_month_more"]
                gap = f"{value(more, 'usd')} more a month" if more > 0 else "the same"
                line += f"; the runner-up, {runner['model']}, costs {gap}"
            stdout.print(line, soft_wrap=True)
        p = result.progress
        stdout.print(f"{p.total} simulations: {p.run} run, {p.reused} read back", soft_wrap=True)
        stdout.print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)
    if not any(s.found for s in result.sizes):
        raise typer.Exit(1)
