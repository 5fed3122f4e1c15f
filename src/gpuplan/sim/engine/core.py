"""The batch engine's Python side: arrays in, schedule out.

The event loop itself is compiled (``_core/engine.c``): it knows time, events (job arrivals and
ends) and resources (the GPUs of a pool's nodes), and calls pieces chosen by the names Slurm users
know (``_batchcore.pieces()``: ``sched/backfill``, ``select/cons_tres``, ``priority/multifactor``,
``preempt/qos``, ...; their C is in ``sim/slurm/_core``). At each instant it applies all job ends,
then all arrivals, then one scheduling pass. Each piece gets one settings object whose
``for_engine()`` mapping the piece reads by name. A job asks N nodes and starts on all of them at
once; one larger than the pool is rejected at arrival and never runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, Self

import numpy as np
import numpy.typing as npt

from gpuplan.sim.engine import _batchcore
from gpuplan.workload.jobtable import Bool, Float64, Int32, Int64

if TYPE_CHECKING:
    import pyarrow as pa

    from gpuplan.sim.cluster import Pool

# Reasons a QoS limit held a job (engine codes 1..3), as Slurm's squeue shows them.
HELD_REASONS = ("", "QOSMaxGRESPerUser", "QOSMaxJobsPerUser", "QOSGrpGRES")


def compiled_pieces() -> dict[str, list[str]]:
    """The compiled pieces: for each kind (a keyword of ``_batchcore.simulate``), its plugins' names."""
    return _batchcore.pieces()


class EnginePiece(Protocol):
    """One piece's inputs: ``take`` keeps the rows of the jobs the engine runs, ``for_engine`` gives
    the settings the compiled piece reads by name (with ``plugin``, its name, when the kind has
    several)."""

    def take(self, rows: npt.NDArray[np.int64]) -> Self: ...

    def for_engine(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class PieceInputs:
    """A piece that needs no class of its own: its plugin name, its settings by name and its per-job
    arrays by name (e.g. the scheduling pass: ``sched/backfill``, its SchedulerParameters, the jobs'
    users for ``bf_max_job_user``)."""

    plugin: str
    settings: Mapping[str, float | int | bool] = field(default_factory=dict)
    per_job: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)

    def take(self, rows: npt.NDArray[np.int64]) -> PieceInputs:
        return replace(self, per_job={name: values[rows] for name, values in self.per_job.items()})

    def for_engine(self) -> dict[str, object]:
        arrays = {name: np.ascontiguousarray(values) for name, values in self.per_job.items()}
        return {"plugin": self.plugin, **self.settings, **arrays}


@dataclass(frozen=True)
class BatchJobs:
    """What the engine needs of each job, in arrival order (the FCFS queue order).

    ``run_s`` is how long the job holds its nodes; ``estimate_s`` is what the scheduler believes
    (for backfill), e.g. the time limit."""

    job_id: Int64
    submit_s: Float64
    run_s: Float64
    estimate_s: Float64
    nodes: Int32
    gpus_per_node: Int32


@dataclass(frozen=True)
class CpusMemory:
    """CPUs and memory counted on each node (select/cons_tres, ``SelectTypeParameters=CR_Core`` or
    ``CR_Core_Memory``): every node has ``node_cpus`` CPUs and ``node_mem_mb`` MB; a job sharing
    nodes holds ``cpus_per_node`` CPUs and ``mem_per_node_mb`` MB (0: memory not consumable) on each
    of its nodes, and ``cpu_step`` is its ``--cpus-per-task`` (1: none), by which select measures a
    node's free CPUs. Per job, aligned with the jobs."""

    node_cpus: int
    node_mem_mb: int
    cpus_per_node: Int32
    cpu_step: Int32
    mem_per_node_mb: Int32

    def take(self, rows: npt.NDArray[np.int64]) -> CpusMemory:
        return replace(
            self,
            cpus_per_node=self.cpus_per_node[rows],
            cpu_step=self.cpu_step[rows],
            mem_per_node_mb=self.mem_per_node_mb[rows],
        )


@dataclass(frozen=True)
class Timeline:
    """Cluster state after each instant's scheduling pass."""

    time_s: Float64
    busy_gpus: Int64
    queued_jobs: Int32
    nodes_up: Int32 | None = None  # None: every node of the pool, all the time
    # CPUs and memory (MB) running jobs hold, where the run counts them (CpusMemory)
    busy_cpus: Int64 | None = None
    busy_mem_mb: Int64 | None = None


@dataclass(frozen=True)
class Lending:
    """Nodes of a pool lent to another side (hybrid lending): at ``time_s[k]``, ``delta[k]`` > 0
    nodes leave (idle ones first; jobs still on a busy one are requeued ``grace_s`` later) or
    -``delta[k]`` come back."""

    time_s: Float64
    delta: Int32
    grace_s: float

    def lent_at(self, times: Float64) -> Int32:
        """Nodes lent at each of ``times``."""
        lent = np.concatenate([[0], np.cumsum(self.delta)])
        return lent[np.searchsorted(self.time_s, times, side="right")].astype(np.int32)

    def take(self, rows: npt.NDArray[np.int64]) -> Lending:
        return self  # nothing per job

    def for_engine(self) -> dict[str, object]:
        return {
            "plugin": "lending",
            "time_s": np.ascontiguousarray(self.time_s, dtype=np.float64),
            "delta": np.ascontiguousarray(self.delta, dtype=np.int32),
            "grace_s": float(self.grace_s),
        }


@dataclass(frozen=True)
class PowerSaving:
    """Slurm's power saving on a pool (slurm/_core/power.c): a node idle for ``suspend_time_s``
    (``SuspendTime``) powers down, and a job given one waits ``boot_s`` for it to be up (at most
    ``ResumeTimeout``). Nodes start powered down, as cloud nodes do (``State=CLOUD``)."""

    suspend_time_s: float
    boot_s: float

    def record(self, nodes: int) -> PowerRecord:
        """The record the engine fills in, as it stands before a run: every node powered down."""
        return PowerRecord(
            self.suspend_time_s,
            np.full(nodes, -self.suspend_time_s),
            np.zeros(nodes),
            np.zeros(nodes, dtype=np.int32),
        )

    def for_engine(self, record: PowerRecord) -> dict[str, object]:
        return {
            "plugin": "power_save",
            "suspend_time_s": float(self.suspend_time_s),
            "boot_s": float(self.boot_s),
            "idle_since_s": record.idle_since_s,
            "powered_down_s": record.powered_down_s,
            "boots": record.boots,
        }


@dataclass(frozen=True)
class PowerRecord:
    """What power saving did to each node of a pool: when it last went idle (``idle_since_s``), the
    seconds it was powered down before its last boot (``powered_down_s``) and its ``boots``."""

    suspend_time_s: float
    idle_since_s: Float64
    powered_down_s: Float64
    boots: Int32

    @property
    def node_s_up(self) -> float:
        """Node-seconds up, from t = 0 until each node powers down after its last job: a node is
        paid while it is up, booting included, and until it suspends, even past a measuring
        window that ends sooner."""
        down_at = np.where(np.isnan(self.idle_since_s), np.nan, self.idle_since_s + self.suspend_time_s)
        return float(np.nansum(np.maximum(down_at - self.powered_down_s, 0.0)))


@dataclass(frozen=True)
class BatchSchedule:
    start_s: Float64  # first start; NaN: never started (rejected)
    end_s: Float64  # last end
    rejected: Bool  # larger than the pool: never queued
    timeline: Timeline
    held_reason: npt.NDArray[np.int8]  # index into HELD_REASONS: the last QoS limit that held the job
    preemptions: Int32
    lost_gpu_s: Float64  # work lost to preemption
    cancelled: Bool  # ended by preemption (PreemptMode=CANCEL)
    held_by: npt.NDArray[
        np.uint8
    ]  # engine.h GP_HELD_BY_*: CPUs (1) or memory (2) held it while its GPUs were free
    node_prefix: str
    _ranges: Int32  # (first node, count) pairs
    _range_first: Int64
    _range_count: Int32
    power: PowerRecord | None = None  # the nodes' power states, under power saving

    def node_ranges(self) -> tuple[Int64, Int64, Int64]:
        """Each (first node, count) range of nodes a job ran on, with the job's index."""
        ranges = self._ranges.reshape(-1, 2).astype(np.int64)
        count = self._range_count.astype(np.int64)
        job = np.repeat(np.arange(len(count), dtype=np.int64), count)
        within = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        order = np.repeat(self._range_first, count) + within
        return job, ranges[order, 0], ranges[order, 1]

    def node_lists(self) -> pa.Array:
        """Each job's nodes as a Slurm host list (``node[0-3,8]``); null for jobs that never ran."""
        import pyarrow as pa

        offsets, data = _batchcore.hostlists(
            self.node_prefix, self._ranges, self._range_first, self._range_count
        )
        started = ~np.isnan(self.start_s)
        return pa.LargeStringArray.from_buffers(
            len(self.start_s),
            pa.py_buffer(offsets),
            pa.py_buffer(data),
            None if started.all() else pa.array(started).buffers()[1],
        )


def run_batch(
    jobs: BatchJobs,
    pool: Pool,
    scheduler: EnginePiece,
    select: EnginePiece,
    *,
    priority: EnginePiece | None = None,
    qos: EnginePiece | None = None,
    preemption: EnginePiece | None = None,
    reservations: EnginePiece | None = None,
    lending: Lending | None = None,
    topology: EnginePiece | None = None,
    refused: Bool | None = None,
    per_gpu: Bool | None = None,
    submitted_early: Bool | None = None,
    cpus_memory: CpusMemory | None = None,
    power: PowerSaving | None = None,
) -> BatchSchedule:
    """Simulate ``jobs`` on ``pool`` with one object per piece, each read by name by its compiled
    piece: the scheduling pass ``scheduler`` (``sched/builtin``, ``sched/easy``, ``sched/backfill``
    and its settings) and the node choice ``select`` (``select/cons_tres``, ``select/linear``: Slurm's
    best fit over runs of consecutive free nodes; ``select/first_fit``: the lowest-numbered). The
    queue is in submit order, or in ``priority`` order; ``qos`` are the QoS limits that hold jobs
    back; ``preemption`` lets jobs preempt others. Jobs take whole nodes, except those ``per_gpu``
    marks: they take only their GPUs per node and share nodes with others (Slurm's
    select/cons_tres). ``reservations`` hold nodes for some accounts, or for none (maintenance),
    over windows of time. ``lending`` takes nodes away and gives them back over time (it needs
    ``preemption`` inputs, for the state of requeued jobs). ``topology`` places multi-node jobs by
    blocks of nodes. A job ``submitted_early`` (sbatch --begin) becomes eligible at its submit time
    without asking a pass on its own clock to run. With ``cpus_memory`` the jobs sharing nodes also
    hold CPUs and memory, fit a node only with enough of both free, and are placed by the nodes'
    free CPUs (select/cons_tres). With ``power`` (``PowerSaving``) idle nodes power down and a job
    on one starts after its boot; the schedule's ``power`` tells each node's time powered down.

    A job that asks more nodes, or more GPUs per node, than the pool has can never run: it is
    rejected at arrival (``rejected``) and never queued, as are the jobs ``refused`` at submit."""
    n = len(jobs.job_id)
    rejected = (jobs.nodes > pool.nodes) | (jobs.gpus_per_node > pool.gpus_per_node)
    if refused is not None:
        rejected |= refused
    admitted = np.flatnonzero(~rejected)
    m = len(admitted)
    start = np.empty(m, dtype=np.float64)
    range_first = np.zeros(m, dtype=np.int64)
    range_count = np.zeros(m, dtype=np.int32)
    # rows record changes: an arrival, a start or an end per job at most, and per preemption
    # the vacate, the return to the queue and the restart (room for a few per job)
    capacity = 3 * m + 1 + (9 * m if preemption is not None else 0)
    if lending is not None:
        capacity += 4 * len(lending.delta)
    tl_time = np.empty(capacity, dtype=np.float64)
    tl_busy = np.empty(capacity, dtype=np.int64)
    tl_queued = np.empty(capacity, dtype=np.int32)
    timeline: dict[str, object] = {"time_s": tl_time, "busy_gpus": tl_busy, "queued_jobs": tl_queued}
    tl_cpus = tl_mem = None
    nodes = jobs.nodes[admitted]
    gpus_per_node = jobs.gpus_per_node[admitted]
    allocated_per_node = np.full(m, pool.gpus_per_node, dtype=np.int32)
    if per_gpu is not None:
        shared = per_gpu[admitted]
        # a job asking no GPU still takes a GPU slot: the model allocates GPUs only
        allocated_per_node[shared] = np.maximum(gpus_per_node[shared], 1)
    run_s = jobs.run_s[admitted]
    held = np.zeros(m, dtype=np.int8)
    end = start  # without preemption a job ends a run time after its start
    preemptions = np.zeros(m, dtype=np.int32)
    lost = np.zeros(m)
    cancelled = np.zeros(m, dtype=np.int8)
    if preemption is not None:
        end = np.empty(m, dtype=np.float64)
    held_by = np.zeros(m, dtype=np.uint8)
    cluster: dict[str, object] = {"nodes": pool.nodes, "gpus_per_node": pool.gpus_per_node}
    resources: dict[str, object] = {}
    results: dict[str, object] = {"start": start, "range_first": range_first, "range_count": range_count}
    if cpus_memory is not None:
        taken = cpus_memory.take(admitted)
        cluster |= {"cpus_per_node": taken.node_cpus, "mem_per_node_mb": taken.node_mem_mb}
        resources = {
            "cpus_per_node": np.ascontiguousarray(taken.cpus_per_node, dtype=np.int32),
            "cpu_step": np.ascontiguousarray(taken.cpu_step, dtype=np.int32),
            "mem_per_node_mb": np.ascontiguousarray(taken.mem_per_node_mb, dtype=np.int32),
        }
        results["held_by"] = held_by
        tl_cpus, tl_mem = np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64)
        timeline |= {"busy_cpus": tl_cpus, "busy_mem_mb": tl_mem}

    def settings(piece: EnginePiece, **outputs: npt.NDArray[Any]) -> dict[str, object]:
        """The piece's settings for the admitted jobs, with the arrays it fills in."""
        return {**piece.take(admitted).for_engine(), **outputs}

    def optional(piece: EnginePiece | None, **outputs: npt.NDArray[Any]) -> dict[str, object] | None:
        return None if piece is None else settings(piece, **outputs)

    power_record = None if power is None else power.record(pool.nodes)
    if m == 0:  # nothing to schedule (or a pool with no nodes left): skip the engine
        rows, ranges = 0, b""
    else:
        quiet = None if submitted_early is None else submitted_early[admitted].astype(np.uint8)
        rows, ranges = _batchcore.simulate(
            cluster=cluster,
            jobs={
                "submit": np.ascontiguousarray(jobs.submit_s[admitted], dtype=np.float64),
                "run": np.ascontiguousarray(run_s, dtype=np.float64),
                "estimate": np.ascontiguousarray(jobs.estimate_s[admitted], dtype=np.float64),
                "nodes": np.ascontiguousarray(nodes, dtype=np.int32),
                "gpus": np.ascontiguousarray(nodes * gpus_per_node, dtype=np.int32),
                "job_id": np.ascontiguousarray(jobs.job_id[admitted], dtype=np.int64),
                "gpus_per_node": np.ascontiguousarray(allocated_per_node, dtype=np.int32),
                "submitted_early": quiet,
                **resources,
            },
            results=results,
            timeline=timeline,
            scheduler=settings(scheduler),
            select=settings(select),
            priority=optional(priority),
            qos=optional(qos, held_reason=held),
            preempt=optional(
                preemption, end_s=end, preemptions=preemptions, lost_gpu_s=lost, cancelled=cancelled
            ),
            reservations=optional(reservations),
            lending=optional(lending),
            topology=optional(topology),
            power=None if power is None or power_record is None else power.for_engine(power_record),
        )
    if preemption is None:
        end = start + run_s

    def per_job(values: npt.NDArray[Any], fill: Any) -> npt.NDArray[Any]:
        """Back to one row per job (``fill`` for the rejected)."""
        if m == n:
            return values
        full = np.full(n, fill, dtype=values.dtype)
        full[admitted] = values
        return full

    start, end = per_job(start, np.nan), per_job(end, np.nan)
    range_first, range_count = per_job(range_first, 0), per_job(range_count, 0)
    return BatchSchedule(
        start_s=start,
        end_s=end,
        rejected=rejected,
        timeline=Timeline(
            tl_time[:rows].copy(),
            tl_busy[:rows].copy(),
            tl_queued[:rows].copy(),
            busy_cpus=None if tl_cpus is None else tl_cpus[:rows].copy(),
            busy_mem_mb=None if tl_mem is None else tl_mem[:rows].copy(),
        ),
        held_reason=per_job(held, 0),
        preemptions=per_job(preemptions, 0),
        lost_gpu_s=per_job(lost, 0.0),
        cancelled=per_job(cancelled, 0).astype(bool),
        held_by=per_job(held_by, 0),
        node_prefix=pool.node_prefix,
        _ranges=np.frombuffer(ranges, dtype=np.int32),
        _range_first=range_first,
        _range_count=range_count,
        power=power_record,
    )
