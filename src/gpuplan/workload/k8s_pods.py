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

import json
import math
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.workload.csvcolumns import (
    Column,
    check_gpus_per_node,
    gpu_trace,
    job_ids,
    name_error,
    read_csv_columns,
)
from gpuplan.workload.jobtable import (
    MAX_CPUS_PER_NODE,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_MIB_PER_NODE,
    MAX_TIME_S,
    JobTable,
    Labels,
    out_of_range,
    range_text,
    split_gpus,
)

# the types of pod traces, apart so that another trace loads none of this module; named here too for
# the modules that import them from here (the compiled Kubernetes model)
from gpuplan.workload.pods import NodeList as NodeList
from gpuplan.workload.pods import PodRequests as PodRequests
from gpuplan.workload.pods import PodTrace as PodTrace
from gpuplan.workload.pods import node_list_beside as node_list_beside
from gpuplan.workload.textfile import decode_utf8, read_bytes
from gpuplan.workload.trace import SkippedLines

GPU_RESOURCE = "nvidia.com/gpu"
JOB_LABELS = ("batch.kubernetes.io/job-name", "job-name", "training.kubeflow.org/job-name")


# A pod runs on one node: its requests are bounded by what one node can have. gpu_milli is the share
# of one GPU in thousandths (0 to 1000); times are seconds from the trace start.
ALIBABA_COLUMNS = (
    Column("name", "id"),
    Column("cpu_milli", "number", most=MAX_CPUS_PER_NODE * 1000),
    Column("memory_mib", "number", most=MAX_MEMORY_MIB_PER_NODE),
    Column("num_gpu", "whole", most=MAX_GPUS_PER_NODE),
    Column("gpu_milli", "whole", most=1000),
    Column("qos", "text", required=False, team_or_user=True),  # the team: the trace has no namespaces
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
        skipped_lines=base.skipped_lines,
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
        raise InputError(
            "no nodes in the node list: a row of sn,cpu_milli,memory_mib,gpu is needed", path=path, line=2
        )
    return NodeList(
        path=path,
        names=tuple(names),
        cpu_milli=cpu.astype(np.int64),
        memory_mib=mem.astype(np.int64),
        gpus=gpus.astype(np.int32),
        model=tuple(model),
    )


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
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(f'expected a quantity (such as "8", "500m" or "16Gi"), got {_describe(raw)}')
    value = quantity(raw)
    if out_of_range(value, 0.0, _MOST[resource]):
        shown = raw if isinstance(raw, str) else json.dumps(raw)
        raise ValueError(f"expected a quantity {range_text(0.0, _MOST[resource])}, got {shown!r}")
    return value


def _time(text: str) -> float:
    """Unix seconds of an RFC 3339 time (``2024-05-01T10:00:00Z``; without a zone: UTC); ValueError
    for one before 1970 or after 2242 (MAX_TIME_S)."""
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"expected an RFC 3339 time (2024-05-01T10:00:00Z), got {text!r}") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    seconds = stamp.timestamp()
    if out_of_range(seconds, 0.0, MAX_TIME_S):
        raise ValueError(f"expected a time from 1970 to 2242, got {text!r}")
    return seconds


# -- the JSON document: items decoded one at a time, each with its place in the text ----------------------

# Integers of more digits are kept as _HugeInteger: Python converts at most
# sys.int_info.default_max_str_digits (4,300) digits, PYTHONINTMAXSTRDIGITS can lower that to 640, and
# Kubernetes' API integers are 64-bit (19 digits), so no field can hold one.
MAX_INTEGER_DIGITS = 600
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class _HugeInteger:
    """A JSON integer too long to convert: its number of digits."""

    digits: int


class _Malformed(Exception):
    """A pod's field of the wrong type or value: the field's path and what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _describe(value: Any) -> str:
    """What a JSON value is, for messages: ``a list (["train-llm"])``, ``null``, ``the number 3``."""
    if isinstance(value, _HugeInteger):
        return f"an integer of {value.digits:,} digits"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    shown = json.dumps(value, default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if isinstance(value, int | float):
        return f"the number {shown}"
    kind = "an object" if isinstance(value, dict) else "a list" if isinstance(value, list) else "text"
    return f"{kind} ({shown})"


def _huge_at(value: Any, field: str) -> tuple[str, _HugeInteger] | None:
    """(path, value) of the first _HugeInteger in ``value`` (at ``field``), or None."""
    if isinstance(value, _HugeInteger):
        return field, value
    if isinstance(value, dict):
        items: Any = ((f"{field}.{key}", member) for key, member in value.items())
    elif isinstance(value, list):
        items = ((f"{field}[{i}]", member) for i, member in enumerate(value))
    else:
        return None
    return next((found for at, member in items if (found := _huge_at(member, at)) is not None), None)


def _huge_message(number: _HugeInteger) -> str:
    return f"expected a number Kubernetes can hold (its integers are 64-bit), got {_describe(number)}"


class _Document:
    """``kubectl get pods -o json`` text (a List object) decoded one item at a time with the standard
    json decoder (``raw_decode``), so each item's offset in the text, and so its lines, are known."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.huge = 0  # _HugeInteger values made so far
        self.decoder = json.JSONDecoder(parse_int=self._integer)
        self._counted = (0, 1)  # (offset, line there): line numbers are counted forward from the last

    def _integer(self, digits: str) -> int | _HugeInteger:
        if len(digits) > MAX_INTEGER_DIGITS:
            self.huge += 1
            return _HugeInteger(len(digits.lstrip("-")))
        return int(digits)

    def line(self, offset: int) -> int:
        at, line = self._counted
        if offset < at:
            at, line = 0, 1
        line += self.text.count("\n", at, offset)
        self._counted = (offset, line)
        return line

    def _syntax(self, message: str, offset: int) -> InputError:
        return InputError(f"not valid JSON: {message}", path=self.path, line=self.line(offset))

    def _skip(self, offset: int) -> int:
        match = _JSON_SPACE.match(self.text, offset)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def _value(self, offset: int) -> tuple[Any, int]:
        try:
            value, end = self.decoder.raw_decode(self.text, offset)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", path=self.path, line=exc.lineno) from None
        return value, end

    def _expect(self, offset: int, char: str, message: str) -> int:
        offset = self._skip(offset)
        if self.text[offset : offset + 1] != char:
            raise self._syntax(message, offset)
        return offset + 1

    def items(self) -> Iterator[tuple[int, int, Any, bool]]:
        """(start, end, value, holds a _HugeInteger) of each item; InputError for text that is not
        JSON, and at the line of ``items`` (line 1 without one) for a document that is not a List."""
        text = self.text
        offset = self._skip(0)
        if text[offset : offset + 1] != "{":
            self._value(offset)  # not JSON at all, or JSON but not an object
            raise self._not_a_list(1)
        offset = self._skip(offset + 1)
        seen = False
        if text[offset : offset + 1] == "}":
            offset += 1
        else:
            while True:  # the members of the List object
                key_at = offset
                if text[offset : offset + 1] != '"':
                    raise self._syntax("Expecting property name enclosed in double quotes", offset)
                key, offset = self._value(offset)
                offset = self._skip(self._expect(offset, ":", "Expecting ':' delimiter"))
                if key == "items":
                    if seen:
                        raise InputError(
                            "a second items list", path=self.path, line=self.line(key_at), field="items"
                        )
                    seen = True
                    if text[offset : offset + 1] != "[":
                        self._value(offset)
                        raise self._not_a_list(self.line(key_at))
                    offset = yield from self._list_items(offset + 1)
                else:
                    huge = self.huge
                    value, offset = self._value(offset)
                    if self.huge != huge:
                        raise self._huge(value, str(key), self.line(key_at))
                offset = self._skip(offset)
                if text[offset : offset + 1] == "}":
                    offset += 1
                    break
                offset = self._skip(self._expect(offset, ",", "Expecting ',' delimiter"))
        if self._skip(offset) != len(text):
            raise self._syntax("Extra data", self._skip(offset))
        if not seen:
            raise self._not_a_list(1)

    def _list_items(self, offset: int) -> Generator[tuple[int, int, Any, bool], None, int]:
        """The items of the list whose "[" is just before ``offset``; returns the offset after its "]"."""
        text = self.text
        offset = self._skip(offset)
        if text[offset : offset + 1] == "]":
            return offset + 1
        while True:
            huge = self.huge
            item, end = self._value(offset)
            yield offset, end, item, self.huge != huge
            offset = self._skip(end)
            if text[offset : offset + 1] == "]":
                return offset + 1
            offset = self._skip(self._expect(offset, ",", "Expecting ',' delimiter"))

    def _huge(self, value: Any, field: str, line: int) -> InputError:
        at, number = _huge_at(value, field) or (field, value)
        return InputError(_huge_message(number), path=self.path, line=line, field=at)

    def _not_a_list(self, line: int) -> InputError:
        return InputError(
            "expected a List with items (kubectl get pods -A -o json)",
            path=self.path,
            line=line,
            field="items",
        )


# -- one pod: every field read has its type checked, and a wrong one is named by its path ----------------


def _object(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(field, f"expected an object, got {_describe(value)}")
    return value


def _member(parent: dict[str, Any], key: str, field: str, kind: type, what: str, required: bool) -> Any:
    """``parent[key]`` checked to be a ``kind``; None when absent or null, unless ``required``."""
    value = parent.get(key)
    if value is None:
        if required:
            raise _Malformed(f"{field}.{key}", "missing")
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _Malformed(f"{field}.{key}", f"expected {what}, got {_describe(value)}")
    return value


def _map(parent: dict[str, Any], key: str, field: str, required: bool = False) -> dict[str, Any]:
    found: dict[str, Any] | None = _member(parent, key, field, dict, "an object", required)
    return found or {}


def _list(parent: dict[str, Any], key: str, field: str, required: bool = False) -> list[Any]:
    found: list[Any] | None = _member(parent, key, field, list, "a list", required)
    return found or []


def _text(parent: dict[str, Any], key: str, field: str, required: bool = False) -> str | None:
    found: str | None = _member(parent, key, field, str, "text", required)
    return found


def _time_of(parent: dict[str, Any], key: str, field: str, required: bool = False) -> float:
    """The time at ``parent[key]``; NaN when absent, null or empty and not ``required``."""
    text = _text(parent, key, field, required)
    if not text:
        if required:
            raise _Malformed(f"{field}.{key}", "missing")
        return math.nan
    try:
        return _time(text)
    except ValueError as exc:
        raise _Malformed(f"{field}.{key}", str(exc)) from None


@dataclass(frozen=True)
class _Pod:
    name: str
    namespace: str
    owner: str | None  # the Job the pod belongs to
    created: float
    started: float  # NaN: never started
    finished: float  # NaN: not finished
    gpus: float
    cpu: float  # cores
    mem: float  # bytes
    phase: str


def _read_pod(pod: Any, at: str) -> _Pod:
    """The fields of the pod ``items[i]`` (``at``); _Malformed naming the first bad one."""
    pod = _object(pod, at)
    meta = _map(pod, "metadata", at, required=True)
    here = f"{at}.metadata"
    name = _text(meta, "name", here, required=True) or ""
    namespace = _text(meta, "namespace", here) or "default"
    wrong = name_error(namespace)  # the team: a name as Slurm and Kubernetes take them
    if wrong is not None:
        raise _Malformed(f"{here}.namespace", wrong)
    created = _time_of(meta, "creationTimestamp", here, required=True)
    gpus = cpu = mem = 0.0
    containers = _list(_map(pod, "spec", at, required=True), "containers", f"{at}.spec", required=True)
    for c, container in enumerate(containers):
        here = f"{at}.spec.containers[{c}]"
        resources = _map(_object(container, here), "resources", here)
        which = "requests" if resources.get("requests") else "limits"
        wanted = _map(resources, which, f"{here}.resources")
        amounts = []
        for resource in (GPU_RESOURCE, "cpu", "memory"):
            try:
                amounts.append(_request(wanted, resource))
            except ValueError as exc:
                raise _Malformed(f"{here}.resources.{which}.{resource}", str(exc)) from None
        gpus, cpu, mem = gpus + amounts[0], cpu + amounts[1], mem + amounts[2]
    if gpus > _MOST[GPU_RESOURCE] or cpu > _MOST["cpu"] or mem > _MOST["memory"]:
        raise _Malformed(f"{at}.spec.containers", "the containers together ask more than one node can have")
    status = _map(pod, "status", at)
    here = f"{at}.status"
    started = _time_of(status, "startTime", here)
    finished = math.nan
    for c, container_status in enumerate(_list(status, "containerStatuses", here)):
        state_at = f"{here}.containerStatuses[{c}]"
        state = _map(_object(container_status, state_at), "state", state_at)
        terminated = _map(state, "terminated", f"{state_at}.state")
        end = _time_of(terminated, "finishedAt", f"{state_at}.state.terminated")
        if not math.isnan(end):  # the latest finish of the pod's containers
            finished = end if math.isnan(finished) else max(finished, end)
    owner = None
    for o, reference in enumerate(_list(meta, "ownerReferences", f"{at}.metadata")):
        here = f"{at}.metadata.ownerReferences[{o}]"
        reference = _object(reference, here)
        if _text(reference, "kind", here) == "Job" and owner is None:
            owner = _text(reference, "name", here, required=True)
    labels = _map(meta, "labels", f"{at}.metadata")
    named = [_text(labels, key, f"{at}.metadata.labels") for key in JOB_LABELS]  # each checked
    owner = owner or next((name for name in named if name), None)
    phase = _text(status, "phase", f"{at}.status") or ""
    return _Pod(name, namespace, owner, created, started, finished, gpus, cpu, mem, phase.lower())


def read_kubectl_pods(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> PodTrace:
    """Read ``kubectl get pods -A -o json`` output (``.json`` or ``.json.gz``).

    Per pod: GPUs = the sum over containers of ``resources.requests`` (else ``limits``) of
    ``nvidia.com/gpu``; CPU and memory likewise; created = ``metadata.creationTimestamp``; started =
    ``status.startTime``; finished = the latest ``state.terminated.finishedAt`` of its containers. A pod
    still running has no finish: it runs until the latest time in the file (counted in the header
    as ``still_running``). Pods of one Job form one job: submit = first creation, run time = latest
    finish - latest start, nodes = pod count. Pods without GPUs, never started, or with times out of
    order are skipped and counted in ``skipped_invalid``; a malformed pod raises InputError naming the
    file, the line of its name and the field's path (``items[0].metadata.ownerReferences[0].name``), or
    with ``skip_bad_lines`` is skipped and counted. A pod is malformed when a field read has the wrong
    JSON type (text, object, list; a quantity is text or a number), when a time is before 1970 or after
    2242, a request is negative, NaN, infinite or more than one node can have (workload.jobtable's
    MAX_GPUS_PER_NODE, MAX_CPUS_PER_NODE, MAX_MEMORY_MIB_PER_NODE), or when it holds an integer of more
    than MAX_INTEGER_DIGITS digits anywhere; a time without a zone reads as UTC. Text that is not
    UTF-8 or not JSON, and a corrupt ``.gz``, are errors naming their line.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)
    document = _Document(decode_utf8(read_bytes(path), path), path)

    groups: dict[tuple[str, str], dict[str, Any]] = {}
    skipped = 0
    bad = SkippedLines() if skip_bad_lines else None
    latest = -math.inf
    items = list(document.items())  # the whole text is JSON before any pod is read
    for index, (start, end, item, huge) in enumerate(items):
        at = f"items[{index}]"
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        name = name if isinstance(name, str) and name else None
        # errors and jobs name the line of the pod's name (else of the item's start)
        name_at = document.text.find(json.dumps(name), start, end) if name else -1
        line = document.line(name_at if name_at >= 0 else start)
        try:
            found = _huge_at(item, at) if huge else None
            if found is not None:
                raise _Malformed(found[0], _huge_message(found[1]))
            pod = _read_pod(item, at)
        except _Malformed as exc:
            error = InputError(f"pod {name or index}: {exc.message}", path=path, line=line, field=exc.field)
            if bad is None:
                raise error from None
            bad.add(error)
            continue
        name, namespace, owner = pod.name, pod.namespace, pod.owner
        created, started, finished = pod.created, pod.started, pod.finished
        gpus, cpu, mem = pod.gpus, pod.cpu, pod.mem
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
                "line": line,
                "phase": pod.phase,
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
        bad_lines=bad.count if bad else 0,
        skipped_lines=tuple(bad.first) if bad else (),
        epoch_s=epoch if count else None,
        header={"still_running": str(still_running)},
        gpu_milli=milli,
        cpu_milli=cpu_milli,
        memory_mib=memory_mib,
    )
