"""A results directory's ``events.parquet`` read back as each job's story, for ``gpuplan events``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gpuplan.errors import InputError

COLUMNS = ("model", "job_id", "name", "team", "time_s", "event", "reason", "detail", "queue", "flavor")


@dataclass(frozen=True)
class EventRows:
    """The events chosen, in time order (at most ``limit``), and how many matched in all."""

    rows: list[dict[str, object]]
    matched: int


def read_events(
    directory: Path,
    *,
    jobs: list[str],
    models: list[str],
    events: list[str],
    limit: int | None,
) -> EventRows:
    """The events of ``directory/events.parquet`` of the ``jobs`` (a job id, or a name: "namespace/name"
    or a name alone), ``models`` and ``events`` given (all when empty)."""
    path = directory / "events.parquet"
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise InputError("missing: simulate, compare or recommend writes events.parquet", path=path) from None
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=path) from None
    missing = [name for name in COLUMNS if name not in table.column_names and name != "name"]
    if missing:
        raise InputError(f"missing column(s): {', '.join(missing)}", path=path)
    keep = pa.array([True] * len(table))
    if models:
        keep = pc.and_(keep, pc.is_in(pc.cast(table["model"], pa.string()), pa.array(models)))
    if events:
        keep = pc.and_(keep, pc.is_in(pc.cast(table["event"], pa.string()), pa.array(events)))
    if jobs:
        ids = [int(job) for job in jobs if job.isdigit()]
        chosen = pc.is_in(table["job_id"], pa.array(ids, pa.int64()))
        if "name" in table.column_names:
            names = pc.cast(table["name"], pa.string())
            wanted = set(jobs)
            matching = [
                n for n in pc.unique(names).to_pylist() if n and (n in wanted or n.split("/")[-1] in wanted)
            ]
            chosen = pc.or_(chosen, pc.is_in(names, pa.array(matching, pa.string())))
        keep = pc.and_(keep, pc.fill_null(chosen, False))
    chosen_rows = table.filter(keep)
    matched = len(chosen_rows)
    if limit is not None:
        chosen_rows = chosen_rows.slice(0, limit)
    columns = [name for name in COLUMNS if name in chosen_rows.column_names]
    return EventRows(chosen_rows.select(columns).to_pylist(), matched)
