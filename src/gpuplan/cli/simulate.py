"""``gpuplan simulate INPUT --model slurm --backfill none|easy``."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from gpuplan.cli.common import (
    FormatOption,
    GpusPerNodeOption,
    JsonOption,
    OutOption,
    QuietOption,
    SetOption,
    SkipBadLinesOption,
    call,
    console,
    user_errors,
    warn,
)
from gpuplan.sim.models import MODELS


class Backfill(StrEnum):
    none = "none"
    easy = "easy"
    slurm = "slurm"


Model = StrEnum("Model", [(name, name) for name in MODELS])  # type: ignore[misc]


def simulate(
    input: Annotated[
        Path, typer.Argument(help="Scenario (.yaml) or trace (.swf, .swf.gz, or give --format).")
    ],
    model: Annotated[Model, typer.Option(help="Operating model.")] = Model.slurm,  # type: ignore[attr-defined]
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
    set_: SetOption = None,
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

    with user_errors():  # before the input is read
        MODELS.get(model.value).check_backfill(None if backfill is None else backfill.value)

    request = SimulateRequest(
        input=input,
        model=model.value,
        backfill=None if backfill is None else backfill.value,
        options=InputOptions(
            trace_format, nodes, gpus_per_node, skip_bad_lines, node_list, tuple(set_ or ())
        ),
        out=out,
    )
    result = call(lambda: run_simulation(request))
    warn(result.warnings, quiet)
    if json_output:
        sys.stdout.write(json.dumps(result.model_summary, indent=2) + "\n")
    elif not quiet:
        print_summary(console(), result.model_summary, result.files)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} s"


def settings_lines(settings: dict[str, Any], indent: str = "  ") -> list[str]:
    """The model's settings as short lines: scalars as ``name value``, a hybrid's split per pool and
    each side's own settings; lists and nested tables are left to summary.json."""
    scalars = [f"{key} {value}" for key, value in settings.items() if isinstance(value, str | int | float)]
    lines = [indent + ", ".join(scalars)] if scalars else []
    if isinstance(settings.get("split"), dict):
        split = "; ".join(
            f"{pool} {sides['slurm']} slurm / {sides['kubernetes']} kubernetes"
            for pool, sides in settings["split"].items()
        )
        lines.append(f"{indent}split (nodes): {split}")
    for workload, moved in settings.get("rerouted", {}).items():
        lines.append(
            f"{indent}rerouted: {moved['jobs']:,} job(s) of {workload} to {moved['to']} "
            "(too large for the other side's part)"
        )
    for side in ("slurm", "kubernetes"):
        if isinstance(settings.get(side), dict):
            lines += [f"{indent}{side}: {line.strip()}" for line in settings_lines(settings[side])]
    return lines


def print_summary(out: Console, summary: dict[str, Any], files: list[Path]) -> None:
    from rich.table import Table

    jobs, wait = summary["jobs"], summary["wait_s"]
    out.print(f"{summary['model']} settings (all of them in summary.json):")
    for line in settings_lines(summary["settings"]):
        out.print(line, soft_wrap=True)
    table = Table(title=summary["model"])
    table.add_column("figure")
    table.add_column("value", justify="right")
    pools = ", ".join(
        f"{name} {p['nodes']}x{p['gpus_per_node']}" for name, p in summary["cluster"]["pools"].items()
    )
    table.add_row("cluster (nodes x GPUs)", pools)
    table.add_row("jobs submitted / completed", f"{jobs['submitted']:,} / {jobs['completed']:,}")
    table.add_row("killed at limit", f"{jobs['killed_at_limit']:,}")
    work = summary["work_not_done"]
    for what in ("rejected", "unfinished"):
        table.add_row(f"{what}: jobs / GPU-hours", f"{work[what]['jobs']:,} / {work[what]['gpu_hours']:,.0f}")
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
        cost = summary["cost"]
        table.add_row(
            "cost in the window / per month / idle",
            " / ".join(
                "-" if v is None else f"${v:,.0f}"
                for v in (cost["usd"], cost["usd_per_month"], cost["idle_usd"])
            ),
        )
    table.add_row("simulation time", f"{summary['timing_s']['simulate']:.3f} s")
    out.print(table)
    out.print("wrote " + ", ".join(str(f) for f in files), soft_wrap=True)
