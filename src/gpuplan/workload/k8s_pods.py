"""Kubernetes pod traces: the Alibaba 2023 GPU pod list, ``kubectl get pods -A -o json`` dumps, and
node lists.

``read_alibaba_pods``: alibaba/clusterdata ``cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv`` (Weng
et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC'23). Header ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
creation_time,deletion_time,scheduled_time`` (times in seconds from the trace start). One pod is one
job (1 pod of ``num_gpu`` GPUs); ``gpu_milli`` < 1000 asks that share of one GPU (GPU sharing).

``read_node_list``: ``openb_node_list_*.csv``, header ``sn,cpu_milli,memory_mib,gpu,model``.

``read_kubectl_pods``: the JSON of ``kubectl get pods -A -o json`` (a ``List`` of ``Pod`` objects).
Pods requesting ``nvidia.com/gpu`` are kept; pods of one Job (``ownerReferences`` kind Job, or the
``batch.kubernetes.io/job-name`` / ``job-name`` / ``training.kubeflow.org/job-name`` labels) form one
job of that many pods. Team = namespace.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.workload.csvcolumns import Column, check_gpus_per_node, gpu_trace, job_ids, read_csv_columns
from gpuplan.workload.jobtable import (
    MAX_CPUS_PER_NODE,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_MIB_PER_NODE,
    MAX_TIME_S,
    Int32,
    Int64,
    JobTable,
    Labels,
    out_of_range,
    range_text,
    split_gpus,
)
from gpuplan.workload.trace import Trace

GPU_RESOURCE = "nvidia.com/gpu"
JOB_LABELS = ("batch.kubernetes.io/job-name", "job-name", "training.kubeflow.org/job-name")
NODE_LIST_SUFFIX = "_node_list_gpu_node.csv"


@dataclass(frozen=True)
class PodTrace(Trace):
    """A trace of pods, with what a job table does not hold, one entry per job (``jobs`` order):
    the share of one GPU each pod asks (thousandths; 1000 = whole GPUs), and CPU and memory requests."""

    gpu_milli: Int32 | None = None
    cpu_milli: Int64 | None = None
    memory_mib: Int64 | None = None


@dataclass(frozen=True)
class NodeList:
    """Nodes of a traced cluster: names, allocatable CPU (millicores), memory (MiB), GPUs, GPU model."""

    path: Path
    names: tuple[str, ...]
    cpu_milli: Int64
    memory_mib: Int64
    gpus: Int32
    model: tuple[str, ...]


# A pod runs on one node: its requests are bounded by what one node can have. gpu_milli is the share
# of one GPU in thousandths (0 to 1000); times are seconds from the trace start.
ALIBABA_COLUMNS = (
    Column("name", "id"),
    Column("cpu_milli", "number", most=MAX_CPUS_PER_NODE * 1000),
    Column("memory_mib", "number", most=MAX_MEMORY_MIB_PER_NODE),
    Column("num_gpu", "whole", most=MAX_GPUS_PER_NODE),
    Column("gpu_milli", "whole", most=1000),
    Column("qos", "text", required=False),
    Column("pod_phase", "text", required=False),
    Column("creation_time", "number", most=MAX_TIME_S),
    Column("deletion_time", "number", most=MAX_TIME_S),
    Column("scheduled_time", "number", blank_ok=True, most=MAX_TIME_S),
)


def read_alibaba_pods(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> PodTrace:
    """Read an Alibaba openb pod list (CSV or ``.csv.gz``) into a job table.

    Mapping: one job per pod, job id = the 1-based data row; submit = ``creation_time``; run time =
    ``deletion_time`` - ``scheduled_time`` (pods still running when the trace ends are deleted at its
    end, so their run time is cut there); ``num_gpu`` GPUs in one pod (``gpus_per_node`` only splits a
    pod larger than a node), ``gpu_milli`` its share of each GPU. qos = ``qos`` (LS, BE, Burstable,
    Guaranteed) and, as the trace has no namespaces, the team too; state = ``pod_phase``. Skipped and
    counted in ``skipped_invalid``: CPU-only pods (num_gpu 0) and pods never scheduled in the trace
    (no ``scheduled_time``: their run time is unknown), and rows whose times run backwards. A figure
    no pod can mean (NaN, infinite, negative, a time past 2242, requests past one node's bounds in
    workload.jobtable, gpu_milli above 1000) makes the row malformed: InputError naming file, line and
    column, or with ``skip_bad_lines`` skipped and counted.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)
    table = read_csv_columns(path, ALIBABA_COLUMNS, skip_bad_lines=skip_bad_lines)
    gpus = table.number("num_gpu")
    scheduled, deleted = table.number("scheduled_time"), table.number("deletion_time")
    duration = deleted - scheduled
    valid = (gpus > 0) & ~np.isnan(scheduled) & (duration >= 0)
    duration = np.where(valid, duration, 0.0)
    nodes, per_node = split_gpus(gpus, gpus_per_node)
    qos = table.text("qos") if "qos" in table else Labels.constant("", len(valid))
    base = gpu_trace(
        path,
        "alibaba",
        table,
        valid,
        job_id=job_ids(table, "name"),
        user=Labels.constant("", len(valid)),
        team=qos,
        submit_s=table.number("creation_time"),
        duration_s=duration,
        nodes=nodes,
        gpus_per_node=per_node,
        epoch_s=None,
        cpus_per_node=np.ceil(table.number("cpu_milli") / 1000.0).astype(np.int32),
        qos=qos,
        state=_lower(table.text("pod_phase")) if "pod_phase" in table else None,
    )
    keep = np.flatnonzero(valid)
    milli = np.where(gpus[keep] == 1, table.number("gpu_milli")[keep], 1000).astype(np.int32)
    cpu = table.number("cpu_milli")[keep].astype(np.int64)
    mem = table.number("memory_mib")[keep].astype(np.int64)
    jobs = replace(base.jobs, mem_per_node=mem.astype(np.float64))
    return PodTrace(
        path=base.path,
        format=base.format,
        jobs=jobs,
        skipped_invalid=base.skipped_invalid,
        bad_lines=base.bad_lines,
        header=base.header,
        gpu_milli=np.maximum(milli, 1),
        cpu_milli=cpu,
        memory_mib=mem,
    )


def _lower(labels: Labels) -> Labels:
    return Labels(labels.codes, tuple(label.lower() for label in labels.labels))


NODE_COLUMNS = (
    Column("sn", "text"),
    Column("cpu_milli", "number", most=MAX_CPUS_PER_NODE * 1000),
    Column("memory_mib", "number", most=MAX_MEMORY_MIB_PER_NODE),
    Column("gpu", "whole", most=MAX_GPUS_PER_NODE),
    Column("model", "text", required=False),
)


def read_node_list(path: Path | str) -> NodeList:
    """Read a node list CSV (Alibaba's ``openb_node_list_*.csv`` layout). Errors name file, line, column:
    a malformed line, or a figure no node has (negative, NaN, infinite, or past the bounds of
    workload.jobtable), is an error (no line is skipped: a skipped node would shrink the cluster). A
    cpu_milli or memory_mib of 0 means unknown: the Kubernetes model does not check that resource on
    the node."""
    path = Path(path)
    table = read_csv_columns(path, NODE_COLUMNS)
    names = table.text("sn").values()
    model = table.text("model").values() if "model" in table else [""] * len(names)
    cpu, mem, gpus = table.number("cpu_milli"), table.number("memory_mib"), table.number("gpu")
    if len(names) == 0:
        raise InputError("no nodes in the node list", path=path)
    return NodeList(
        path=path,
        names=tuple(names),
        cpu_milli=cpu.astype(np.int64),
        memory_mib=mem.astype(np.int64),
        gpus=gpus.astype(np.int32),
        model=tuple(model),
    )


def node_list_beside(pod_list: Path) -> Path | None:
    """The node list lying beside a pod list, as in alibaba/clusterdata: ``X_pod_list_Y.csv[.gz]`` ->
    ``X_node_list_gpu_node.csv`` in the same directory; None when there is none."""
    name = pod_list.name
    if "_pod_list" not in name:
        return None
    candidate = pod_list.with_name(name.split("_pod_list")[0] + NODE_LIST_SUFFIX)
    return candidate if candidate.is_file() else None


# -- kubectl get pods -A -o json -------------------------------------------------------------------------

_UNITS = {
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 1024.0,
    "Mi": 1024.0**2,
    "Gi": 1024.0**3,
    "Ti": 1024.0**4,
}


def quantity(text: Any) -> float:
    """A Kubernetes resource quantity (``"500m"``, ``"16Gi"``, ``2``) as a number; ValueError if not."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        try:
            return float(text)
        except OverflowError:  # a JSON integer past float range
            raise ValueError(f"expected a quantity, got a number of {len(str(abs(text)))} digits") from None
    value = str(text).strip()
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * _UNITS[suffix]
    return float(value)


# The most one pod may request of each resource it is read for (a pod runs on one node), in the
# units quantity() returns: GPUs, cores, bytes.
_MOST = {
    GPU_RESOURCE: float(MAX_GPUS_PER_NODE),
    "cpu": float(MAX_CPUS_PER_NODE),
    "memory": float(MAX_MEMORY_MIB_PER_NODE) * 1024.0**2,
}


def _request(wanted: dict[str, Any], resource: str) -> float:
    """A container's request of ``resource`` (0 when absent); ValueError for a quantity no pod can
    ask: negative (the API server refuses those too), NaN, infinite or past ``_MOST``."""
    raw = wanted.get(resource, 0)
    value = quantity(raw)
    if out_of_range(value, 0.0, _MOST[resource]):
        shown = raw if isinstance(raw, str) else json.dumps(raw)
        raise ValueError(f"expected a quantity {range_text(0.0, _MOST[resource])}, got {shown!r}")
    return value


def _time(text: Any) -> float:
    """Unix seconds of an RFC 3339 time (``2024-05-01T10:00:00Z``; without a zone: UTC); ValueError
    for one before 1970 or after 2242 (MAX_TIME_S)."""
    stamp = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    seconds = stamp.timestamp()
    if out_of_range(seconds, 0.0, MAX_TIME_S):
        raise ValueError(f"expected a time from 1970 to 2242, got {text!r}")
    return seconds


def _line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def read_kubectl_pods(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> PodTrace:
    """Read ``kubectl get pods -A -o json`` output (``.json`` or ``.json.gz``).

    Per pod: GPUs = the sum over containers of ``resources.requests`` (else ``limits``) of
    ``nvidia.com/gpu``; CPU and memory likewise; created = ``metadata.creationTimestamp``; started =
    ``status.startTime``; finished = the latest ``state.terminated.finishedAt`` of its containers. A pod
    still running has no finish: it runs until the latest time in the file (counted in the header
    as ``still_running``). Pods of one Job form one job: submit = first creation, run time = latest
    finish - latest start, nodes = pod count. Pods without GPUs, never started, or with times out of
    order are skipped and counted in ``skipped_invalid``; a malformed pod raises InputError naming the
    file, the line of its name and the field, or with ``skip_bad_lines`` is skipped and counted. A pod
    is malformed also when a time is before 1970 or after 2242, or a request is negative, NaN,
    infinite or more than one node can have (workload.jobtable's MAX_GPUS_PER_NODE, MAX_CPUS_PER_NODE,
    MAX_MEMORY_MIB_PER_NODE); a time without a zone reads as UTC.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)
    try:
        opener = gzip.open if path.name.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise InputError(
            "expected a List with items (kubectl get pods -A -o json)", path=path, line=1, field="items"
        )

    groups: dict[tuple[str, str], dict[str, Any]] = {}
    skipped = bad = 0
    latest = -math.inf
    for index, pod in enumerate(items):
        name = ""
        try:
            meta = pod["metadata"]
            name, namespace = str(meta["name"]), str(meta.get("namespace", "default"))
            field = "metadata.creationTimestamp"
            created = _time(meta["creationTimestamp"])
            gpus = cpu = mem = 0.0
            for c, container in enumerate(pod["spec"]["containers"]):
                resources = container.get("resources") or {}
                which = "requests" if resources.get("requests") else "limits"
                wanted = resources.get(which) or {}
                field = f"spec.containers[{c}].resources"
                if not isinstance(wanted, dict):
                    raise TypeError(f"expected a map of resources, got {wanted!r}")
                field = f"spec.containers[{c}].resources.{which}.{GPU_RESOURCE}"
                gpus += _request(wanted, GPU_RESOURCE)
                field = f"spec.containers[{c}].resources.{which}.cpu"
                cpu += _request(wanted, "cpu")
                field = f"spec.containers[{c}].resources.{which}.memory"
                mem += _request(wanted, "memory")
            field = "spec.containers[].resources"
            if gpus > _MOST[GPU_RESOURCE] or cpu > _MOST["cpu"] or mem > _MOST["memory"]:
                raise ValueError("the containers together ask more than one node can have")
            status = pod.get("status") or {}
            field = "status.startTime"
            started = _time(status["startTime"]) if status.get("startTime") else math.nan
            finished = math.nan
            for s in status.get("containerStatuses") or []:
                terminated = (s.get("state") or {}).get("terminated")
                if terminated and terminated.get("finishedAt"):
                    field = "status.containerStatuses[].state.terminated.finishedAt"
                    finished = (
                        max(_time(terminated["finishedAt"]), finished)
                        if finished == finished
                        else _time(terminated["finishedAt"])
                    )
            owner = next(
                (o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), None
            )
            labels = meta.get("labels") or {}
            owner = owner or next((labels[k] for k in JOB_LABELS if k in labels), None)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if skip_bad_lines:
                bad += 1
                continue
            line = _line_of(text, f'"{name}"') if name else None
            detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InputError(
                f"pod {name or index}: {detail}",
                path=path,
                line=line,
                field=f"items[{index}].{field if name else 'metadata'}",
            ) from None
        for t in (created, started, finished):
            if t == t:
                latest = max(latest, t)
        if gpus <= 0 or started != started:
            skipped += 1
            continue
        key = (namespace, owner or f"pod/{name}")
        group = groups.setdefault(
            key,
            {
                "created": created,
                "started": started,
                "finished": finished,
                "pods": 0,
                "gpus": 0.0,
                "cpu": 0.0,
                "mem": 0.0,
                "line": _line_of(text, f'"{name}"') or 0,
                "phase": str(status.get("phase", "")).lower(),
            },
        )
        group["created"] = min(group["created"], created)
        group["started"] = max(group["started"], started)
        group["finished"] = (
            max(group["finished"], finished) if group["finished"] == group["finished"] else finished
        )
        group["pods"] += 1
        group["gpus"] = max(group["gpus"], gpus)
        group["cpu"] = max(group["cpu"], cpu)
        group["mem"] = max(group["mem"], mem)

    rows = [(key, g) for key, g in groups.items()]
    still_running = sum(1 for _, g in rows if g["finished"] != g["finished"])
    keep = []
    for key, g in rows:
        if g["finished"] != g["finished"]:
            g["finished"] = latest
        if g["finished"] < g["started"] or g["started"] < g["created"]:
            skipped += 1
            continue
        keep.append((key, g))
    keep.sort(key=lambda item: (item[1]["created"], item[1]["line"]))
    epoch = min((g["created"] for _, g in keep), default=0.0)
    count = len(keep)
    gpus_per_pod = np.array([g["gpus"] for _, g in keep], np.float64)
    whole = np.ceil(gpus_per_pod)
    nodes_split, per_node = split_gpus(whole, max(gpus_per_node, 1))
    pods = np.array([g["pods"] for _, g in keep], np.int32)
    namespaces = [key[0] for key, _ in keep]
    team_labels, team_codes = (
        np.unique(np.array(namespaces, dtype=object), return_inverse=True)
        if count
        else (np.array([]), np.zeros(0, np.int64))
    )
    team = Labels(team_codes.astype(np.int32), tuple(str(t) for t in team_labels))
    phases = [g["phase"] or "unknown" for _, g in keep]
    phase_labels, phase_codes = (
        np.unique(np.array(phases, dtype=object), return_inverse=True)
        if count
        else (np.array([]), np.zeros(0, np.int64))
    )
    milli = np.where(gpus_per_pod < 1, np.round(gpus_per_pod * 1000), 1000).astype(np.int32)
    cpu_milli = np.array([g["cpu"] * 1000 for _, g in keep], np.float64).astype(np.int64)
    memory_mib = (np.array([g["mem"] for _, g in keep], np.float64) / 1024.0**2).astype(np.int64)
    jobs = JobTable(
        job_id=np.arange(1, count + 1, dtype=np.int64),
        user=Labels.constant("unknown", count),
        team=team,
        submit_s=np.array([g["created"] - epoch for _, g in keep], np.float64),
        duration_s=np.array([g["finished"] - g["started"] for _, g in keep], np.float64),
        time_limit_s=np.full(count, np.nan),
        nodes=(pods * nodes_split).astype(np.int32),
        gpus_per_node=per_node.astype(np.int32),
        cpus_per_node=np.ceil(cpu_milli / 1000.0).astype(np.int32),
        mem_per_node=memory_mib.astype(np.float64),
        partition=Labels.constant("", count),
        qos=Labels.constant("", count),
        kind=Labels.constant("batch", count),
        state=Labels(phase_codes.astype(np.int32), tuple(str(p) for p in phase_labels)),
        source_line=np.array([g["line"] for _, g in keep], np.int64),
    )
    return PodTrace(
        path=path,
        format="kubectl",
        jobs=jobs,
        skipped_invalid=skipped,
        bad_lines=bad,
        epoch_s=epoch if count else None,
        header={"still_running": str(still_running)},
        gpu_milli=milli,
        cpu_milli=cpu_milli,
        memory_mib=memory_mib,
    )
