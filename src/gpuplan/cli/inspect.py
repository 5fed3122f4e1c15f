"""``gpuplan inspect INPUT``: workload characterisation."""

from __future__ import annotations

import json
import sys
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
    warn,
)


def inspect(
    input: Annotated[Path, typer.Argument(help="Trace or scenario (.yaml) to characterise.")],
    trace_format: FormatOption = None,
    gpus_per_node: GpusPerNodeOption = None,
    nodes: Annotated[
        int | None, typer.Option(help="Nodes of the cluster, for the offered load of a trace.", min=1)
    ] = None,
    set_: SetOption = None,
    out: OutOption = Path("gpuplan-out"),
    json_output: JsonOption = False,
    skip_bad_lines: SkipBadLinesOption = False,
    quiet: QuietOption = False,
) -> None:
    """Characterise a workload: GPU-hours by kind and team, sizes, durations, arrivals, load.

    Writes OUT/inspect.json and OUT/job_table.parquet (the normalised job table).
    Examples: gpuplan inspect examples/research-lab.yaml;
    gpuplan inspect philly_jobs_adaptdl.csv.gz --format philly --gpus-per-node 8 --json
    """
    from gpuplan.inputs import InputOptions
    from gpuplan.inspect import InspectRequest
    from gpuplan.inspect import inspect as run_inspect

    request = InspectRequest(
        input=input,
        options=InputOptions(trace_format, nodes, gpus_per_node, skip_bad_lines, sets=tuple(set_ or ())),
        out=out,
    )
    result = call(lambda: run_inspect(request))
    warn(result.warnings, quiet)
    if json_output:
        sys.stdout.write(json.dumps(result.figures, indent=2) + "\n")
    elif not quiet:
        stdout = console()
        print_figures(stdout, result.figures)
        stdout.print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:,.2f} h"


def print_figures(out: Console, f: dict[str, Any]) -> None:
    from rich.table import Table

    summary = Table(title=f"workload of {f['input']['path']}")
    summary.add_column("figure")
    summary.add_column("value", justify="right")
    summary.add_row("jobs / services", f"{f['jobs']:,} / {f['services']}")
    summary.add_row("span", _hours(f["span_s"]))
    summary.add_row("GPU-hours (batch + services)", f"{f['gpu_hours']['total']:,.0f}")
    summary.add_row("share of GPU-hours in services", _pct(f["gpu_hours"]["service_share"]))
    summary.add_row("multi-node share (jobs / GPU-hours)", " / ".join(
        _pct(f["size"]["multi_node_share"][k]) for k in ("jobs", "gpu_hours")))  # fmt: skip
    summary.add_row("GPUs per job (mean / p50 / p90 / max)", " / ".join(
        "-" if f["size"]["gpus_per_job"][k] is None else f"{f['size']['gpus_per_job'][k]:,.1f}"
        for k in ("mean", "p50", "p90", "max")))  # fmt: skip
    summary.add_row(
        "run time (p10 / p50 / p90)", " / ".join(_hours(f["duration_s"][k]) for k in ("p10", "p50", "p90"))
    )
    summary.add_row("inter-arrival (mean / CV)", f"{_hours(f['interarrival_s']['mean'])} / "
                    f"{f['interarrival_s']['cv'] or 0:.2f}")  # fmt: skip
    burst = f["burstiness"]
    summary.add_row("arrivals per hour (mean / max / CV)", "-" if burst["arrivals_per_hour_mean"] is None else
                    f"{burst['arrivals_per_hour_mean']:.1f} / {burst['arrivals_per_hour_max']} / "
                    f"{burst['arrivals_per_hour_cv']:.2f}")  # fmt: skip
    load = f["offered_load"]
    summary.add_row(
        "offered load", "-" if load["load"] is None else f"{load['load']:.2f} of {load['cluster_gpus']} GPUs"
    )
    estimates = f["estimates"]
    summary.add_row("run time / time limit (p50)", "-" if estimates["run_over_limit"]["p50"] is None else
                    f"{estimates['run_over_limit']['p50']:.2f}")  # fmt: skip
    summary.add_row("jobs reaching their limit", _pct(estimates["share_reaching_limit"]))
    out.print(summary)

    for title, groups in (("by kind", f["by_kind"]), ("by team", f["by_team"])):
        table = Table(title=title)
        for column in ("", "jobs", "GPU-hours", "share"):
            table.add_column(column, justify="left" if not column else "right")
        for name, figures in groups.items():
            table.add_row(
                name,
                f"{figures['jobs']:,}",
                f"{figures['gpu_hours']:,.0f}",
                _pct(figures["share_of_gpu_hours"]),
            )
        out.print(table)

    sizes = Table(title="GPUs per job")
    for column in ("GPUs", "jobs", "GPU-hours"):
        sizes.add_column(column, justify="right")
    for label, figures in f["size"]["bins"].items():
        sizes.add_row(label, _pct(figures["jobs_share"]), _pct(figures["gpu_hours_share"]))
    out.print(sizes)
    profile = f["diurnal_profile"]
    peak = max(range(24), key=lambda hour: profile[hour])
    out.print(f"arrivals by hour ({f['profile_clock']}): busiest {peak:02d}:00 with {profile[peak]:.1%}")
