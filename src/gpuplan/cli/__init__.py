"""The ``gpuplan`` command line: thin commands that parse, call the library and print.

Heavy libraries (NumPy, Arrow, pydantic, Rich's tables) are imported inside the commands, so ``--help`` is
instant and a command loads only what it uses (start-up time).
"""

from __future__ import annotations

import gc
import signal
from typing import Annotated

import typer

from gpuplan.cli.compare import compare
from gpuplan.cli.events import events
from gpuplan.cli.init import init
from gpuplan.cli.inspect import inspect
from gpuplan.cli.prices import prices
from gpuplan.cli.recommend import recommend
from gpuplan.cli.report import report
from gpuplan.cli.scenario import schema, validate
from gpuplan.cli.simulate import simulate
from gpuplan.cli.size import size
from gpuplan.cli.sweep import sweep

app = typer.Typer(
    name="gpuplan",
    help="Evidence for running shared GPU clusters: simulate Slurm, Kubernetes and hybrid operating models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(recommend)
app.command(no_args_is_help=True)(simulate)
app.command(no_args_is_help=True)(compare)
app.command(no_args_is_help=True)(sweep)
app.command(no_args_is_help=True)(size)
app.command(no_args_is_help=True)(inspect)
app.command(no_args_is_help=True)(validate)
app.command()(schema)
app.command(no_args_is_help=True)(report)
app.command(no_args_is_help=True)(events)
app.command()(init)
app.command()(prices)


def _version(value: bool) -> None:
    if value:
        from gpuplan import __version__

        typer.echo(f"gpuplan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Exit codes: 0 ok, 1 the simulation or a target failed, 2 bad input (file, line and field named)."""


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a timeout, a batch system) ends a command as Ctrl-C does


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        app()
    finally:
        # the process ends here (every file is written and closed): its objects are left to the
        # exit, not walked by the interpreter's last garbage collections (0.05-0.1 s after a run)
        gc.freeze()
