"""The normalised job table every trace reader and workload generator produces.

One NumPy array per field (the simulation's hot loops read these directly); text fields are
dictionary-encoded (integer codes into a tuple of labels), which is also how they go to Arrow.
Times are seconds from the start of the trace. Fields follow DESIGN.md:
``job_id, user, team, submit_s, duration_s, time_limit_s, nodes, gpus_per_node, cpus_per_node,
mem_per_node, partition, qos, kind, state``, plus ``source_line`` for error messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

Float64 = npt.NDArray[np.float64]
Int64 = npt.NDArray[np.int64]
Int32 = npt.NDArray[np.int32]
Bool = npt.NDArray[np.bool_]

# What a trace may state, at most: far past any real machine, so that only nonsense is refused (a
# sign error, an overflow, 1e308), and small enough that every figure fits its column (int32 counts)
# and sums of them stay exact in float64. A reader refuses a line past these as a malformed one.
# Times: seconds, and Unix times from 1970 (a GPU trace has nothing earlier) up to 2^33 s (year 2242;
# also 272 years as a duration, longer than any time limit).
MAX_TIME_S = float(2**33)
# GPUs (or SWF processors) of one job: 2^24 = 16.8 M, above the cores of Sunway TaihuLight (10.6 M),
# the largest machine by count; the largest GPU clusters have about 200 k GPUs.
MAX_GPUS_PER_JOB = 2**24
# Nodes of one job: 2^20 = 1 M, ten times the nodes of any machine built (Sequoia: 98,304).
MAX_NODES_PER_JOB = 2**20
# CPUs of one job: 2^26 = 67 M, six times TaihuLight's cores.
MAX_CPUS_PER_JOB = 2**26
# GPUs of one node (or one pod, which runs on one node): a server has 8 or 16, an NVL72 rack 72.
MAX_GPUS_PER_NODE = 1024
# CPUs of one node (or pod): the largest single systems have a few thousand (HPE Superdome Flex:
# 896 cores, 1,792 threads).
MAX_CPUS_PER_NODE = 2**16
# Memory of one node (or pod), MiB: 2^30 MiB = 1 PiB; the largest single systems have 48 TiB.
MAX_MEMORY_MIB_PER_NODE = 2**30
# Memory of one job, MiB: 2^36 MiB = 64 PiB, seven times Frontier's memory.
MAX_MEMORY_MIB_PER_JOB = 2**36


def out_of_range(value: float, least: float, most: float) -> bool:
    """Whether ``value`` is NaN, infinite or outside [least, most]: a figure no trace can mean."""
    return not (least <= value <= most)  # NaN compares False


def range_text(least: float, most: float) -> str:
    """``from 0 to 16,777,216``, as error messages say a bound."""

    def amount(value: float) -> str:
        return f"{value:,.0f}" if value == int(value) else f"{value:,g}"

    return f"from {amount(least)} to {amount(most)}"


def unique_columns(keys: npt.NDArray[Any]) -> tuple[Int64, Int64]:
    """The distinct columns of the integer rows ``keys`` (k x n) in lexicographic order, and each
    column's index among them: ``np.unique(keys, axis=1, return_inverse=True)``, by one mixed-radix
    key per column where the rows' ranges allow (NumPy sorts the columns as structured elements,
    compared field by field: 1.5 s for a million pairs against 0.09 s as one int64 key)."""
    rows = np.asarray(keys, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] == 0:
        distinct, inverse = np.unique(rows, axis=1, return_inverse=True)
        return distinct.astype(np.int64), inverse.reshape(-1).astype(np.int64)
    low, high = rows.min(axis=1), rows.max(axis=1)
    spans = [int(h) - int(lo) + 1 for lo, h in zip(low.tolist(), high.tolist(), strict=True)]
    radix = 1
    for span in spans:
        radix *= span
    if radix >= 2**62:  # too wide for one key
        distinct, inverse = np.unique(rows, axis=1, return_inverse=True)
        return distinct.astype(np.int64), inverse.reshape(-1).astype(np.int64)
    combined = np.zeros(rows.shape[1], dtype=np.int64)
    for row, least, span in zip(rows, low.tolist(), spans, strict=True):
        combined = combined * span + (row - least)
    keys_found, inverse = np.unique(combined, return_inverse=True)
    distinct = np.empty((rows.shape[0], len(keys_found)), dtype=np.int64)
    for r in range(rows.shape[0] - 1, -1, -1):
        distinct[r] = keys_found % spans[r] + int(low[r])
        keys_found = keys_found // spans[r]
    return distinct, inverse.reshape(-1).astype(np.int64)


def split_gpus(gpus: npt.NDArray[Any], gpus_per_node: int) -> tuple[Int32, Int32]:
    """Nodes and GPUs per node for jobs asking ``gpus`` GPUs in all, on nodes of ``gpus_per_node``:
    ceil(gpus / gpus_per_node) nodes with ceil(gpus / nodes) GPUs each (a uniform request, as
    ``--nodes=N --gpus-per-node=G`` is in Slurm)."""
    total = np.ceil(np.asarray(gpus)).astype(np.int64)
    nodes = np.maximum(-(-total // gpus_per_node), 1)
    return nodes.astype(np.int32), (-(-total // nodes)).astype(np.int32)


@dataclass(frozen=True)
class Labels:
    """A dictionary-encoded text column: ``labels[codes[i]]`` is row i's value."""

    codes: Int32
    labels: tuple[str, ...]

    @classmethod
    def constant(cls, value: str, rows: int) -> Labels:
        return cls(np.zeros(rows, dtype=np.int32), (value,))

    @classmethod
    def from_keys(cls, keys: npt.NDArray[Any], name_of: Any) -> Labels:
        """Encode integer keys (e.g. SWF user numbers); ``name_of(key)`` gives each distinct label."""
        distinct, codes = np.unique(keys, return_inverse=True)
        index: dict[str, int] = {}  # several keys may share a label
        remap = np.array([index.setdefault(name_of(int(k)), len(index)) for k in distinct], dtype=np.int32)
        return cls(remap[codes.reshape(-1)] if len(distinct) else codes.astype(np.int32), tuple(index))

    def __len__(self) -> int:
        return len(self.codes)

    def values(self) -> list[str]:
        return [self.labels[c] for c in self.codes.tolist()]

    def take(self, rows: npt.NDArray[Any]) -> Labels:
        return Labels(self.codes[rows], self.labels)

    def to_arrow(self) -> pa.DictionaryArray:
        import pyarrow as pa

        return pa.DictionaryArray.from_arrays(pa.array(self.codes), pa.array(self.labels, pa.string()))

    @classmethod
    def concat(cls, parts: Sequence[Labels]) -> Labels:
        """Rows of all ``parts`` in order, with one shared dictionary (in order of first appearance)."""
        index: dict[str, int] = {}
        codes = [
            np.array([index.setdefault(label, len(index)) for label in part.labels], np.int32)[part.codes]
            if len(part.labels)
            else part.codes
            for part in parts
        ]
        return cls(np.concatenate(codes).astype(np.int32) if codes else np.zeros(0, np.int32), tuple(index))


# Optional text columns, "" for every job when absent.
TEXT_COLUMNS = (
    "workload",
    "name",
    "local_queue",
    "workload_priority_class",
    "priority_class",
    "topology_request",
    "tolerations",
    "companion_pods",
)


def format_companions(pod_sets: Sequence[tuple[int, int, int, int]]) -> str:
    """Companion pod sets (pods, GPUs, CPU millicores, memory MiB per pod) as one text, the job
    table's ``companion_pods`` column; read back by parse_companions."""
    return ";".join(f"{pods}x{gpus}g/{cpu}m/{memory}Mi" for pods, gpus, cpu, memory in pod_sets)


def parse_companions(text: str) -> list[tuple[int, int, int, int]]:
    """The (pods, GPUs, CPU millicores, memory MiB) of each pod set format_companions wrote."""
    result = []
    for part in filter(None, text.split(";")):
        pods, _, rest = part.partition("x")
        gpus, cpu, memory = rest.split("/")
        result.append(
            (
                int(pods),
                int(gpus.removesuffix("g")),
                int(cpu.removesuffix("m")),
                int(memory.removesuffix("Mi")),
            )
        )
    return result


def companion_gpus(companions: Labels) -> Int64:
    """Each job's GPUs in its companion pod sets (a ``companion_pods`` column)."""
    per_label = np.array(
        [sum(pods * gpus for pods, gpus, _, _ in parse_companions(text)) for text in companions.labels],
        np.int64,
    )
    return per_label[companions.codes] if len(per_label) else np.zeros(len(companions), np.int64)


@dataclass(frozen=True)
class JobTable:
    """Jobs as columns. ``time_limit_s`` and ``mem_per_node`` are NaN where unknown;
    ``cpus_per_node`` is 0 where unknown. A job's GPUs are ``nodes * gpus_per_node``, plus those
    of its companion pod sets (``companion_pods``: a Kubernetes workload's pod sets asking other
    requests)."""

    job_id: Int64
    user: Labels
    team: Labels
    submit_s: Float64
    duration_s: Float64
    time_limit_s: Float64
    nodes: Int32
    gpus_per_node: Int32
    cpus_per_node: Int32
    mem_per_node: Float64  # MB
    partition: Labels
    qos: Labels
    kind: Labels
    state: Labels  # final state recorded in the trace
    source_line: Int64  # line of the input file each job came from (0 when generated)
    # Optional columns: None means "not recorded" for every job.
    workload: Labels | None = None  # the scenario workload a job comes from
    checkpoint_s: Float64 | None = None  # checkpoint interval (NaN: never checkpoints)
    # submitted before it became eligible at submit_s (sbatch --begin, a dependency)
    submitted_early: Bool | None = None
    cpus_per_task: Int32 | None = None  # sbatch --cpus-per-task (0: none asked)
    # when sbatch ran, its SubmitTime (a submitted_early job's is before submit_s; NaN: submit_s)
    submitted_s: Float64 | None = None
    # A job of an explicit Kubernetes workload list (workload.kueue_jobs): its "namespace/name", the
    # LocalQueue it names, its WorkloadPriorityClass and its pods' PriorityClass ("" where none)
    name: Labels | None = None
    local_queue: Labels | None = None
    workload_priority_class: Labels | None = None
    priority_class: Labels | None = None
    # its Topology Aware Scheduling request: "required=<node label>", "preferred=<...>", "unconstrained"
    topology_request: Labels | None = None
    tolerations: Labels | None = None  # its pods' tolerations (scenario.kubernetes.format_tolerations)
    # its pod sets that ask GPUs (a Kueue Workload's podSets), merged as they ask alike (1: one)
    pod_sets: Int32 | None = None
    # a Kubernetes batch Job's spec.backoffLimit: the pod failures its controller retries (-1: no
    # batch Job, or one whose pod failures are not modelled)
    backoff_limit: Int32 | None = None
    # its pods beyond ``nodes``: pod sets that ask other requests (an MPIJob's launcher, a JobSet's
    # driver, a RayJob's head), as format_companions writes them ("": none)
    companion_pods: Labels | None = None

    def column(self, name: str) -> Labels | npt.NDArray[Any]:
        """A column, with optional columns filled with their defaults ("", NaN, False) when absent."""
        value = getattr(self, name)
        if value is not None:
            return value  # type: ignore[no-any-return]
        if name in TEXT_COLUMNS:
            return self.text(name)
        if name == "submitted_early":
            return np.zeros(len(self), dtype=bool)
        if name == "cpus_per_task":
            return np.zeros(len(self), dtype=np.int32)
        if name == "pod_sets":
            return np.ones(len(self), dtype=np.int32)
        if name == "backoff_limit":
            return np.full(len(self), -1, dtype=np.int32)
        return np.full(len(self), np.nan)

    def text(self, name: str) -> Labels:
        """A text column (one of TEXT_COLUMNS), "" for every job when absent."""
        assert name in TEXT_COLUMNS, name
        value = getattr(self, name)
        return value if value is not None else Labels.constant("", len(self))

    def __post_init__(self) -> None:
        rows = {f.name: len(getattr(self, f.name)) for f in fields(self) if getattr(self, f.name) is not None}
        if len(set(rows.values())) > 1:
            raise ValueError(f"job table columns differ in length: {rows}")

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def gpus(self) -> Int64:
        gpus: Int64 = self.nodes.astype(np.int64) * self.gpus_per_node
        return gpus if self.companion_pods is None else gpus + companion_gpus(self.companion_pods)

    def take(self, rows: npt.NDArray[Any]) -> JobTable:
        """The jobs at ``rows`` (an index or boolean array), in that order."""
        taken: dict[str, Any] = {}
        for f in fields(self):
            column = getattr(self, f.name)
            if column is not None:
                taken[f.name] = column.take(rows) if isinstance(column, Labels) else column[rows]
        return JobTable(**taken)

    @classmethod
    def concat(cls, tables: Sequence[JobTable]) -> JobTable:
        """Rows of all ``tables`` in order; text columns get a shared dictionary."""
        columns: dict[str, Any] = {}
        for f in fields(cls):
            if all(getattr(t, f.name) is None for t in tables):
                continue
            parts = [t.column(f.name) for t in tables]
            label_parts = [part for part in parts if isinstance(part, Labels)]
            if label_parts:
                columns[f.name] = Labels.concat(label_parts)
            else:
                columns[f.name] = np.concatenate([part for part in parts if not isinstance(part, Labels)])
        return cls(**columns)

    def queue_order(self) -> Int64:
        """Indices ordering jobs by submit time, then job id (FCFS queue order); stable for ties."""
        return np.lexsort((self.job_id, self.submit_s)).astype(np.int64)

    def to_arrow(self) -> pa.Table:
        import pyarrow as pa

        columns: dict[str, Any] = {}
        for f in fields(self):
            column = getattr(self, f.name)
            if column is not None:
                columns[f.name] = column.to_arrow() if isinstance(column, Labels) else pa.array(column)
        return pa.table(columns)

    @classmethod
    def build(
        cls,
        *,
        job_id: Sequence[int] | Int64,
        submit_s: Sequence[float] | Float64,
        duration_s: Sequence[float] | Float64,
        nodes: Sequence[int] | Int32,
        gpus_per_node: Sequence[int] | Int32 | int = 1,
        time_limit_s: Sequence[float] | Float64 | None = None,
        team: Sequence[str] | None = None,
        user: Sequence[str] | None = None,
        qos: Sequence[str] | None = None,
        kind: str = "batch",
        partition: Sequence[str] | None = None,
        checkpoint_s: Sequence[float] | None = None,
    ) -> JobTable:
        """A table from plain sequences, for generators and tests; unknown fields get defaults."""
        ids = np.asarray(job_id, dtype=np.int64)
        rows = len(ids)

        def text(values: Sequence[str] | None, default: str) -> Labels:
            if values is None:
                return Labels.constant(default, rows)
            labels, codes = np.unique(np.asarray(values, dtype=object), return_inverse=True)
            return Labels(codes.astype(np.int32), tuple(str(v) for v in labels))

        limits = np.full(rows, np.nan) if time_limit_s is None else np.asarray(time_limit_s, np.float64)
        return cls(
            job_id=ids,
            user=text(user, "unknown"),
            team=text(team, "unknown"),
            submit_s=np.asarray(submit_s, dtype=np.float64),
            duration_s=np.asarray(duration_s, dtype=np.float64),
            time_limit_s=limits,
            nodes=np.asarray(nodes, dtype=np.int32),
            gpus_per_node=np.broadcast_to(np.asarray(gpus_per_node, dtype=np.int32), (rows,)).copy(),
            cpus_per_node=np.zeros(rows, dtype=np.int32),
            mem_per_node=np.full(rows, np.nan),
            partition=text(partition, ""),
            qos=text(qos, "normal"),
            kind=Labels.constant(kind, rows),
            state=Labels.constant("completed", rows),
            source_line=np.zeros(rows, dtype=np.int64),
            checkpoint_s=None if checkpoint_s is None else np.asarray(checkpoint_s, dtype=np.float64),
        )
