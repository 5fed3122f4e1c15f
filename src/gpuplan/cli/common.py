"""Options, consoles and error handling shared by the commands.

Every console prints text literally: Rich markup and emoji codes are off, so a name such as ``[/x]``
or ``file.csv:100:`` from a user's file is printed as written (and cannot crash the printing). Style
comes from ``rich.text.Text`` parts, never from markup in a string.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from rich.progress import TaskID

    from gpuplan.progress import Clocks

T = TypeVar("T")

OutOption = Annotated[Path, typer.Option("--out", help="Directory for the result files.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
# the names of gpuplan.workload.readers.READERS (a test keeps them in step; importing the readers
# here would make every --help load NumPy)
TRACE_FORMATS = ("swf", "philly", "chronus", "helios", "acme", "sacct", "alibaba", "kubectl")
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help=f"Trace format: {', '.join(TRACE_FORMATS)} [default: told from the file].",
    ),
]
GpusPerNodeOption = Annotated[
    int | None,
    typer.Option(
        help="GPUs per node: a trace's GPUs (SWF processors) are grouped into nodes of this size "
        "[default: 1 for SWF, 8 for GPU traces].",
        min=1,
    ),
]
SkipBadLinesOption = Annotated[
    bool, typer.Option(help="Skip and count malformed trace lines instead of stopping at the first.")
]


def console(*, stderr: bool = False) -> Console:
    """A console that prints text as it is (no markup, no emoji codes, no highlighting)."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False)


err = console(stderr=True)


def styled(*parts: str | tuple[str, str]) -> Text:
    """Text from plain parts and (text, style) pairs; the text is never parsed as markup."""
    return Text.assemble(*parts)


ProcessesOption = Annotated[
    int | None,
    typer.Option(help="Worker processes [default: one per model, at most one per core].", min=1),
]

SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        help="Change one field of the scenario for this run (repeatable), validated as the file is: "
        "cluster.pools.h100.nodes=32, models.slurm.bf_window=720, workloads.train.arrival.rate=20/day "
        "(list items by name or [index]; the value is YAML).",
    ),
]

SeedsOption = Annotated[
    int,
    typer.Option(
        help="Draws of the scenario's random synthesis each model runs on (seed, seed + 1, ...); the "
        "figures are their medians with the spread. A scenario that draws nothing at random runs once.",
        min=1,
        max=64,  # metrics.replications.MAX_SEEDS (not imported: --help loads no NumPy)
    ),
]


@contextmanager
def steps(first: str, hidden: bool) -> Iterator[Callable[[str], None]]:
    """Progress on stderr for work reported step by step: yields ``done(what)``. A bar on a terminal;
    elsewhere (a log, a pipe) one line per step, so a long run is never silent."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    if hidden:
        yield lambda what: None
        return
    if not err.is_terminal:
        began = time.perf_counter()
        err.print(f"{first} ...")
        yield lambda what: err.print(f"{what} done ({time.perf_counter() - began:.1f} s)")
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task(first, total=None)
        yield lambda what: progress.update(task, advance=1, description=f"{what} done")


@contextmanager
def model_steps(first: str, hidden: bool) -> Iterator[tuple[Callable[[str], None], Callable[[Clocks], None]]]:
    """``steps`` for models run on several seeds: yields ``done(what)`` and ``watch(clocks)``. On a
    terminal, once watched, a bar per model with its runs' simulated time against the horizon (a
    thread reads their clocks five times a second: ``gpuplan.progress``); elsewhere one line per run."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    if hidden or not err.is_terminal:
        with steps(first, hidden) as done:
            yield done, lambda clocks: None
        return
    stop = threading.Event()
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        overall = progress.add_task(first, total=None)
        bars: dict[str, TaskID] = {}

        def refresh(clocks: Clocks) -> None:
            for model, figures in clocks.by_model().items():
                if model not in bars:
                    bars[model] = progress.add_task(model, total=1.0)
                progress.update(
                    bars[model],
                    completed=figures.fraction,
                    description=f"  {model}: {figures.finished} of {figures.runs} seed(s) done; simulated",
                )

        def watch(clocks: Clocks) -> None:
            refresh(clocks)

            def loop() -> None:
                while not stop.wait(PROGRESS_PERIOD_S):
                    refresh(clocks)

            threading.Thread(target=loop, daemon=True, name="gpuplan-progress").start()

        try:
            yield lambda what: progress.update(overall, advance=1, description=f"{what} done"), watch
        finally:
            stop.set()


PROGRESS_PERIOD_S = 0.2
INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input ends the command with exit code 2 and a one-line message, never a traceback; Ctrl-C
    with exit code 130 and a line on what was written."""
    from gpuplan.errors import GpuplanError, Interrupted

    try:
        yield
    except GpuplanError as exc:
        error(str(exc))
        raise typer.Exit(2) from None
    except Interrupted as exc:
        err.print(exc.message, soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None
    except KeyboardInterrupt:
        err.print("interrupted: nothing was written", soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None


def error(message: str) -> None:
    err.print(styled(("error: ", "bold red"), message), soft_wrap=True)


def call(function: Callable[[], T]) -> T:
    with user_errors():
        return function()


def warn(warnings: list[str], quiet: bool) -> None:
    if not quiet:
        for warning in warnings:
            err.print(styled(("warning: ", "yellow"), warning), soft_wrap=True)
