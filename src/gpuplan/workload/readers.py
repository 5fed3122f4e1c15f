"""Trace readers by format name, and the format of a file from its name."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from gpuplan.errors import InputError
from gpuplan.sim.registry import Registry
from gpuplan.workload.helios import read_helios
from gpuplan.workload.k8s_pods import read_alibaba_pods, read_kubectl_pods
from gpuplan.workload.philly import read_chronus, read_philly
from gpuplan.workload.sacct import read_sacct
from gpuplan.workload.swf import read_swf
from gpuplan.workload.trace import Trace


class TraceReader(Protocol):
    def __call__(self, path: Path, *, gpus_per_node: int, skip_bad_lines: bool) -> Trace: ...


READERS = Registry[TraceReader]("trace format")
READERS.register("swf", read_swf)
READERS.register("philly", read_philly)  # Pollux/AdaptDL's Philly job list
READERS.register("chronus", read_chronus)  # Chronus's Philly SLO/best-effort mix
READERS.register("helios", read_helios)  # Helios cluster_log.csv and Acme trace_*.csv, by header
READERS.register("acme", read_helios)
READERS.register("sacct", read_sacct)  # Slurm accounting, sacct --parsable2 (-P)
READERS.register("alibaba", read_alibaba_pods)  # Alibaba 2023 GPU pod list (openb_pod_list_*.csv)
READERS.register("kubectl", read_kubectl_pods)  # kubectl get pods -A -o json

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

SACCT_HEADER_LIMIT = 1 << 16  # characters of the first line read to tell sacct output


def _csv_header(path: Path) -> frozenset[str]:
    try:
        opener = gzip.open if path.name.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as text:
            first = text.readline()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None
    return frozenset(cell.strip().strip('"').strip() for cell in first.split(","))


def is_sacct(path: Path) -> bool:
    """Whether the first line of ``path`` (or of ``path.gz``) is a sacct --parsable header: names
    separated by ``|``, one of them JobID. False when the file cannot be read."""
    try:
        opener = gzip.open if path.name.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as text:
            first = text.readline(SACCT_HEADER_LIMIT)
    except (OSError, EOFError, zlib.error):
        return False
    names = first.removeprefix("\ufeff").split("|")
    return len(names) > 1 and "jobid" in {name.strip().lower() for name in names}


def detect_format(path: Path) -> str:
    """The format of ``path``: from its name (SWF), from a sacct header (whatever the name), or from
    its header's columns (CSV traces)."""
    for suffix, name in sorted(SUFFIXES.items(), key=lambda item: -len(item[0])):
        if path.name.endswith(suffix):
            return name
    if is_sacct(path):
        return "sacct"
    if path.name.lower().endswith((".csv", ".csv.gz")):
        header = _csv_header(path)
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
    raise InputError(
        f"cannot tell the trace format from the file name (known endings: {known}, a CSV trace, "
        "or sacct --parsable2 output); "
        f"give the format (--format): {', '.join(READERS)}",
        path=path,
    )


def default_gpus_per_node(format: str) -> int:
    return DEFAULT_GPUS_PER_NODE.get(format, GPU_TRACE_GPUS_PER_NODE)


def read_trace(
    path: Path, *, format: str | None = None, gpus_per_node: int | None = None, skip_bad_lines: bool = False
) -> Trace:
    """Read ``path`` with the reader of ``format`` (default: told from the file). ``gpus_per_node``
    groups the trace's GPUs into nodes (default: 1 for SWF processors, 8 for GPU traces; sacct jobs
    keep their own node count where the file gives it)."""
    format = format or detect_format(path)
    reader: Callable[..., Trace] = READERS.get(format)
    if gpus_per_node is None:
        gpus_per_node = default_gpus_per_node(format)
    return reader(path, gpus_per_node=gpus_per_node, skip_bad_lines=skip_bad_lines)
