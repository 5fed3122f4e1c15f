"""``gpuplan sweep SWEEP.yaml``: variants of a scenario x models x seeds, on this machine or on Ray."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuplan.cli.common import OutOption, ProcessesOption, QuietOption, call, console, err, warn

if TYPE_CHECKING:
    from gpuplan.sweep.points import Executor, Progress

EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Where the points run: local (this machine's worker processes) or ray (a Ray cluster: "
        "pip install 'gpuplan[ray]').",
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="The Ray cluster to join (ray://HOST:10001, or HOST:6379 on its head node) [default: a "
        "Ray started on this machine].",
    ),
]


def make_executor(engine: str, address: str | None, processes: int | None) -> Executor:
    from gpuplan.sweep.executors import executor_for

    return call(lambda: executor_for(engine, address, processes))


@contextmanager
def point_progress(hidden: bool) -> Iterator[Callable[[Progress], None]]:
    """Points done against the total, with the time left, on stderr (a bar on a terminal; elsewhere a
    line every tenth of the points)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    if hidden:
        yield lambda progress: None
        return
    if not err.is_terminal:
        began, shown = time.perf_counter(), [-1]

        def line(progress: Progress) -> None:
            done = progress.run + progress.reused
            step = max(progress.total // 10, 1)
            if done // step != shown[0] or done == progress.total:
                shown[0] = done // step
                elapsed = time.perf_counter() - began
                err.print(f"{done}/{progress.total} points ({progress.reused} read back), {elapsed:.1f} s")

        yield line
        return
    columns = (TextColumn("points"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Bar(*columns, console=err, transient=True) as bar:
        task = bar.add_task("points", total=None)
        yield lambda progress: bar.update(
            task, total=progress.total, completed=progress.run + progress.reused
        )


def sweep(
    spec: Annotated[Path, typer.Argument(help="Sweep file (.yaml): the scenario, a grid or variants.")],
    engine: EngineOption = "local",
    address: AddressOption = None,
    processes: ProcessesOption = None,
    out: OutOption = Path("gpuplan-out"),
    quiet: QuietOption = False,
) -> None:
    """Run every variant of a scenario (the --set syntax: a grid, or a list) x models x seeds; write
    OUT/sweep.parquet (a row per variant, model and seed), sweep.json, sweep.html. Each point is kept
    in OUT/points as it finishes: run again after an interruption and only the rest runs.

    Examples: gpuplan sweep examples/sweep-h100.yaml --out sweep-out;
    gpuplan sweep big.yaml --engine ray --address ray://head:10001
    """
    from gpuplan.sweep.sweep import SweepRequest, run_sweep

    executor = make_executor(engine, address, processes)
    with point_progress(quiet) as on_point:
        result = call(lambda: run_sweep(SweepRequest(spec, out, executor), on_point))
    warn(result.warnings, quiet)
    if not quiet:
        stdout = console()
        p = result.progress
        stdout.print(
            f"{p.total} points: {p.run} run on {executor.name} ({executor.workers} workers), "
            f"{p.reused} read back",
            soft_wrap=True,
        )
        stdout.print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)
