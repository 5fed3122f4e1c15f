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
    SeedsOption,
    SetOption,
    call,
    console,
    model_steps,
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
    seeds: SeedsOption = 5,
    set_: SetOption = None,
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

    request = CompareRequest(
        scenario, tuple(model) if model else None, out, processes, seeds=seeds, sets=tuple(set_ or ())
    )
    with model_steps("simulating the models", quiet or json_output) as (done, watch):
        result = call(lambda: run_compare(request, done, watch))
    warn(result.warnings, quiet)
    if json_output:
        sys.stdout.write(json.dumps(result.summary["models"], indent=2) + "\n")
    elif not quiet:
        stdout = console()
        stdout.print(side_by_side(result.summary["models"], result.summary.get("refused", {})))
        stdout.print(seeds_line(result.summary), soft_wrap=True)
        stdout.print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)


def seeds_line(summary: dict[str, Any]) -> str:
    """What the figures are: one run, or medians over seeds with their range."""
    replications = summary.get("replications", {})
    seeds = replications.get("seeds", [])
    if len(seeds) <= 1:
        return (
            f"one run (seed {seeds[0]}){': ' + replications['note'] if 'note' in replications else ''}"
            if seeds
            else ""
        )
    return (
        f"figures: the median over {len(seeds)} seeds ({', '.join(map(str, seeds))}), "
        "the range over them in parentheses where they differ"
    )


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


def _range(m: dict[str, Any], path: str, shown: Any) -> str:
    """`` (low to high)`` of a figure over the seeds, in the figure's own format; "" for one run or
    when every seed gives the same."""
    figure = m.get("replications", {}).get("spread", {}).get(path)
    if figure is None or figure["min"] == figure["max"]:
        return ""
    return f" ({shown(figure['min'])} to {shown(figure['max'])})"


def _with_range(path: str, shown: Any) -> Any:
    def cell(m: dict[str, Any]) -> str:
        value: Any = m
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return ("-" if value is None else shown(value)) + _range(m, path, shown)

    return cell


def side_by_side(models: dict[str, dict[str, Any]], refused: dict[str, str] | None = None) -> Table:
    """The figures an architecture review compares, one column per model (a refused model's column
    says so); over several seeds each figure is the median, its range in parentheses."""
    from rich.table import Table

    names = list(models)
    table = Table(title="operating models side by side")
    table.add_column("figure")
    for name in names:
        table.add_column(name, justify="right")
    for name in refused or {}:
        table.add_column(name, justify="right")

    def row(label: str, cell: Any) -> None:
        table.add_row(label, *(cell(models[name]) for name in names), *("refused" for _ in refused or {}))

    row("GPUs", lambda m: f"{m['cluster']['gpus']:,}")
    row("GPU utilisation (one window)", _with_range("gpu_utilization", _percent))
    row("GPU-hours busy / idle", lambda m: f"{m['gpu_hours']:,.0f} / {m.get('idle_gpu_hours', 0.0):,.0f}")
    row("wait p50", _with_range("wait_s.p50", _hours))
    row("wait p95", _with_range("wait_s.p95", _hours))
    row("bounded slowdown (mean)", _with_range("bounded_slowdown.mean", lambda v: f"{v:,.2f}"))
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
        row(f"  {service}: SLO attainment", _with_range(f"services.{service}.slo_attainment", _percent))
    row(
        "jobs completed / killed at limit",
        lambda m: f"{m['jobs']['completed']:,} / {m['jobs']['killed_at_limit']:,}",
    )
    row(
        "work not done: jobs (GPU-hours)",
        lambda m: _work_not_done(m) + _range(m, "work_not_done.jobs", "{:,.0f}".format),
    )
    row(
        "preemptions / lost GPU-hours",
        lambda m: f"{m['preemption']['events']:,} / {m['preemption']['lost_gpu_hours']:,.0f}",
    )
    row(
        "fairness (Jain, teams)", lambda m: "-" if m["fairness_jain"] is None else f"{m['fairness_jain']:.3f}"
    )
    row("cost in the window", _with_range("cost_usd", "${:,.0f}".format))
    row("cost per month", _with_range("cost.usd_per_month", "${:,.0f}".format))
    row("idle cost (capacity up, unused)", _with_range("cost.idle_usd", "${:,.0f}".format))
    row("simulation time", lambda m: f"{m['timing_s']['simulate']:.2f} s")
    return table
