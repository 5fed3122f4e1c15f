"""The batch engine's Python side: arrays in, schedule out.

The event loop itself is compiled (``_core/engine.c``): it knows time, events (job arrivals and
ends) and cluster state (free nodes of a pool), and calls one scheduling pass per instant, chosen
by name from the compiled passes (``sim/slurm/_core/policies.c``). At each instant it applies all
job ends, then all arrivals, then one pass. A job asks N whole nodes and starts on all of them at once; one
larger than the pool is rejected at arrival and never runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from gpuplan.sim.engine import _batchcore
from gpuplan.workload.jobtable import Bool, Float64, Int32, Int64

if TYPE_CHECKING:
    import pyarrow as pa

    from gpuplan.sim.cluster import Pool
    from gpuplan.sim.slurm.preemption import PreemptionInputs
    from gpuplan.sim.slurm.priority import PriorityInputs
    from gpuplan.sim.slurm.qos import LimitInputs
    from gpuplan.sim.slurm.reservations import ReservationInputs

# Reasons a QoS limit held a job (engine codes 1..3), as Slurm's squeue shows them.
HELD_REASONS = ("", "QOSMaxGRESPerUser", "QOSMaxJobsPerUser", "QOSGrpGRES")


def compiled_passes() -> list[str]:
    """Names of the scheduling passes compiled into the engine."""
    return _batchcore.policies()


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
class Timeline:
    """Cluster state after each instant's scheduling pass."""

    time_s: Float64
    busy_gpus: Int64
    queued_jobs: Int32
    nodes_up: Int32 | None = None  # None: every node of the pool, all the time


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

    def for_engine(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int32], float]:
        return (
            np.ascontiguousarray(self.time_s, dtype=np.float64),
            np.ascontiguousarray(self.delta, dtype=np.int32),
            float(self.grace_s),
        )


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
    node_prefix: str
    _ranges: Int32  # (first node, count) pairs
    _range_first: Int64
    _range_count: Int32

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
    schedule_pass: str,
    params: Sequence[float] = (),
    priority: PriorityInputs | None = None,
    limits: LimitInputs | None = None,
    refused: Bool | None = None,
    preemption: PreemptionInputs | None = None,
    per_gpu: Bool | None = None,
    reservations: ReservationInputs | None = None,
    lending: Lending | None = None,
    topology: tuple[int, bool] | None = None,
    best_fit: bool = False,
    users: Int32 | None = None,
    submitted_early: Bool | None = None,
) -> BatchSchedule:
    """Simulate ``jobs`` on ``pool`` with the compiled pass ``schedule_pass`` ("fifo", "easy",
    "slurm") and its settings ``params`` (in the order the pass documents them). The queue is in
    submit order, or in priority order when ``priority`` is given; ``limits`` are the QoS limits
    that hold jobs back; ``preemption`` lets jobs preempt others.
    Jobs take whole nodes, except those ``per_gpu`` marks: they take only their GPUs per node and
    share nodes with others (Slurm's select/cons_tres). ``reservations`` hold nodes for some accounts,
    or for none (maintenance), over windows of time. ``lending`` takes nodes away and gives them
    back over time (it needs ``preemption`` inputs, for the state of requeued jobs). ``topology``
    is (nodes per block, whether a job must fit one block) for multi-node placement. ``best_fit``
    places whole-node jobs as Slurm does, on the best-fitting run of consecutive free nodes, not
    the lowest-numbered free nodes. ``users`` (per job, an index) lets the backfill cycle test at
    most ``bf_max_job_user`` jobs of one user. A job ``submitted_early`` (sbatch --begin) becomes
    eligible at its submit time without asking a policy on its own clock to run.

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
    preempt_args = None
    if preemption is not None:
        end = np.empty(m, dtype=np.float64)
        preempt_args = (*preemption.take(admitted).for_engine(), end, preemptions, lost, cancelled)
    if m == 0:  # nothing to schedule (or a pool with no nodes left): skip the engine
        rows, ranges = 0, b""
    else:
        rows, ranges = _batchcore.simulate(
            schedule_pass,
            pool.nodes,
            pool.gpus_per_node,
            np.asarray(params, dtype=np.float64),
            np.ascontiguousarray(jobs.submit_s[admitted], dtype=np.float64),
            np.ascontiguousarray(run_s, dtype=np.float64),
            np.ascontiguousarray(jobs.estimate_s[admitted], dtype=np.float64),
            np.ascontiguousarray(nodes, dtype=np.int32),
            np.ascontiguousarray(nodes * gpus_per_node, dtype=np.int32),
            np.ascontiguousarray(jobs.job_id[admitted], dtype=np.int64),
            start,
            range_first,
            range_count,
            tl_time,
            tl_busy,
            tl_queued,
            np.ascontiguousarray(allocated_per_node, dtype=np.int32),
            None if priority is None else priority.take(admitted).for_engine(),
            None if limits is None else (*limits.take(admitted).for_engine(), held),
            preempt_args,
            None if reservations is None else reservations.take(admitted).for_engine(),
            None if lending is None else lending.for_engine(),
            topology,
            best_fit,
            None if users is None else np.ascontiguousarray(users[admitted], dtype=np.int32),
            None if submitted_early is None else submitted_early[admitted].astype(np.uint8),
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
        timeline=Timeline(tl_time[:rows].copy(), tl_busy[:rows].copy(), tl_queued[:rows].copy()),
        held_reason=per_job(held, 0),
        preemptions=per_job(preemptions, 0),
        lost_gpu_s=per_job(lost, 0.0),
        cancelled=per_job(cancelled, 0).astype(bool),
        node_prefix=pool.node_prefix,
        _ranges=np.frombuffer(ranges, dtype=np.int32),
        _range_first=range_first,
        _range_count=range_count,
    )
