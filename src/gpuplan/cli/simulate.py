"""``gpuplan simulate INPUT --model slurm --backfill none|easy``."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table


class Backfill(StrEnum):
    none = "none"
    easy = "easy"


class Model(StrEnum):
    slurm = "slurm"


def simulate(
    input: Annotated[
        Path, typer.Argument(help="Trace to simulate: Standard Workload Format (.swf, .swf.gz).")
    ],
    model: Annotated[Model, typer.Option(help="Operating model.")] = Model.slurm,
    backfill: Annotated[
        Backfill, typer.Option(help="Slurm backfill mode: none (strict FIFO) or easy (EASY backfilling).")
    ] = Backfill.easy,
    nodes: Annotated[
        int | None,
        typer.Option(help="Nodes in the cluster (default: the trace's MaxProcs / GPUs per node).", min=1),
    ] = None,
    gpus_per_node: Annotated[
        int, typer.Option(help="GPUs per node; SWF processors are GPUs grouped into nodes.", min=1)
    ] = 1,
    out: Annotated[
        Path, typer.Option(help="Directory for summary.json, jobs.parquet, timeline.parquet.")
    ] = Path("gpuplan-out"),
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the model's summary as JSON on stdout.")
    ] = False,
    skip_bad_lines: Annotated[
        bool, typer.Option(help="Skip and count malformed trace lines instead of stopping at the first.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
) -> None:
    """Simulate one operating model on a trace and write OUT/summary.json, jobs.parquet, timeline.parquet.

    Example: gpuplan simulate lublin_256.swf.gz --model slurm --backfill easy --json
    """
    from gpuplan.errors import GpuplanError
    from gpuplan.simulate import SimulateRequest
    from gpuplan.simulate import simulate as run_simulation

    err = Console(stderr=True)
    request = SimulateRequest(
        input=input,
        model=model.value,
        backfill=backfill.value,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        skip_bad_lines=skip_bad_lines,
        out=out,
    )
    try:
        result = run_simulation(request)
    except GpuplanError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    if not quiet:
        for warning in result.warnings:
            err.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if json_output:
        sys.stdout.write(json.dumps(result.model_summary, indent=2) + "\n")
    elif not quiet:
        print_summary(Console(), result.model_summary, result.files)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} s"


def print_summary(console: Console, summary: dict[str, Any], files: list[Path]) -> None:
    jobs, wait = summary["jobs"], summary["wait_s"]
    cluster = summary["cluster"]
    table = Table(
        title=f"{summary['model']} ({', '.join(f'{k}={v}' for k, v in summary['settings'].items())})"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("cluster", f"{cluster['nodes']} nodes x {cluster['gpus_per_node']} GPUs")
    table.add_row("jobs submitted / completed", f"{jobs['submitted']:,} / {jobs['completed']:,}")
    table.add_row("killed at limit / rejected", f"{jobs['killed_at_limit']:,} / {jobs['rejected']:,}")
    table.add_row("wait mean / p50 / p95", " / ".join(_seconds(wait[k]) for k in ("mean", "p50", "p95")))
    slowdown = summary["bounded_slowdown"]["mean"]
    table.add_row("bounded slowdown mean", "-" if slowdown is None else f"{slowdown:,.2f}")
    utilization = summary["gpu_utilization"]
    table.add_row("GPU utilisation", "-" if utilization is None else f"{utilization:.1%}")
    table.add_row("GPU-hours", f"{summary['gpu_hours']:,.0f}")
    fairness = summary["fairness_jain"]
    table.add_row("fairness (Jain, teams)", "-" if fairness is None else f"{fairness:.3f}")
    table.add_row("simulation time", f"{summary['timing_s']['simulate']:.3f} s")
    console.print(table)
    console.print("wrote " + ", ".join(str(f) for f in files), highlight=False)
