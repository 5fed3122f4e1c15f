"""Options and error handling shared by the commands."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console

T = TypeVar("T")

OutOption = Annotated[Path, typer.Option("--out", help="Directory for the result files.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="Trace format: swf, sacct, philly, chronus, helios, acme [default: told from the file].",
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

err = Console(stderr=True)

ProcessesOption = Annotated[
    int | None,
    typer.Option(help="Worker processes [default: one per model, at most one per core].", min=1),
]


@contextmanager
def steps(first: str, hidden: bool) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr for work reported step by step: yields ``done(what)``."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=hidden,
        transient=True,
    ) as progress:
        task = progress.add_task(first, total=None)
        yield lambda what: progress.update(task, advance=1, description=f"{what} done")


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input ends the command with exit code 2 and a one-line message, never a traceback."""
    from gpuplan.errors import GpuplanError

    try:
        yield
    except GpuplanError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def call(function: Callable[[], T]) -> T:
    with user_errors():
        return function()


def warn(warnings: list[str], quiet: bool) -> None:
    if not quiet:
        for warning in warnings:
            err.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
