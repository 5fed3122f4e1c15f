"""Trace readers by format name, and the format of a file from its name."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gpuplan.errors import InputError
from gpuplan.sim.registry import Registry
from gpuplan.workload.textfile import first_line
from gpuplan.workload.trace import no_jobs

if TYPE_CHECKING:
    from gpuplan.workload.trace import Trace


class TraceReader(Protocol):
    def __call__(self, path: Path, *, gpus_per_node: int, skip_bad_lines: bool) -> Trace: ...


def _reader(entry: str) -> TraceReader:
    """The reader ``module:function``, its module imported when a trace of its format is read: a
    trace loads its own reader only (start-up time)."""
    module, name = entry.split(":")

    def read(path: Path, *, gpus_per_node: int, skip_bad_lines: bool) -> Trace:
        reader: TraceReader = getattr(importlib.import_module(module), name)
        return reader(path, gpus_per_node=gpus_per_node, skip_bad_lines=skip_bad_lines)

    read.__qualname__ = entry
    return read


READERS = Registry[TraceReader]("trace format")
READERS.register("swf", _reader("gpuplan.workload.swf:read_swf"))
# Pollux/AdaptDL's Philly job list
READERS.register("philly", _reader("gpuplan.workload.philly:read_philly"))
# Chronus's Philly SLO/best-effort mix
READERS.register("chronus", _reader("gpuplan.workload.philly:read_chronus"))
# Helios cluster_log.csv and Acme trace_*.csv, by header
_read_helios = READERS.register("helios", _reader("gpuplan.workload.helios:read_helios"))
READERS.register("acme", _read_helios)
# Slurm accounting, sacct --parsable2 (-P)
READERS.register("sacct", _reader("gpuplan.workload.sacct:read_sacct"))
# Alibaba 2023 GPU pod list (openb_pod_list_*.csv)
READERS.register("alibaba", _reader("gpuplan.workload.k8s_pods:read_alibaba_pods"))
# kubectl get pods -A -o json
READERS.register("kubectl", _reader("gpuplan.workload.k8s_pods:read_kubectl_pods"))

# File name endings that name a format.
SUFFIXES: dict[str, str] = {
    ".swf": "swf",
    ".swf.gz": "swf",
    ".alea-swf": "swf",
    ".alea-swf.gz": "swf",
    ".json": "kubectl",
    ".json.gz": "kubectl",
}

# The GPU traces are all CSV with different columns: a CSV's format is told by the columns of its header.
CSV_SIGNATURES: dict[str, frozenset[str]] = {
    "philly": frozenset({"timestamp", "duration", "num_gpus", "cluster"}),
    "chronus": frozenset({"job_id", "user", "num_gpu", "submit_time", "duration"}),
    "helios": frozenset({"job_id", "user", "gpu_num", "submit_time"}),
    "alibaba": frozenset({"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time"}),
}

# Nodes of the traced clusters: SWF processors are counted one by one; Philly, Helios and Acme
# servers have 8 GPUs. A sacct job keeps its own node count (NNodes): the figure only groups the GPUs
# of a job whose node count the file does not give.
DEFAULT_GPUS_PER_NODE = {"swf": 1}
GPU_TRACE_GPUS_PER_NODE = 8


def _first_line(path: Path) -> str:
    """The first line of ``path`` (decompressed), byte-order mark dropped; odd bytes become U+FFFD (a
    header is only looked at here: the reader says what is wrong with it)."""
    return first_line(path).decode("utf-8", errors="replace").removeprefix("\ufeff")


def _csv_header(first: str) -> frozenset[str]:
    return frozenset(cell.strip().strip('"').strip() for cell in first.split(","))


def _sacct_names(first: str) -> list[str]:
    """The column names of a ``|``-separated first line, as sacct --parsable2 prints; [] if it has
    fewer than two."""
    names = [name.strip() for name in first.rstrip("\r").split("|")]
    return names if len(names) > 1 else []


def detect_format(path: Path) -> str:
    """The format of ``path``: from its name (SWF, kubectl JSON), from a sacct header (whatever the
    name), or from its header's columns (CSV traces). InputError at line 1 when none tells it."""
    for suffix, name in sorted(SUFFIXES.items(), key=lambda item: -len(item[0])):
        if path.name.endswith(suffix):
            return name
    is_csv = path.name.lower().endswith((".csv", ".csv.gz"))
    # a missing file whose name tells nothing is a format to give (the reader says "no such file")
    first = _first_line(path) if is_csv or path.exists() else ""
    sacct_names = _sacct_names(first)
    if "jobid" in {name.lower() for name in sacct_names}:
        return "sacct"
    if is_csv:
        header = _csv_header(first)
        for name, columns in CSV_SIGNATURES.items():
            if columns <= header:
                return name
        csv_formats = ", ".join(CSV_SIGNATURES)
        raise InputError(
            f"cannot tell the trace format from the file name or its header; give --format ({csv_formats})",
            path=path,
            line=1,
        )
    known = ", ".join(sorted(SUFFIXES))
    # a header as sacct --parsable2 prints but without JobID: the field to name is JobID
    lookalike = (
        f" (its first line has |-separated columns, as sacct --parsable2 prints, but none is JobID: "
        f"{', '.join(sacct_names)})"
        if sacct_names
        else ""
    )
    raise InputError(
        f"cannot tell the trace format from the file name (known endings: {known}, a CSV trace, "
        f"or sacct --parsable2 output){lookalike}; "
        f"give the format (--format): {', '.join(READERS)}",
        path=path,
        line=1,
        field="JobID" if sacct_names else "--format",
    )


def default_gpus_per_node(format: str) -> int:
    return DEFAULT_GPUS_PER_NODE.get(format, GPU_TRACE_GPUS_PER_NODE)


def read_trace(
    path: Path, *, format: str | None = None, gpus_per_node: int | None = None, skip_bad_lines: bool = False
) -> Trace:
    """Read ``path`` with the reader of ``format`` (default: told from the file). ``gpus_per_node``
    groups the trace's GPUs into nodes (default: 1 for SWF processors, 8 for GPU traces; sacct jobs
    keep their own node count where the file gives it).

    A trace without a job is refused here, for every format, as an empty file is: a file of a
    header only, or whose every line was skipped or describes no runnable job, would otherwise
    simulate nothing and say so nowhere."""
    format = format or detect_format(path)
    reader: Callable[..., Trace] = READERS.get(format)
    if gpus_per_node is None:
        gpus_per_node = default_gpus_per_node(format)
    trace = reader(path, gpus_per_node=gpus_per_node, skip_bad_lines=skip_bad_lines)
    if len(trace.jobs) == 0:
        raise no_jobs(trace)
    return trace
