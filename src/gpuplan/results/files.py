"""Result files in OUT/: summary.json, jobs.parquet and timeline.parquet (DESIGN.md "Results")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpuplan.errors import InputError
from gpuplan.sim.outcome import JOB_STATES, ModelRun


def _constant(value: str, rows: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), [value])


def jobs_table(run: ModelRun) -> pa.Table:
    """One row per job: model, job_id, team, submit_s, start_s, end_s, state, nodes, gpus, pool, node_list,
    then preemptions, lost_gpu_s (work lost to preemption) and reason (why it was refused, or the
    last limit that held it pending; null for none)."""
    jobs = run.jobs
    never_started = ~run.started
    return pa.table(
        {
            "model": _constant(run.model, len(jobs)),
            "job_id": jobs.job_id,
            "team": jobs.team.to_arrow(),
            "submit_s": jobs.submit_s,
            "start_s": pa.array(run.start_s, mask=never_started),
            "end_s": pa.array(run.end_s, mask=never_started),
            "state": pa.DictionaryArray.from_arrays(run.state.astype(np.int32), list(JOB_STATES)),
            "nodes": jobs.nodes,
            "gpus": jobs.gpus,
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


def timeline_table(run: ModelRun) -> pa.Table:
    """Per pool, the state after each scheduling instant: busy GPUs (jobs and service replicas),
    queued jobs, nodes up."""
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
                }
            )
        )
    return pa.concat_tables(tables)


def prepare_out(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create the output directory: {exc.strerror}", path=out, field="--out"
        ) from None


def write_tables(out: Path, runs: list[ModelRun]) -> list[Path]:
    """Write jobs.parquet and timeline.parquet for ``runs``; returns their paths."""
    prepare_out(out)
    paths = [out / "jobs.parquet", out / "timeline.parquet"]
    pq.write_table(pa.concat_tables([jobs_table(run) for run in runs]), paths[0])
    pq.write_table(pa.concat_tables([timeline_table(run) for run in runs]), paths[1])
    return paths


def write_summary(out: Path, summary: dict[str, Any]) -> Path:
    prepare_out(out)
    path = out / "summary.json"
    path.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return path
