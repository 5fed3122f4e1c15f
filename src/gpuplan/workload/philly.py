"""Readers for Microsoft Philly GPU-cluster traces, and the CSV reading every GPU-trace reader shares.

``read_philly``: the Philly job list as processed by the Pollux (AdaptDL) authors,
petuum/adaptdl:simulator/traces/philly.csv, from msr-fiddle/philly-traces (Jeon et al., "Analysis of
Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC'19). Header
``timestamp,duration,num_gpus,gpu_time,cluster``: submit time ``YYYY-MM-DD HH:MM:SS``, run time in
seconds, GPUs, GPU-seconds (not used) and the anonymised virtual cluster (VC).

``read_chronus``: the Philly-derived SLO/best-effort mix that evaluates Chronus (Gao et al., SoCC'21),
S-Lab-System-Group/ChronusArtifact:code/data/exp/trace_job_Philly_MIX1.csv. Header ``job_id, user,
num_gpu, submit_time, iterations, model_name, duration, interval, expect_time_list, expect_value_list,
best_effort, job_type``; ``user`` is the VC (``vc_*``), times are seconds.

The CSV reading itself is in csvcolumns.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpuplan.workload.csvcolumns import (
    Column,
    check_gpus_per_node,
    gpu_trace,
    job_ids,
    missing_column,
    read_csv_columns,
    since_earliest,
)
from gpuplan.workload.jobtable import MAX_GPUS_PER_JOB, MAX_TIME_S, Labels, split_gpus
from gpuplan.workload.trace import Trace

PHILLY_COLUMNS = (
    Column("timestamp", "datetime"),
    Column("duration", "number", most=MAX_TIME_S),
    Column("num_gpus", "whole", most=MAX_GPUS_PER_JOB),
    Column("cluster", "text", team_or_user=True),
    Column("job_id", "id", required=False),
    Column("user", "text", required=False, team_or_user=True),
)


def read_philly(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> Trace:
    """Read the Pollux/AdaptDL Philly CSV (or ``.csv.gz``) into a job table.

    Mapping: submit = ``timestamp``, as seconds from the earliest submit; ``Trace.epoch_s`` is that
    earliest timestamp as Unix time, reading the timestamps as UTC (the file does not say their zone).
    Run time = ``duration``; no time limit (NaN). ``num_gpus`` GPUs ask ceil(G / gpus_per_node) nodes
    with ceil(G / nodes) GPUs each. Team = ``cluster`` (the VC); user "unknown" (the file has none)
    unless a ``user`` column is present. Job id = the 1-based data row number, unless the file has a
    ``job_id`` column of whole numbers. kind "batch"; state "unknown" (not recorded). A row with
    num_gpus <= 0 or duration < 0 is skipped and counted in ``skipped_invalid``.

    Raises InputError naming the file, line and column of the first malformed row, unless
    ``skip_bad_lines``, which skips and counts malformed rows instead.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)
    table = read_csv_columns(path, PHILLY_COLUMNS, skip_bad_lines=skip_bad_lines)
    gpus, duration = table.number("num_gpus"), table.number("duration")
    valid = (gpus > 0) & (duration >= 0)
    submit_s, epoch_s = since_earliest(table.number("timestamp"), valid)
    nodes, per_node = split_gpus(gpus, gpus_per_node)
    team = table.text("cluster")
    return gpu_trace(
        path,
        "philly",
        table,
        valid,
        job_id=job_ids(table, "job_id"),
        user=table.text("user") if "user" in table else Labels.constant("", len(valid)),
        team=team,
        submit_s=submit_s,
        duration_s=duration,
        nodes=nodes,
        gpus_per_node=per_node,
        epoch_s=epoch_s,
    )


CHRONUS_COLUMNS = (
    Column("job_id", "id"),
    Column("user", "text", team_or_user=True),
    Column("num_gpu", "whole", most=MAX_GPUS_PER_JOB),
    Column("submit_time", "number", most=MAX_TIME_S),
    Column("duration", "number", most=MAX_TIME_S),
    Column("best_effort", "flag", required=False),
    Column("job_type", "text", required=False),
)
_JOB_TYPES = {"best": "best-effort", "strict": "slo"}


def read_chronus(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> Trace:
    """Read the Chronus Philly mix CSV (or ``.csv.gz``) into a job table.

    Mapping: job id = ``job_id`` (the 1-based data row number if some id is not a whole number);
    submit = ``submit_time`` in seconds, as in the file (no epoch); run time = ``duration``; no time
    limit (NaN). User and team = ``user`` (the VC, ``vc_*``). qos = "best-effort" where
    ``best_effort`` is 1 and "slo" where it is 0; a file without ``best_effort`` uses ``job_type``
    ("best" -> "best-effort", "strict" -> "slo"). ``num_gpu`` GPUs group into nodes as in
    ``read_philly``. kind "batch"; state "unknown". A row with num_gpu <= 0 or duration < 0 is skipped
    and counted in ``skipped_invalid``. Errors as in ``read_philly``.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)

    def check_header(header: tuple[str, ...]) -> None:
        if "best_effort" not in header and "job_type" not in header:
            raise missing_column(path, header, "best_effort")

    table = read_csv_columns(path, CHRONUS_COLUMNS, skip_bad_lines=skip_bad_lines, check_header=check_header)
    gpus, duration = table.number("num_gpu"), table.number("duration")
    valid = (gpus > 0) & (duration >= 0)
    nodes, per_node = split_gpus(gpus, gpus_per_node)
    if "best_effort" in table:
        qos = Labels(table.number("best_effort").astype(np.int32), ("slo", "best-effort"))
    else:
        job_type = table.text("job_type")
        qos = Labels(job_type.codes, tuple(_JOB_TYPES.get(t.lower(), t.lower()) for t in job_type.labels))
    user = table.text("user")
    return gpu_trace(
        path,
        "chronus",
        table,
        valid,
        job_id=job_ids(table, "job_id"),
        user=user,
        team=user,
        submit_s=table.number("submit_time"),
        duration_s=duration,
        nodes=nodes,
        gpus_per_node=per_node,
        epoch_s=None,
        qos=qos,
    )
