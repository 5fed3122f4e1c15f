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

from gpuplan.cli.common import (
    FormatOption,
    GpusPerNodeOption,
    JsonOption,
    OutOption,
    QuietOption,
    SkipBadLinesOption,
    call,
    warn,
)


class Backfill(StrEnum):
    none = "none"
    easy = "easy"
    slurm = "slurm"


class Model(StrEnum):
    slurm = "slurm"
    kubernetes = "kubernetes"
    hybrid = "hybrid"


def simulate(
    input: Annotated[
        Path, typer.Argument(help="Scenario (.yaml) or trace (.swf, .swf.gz, or give --format).")
    ],
    model: Annotated[Model, typer.Option(help="Operating model.")] = Model.slurm,
    backfill: Annotated[
        Backfill | None,
        typer.Option(
            help="Slurm backfill: none (strict FIFO), easy (EASY) or slurm (sched/backfill with the "
            "scenario's bf_* settings, else Slurm's defaults) [default: the scenario's, else slurm]."
        ),
    ] = None,
    trace_format: FormatOption = None,
    nodes: Annotated[
        int | None,
        typer.Option(help="Nodes in a trace's cluster [default: its MaxProcs / GPUs per node].", min=1),
    ] = None,
    gpus_per_node: GpusPerNodeOption = None,
    node_list: Annotated[
        Path | None,
        typer.Option(
            help="Node list of a Kubernetes pod trace (sn,cpu_milli,memory_mib,gpu,model) [default: the "
            "*_node_list_gpu_node.csv beside the pod list]."
        ),
    ] = None,
    out: OutOption = Path("gpuplan-out"),
    json_output: JsonOption = False,
    skip_bad_lines: SkipBadLinesOption = False,
    quiet: QuietOption = False,
) -> None:
    """Simulate one operating model and write OUT/summary.json, jobs.parquet, timeline.parquet.

    Examples: gpuplan simulate examples/research-lab.yaml --model slurm;
    gpuplan simulate lublin_256.swf.gz --model slurm --backfill easy --json;
    gpuplan simulate openb_pod_list_default.csv.gz --model kubernetes --json
    """
    from gpuplan.inputs import InputOptions
    from gpuplan.simulate import SimulateRequest
    from gpuplan.simulate import simulate as run_simulation

    request = SimulateRequest(
        input=input,
        model=model.value,
        backfill=None if backfill is None else backfill.value,
        options=InputOptions(trace_format, nodes, gpus_per_node, skip_bad_lines, node_list),
        out=out,
    )
    result = call(lambda: run_simulation(request))
    warn(result.warnings, quiet)
    if json_output:
        sys.stdout.write(json.dumps(result.model_summary, indent=2) + "\n")
    elif not quiet:
        print_summary(Console(), result.model_summary, result.files)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} s"


def print_summary(console: Console, summary: dict[str, Any], files: list[Path]) -> None:
    jobs, wait = summary["jobs"], summary["wait_s"]
    settings = ", ".join(f"{k}={v}" for k, v in summary["settings"].items())
    table = Table(title=f"{summary['model']} ({settings})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    pools = ", ".join(
        f"{name} {p['nodes']}x{p['gpus_per_node']}" for name, p in summary["cluster"]["pools"].items()
    )
    table.add_row("cluster (nodes x GPUs)", pools)
    table.add_row("jobs submitted / completed", f"{jobs['submitted']:,} / {jobs['completed']:,}")
    table.add_row("killed at limit / rejected", f"{jobs['killed_at_limit']:,} / {jobs['rejected']:,}")
    preemption = summary["preemption"]
    if preemption["events"]:
        table.add_row(
            "preemptions (jobs) / lost GPU-hours",
            f"{preemption['events']:,} ({preemption['jobs_preempted']:,}) / "
            f"{preemption['lost_gpu_hours']:,.0f}",
        )
        table.add_row("jobs ended by preemption", f"{jobs['preempted']:,}")
    for reason, count in summary["reasons"].items():
        table.add_row(f"jobs held or refused: {reason}", f"{count:,}")
    table.add_row("wait mean / p50 / p95", " / ".join(_seconds(wait[k]) for k in ("mean", "p50", "p95")))
    slowdown = summary["bounded_slowdown"]["mean"]
    table.add_row("bounded slowdown mean", "-" if slowdown is None else f"{slowdown:,.2f}")
    utilization = summary["gpu_utilization"]
    table.add_row("GPU utilisation", "-" if utilization is None else f"{utilization:.1%}")
    table.add_row("GPU-hours", f"{summary['gpu_hours']:,.0f}")
    fairness = summary["fairness_jain"]
    table.add_row("fairness (Jain, teams)", "-" if fairness is None else f"{fairness:.3f}")
    for name, service in summary["services"].items():
        table.add_row(f"service {name}: SLO attainment", f"{service['slo_attainment']:.1%}")
    if summary["cost_usd"] is not None:
        table.add_row("cost (list prices)", f"${summary['cost_usd']:,.0f}")
    table.add_row("simulation time", f"{summary['timing_s']['simulate']:.3f} s")
    console.print(table)
    console.print("wrote " + ", ".join(str(f) for f in files), highlight=False)
