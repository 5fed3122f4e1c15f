"""The batch engine's Python side: arrays in, schedule out.

The event loop itself is compiled (``_core/engine.c``): it knows time, events (job arrivals and
ends) and cluster state (free nodes of a pool), and calls one scheduling pass per instant, chosen
by name from the compiled passes (``_core/policies.c``). At each instant it applies all job ends,
then all arrivals, then one pass. A job asks N whole nodes and starts on all of them at once; one
larger than the pool is rejected at arrival and never runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.sim import _batchcore
from gpuplan.workload.jobtable import Bool, Float64, Int32, Int64

if TYPE_CHECKING:
    import pyarrow as pa

    from gpuplan.sim.cluster import Pool
    from gpuplan.sim.priority import PriorityInputs
    from gpuplan.sim.qos import LimitInputs


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
class BatchSchedule:
    start_s: Float64  # NaN: never started (rejected)
    end_s: Float64
    rejected: Bool  # larger than the pool: never queued
    timeline: Timeline
    node_prefix: str
    _ranges: Int32  # (first node, count) pairs
    _range_first: Int64
    _range_count: Int32

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
) -> BatchSchedule:
    """Simulate ``jobs`` on ``pool`` with the compiled pass ``schedule_pass`` ("fifo", "easy",
    "slurm") and its settings ``params`` (in the order the pass documents them). The queue is in
    submit order, or in multifactor priority order when ``priority`` is given; ``limits`` are the
    QoS limits that hold jobs back.

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
    capacity = 3 * m + 1  # rows record changes: an arrival, a start or an end per job at most
    tl_time = np.empty(capacity, dtype=np.float64)
    tl_busy = np.empty(capacity, dtype=np.int64)
    tl_queued = np.empty(capacity, dtype=np.int32)
    nodes = jobs.nodes[admitted]
    run_s = jobs.run_s[admitted]
    if m == 0:  # nothing to schedule (or a pool with no nodes left): skip the engine
        rows, ranges = 0, b""
    else:
        rows, ranges = _batchcore.simulate(
            schedule_pass,
            pool.nodes,
            np.asarray(params, dtype=np.float64),
            np.ascontiguousarray(jobs.submit_s[admitted], dtype=np.float64),
            np.ascontiguousarray(run_s, dtype=np.float64),
            np.ascontiguousarray(jobs.estimate_s[admitted], dtype=np.float64),
            np.ascontiguousarray(nodes, dtype=np.int32),
            np.ascontiguousarray(nodes * jobs.gpus_per_node[admitted], dtype=np.int32),
            np.ascontiguousarray(jobs.job_id[admitted], dtype=np.int64),
            start,
            range_first,
            range_count,
            tl_time,
            tl_busy,
            tl_queued,
            None if priority is None else priority.take(admitted).for_engine(),
            None if limits is None else limits.take(admitted).for_engine(),
        )
    if m < n:  # back to one row per job
        start_all = np.full(n, np.nan)
        start_all[admitted] = start
        first_all = np.zeros(n, dtype=np.int64)
        first_all[admitted] = range_first
        count_all = np.zeros(n, dtype=np.int32)
        count_all[admitted] = range_count
        start, range_first, range_count = start_all, first_all, count_all
    return BatchSchedule(
        start_s=start,
        end_s=start + jobs.run_s,
        rejected=rejected,
        timeline=Timeline(tl_time[:rows].copy(), tl_busy[:rows].copy(), tl_queued[:rows].copy()),
        node_prefix=pool.node_prefix,
        _ranges=np.frombuffer(ranges, dtype=np.int32),
        _range_first=range_first,
        _range_count=range_count,
    )
