"""Reader for the job logs of SenseTime Helios and Shanghai AI Lab Acme GPU clusters.

Helios layout (S-Lab-System-Group/HeliosData, README "cluster_log.csv"; Hu et al., "Characterization
and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters", SC'21; analysis scripts in
S-Lab-System-Group/HeliosArtifact)::

    job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue

Acme layout (InternLM/AcmeTrace, README "Job Trace"; Hu et al., "Characterization of Large Language
Model Development in the Datacenter", NSDI'24), ``trace_seren.csv`` and ``trace_kalos.csv``::

    job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time
    job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,
        start_time,end_time,fail_time,stop_time,duration,queue,gpu_time

Both are read by header name, so either layout (and the Helios-format ``philly_trace.csv`` of those
repositories) reads. Times are ``YYYY-MM-DD HH:MM:SS`` in Helios, with a zone offset
(``+08:00``) in Acme; a time without an offset is read as UTC. Logs whose times are seconds read too:
the first data row's ``submit_time`` decides which for the whole file.
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
from gpuplan.workload.jobtable import (
    MAX_CPUS_PER_JOB,
    MAX_GPUS_PER_JOB,
    MAX_NODES_PER_JOB,
    MAX_TIME_S,
    Labels,
    split_gpus,
)
from gpuplan.workload.trace import Trace

COLUMNS = (
    Column("job_id", "id"),
    Column("user", "text", team_or_user=True),
    Column("vc", "text", required=False, team_or_user=True),
    Column("gpu_num", "whole", most=MAX_GPUS_PER_JOB),
    Column("node_num", "whole", required=False, blank_ok=True, most=MAX_NODES_PER_JOB),
    Column("cpu_num", "whole", required=False, blank_ok=True, most=MAX_CPUS_PER_JOB),
    Column("state", "text"),
    Column("submit_time", "time", most=MAX_TIME_S),
    Column("start_time", "time", required=False, blank_ok=True, most=MAX_TIME_S),
    Column("end_time", "time", required=False, blank_ok=True, most=MAX_TIME_S),
    Column("duration", "number", required=False, blank_ok=True, most=MAX_TIME_S),
)

# Final states as Slurm names them (COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL), lower-cased;
# these are the other spellings seen in these logs. Philly's Pass/Killed as AcmeTrace maps them.
_STATES = {"canceled": "cancelled", "pass": "completed", "killed": "cancelled", "": "unknown"}


def state_name(raw: str) -> str:
    """A state label: ``COMPLETED`` -> ``completed``; ``CANCELLED by 123`` and ``canceled`` ->
    ``cancelled``."""
    state = raw.strip().lower()
    if state.startswith(("cancelled ", "canceled ")):
        state = "cancelled"
    return _STATES.get(state, state)


def read_helios(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> Trace:
    """Read a Helios ``cluster_log.csv`` or Acme ``trace_*.csv`` (or ``.csv.gz``) into a job table.

    Mapping: job id = ``job_id`` when every id is a whole number (Kalos ids are text: then the 1-based
    data row number). User = ``user``; team = ``vc`` (Helios) where given, else the user (Acme has no
    VCs). Run time = ``end_time - start_time`` where both are given, else ``duration``; a job with
    neither (e.g. cancelled before it started) or a negative one is skipped and counted in
    ``skipped_invalid``, and so is a CPU-only job (``gpu_num`` 0). Submit = ``submit_time``: datetimes
    become seconds from the earliest submit (``Trace.epoch_s`` is that one as Unix time); seconds stay
    as they are. GPUs: ``gpu_num`` on ``node_num`` nodes when given (raised to ceil(gpu_num /
    gpus_per_node) nodes and capped at one GPU a node), else ceil(gpu_num / gpus_per_node) nodes; each
    node gets ceil(gpu_num / nodes) GPUs. CPUs per node = ceil(``cpu_num`` / nodes) where given. State
    = ``state`` lower-cased (``completed``, ``failed``, ``cancelled``, ``timeout``, ``node_fail``).
    No time limit (NaN); kind "batch". ``Trace.format`` says which layout was read: "helios" (with a
    ``vc`` column) or "acme".

    Raises InputError naming the file, line and column of the first malformed row, unless
    ``skip_bad_lines``, which skips and counts malformed rows instead. The header must have ``duration``
    or both ``start_time`` and ``end_time``.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)

    def check_header(header: tuple[str, ...]) -> None:
        if "duration" not in header and not {"start_time", "end_time"} <= set(header):
            raise missing_column(path, header, "duration")

    table = read_csv_columns(path, COLUMNS, skip_bad_lines=skip_bad_lines, check_header=check_header)
    rows = len(table.line)
    duration = table.number("duration") if "duration" in table else np.full(rows, np.nan)
    if "start_time" in table and "end_time" in table:
        run = table.number("end_time") - table.number("start_time")
        duration = np.where(np.isnan(run), duration, run)
    gpus = table.number("gpu_num")
    valid = (gpus > 0) & (duration >= 0)  # False where the duration is NaN

    submit = table.number("submit_time")
    submit_s, epoch_s = since_earliest(submit, valid) if table.time_kind == "datetime" else (submit, None)

    least, _ = split_gpus(gpus, gpus_per_node)
    nodes = least.astype(np.int64)
    if "node_num" in table:
        given = np.nan_to_num(table.number("node_num"), nan=0.0).astype(np.int64)
        nodes = np.where(given > 0, np.clip(given, nodes, np.maximum(gpus.astype(np.int64), 1)), nodes)
    per_node = -(-gpus.astype(np.int64) // nodes)
    cpus = np.zeros(rows, dtype=np.int64)
    if "cpu_num" in table:
        cpu_num = np.nan_to_num(table.number("cpu_num"), nan=0.0).astype(np.int64)
        cpus = np.where(cpu_num > 0, -(-cpu_num // nodes), 0)

    user = table.text("user")
    team = _coalesce(table.text("vc"), user) if "vc" in table else user
    state = table.text("state")
    return gpu_trace(
        path,
        "helios" if "vc" in table else "acme",
        table,
        valid,
        job_id=job_ids(table, "job_id"),
        user=user,
        team=team,
        submit_s=submit_s,
        duration_s=duration,
        nodes=nodes.astype(np.int32),
        gpus_per_node=per_node.astype(np.int32),
        cpus_per_node=cpus.astype(np.int32),
        epoch_s=epoch_s,
        state=Labels(state.codes, tuple(state_name(s) for s in state.labels)),
    )


def _coalesce(first: Labels, second: Labels) -> Labels:
    """``first``'s label, or ``second``'s where ``first``'s is empty."""
    empty = np.array([not label for label in first.labels], dtype=bool)
    keys = np.where(empty[first.codes], len(first.labels) + second.codes.astype(np.int64), first.codes)
    names = first.labels + second.labels
    return Labels.from_keys(keys, lambda key: names[key])
