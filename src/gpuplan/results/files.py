"""Result files in OUT/: summary.json, jobs.parquet, timeline.parquet and events.parquet (DESIGN.md
"Results").

Every file is written whole or not at all: to a temporary name in the same directory, flushed to
disk, then renamed over the old one (``atomic_write``), so a run killed while writing leaves the
previous file or the new one, never a truncated one. ``gpuplan.results.manifest`` records which
files one run wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from gpuplan.atomic import atomic_write as atomic_write  # re-exported: sweep.points uses it
from gpuplan.errors import InputError
from gpuplan.sim.outcome import JOB_STATES, ModelRun, QueueSeries
from gpuplan.workload.jobtable import Labels

# the files the report reads, and the files every simulating command writes
REPORT_INPUTS = ("summary.json", "jobs.parquet", "timeline.parquet")
# the tables every simulating command writes, one per file, each with the rows of every model run
TABLE_FILES = ("jobs.parquet", "timeline.parquet", "events.parquet", "queues.parquet")
RESULT_FILES = ("summary.json", *TABLE_FILES)


def _constant(value: str, rows: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), [value])


def jobs_table(run: ModelRun) -> pa.Table:
    """One row per job: model, job_id, name ("namespace/name" of a workload list's job, else null),
    team, submit_s, start_s, end_s, state, nodes, gpus, cpus and
    mem_mb (held over all its nodes; null where the model does not count them), pool, node_list,
    then preemptions, lost_gpu_s (work lost to preemption) and reason (why it was refused, or the
    last limit that held it pending; null for none)."""
    jobs = run.jobs
    never_started = ~run.started

    def held(values: npt.NDArray[np.float64] | None) -> pa.Array:
        if values is None:
            return pa.nulls(len(jobs), pa.float64())
        return pa.array(values, mask=np.isnan(values))

    return pa.table(
        {
            "model": _constant(run.model, len(jobs)),
            "job_id": jobs.job_id,
            "name": _text(jobs.text("name")),
            "team": jobs.team.to_arrow(),
            "submit_s": jobs.submit_s,
            "start_s": pa.array(run.start_s, mask=never_started),
            "end_s": pa.array(run.end_s, mask=never_started),
            "state": pa.DictionaryArray.from_arrays(run.state.astype(np.int32), list(JOB_STATES)),
            "nodes": jobs.nodes,
            "gpus": jobs.gpus,
            "cpus": held(run.job_cpus),
            "mem_mb": held(run.job_mem_mb),
            "pool": pa.DictionaryArray.from_arrays(run.pool_of_job, [p.pool.name for p in run.pools]),
            "node_list": run.node_lists(),
            "preemptions": run.preemptions,
            "lost_gpu_s": run.lost_gpu_s,
            "reason": _reasons(run),
        }
    )


def _reasons(run: ModelRun) -> pa.Array:
    if run.reason is None:
        return pa.nulls(len(run.jobs), pa.dictionary(pa.int32(), pa.string()))
    codes = pa.array(
        run.reason.codes, mask=np.array([label == "" for label in run.reason.labels])[run.reason.codes]
    )
    return pa.DictionaryArray.from_arrays(codes, pa.array(run.reason.labels, pa.string()))


def _text(labels: Labels) -> pa.DictionaryArray:
    """A Labels column with "" as null."""
    empty = np.array([label == "" for label in labels.labels])[labels.codes]
    return pa.DictionaryArray.from_arrays(
        pa.array(labels.codes, mask=empty), pa.array(labels.labels, pa.string())
    )


def events_table(run: ModelRun) -> pa.Table:
    """One row per event of a job (sim/events.py), in time order: model, job_id, name, team, time_s,
    event, reason, detail, queue (ClusterQueue or partition) and flavor (ResourceFlavor); null where
    an event has none."""
    log = run.event_log()
    return pa.table(
        {
            "model": _constant(run.model, len(log)),
            "job_id": run.jobs.job_id[log.job],
            "name": _text(run.jobs.text("name").take(log.job)),
            "team": run.jobs.team.take(log.job).to_arrow(),
            "time_s": log.time_s,
            "event": log.event.to_arrow(),
            "reason": _text(log.reason),
            "detail": _text(log.detail),
            "queue": _text(log.queue),
            "flavor": _text(log.flavor),
        }
    )


def timeline_table(run: ModelRun) -> pa.Table:
    """Per pool, the state after each scheduling instant: busy GPUs (jobs and service replicas),
    queued jobs, nodes up, and the CPUs and memory (MB) running jobs hold (null where the model does
    not count them)."""
    tables = []
    for pool in run.pools:
        timeline = pool.schedule.timeline
        rows = len(timeline.time_s)
        tables.append(
            pa.table(
                {
                    "model": _constant(run.model, rows),
                    "pool": _constant(pool.pool.name, rows),
                    "time_s": timeline.time_s,
                    "busy_gpus": timeline.busy_gpus + pool.service_gpus,
                    "queued_jobs": timeline.queued_jobs,
                    "nodes_up": (
                        np.full(rows, pool.pool.nodes, dtype=np.int32)
                        if timeline.nodes_up is None
                        else timeline.nodes_up
                    ),
                    "busy_cpus": (
                        pa.nulls(rows, pa.int64()) if timeline.busy_cpus is None else timeline.busy_cpus
                    ),
                    "busy_mem_mb": (
                        pa.nulls(rows, pa.int64()) if timeline.busy_mem_mb is None else timeline.busy_mem_mb
                    ),
                }
            )
        )
    return pa.concat_tables(tables)


def queues_table(run: ModelRun) -> pa.Table:
    """Per ClusterQueue, its state after each scheduling instant it changed at (QueueSeries):
    model, time_s, queue, admitted_gpus, borrowed_gpus, pending_jobs, weighted_share; no rows for
    a model without ClusterQueues."""
    series = run.queues if run.queues is not None else QueueSeries.empty()
    return pa.table(
        {
            "model": _constant(run.model, len(series.time_s)),
            "time_s": series.time_s,
            "queue": series.queue.to_arrow(),
            "admitted_gpus": series.admitted_gpus,
            "borrowed_gpus": series.borrowed_gpus,
            "pending_jobs": series.pending_jobs,
            "weighted_share": series.weighted_share,
        }
    )


def run_tables(run: ModelRun) -> dict[str, pa.Table]:
    """A run's rows of each of TABLE_FILES (``write_tables``)."""
    return {
        "jobs.parquet": jobs_table(run),
        "timeline.parquet": timeline_table(run),
        "events.parquet": events_table(run),
        "queues.parquet": queues_table(run),
    }


def prepare_out(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create the output directory: {exc.strerror}", path=out, field="--out"
        ) from None


def write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def write_json(path: Path, data: Any) -> Path:
    return write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def write_parquet(path: Path, table: pa.Table) -> Path:
    return atomic_write(path, lambda temporary: pq.write_table(table, temporary))


def write_tables(out: Path, runs: list[dict[str, pa.Table]]) -> list[Path]:
    """Write each of TABLE_FILES with the rows of every run (``run_tables`` of each); returns their
    paths."""
    prepare_out(out)
    return [
        write_parquet(
            out / name, pa.concat_tables([tables[name] for tables in runs], promote_options="default")
        )
        for name in TABLE_FILES
    ]


def write_summary(out: Path, summary: dict[str, Any]) -> Path:
    prepare_out(out)
    return write_json(out / "summary.json", summary)
