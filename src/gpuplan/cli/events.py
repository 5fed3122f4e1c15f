"""``gpuplan events RESULTS_DIR``: each job's story from events.parquet, as a table or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from gpuplan.cli.common import JsonOption, call, console


def events(
    results: Annotated[Path, typer.Argument(help="Results directory holding events.parquet.")],
    job: Annotated[
        list[str] | None,
        typer.Option(
            "--job", "-j", help="A job id, or a listed job's name (namespace/name or name); repeat."
        ),
    ] = None,
    model: Annotated[list[str] | None, typer.Option(help="slurm, kubernetes or hybrid; repeat.")] = None,
    event: Annotated[
        list[str] | None, typer.Option(help="Only these events (Admitted, Evicted, ...); repeat.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Show at most this many events (0: all).", min=0)] = 200,
    json_output: JsonOption = False,
) -> None:
    """Show what happened to each job, in time order: Created, QuotaReserved, Admitted, PodsReady,
    Evicted (with Kueue's reason), Requeued, Finished, Rejected (Slurm: Submitted, Started, Ended).

    Examples: gpuplan events gpuplan-out --job team-a/sample-job-1;
    gpuplan events gpuplan-out --model kubernetes --event Evicted --json
    """
    from gpuplan.results.events import read_events

    chosen = call(
        lambda: read_events(
            results, jobs=job or [], models=model or [], events=event or [], limit=limit or None
        )
    )
    if json_output:
        sys.stdout.write(json.dumps(chosen.rows, indent=1) + "\n")
        return
    out = console()
    if not chosen.rows:
        out.print("no events match")
        return
    models = {row["model"] for row in chosen.rows}
    shown = [
        name for name in ("reason", "detail", "queue", "flavor") if any(row[name] for row in chosen.rows)
    ]
    from rich.table import Table

    table = Table(*(["model"] if len(models) > 1 else []), "time_s", "job", "event", *shown)
    for column in table.columns:
        column.overflow = "fold"  # names and reasons have no spaces to wrap at: fold, never cut
    for row in chosen.rows:
        job_name = row.get("name") or row["job_id"]
        cells = [f"{row['time_s']:g}", str(job_name), str(row["event"]), *(str(row[n] or "") for n in shown)]
        table.add_row(*([str(row["model"])] if len(models) > 1 else []), *cells)
    out.print(table)
    if chosen.matched > len(chosen.rows):
        out.print(f"{len(chosen.rows):,} of {chosen.matched:,} events shown (--limit 0 shows all)")
