"""``gpuplan compare SCENARIO``: the scenario's operating models side by side."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuplan.cli.common import (
    JsonOption,
    OutOption,
    ProcessesOption,
    QuietOption,
    call,
    console,
    steps,
    warn,
)

if TYPE_CHECKING:
    from rich.table import Table


def compare(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (.yaml).")],
    model: Annotated[
        list[str] | None,
        typer.Option("--model", help="A model to run (repeatable) [default: the scenario's models.compare]."),
    ] = None,
    processes: ProcessesOption = None,
    out: OutOption = Path("gpuplan-out"),
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Simulate every model on the same workload and print them side by side; write OUT/summary.json
    (models.<name> each), jobs.parquet and timeline.parquet.

    Example: gpuplan compare examples/mixed-org.yaml
    """
    from gpuplan.compare import CompareRequest
    from gpuplan.compare import compare as run_compare

    request = CompareRequest(scenario, tuple(model) if model else None, out, processes)
    with steps("simulating the models", quiet or json_output) as done:
        result = call(lambda: run_compare(request, done))
    warn(result.warnings, quiet)
    if json_output:
        sys.stdout.write(json.dumps(result.summary["models"], indent=2) + "\n")
    elif not quiet:
        stdout = console()
        stdout.print(side_by_side(result.summary["models"]))
        stdout.print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds / 60:,.0f} min"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _work_not_done(m: dict[str, Any]) -> str:
    """Jobs rejected and unfinished, with the GPU-hours they asked for ("none" when all ran)."""
    work = m.get("work_not_done")
    if work is None:
        return "-"
    if not work["jobs"]:
        return "none"
    return f"{work['jobs']:,} ({work['gpu_hours']:,.0f})"


def side_by_side(models: dict[str, dict[str, Any]]) -> Table:
    """The figures an architecture review compares, one column per model."""
    from rich.table import Table

    names = list(models)
    table = Table(title="operating models side by side")
    table.add_column("figure")
    for name in names:
        table.add_column(name, justify="right")

    def row(label: str, cell: Any) -> None:
        table.add_row(label, *(cell(models[name]) for name in names))

    row("GPUs", lambda m: f"{m['cluster']['gpus']:,}")
    row("GPU utilisation", lambda m: _percent(m["gpu_utilization"]))
    row("GPU-hours", lambda m: f"{m['gpu_hours']:,.0f}")
    row("wait p50 / p95", lambda m: f"{_hours(m['wait_s']['p50'])} / {_hours(m['wait_s']['p95'])}")
    row(
        "bounded slowdown (mean)",
        lambda m: "-" if m["bounded_slowdown"]["mean"] is None else f"{m['bounded_slowdown']['mean']:,.2f}",
    )
    teams = sorted({team for m in models.values() for team in m["per_team"]})
    for team in teams:

        def team_wait(m: dict[str, Any], team: str = team) -> str:
            figures = m["per_team"].get(team)
            if figures is None or figures["wait_s"]["p50"] is None:
                return "-"
            return f"{_hours(figures['wait_s']['p50'])} / {_hours(figures['wait_s']['p95'])}"

        row(f"  {team}: wait p50 / p95", team_wait)
    services = sorted({service for m in models.values() for service in m["services"]})
    for service in services:
        row(
            f"  {service}: SLO attainment",
            lambda m, s=service: _percent(m["services"][s]["slo_attainment"]) if s in m["services"] else "-",
        )
    row(
        "jobs completed / killed at limit",
        lambda m: f"{m['jobs']['completed']:,} / {m['jobs']['killed_at_limit']:,}",
    )
    row("work not done: jobs (GPU-hours)", _work_not_done)
    row(
        "preemptions / lost GPU-hours",
        lambda m: f"{m['preemption']['events']:,} / {m['preemption']['lost_gpu_hours']:,.0f}",
    )
    row(
        "fairness (Jain, teams)", lambda m: "-" if m["fairness_jain"] is None else f"{m['fairness_jain']:.3f}"
    )
    row("cost (list prices)", lambda m: "-" if m["cost_usd"] is None else f"${m['cost_usd']:,.0f}")
    row("simulation time", lambda m: f"{m['timing_s']['simulate']:.2f} s")
    return table
