"""Workloads written as Kueue users write them: Kubernetes manifests of batch Jobs, JobSets,
PyTorchJobs and MPIJobs, or a CSV of the same fields, one row per pod set.

What is read, as Kueue reads it (kubernetes-sigs/kueue v0.19):

- The LocalQueue, from the ``kueue.x-k8s.io/queue-name`` label (jobframework ``QueueNameForObject``);
  a job without it goes to the LocalQueue named ``default`` of its namespace, as Kueue's default
  LocalQueue does (``jobframework/defaults.go``: ``ApplyDefaultLocalQueue``), and where there is none
  Kueue does not manage it (``manageJobsWithoutQueueName: false``, the default).
- The priority (``pkg/util/priority/priority.go``): the ``kueue.x-k8s.io/priority-class`` label names a
  WorkloadPriorityClass, which wins; else the pod template's ``priorityClassName`` names a
  PriorityClass; else the scenario's default class.
- The pod sets and their counts (each integration's ``PodSets()``): a Job has one, of
  ``min(parallelism, completions)`` pods (``jobs/job/job_controller.go``: ``podsCount``; parallelism
  defaults to 1); a JobSet one per replicatedJob, of ``replicas`` x that count; a PyTorchJob or MPIJob
  one per replica type, of its ``replicas`` (default 1).
- A pod's requests, as kube-scheduler counts them (Kubernetes "Resource Management for Pods and
  Containers" and "Init Containers: Resource sharing within containers"): the larger of the sum over
  its containers (and sidecar init containers, ``restartPolicy: Always``) and the largest other init
  container, plus the pod's ``overhead``; a resource given only under ``limits`` has that as its
  request. ``cpu``, ``memory`` and ``nvidia.com/gpu`` are modelled; ``ephemeral-storage`` and
  ``hugepages-*`` are not (gpuplan's nodes do not count them); any other resource is refused.

What Kubernetes manifests do not say, gpuplan annotations say (on the job's ``metadata``):
``gpuplan.io/runtime`` (how long the job runs once all its pods are up: ``"90s"``, ``"2h"``) and
``gpuplan.io/created`` (when it is created, after the scenario's start; else its
``metadata.creationTimestamp``; else at the start). A job whose first container runs ``sleep N`` (as
Kueue's examples do: ``command: [sleep]``, ``args: [100s]``, or ``sh -c "sleep 60"``) runs N.

What changes scheduling but is not modelled yet is refused with the file, line and field, never
dropped: affinity, a tolerationSeconds that would evict pods from a pool they may use
(read_checked_list; one no pool's NoExecute taint makes count, such as the
node.kubernetes.io/not-ready and unreachable tolerations of kube-apiserver's
DefaultTolerationSeconds, is read), topology spread, other node selectors than a pool's, pod-set
groups and slices of Topology Aware Scheduling, partial admission, and pod sets of one workload
with other node selectors, tolerations or topology requests. The TAS requests
(``kueue.x-k8s.io/podset-required-topology``, ``-preferred-topology``,
``-unconstrained-topology``) are read.

A workload's pod sets that ask alike are merged into one (``ListedJob.pod_set``); pod sets that ask
otherwise (an MPIJob's launcher, a JobSet's driver) are its companions, each pod asking its own
(merge_pod_sets).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from gpuplan.errors import InputError
from gpuplan.scenario.kubernetes import (
    DEFAULT_LOCAL_QUEUE,
    Toleration,
    format_tolerations,
    parse_tolerations,
    timed_eviction,
    tolerates_all,
)
from gpuplan.scenario.source import Loc, Located, load_yaml_documents
from gpuplan.scenario.units import parse_duration
from gpuplan.workload.csvcolumns import Column, read_csv_columns
from gpuplan.workload.jobtable import (
    MAX_CPUS_PER_NODE,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_MIB_PER_NODE,
    MAX_NODES_PER_JOB,
    MAX_TIME_S,
    JobTable,
    Labels,
    format_companions,
)
from gpuplan.workload.pods import PodRequests

if TYPE_CHECKING:
    from gpuplan.scenario.kubernetes import KubernetesSettings
    from gpuplan.scenario.load import LoadedScenario
    from gpuplan.scenario.model import JobListWorkload

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
RUNTIME_ANNOTATION = "gpuplan.io/runtime"
CREATED_ANNOTATION = "gpuplan.io/created"
POOL_SELECTOR = "gpuplan.io/pool"  # a node selector naming a scenario pool
SHAPE_SELECTOR = "node.kubernetes.io/instance-type"  # OKE's label: the node's OCI shape
GPU = "nvidia.com/gpu"
IGNORED_RESOURCES = ("ephemeral-storage",)
TOLERATIONS = "tolerations"  # the field of a check on the pod sets' tolerations (a CSV's column)
DEFAULT_BACKOFF_LIMIT = 6  # a batch Job's spec.backoffLimit when unset (the Job API's default)
# Topology Aware Scheduling requests on a pod template (constants.PodSetRequiredTopologyAnnotation...)
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
# TAS features gpuplan does not model yet
UNMODELLED_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-group-name",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
    "kueue.x-k8s.io/podset-slice-required-topology-constraints",
)
PARTIAL_ADMISSION = "kueue.x-k8s.io/job-min-parallelism"
UNMODELLED_POD_FIELDS = ("affinity", "topologySpreadConstraints", "nodeName", "resourceClaims")
KINDS = {
    ("batch/v1", "Job"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
}
# Objects that configure Kueue: they belong in the scenario, not in the workload list.
KUEUE_OBJECTS = ("ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass")
# A manifest list of a few thousand jobs is a few megabytes; the YAML parser reads about 100 KB a
# second, so larger lists belong in the CSV form.
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
MAX_MANIFEST_VALUES = 4_000_000

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$")
_SUFFIX = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_SLEEP = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([smhd]?)$")  # GNU sleep's NUMBER[SUFFIX]
# (node label, value) -> the pool a node selector of it picks
Selectors = dict[tuple[str, str], str]
_SLEEP_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class PodSet:
    """Pods of one shape: ``count`` of them, each asking ``gpus``, ``cpu_milli`` and ``memory_mib``,
    on the pool its node selector names ("" for any)."""

    name: str
    count: int
    gpus: int
    cpu_milli: int
    memory_mib: int
    pool: str
    topology: str = ""  # "required=<level>", "preferred=<level>", "unconstrained" or "" (no TAS)
    tolerations: str = ""  # scenario.kubernetes.format_tolerations


@dataclass(frozen=True)
class ListedJob:
    """One workload of the list. ``created_s`` is seconds after the scenario's start, or None with
    ``created_at`` (an absolute creationTimestamp) or neither (created at the start)."""

    name: str
    namespace: str
    queue_name: str
    workload_priority_class: str
    priority_class: str
    created_s: float | None
    created_at: dt.datetime | None
    runtime_s: float
    deadline_s: float | None  # spec.activeDeadlineSeconds
    pod_set: PodSet  # the pod sets that ask alike, merged (merge_pod_sets)
    pod_sets: int  # how many they are
    line: int
    # lines of the fields a check against the scenario may name (a manifest's; a CSV row has one)
    field_lines: dict[str, int] = field(default_factory=dict, compare=False)
    companions: tuple[PodSet, ...] = ()  # pod sets that ask other requests (merge_pod_sets)
    # a batch Job's spec.backoffLimit: the pod failures (taint evictions) its controller retries;
    # None where pod failures are not modelled (other kinds, a Job's podFailurePolicy)
    backoff_limit: int | None = None


def merge_pod_sets(
    sets: list[PodSet], refuse: Callable[[int, str, str], Exception]
) -> tuple[PodSet, int, tuple[PodSet, ...]]:
    """A workload's pod sets as the model takes them: those that ask as the first one asking GPUs
    (or the first, when none does) merged into one, and the others as companions (an MPIJob's
    launcher, a JobSet's driver: each of their pods asks its own). All share one node selector,
    tolerations and topology request. ``refuse(i, field, message)`` is the error for pod set
    ``i``; returns (merged, how many merged, companions)."""
    # a pod set of no pods (replicas: 0) asks nothing
    main = next((s for s in sets if s.gpus and s.count), next((s for s in sets if s.count), sets[0]))
    request = (main.gpus, main.cpu_milli, main.memory_mib)
    merged, companions = [], []
    for i, other in enumerate(sets):
        if not other.count and other is not main:
            continue
        for name, field_name in (("pool", "pool"), ("topology", "topology"), ("tolerations", TOLERATIONS)):
            if getattr(other, name) != getattr(main, name):
                raise refuse(
                    i,
                    field_name,
                    f"pod sets {main.name!r} and {other.name!r} give different {name}: a workload's "
                    "pods are modelled with one node selector, topology request and tolerations",
                )
        if (other.gpus, other.cpu_milli, other.memory_mib) == request:
            merged.append(other)
        else:
            companions.append(other)
    pod_set = replace(main, name="+".join(s.name for s in merged), count=sum(s.count for s in merged))
    return pod_set, len(merged), tuple(companions)


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes ``resource.Quantity`` (``"500m"``, ``"200Mi"``, ``"1.5"``, ``2``, ``"1e3"``)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a quantity such as 500m, 2 or 200Mi, got {value!r}")
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"expected a quantity such as 500m, 2 or 200Mi, got {text!r}")
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    try:
        scale = Decimal(10) ** int(suffix[1:]) if suffix[:1] in ("e", "E") else _SUFFIX[suffix]
        result = number * scale
    except (InvalidOperation, OverflowError, ValueError):
        raise ValueError(f"a quantity out of range: {text!r}") from None
    if result < 0:
        raise ValueError(f"a quantity cannot be negative, got {text!r}")
    return result


class _Document:
    """One manifest and where its fields are: errors name the file, the line and the field path."""

    def __init__(self, located: Located, prefix: Loc = ()) -> None:
        self.located, self.prefix = located, prefix

    @property
    def path(self) -> Path:
        return self.located.path

    def line(self, loc: Loc = ()) -> int:
        return self.located.line_of((*self.prefix, *loc)) or 1

    def error(self, loc: Loc, message: str) -> InputError:
        field = ".".join(str(part) if isinstance(part, str) else f"[{part}]" for part in loc).replace(
            ".[", "["
        )
        return InputError(message, path=self.path, line=self.line(loc), field=field or None)

    def get(self, data: Any, loc: Loc, kind: type | tuple[type, ...], default: Any = None) -> Any:
        """``data[loc[-1]]`` (``data`` being the mapping at ``loc[:-1]``), checked to be of ``kind``."""
        if not isinstance(data, dict) or loc[-1] not in data or data[loc[-1]] is None:
            return default
        value = data[loc[-1]]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(
                {dict: "a mapping", list: "a list", str: "text", int: "a whole number"}.get(k, k.__name__)
                for k in kinds
            )
            raise self.error(loc, f"expected {names}, got {value!r}")
        return value

    def count(self, data: Any, loc: Loc, default: int) -> int:
        value = self.get(data, loc, int, default)
        if not 0 <= value <= MAX_NODES_PER_JOB:
            raise self.error(loc, f"expected from 0 to {MAX_NODES_PER_JOB:,}, got {value}")
        return int(value)


def _documents(path: Path) -> Iterator[_Document]:
    """Each manifest of the file, the items of a ``kind: List`` one by one."""
    for located in load_yaml_documents(
        path,
        max_bytes=MAX_MANIFEST_BYTES,
        max_values=MAX_MANIFEST_VALUES,
        usual="give a list of more than a few thousand jobs as CSV",
    ):
        data = located.data
        if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
            for index in range(len(data["items"])):
                yield _Document(Located(data["items"][index], located.lines, path), ("items", index))
        else:
            yield _Document(located)


def _pod_template_sets(doc: _Document, data: dict[str, Any], kind: str) -> list[tuple[str, int, Loc, Any]]:
    """(name, pod count, location of the pod template, pod template) of each pod set of the object."""

    def job_pods(job_spec: Any, at: Loc) -> int:
        # parallelism defaults to 1; completions unset means "any": parallelism pods
        parallelism = doc.count(job_spec, (*at, "parallelism"), 1)
        return min(parallelism, doc.count(job_spec, (*at, "completions"), parallelism))

    spec = doc.get(data, ("spec",), dict, {})
    if kind == "Job":
        return [("main", job_pods(spec, ("spec",)), ("spec", "template"), spec.get("template"))]
    if kind == "JobSet":
        replicated = doc.get(spec, ("spec", "replicatedJobs"), list, [])
        sets = []
        for index, rj in enumerate(replicated):
            at: Loc = ("spec", "replicatedJobs", index)
            name = doc.get(rj, (*at, "name"), str, f"replicated-job-{index}")
            replicas = doc.count(rj, (*at, "replicas"), 1)
            template = doc.get(rj, (*at, "template"), dict, {})
            job_spec = doc.get(template, (*at, "template", "spec"), dict, {})
            pods = job_pods(job_spec, (*at, "template", "spec"))
            sets.append(
                (name, replicas * pods, (*at, "template", "spec", "template"), job_spec.get("template"))
            )
        return sets
    key = "pytorchReplicaSpecs" if kind == "PyTorchJob" else "mpiReplicaSpecs"
    replica_specs = doc.get(spec, ("spec", key), dict, {})
    sets = []
    for name, replica in replica_specs.items():
        at = ("spec", key, str(name))
        sets.append(
            (str(name), doc.count(replica, (*at, "replicas"), 1), (*at, "template"), replica.get("template"))
        )
    return sets


def _container_requests(doc: _Document, container: Any, at: Loc) -> dict[str, Decimal]:
    resources = doc.get(container, (*at, "resources"), dict, {})
    requests: dict[str, Decimal] = {}
    for part in ("limits", "requests"):  # a resource only under limits has it as its request
        values = doc.get(resources, (*at, "resources", part), dict, {})
        for resource, value in values.items():
            where = (*at, "resources", part, str(resource))
            resource = str(resource)
            if resource in IGNORED_RESOURCES or resource.startswith("hugepages-"):
                continue
            if resource not in ("cpu", "memory", GPU):
                raise doc.error(where, f"resource {resource!r} is not modelled (cpu, memory and {GPU} are)")
            try:
                requests[resource] = parse_quantity(value)
            except ValueError as exc:
                raise doc.error(where, str(exc)) from None
            if resource == GPU and requests[resource] != requests[resource].to_integral_value():
                raise doc.error(where, f"{GPU} is counted in whole GPUs, got {value!r}")
    return requests


def _pod_requests(doc: _Document, pod: dict[str, Any], at: Loc) -> dict[str, Decimal]:
    """The pod's effective requests (see the module docstring)."""
    total: dict[str, Decimal] = {}
    largest_init: dict[str, Decimal] = {}
    for part in ("initContainers", "containers"):
        for index, container in enumerate(doc.get(pod, (*at, part), list, [])):
            where = (*at, part, index)
            if not isinstance(container, dict):
                raise doc.error(where, f"expected a container (a mapping), got {container!r}")
            requests = _container_requests(doc, container, where)
            sidecar = (
                part == "initContainers" and doc.get(container, (*where, "restartPolicy"), str) == "Always"
            )
            for resource, amount in requests.items():
                if part == "containers" or sidecar:
                    total[resource] = total.get(resource, Decimal(0)) + amount
                else:
                    largest_init[resource] = max(largest_init.get(resource, Decimal(0)), amount)
    for resource, amount in largest_init.items():
        total[resource] = max(total.get(resource, Decimal(0)), amount)
    overhead = doc.get(pod, (*at, "overhead"), dict, {})
    for resource, value in overhead.items():
        if str(resource) in ("cpu", "memory"):
            try:
                total[str(resource)] = total.get(str(resource), Decimal(0)) + parse_quantity(value)
            except ValueError as exc:
                raise doc.error((*at, "overhead", str(resource)), str(exc)) from None
    return total


def _pod_set(doc: _Document, name: str, count: int, at: Loc, template: Any, selectors: Selectors) -> PodSet:
    if not isinstance(template, dict):
        raise doc.error(at, "missing the pod template")
    metadata = doc.get(template, (*at, "metadata"), dict, {})
    annotations = doc.get(metadata, (*at, "metadata", "annotations"), dict, {})
    for annotation in UNMODELLED_ANNOTATIONS:
        if annotation in annotations:
            raise doc.error(
                (*at, "metadata", "annotations", annotation),
                "this Topology Aware Scheduling request (pod-set groups, slices) is not modelled yet",
            )
    topology = ""
    for annotation, mode in ((REQUIRED_TOPOLOGY, "required"), (PREFERRED_TOPOLOGY, "preferred")):
        if annotation in annotations:
            level = doc.get(annotations, (*at, "metadata", "annotations", annotation), str)
            if topology or not level:
                raise doc.error(
                    (*at, "metadata", "annotations", annotation), "one topology level is expected"
                )
            topology = f"{mode}={level}"
    if str(annotations.get(UNCONSTRAINED_TOPOLOGY, "")).lower() == "true":
        if topology:
            raise doc.error((*at, "metadata", "annotations", UNCONSTRAINED_TOPOLOGY), "one topology request")
        topology = "unconstrained"
    pod = doc.get(template, (*at, "spec"), dict, {})
    for unmodelled in UNMODELLED_POD_FIELDS:
        if pod.get(unmodelled):
            raise doc.error((*at, "spec", unmodelled), f"{unmodelled} is not modelled yet")
    scheduler = doc.get(pod, (*at, "spec", "schedulerName"), str, "default-scheduler")
    if scheduler != "default-scheduler":
        raise doc.error((*at, "spec", "schedulerName"), f"only kube-scheduler is modelled, not {scheduler!r}")
    pool = ""
    for key, value in doc.get(pod, (*at, "spec", "nodeSelector"), dict, {}).items():
        pool = selectors.get((str(key), str(value)), "")
        if not pool:
            known = ", ".join(f"{k}: {v}" for k, v in selectors) or "none"
            raise doc.error(
                (*at, "spec", "nodeSelector", str(key)),
                f"a node selector gpuplan cannot match to a pool (it matches {known}: an OCI shape only "
                "when one pool has it)",
            )
    tolerations = _tolerations(doc, pod, (*at, "spec", "tolerations"))
    requests = _pod_requests(doc, pod, (*at, "spec"))
    gpus, cpu, memory = (requests.get(r, Decimal(0)) for r in (GPU, "cpu", "memory"))
    where = (*at, "spec", "containers")
    if gpus > MAX_GPUS_PER_NODE:
        raise doc.error(
            where, f"{gpus} GPUs in one pod: at most {MAX_GPUS_PER_NODE} (a pod runs on one node)"
        )
    cpu_milli = math.ceil(cpu * 1000)
    memory_mib = math.ceil(memory / 2**20)
    if cpu_milli > MAX_CPUS_PER_NODE * 1000:
        raise doc.error(where, f"cpu {cpu} in one pod: at most {MAX_CPUS_PER_NODE:,}")
    if memory_mib > MAX_MEMORY_MIB_PER_NODE:
        raise doc.error(
            where, f"memory of {memory_mib:,} MiB in one pod: at most {MAX_MEMORY_MIB_PER_NODE:,}"
        )
    return PodSet(name, count, int(gpus), cpu_milli, memory_mib, pool, topology, tolerations)


def _tolerations(doc: _Document, pod: dict[str, Any], at: Loc) -> str:
    """The pod's tolerations as one text (read_checked_list refuses a tolerationSeconds that would
    evict the pods from a pool they may use, as that is not modelled)."""
    tolerations = []
    for index, item in enumerate(doc.get(pod, at, list, [])):
        where = (*at, index)
        if not isinstance(item, dict):
            raise doc.error(where, f"expected a toleration (a mapping), got {item!r}")
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
            raise doc.error((*where, "tolerationSeconds"), f"expected whole seconds, got {seconds!r}")
        fields = {k: v if k == "tolerationSeconds" else str(v) for k, v in item.items()}
        try:
            tolerations.append(Toleration.model_validate(fields))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise doc.error(
                (*where, *(str(part) for part in first["loc"])), f"{field}: {first['msg']}"
            ) from None
    return format_tolerations(tolerations)


def _duration(doc: _Document, loc: Loc, value: Any) -> float:
    try:
        return parse_duration(value)
    except PydanticCustomError as exc:
        raise doc.error(loc, exc.message()) from None


def _sleep_seconds(template: Any) -> float | None:
    """N when the pod's first container runs ``sleep N`` (directly or through ``sh -c``)."""
    containers = (template or {}).get("spec", {}).get("containers") if isinstance(template, dict) else None
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        return None
    words = [str(w) for part in ("command", "args") for w in (containers[0].get(part) or [])]
    if len(words) >= 2 and words[-2] == "-c" and words[0].rsplit("/", 1)[-1] in ("sh", "bash"):
        try:
            words = shlex.split(words[-1])
        except ValueError:
            return None
    if len(words) != 2 or words[0].rsplit("/", 1)[-1] != "sleep":
        return None
    match = _SLEEP.match(words[1])
    return float(match.group(1)) * _SLEEP_UNIT[match.group(2)] if match else None


def _manifest_job(doc: _Document, order: int, selectors: Selectors) -> ListedJob:
    data = doc.located.data
    if not isinstance(data, dict):
        raise doc.error((), "expected a Kubernetes object (a mapping with apiVersion and kind)")
    kind = doc.get(data, ("kind",), str, "")
    api = doc.get(data, ("apiVersion",), str, "")
    if kind in KUEUE_OBJECTS:
        raise doc.error(
            ("kind",), f"a {kind} belongs in the scenario (models.kubernetes.kueue), not in the job list"
        )
    if (api, kind) not in KINDS:
        known = ", ".join(f"{k} ({a})" for a, k in sorted(KINDS))
        raise doc.error(("kind",), f"{api} {kind} is not a workload gpuplan reads ({known})")
    metadata = doc.get(data, ("metadata",), dict, {})
    labels = doc.get(metadata, ("metadata", "labels"), dict, {})
    annotations = doc.get(metadata, ("metadata", "annotations"), dict, {})
    name = doc.get(metadata, ("metadata", "name"), str)
    if name is None:
        generate = doc.get(metadata, ("metadata", "generateName"), str)
        if generate is None:
            raise doc.error(("metadata",), "no name or generateName")
        name = f"{generate}{order}"  # the API server adds a random suffix; the file's order is stable
    namespace = doc.get(metadata, ("metadata", "namespace"), str, "default")
    if PARTIAL_ADMISSION in annotations:
        raise doc.error(
            ("metadata", "annotations", PARTIAL_ADMISSION), "partial admission is not modelled yet"
        )

    raw_sets = _pod_template_sets(doc, data, kind)
    sets = [
        _pod_set(doc, set_name, count, at, template, selectors) for set_name, count, at, template in raw_sets
    ]
    if not sets:
        raise doc.error(("spec",), "no pod sets (pod templates)")
    pod_set, merged, companions = merge_pod_sets(
        sets, lambda i, _field, message: doc.error(raw_sets[i][2], message)
    )
    pods = sum(s.count for s in sets)
    if not 0 < pods <= MAX_NODES_PER_JOB:
        raise doc.error(("spec",), f"{pods:,} pods: from 1 to {MAX_NODES_PER_JOB:,} are expected")

    templates = [template for _, _, _, template in raw_sets]
    priority_class = next(
        (
            str(t["spec"]["priorityClassName"])
            for t in templates
            if isinstance(t, dict) and isinstance(t.get("spec"), dict) and t["spec"].get("priorityClassName")
        ),
        "",
    )
    if RUNTIME_ANNOTATION in annotations:
        runtime = _duration(
            doc, ("metadata", "annotations", RUNTIME_ANNOTATION), annotations[RUNTIME_ANNOTATION]
        )
    else:
        slept = _sleep_seconds(templates[0])
        if slept is None:
            raise doc.error(
                ("metadata", "annotations"),
                f"no run time: give annotation {RUNTIME_ANNOTATION} (e.g. '2h'), or a first container "
                "that runs 'sleep N'",
            )
        runtime = slept
    if not 0 <= runtime <= MAX_TIME_S:
        raise doc.error(
            ("metadata", "annotations", RUNTIME_ANNOTATION), f"a run time out of range: {runtime}"
        )
    created_s: float | None = None
    created_at: dt.datetime | None = None
    if CREATED_ANNOTATION in annotations:
        created_s = _duration(
            doc, ("metadata", "annotations", CREATED_ANNOTATION), annotations[CREATED_ANNOTATION]
        )
    elif "creationTimestamp" in metadata and metadata["creationTimestamp"] is not None:
        stamp = metadata["creationTimestamp"]
        try:
            created_at = stamp if isinstance(stamp, dt.datetime) else dt.datetime.fromisoformat(str(stamp))
        except ValueError:
            raise doc.error(
                ("metadata", "creationTimestamp"), f"expected an RFC 3339 time, got {stamp!r}"
            ) from None
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=dt.UTC)
    deadline = None
    if kind == "Job" and doc.get(data["spec"], ("spec", "activeDeadlineSeconds"), int) is not None:
        deadline = float(data["spec"]["activeDeadlineSeconds"])
        if runtime > deadline:
            raise doc.error(
                ("spec", "activeDeadlineSeconds"),
                f"the job runs {runtime:g} s, past its activeDeadlineSeconds ({deadline:g}): the Job "
                "controller would fail it, which is not modelled",
            )
    backoff_limit = None
    if kind == "Job" and not data["spec"].get("podFailurePolicy"):
        backoff_limit = doc.count(data["spec"], ("spec", "backoffLimit"), DEFAULT_BACKOFF_LIMIT)
    queue = labels.get(QUEUE_LABEL) or annotations.get(QUEUE_LABEL) or ""
    where = {
        TOLERATIONS: (*raw_sets[0][2], "spec", "tolerations"),
        "metadata.namespace": ("metadata", "namespace"),
        "metadata.creationTimestamp": ("metadata", "creationTimestamp"),
        f"metadata.labels.{QUEUE_LABEL}": ("metadata", "labels", QUEUE_LABEL),
        f"metadata.labels.{WORKLOAD_PRIORITY_LABEL}": ("metadata", "labels", WORKLOAD_PRIORITY_LABEL),
    }
    return ListedJob(
        name=name,
        namespace=namespace,
        queue_name=str(queue),
        workload_priority_class=str(labels.get(WORKLOAD_PRIORITY_LABEL) or ""),
        priority_class=priority_class,
        created_s=created_s,
        created_at=created_at,
        runtime_s=runtime,
        deadline_s=deadline,
        pod_set=pod_set,
        pod_sets=merged,
        line=doc.line(),
        field_lines={key: doc.line(loc) for key, loc in where.items()},
        companions=companions,
        backoff_limit=backoff_limit,
    )


def read_manifests(path: Path, selectors: Selectors) -> list[ListedJob]:
    """The jobs of a YAML file of manifests (``---``-separated, or a ``kind: List``)."""
    jobs = [_manifest_job(doc, order, selectors) for order, doc in enumerate(_documents(path), start=1)]
    _check_unique(path, jobs)
    return jobs


CSV_COLUMNS = (
    Column("name", "text"),
    Column("namespace", "text", required=False),
    Column("queue_name", "text", required=False),
    Column("workload_priority_class", "text", required=False),
    Column("priority_class", "text", required=False),
    Column("created", "number", required=False, most=MAX_TIME_S),
    Column("runtime", "number", most=MAX_TIME_S),
    Column("pods", "whole", least=1, most=MAX_NODES_PER_JOB),
    Column("gpus", "whole", required=False, most=MAX_GPUS_PER_NODE),
    Column("cpu", "text", required=False),
    Column("memory", "text", required=False),
    Column("pool", "text", required=False),
    Column("topology", "text", required=False),
    Column("tolerations", "text", required=False),
)


def read_job_csv(path: Path, selectors: Selectors) -> list[ListedJob]:
    """The jobs of a CSV with a header naming these columns (any order; others are refused):
    ``name``, ``runtime`` (seconds) and ``pods`` (per pod set), and optionally ``namespace``
    (default ``default``), ``queue_name``, ``workload_priority_class``, ``priority_class``,
    ``created`` (seconds after the scenario's start), ``gpus``, ``cpu`` and ``memory`` (per pod, as
    Kubernetes quantities: ``500m``, ``16``, ``64Gi``), ``pool`` and ``topology`` (``required=<node
    label>``, ``preferred=<node label>`` or ``unconstrained``: Topology Aware Scheduling) and
    ``tolerations`` (``;``-separated ``key=value:Effect`` or ``key:Effect``). Rows of one
    namespace and name are the pod sets of one workload: they give the same job fields, and their
    requests are merged as merge_pod_sets says."""
    known = {column.name for column in CSV_COLUMNS}

    def check_header(header: tuple[str, ...]) -> None:
        for name in header:
            if name not in known:
                raise InputError(
                    f"unknown column (the columns are: {', '.join(sorted(known))})",
                    path=path,
                    line=1,
                    field=name,
                )

    table = read_csv_columns(path, CSV_COLUMNS, check_header=check_header)

    def text(name: str, default: str = "") -> list[str]:
        return table.text(name).values() if name in table else [default] * len(table.line)

    def number(name: str, default: float) -> list[float]:
        return table.number(name).tolist() if name in table else [default] * len(table.line)

    names, namespaces, queues = text("name"), text("namespace", "default"), text("queue_name")
    wpcs, pcs, pools_named = text("workload_priority_class"), text("priority_class"), text("pool")
    cpus, memories, topologies, tolerations = (
        text("cpu"),
        text("memory"),
        text("topology"),
        text("tolerations"),
    )
    created, runtime, pods, gpus = (
        number("created", 0.0),
        number("runtime", 0.0),
        number("pods", 1),
        number("gpus", 0),
    )
    jobs: dict[tuple[str, str], ListedJob] = {}
    sets: dict[tuple[str, str], list[tuple[PodSet, int]]] = {}  # each workload's pod sets, with their lines
    for row, line in enumerate(table.line.tolist()):

        def quantity(column: str, cell: str, scale: int, row_line: int = int(line)) -> int:
            if not cell:
                return 0
            try:
                return math.ceil(parse_quantity(cell) * scale)
            except ValueError as exc:
                raise InputError(str(exc), path=path, line=row_line, field=column) from None

        if not names[row]:
            raise InputError("a job needs a name", path=path, line=int(line), field="name")
        pool = pools_named[row]
        if pool and (POOL_SELECTOR, pool) not in selectors:
            names = [name for key, name in selectors if key == POOL_SELECTOR]
            raise InputError(
                f"no pool named {pool!r} (pools: {', '.join(names)})",
                path=path,
                line=int(line),
                field="pool",
            )
        pod_set = PodSet(
            names[row],
            int(pods[row]),
            int(gpus[row]),
            quantity("cpu", cpus[row], 1000),
            math.ceil(quantity("memory", memories[row], 1) / 2**20),
            pool,
            _csv_topology(path, int(line), topologies[row]),
            _csv_tolerations(path, int(line), tolerations[row]),
        )
        job = ListedJob(
            name=names[row],
            namespace=namespaces[row] or "default",
            queue_name=queues[row],
            workload_priority_class=wpcs[row],
            priority_class=pcs[row],
            created_s=created[row],
            created_at=None,
            runtime_s=runtime[row],
            deadline_s=None,
            pod_set=pod_set,
            pod_sets=1,
            line=int(line),
        )
        key = (job.namespace, job.name)
        if key not in jobs:
            jobs[key] = job
            sets[key] = [(pod_set, int(line))]
            continue
        earlier = jobs[key]
        if _alike(earlier) != _alike(job):
            raise InputError(
                f"another pod set of {job.namespace}/{job.name} (line {earlier.line}) gives other job "
                "fields: the rows of one workload differ only in their pods and requests",
                path=path,
                line=int(line),
                field="name",
            )
        sets[key].append((pod_set, int(line)))
    listed = []
    for key, job in jobs.items():
        rows = sets[key]

        def refuse(i: int, column: str, message: str, rows: list[tuple[PodSet, int]] = rows) -> InputError:
            return InputError(message, path=path, line=rows[i][1], field=column)

        merged, count, companions = merge_pod_sets([pod_set for pod_set, _ in rows], refuse)
        # a row alone is a batch Job of the default backoffLimit; several rows, a workload of pod
        # sets whose kind (and so its handling of pod failures) the CSV does not say
        backoff_limit = DEFAULT_BACKOFF_LIMIT if len(rows) == 1 else None
        listed.append(
            replace(job, pod_set=merged, pod_sets=count, companions=companions, backoff_limit=backoff_limit)
        )
    return listed


def _csv_topology(path: Path, line: int, cell: str) -> str:
    """A CSV ``topology`` cell: ``required=<level>``, ``preferred=<level>``, ``unconstrained`` or empty."""
    mode, _, level = cell.partition("=")
    if cell == "" or cell == "unconstrained" or (mode in ("required", "preferred") and level):
        return cell
    raise InputError(
        f"expected required=<node label>, preferred=<node label> or unconstrained, got {cell!r}",
        path=path,
        line=line,
        field="topology",
    )


_CSV_TOLERATION = re.compile(r"^([^=:]*)(?:=([^:]*))?(?::(NoSchedule|PreferNoSchedule|NoExecute))?$")


def _csv_tolerations(path: Path, line: int, cell: str) -> str:
    """A CSV ``tolerations`` cell: ``;``-separated ``key=value:Effect`` (operator Equal) or
    ``key:Effect`` (Exists), the effect optional; an empty key with Exists tolerates every taint."""
    tolerations = []
    for part in filter(None, (p.strip() for p in cell.split(";"))):
        match = _CSV_TOLERATION.match(part)
        if not match:
            raise InputError(
                f"expected key=value:Effect or key:Effect (the effect: NoSchedule, PreferNoSchedule or "
                f"NoExecute), got {part!r}",
                path=path,
                line=line,
                field="tolerations",
            )
        key, value, effect = match.group(1), match.group(2), match.group(3) or ""
        operator = "Equal" if value is not None else "Exists"
        tolerations.append(Toleration(key=key, operator=operator, value=value or "", effect=effect))
    return format_tolerations(tolerations)


def _alike(job: ListedJob) -> ListedJob:
    """What the rows of one workload must agree on: all but their pod set and line."""
    return replace(job, pod_set=_NO_POD_SET, line=0)


_NO_POD_SET = PodSet("", 0, 0, 0, 0, "")


def _check_unique(path: Path, jobs: list[ListedJob]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for job in jobs:
        key = (job.namespace, job.name)
        if key in seen:
            raise InputError(
                f"a second {job.namespace}/{job.name} (the first is at line {seen[key]}): Kubernetes refuses "
                "it (AlreadyExists)",
                path=path,
                line=job.line,
                field="metadata.name",
            )
        seen[key] = job.line


def pool_selectors(pools: list[tuple[str, str | None]]) -> Selectors:
    """The node selectors that pick each of the (name, OCI shape) ``pools``: ``gpuplan.io/pool:
    <name>``, and OKE's ``node.kubernetes.io/instance-type: <shape>`` for a shape one pool alone has."""
    selectors: Selectors = {(POOL_SELECTOR, name): name for name, _ in pools}
    shapes = [shape for _, shape in pools]
    for name, shape in pools:
        if shape is not None and shapes.count(shape) == 1:
            selectors[(SHAPE_SELECTOR, shape)] = name
    return selectors


def read_job_list(path: Path, selectors: Selectors) -> list[ListedJob]:
    """The jobs of ``path``: a CSV (``.csv``, ``.csv.gz``) or YAML manifests (anything else)."""
    if path.name.lower().endswith((".csv", ".csv.gz")):
        return read_job_csv(path, selectors)
    return read_manifests(path, selectors)


def listed_table(
    jobs: list[ListedJob], start: dt.datetime, kind: str, workload: str
) -> tuple[JobTable, PodRequests]:
    """The job table of ``jobs`` (in the list's order; ``start`` is the scenario's t = 0, no later
    than any creationTimestamp) and each job's per-pod CPU and memory requests."""
    origin = start if start.tzinfo else start.replace(tzinfo=dt.UTC)
    created = [
        j.created_s
        if j.created_s is not None
        else (j.created_at - origin).total_seconds()
        if j.created_at is not None
        else 0.0
        for j in jobs
    ]
    rows = len(jobs)

    def labels(values: list[str]) -> Labels:
        index: dict[str, int] = {}
        codes = np.array([index.setdefault(v, len(index)) for v in values], np.int32)
        return Labels(codes, tuple(index))

    table = JobTable(
        job_id=np.arange(1, rows + 1, dtype=np.int64),
        user=labels([j.namespace for j in jobs]),
        team=labels([j.namespace for j in jobs]),
        submit_s=np.array(created, np.float64),
        duration_s=np.array([j.runtime_s for j in jobs], np.float64),
        time_limit_s=np.array([np.nan if j.deadline_s is None else j.deadline_s for j in jobs], np.float64),
        nodes=np.array([j.pod_set.count for j in jobs], np.int32),
        gpus_per_node=np.array([j.pod_set.gpus for j in jobs], np.int32),
        cpus_per_node=np.array([-(-j.pod_set.cpu_milli // 1000) for j in jobs], np.int32),
        mem_per_node=np.array([j.pod_set.memory_mib for j in jobs], np.float64),
        partition=labels([j.pod_set.pool for j in jobs]),
        qos=Labels.constant("normal", rows),
        kind=Labels.constant(kind, rows),
        state=Labels.constant("completed", rows),
        source_line=np.array([j.line for j in jobs], np.int64),
        workload=Labels.constant(workload, rows),
        name=labels([f"{j.namespace}/{j.name}" for j in jobs]),
        local_queue=labels([j.queue_name for j in jobs]),  # "": the namespace's default LocalQueue
        workload_priority_class=labels([j.workload_priority_class for j in jobs]),
        priority_class=labels([j.priority_class for j in jobs]),
        topology_request=labels([j.pod_set.topology for j in jobs]),
        tolerations=labels([j.pod_set.tolerations for j in jobs]),
        pod_sets=np.array([j.pod_sets for j in jobs], np.int32),
        backoff_limit=np.array([-1 if j.backoff_limit is None else j.backoff_limit for j in jobs], np.int32),
        companion_pods=labels(
            [
                format_companions([(c.count, c.gpus, c.cpu_milli, c.memory_mib) for c in j.companions])
                for j in jobs
            ]
        ),
    )
    requests = PodRequests(
        cpu_milli=np.array([j.pod_set.cpu_milli for j in jobs], np.int64),
        memory_mib=np.array([j.pod_set.memory_mib for j in jobs], np.int64),
    )
    return table, requests


def read_checked_list(loaded: LoadedScenario, workload: JobListWorkload) -> list[ListedJob]:
    """The jobs of a scenario's workload list, each checked against the scenario: created no earlier
    than its start, its namespace a team, and the LocalQueue and priority classes it names defined
    (InputError at the job's line of the list)."""
    path = loaded.resolve(workload.jobs)
    listed = read_job_list(path, pool_selectors([(pool.name, pool.shape) for pool in loaded.pools]))
    scenario = loaded.scenario
    teams = [team.name for team in scenario.teams]
    kubernetes = scenario.models.kubernetes
    kueue = kubernetes.kueue
    workload_classes = [c.name for c in kueue.workloadPriorityClasses]
    classes = [c.name for c in kubernetes.priorities.classes]
    start = scenario.start if scenario.start.tzinfo else scenario.start.replace(tzinfo=dt.UTC)
    levels = {level.nodeLabel for topology in kubernetes.topologies for level in topology.levels}

    def refuse(job: ListedJob, field: str, message: str) -> InputError:
        line = job.field_lines.get(field, job.line)
        return InputError(f"{job.namespace}/{job.name}: {message}", path=path, line=line, field=field)

    for job in listed:
        if job.created_at is not None and job.created_at < start:
            message = (
                f"created at {job.created_at.isoformat()}, before the scenario's start ({start.isoformat()})"
            )
            raise refuse(job, "metadata.creationTimestamp", message)
        if job.namespace not in teams:
            message = f"namespace {job.namespace!r} is not a team of the scenario (teams: {', '.join(teams)})"
            raise refuse(job, "metadata.namespace", message)
        queue = job.queue_name or DEFAULT_LOCAL_QUEUE
        # without the label and a default LocalQueue Kueue does not manage the job (its pods go
        # straight to kube-scheduler); a LocalQueue named that does not exist is a mistake
        if job.queue_name and kueue.enable and kueue.cluster_queue_of(job.namespace, queue) is None:
            message = (
                f"no LocalQueue {queue!r} in namespace {job.namespace!r} "
                "(models.kubernetes.kueue.localQueues, or a ClusterQueue's teams for 'default')"
            )
            raise refuse(job, f"metadata.labels.{QUEUE_LABEL}", message)
        if job.workload_priority_class and job.workload_priority_class not in workload_classes:
            message = (
                f"no WorkloadPriorityClass {job.workload_priority_class!r} "
                f"(models.kubernetes.kueue.workloadPriorityClasses: {', '.join(workload_classes) or 'none'})"
            )
            raise refuse(job, f"metadata.labels.{WORKLOAD_PRIORITY_LABEL}", message)
        level = job.pod_set.topology.partition("=")[2]
        if level and level not in levels:
            message = (
                f"no Topology has the level {level!r} (models.kubernetes.topologies: "
                f"{', '.join(sorted(levels)) or 'none'})"
            )
            raise refuse(job, "spec.template.metadata.annotations", message)
        evicted = _timed_eviction(job, kubernetes, [pool.name for pool in loaded.pools])
        if evicted:
            raise refuse(job, TOLERATIONS, evicted)
        by_topology = _companions_by_topology(job, kubernetes, [pool.name for pool in loaded.pools])
        if by_topology:
            raise refuse(job, "spec", by_topology)
        if job.priority_class and job.priority_class not in classes:
            message = (
                f"no PriorityClass {job.priority_class!r} (models.kubernetes.priorities.classes: "
                f"{', '.join(classes)})"
            )
            raise refuse(job, "spec.template.spec.priorityClassName", message)
    return listed


def _timed_eviction(job: ListedJob, kubernetes: KubernetesSettings, pools: list[str]) -> str:
    """Why the job's pods would be evicted from a pool they may use by a NoExecute taint they
    tolerate for tolerationSeconds, where what follows is not modelled ("" if it is, or if they
    would not be): a batch Job's controller retries evicted pods up to its backoffLimit, which the
    model follows; other kinds' failure policies are not modelled. Its pods may use a pool its node
    selector allows whose taints they tolerate, with the flavor's tolerations when Kueue manages
    the job (those come after the pod's own, and give no tolerationSeconds), and with
    ExtendedResourceToleration's."""
    own = parse_tolerations(job.pod_set.tolerations)
    if job.backoff_limit is not None or all(t.tolerationSeconds is None for t in own):
        return ""  # a batch Job's evicted pods are modelled (its controller's backoffLimit)
    managed = _cluster_queue(job, kubernetes) is not None
    # the pods asking GPUs get ExtendedResourceToleration's, others do not
    asks_gpus = {s.gpus > 0 for s in (job.pod_set, *job.companions)}
    for node_pool, gpu_pods in ((p, g) for p in kubernetes.nodePools for g in sorted(asks_gpus)):
        if job.pod_set.pool not in ("", node_pool.pool) or node_pool.pool not in pools:
            continue
        flavor = node_pool.flavorTolerations if managed else []
        added = (
            [Toleration(key=GPU, operator="Exists")]
            if kubernetes.extendedResourceToleration and gpu_pods
            else []
        )
        if not tolerates_all([*own, *flavor, *added], node_pool.taints):
            continue
        found = timed_eviction([*own, *flavor, *added], node_pool.taints)
        if found is not None:
            taint, seconds = found
            value = f"={taint.value}" if taint.value else ""
            return (
                f"its pods tolerate pool {node_pool.pool!r}'s taint {taint.key}{value}:NoExecute for "
                f"{seconds} s (tolerationSeconds), after which the taint-eviction controller would evict "
                "them; what its controller then does (a JobSet's failurePolicy, the training operator's "
                "restartPolicy, a Job's podFailurePolicy) is not modelled, a batch Job's backoffLimit is: "
                "drop tolerationSeconds, or keep the job off that pool"
            )
    return ""


def _cluster_queue(job: ListedJob, kubernetes: KubernetesSettings) -> str | None:
    """The ClusterQueue of the job, None when Kueue does not manage it."""
    kueue = kubernetes.kueue
    return (
        kueue.cluster_queue_of(job.namespace, job.queue_name or DEFAULT_LOCAL_QUEUE) if kueue.enable else None
    )


def _companions_by_topology(job: ListedJob, kubernetes: KubernetesSettings, pools: list[str]) -> str:
    """Why the model cannot place the job ("" if it can): it has companion pod sets and its
    ClusterQueue has a Topology Aware Scheduling flavor, where Kueue finds each pod set its own
    topology assignment (``FindTopologyAssignmentsForWorkload``), which is modelled for a
    workload's pods asking alike only."""
    queue = _cluster_queue(job, kubernetes) if job.companions else None
    if queue is None:
        return ""
    listed = {q.name: [f.name for f in q.flavors] for q in kubernetes.kueue.clusterQueues}
    flavors = listed.get(queue, pools)  # the implicit ClusterQueue "default" has every pool
    tas = [p.pool for p in kubernetes.nodePools if p.topologyName and p.pool in flavors]
    if not tas:
        return ""
    return (
        f"its pod sets {', '.join(repr(c.name) for c in job.companions)} ask other requests than "
        f"{job.pod_set.name!r}, and its ClusterQueue {queue!r} has Topology Aware Scheduling flavors "
        f"({', '.join(tas)}): a topology for pod sets that ask differently is not modelled"
    )
