"""What an operating model's simulation hands to metrics and result files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine.core import Timeline
from gpuplan.sim.events import ENDED, STARTED, SUBMITTED, EventLog
from gpuplan.sim.events import REJECTED as REJECTED_EVENT
from gpuplan.sim.recorder import EventRecorder
from gpuplan.workload.jobtable import Float64, Int32, Int64, JobTable, Labels

if TYPE_CHECKING:
    import pyarrow as pa

# Final state of each simulated job, as written to jobs.parquet. A job preempted and requeued that
# later completes is "completed" (its ModelRun.preemptions counts the preemptions); "preempted" is
# a job whose preemption ended it (PreemptMode=CANCEL); "rejected" can never run on the model's
# cluster and was refused at submit (ModelRun.reason says why); "unfinished" was still queued or
# running when the run ended.
JOB_STATES = ("completed", "killed_at_limit", "rejected", "preempted", "unfinished")
COMPLETED, KILLED_AT_LIMIT, REJECTED, PREEMPTED, UNFINISHED = range(len(JOB_STATES))
# states only a job that started can end in
RAN_STATES = (COMPLETED, KILLED_AT_LIMIT, PREEMPTED)


class Placement(Protocol):
    """Where a pool's jobs ran, as a model's scheduler reports it."""

    @property
    def timeline(self) -> Timeline: ...

    def node_lists(self) -> pa.Array:
        """Each of the pool's jobs' nodes as a Slurm host list, in PoolSchedule.jobs order; null
        for jobs that never ran."""
        ...


@dataclass(frozen=True)
class PowerSaved:
    """A pool's batch nodes under Slurm's power saving (``SuspendTime``): idle ones power down, and
    a job given one waits ``boot_s`` for it. ``gpu_hours_up``: their GPU-hours up, booting
    included, from t = 0 until each powers down after its last job."""

    nodes: int
    suspend_time_s: float
    boot_s: float
    gpu_hours_up: float
    boots: int


@dataclass(frozen=True)
class PoolSchedule:
    """The jobs one pool ran and their placement on its nodes."""

    pool: Pool
    jobs: Int64  # indices into ModelRun.jobs, in queue order
    schedule: Placement
    service_nodes: int = 0  # nodes held by services for the whole run, outside the batch schedule
    service_gpus: int = 0  # GPUs of the service replicas on them
    gpu_hours_up: float | None = None  # GPU-hours its nodes were up (autoscaled pools); None: all, always
    power: PowerSaved | None = None  # its batch nodes under power saving (the others are always up)


@dataclass(frozen=True)
class ServiceOutcome:
    name: str
    team: str
    pool: str
    slo_attainment: float  # share of time the demand was served
    mean_replicas: float
    unmet_demand_fraction: float  # requests beyond capacity / all requests
    gpu_hours: float  # GPUs of running replicas x time
    span_s: float  # from t = 0


@dataclass(frozen=True)
class QueueSeries:
    """Each ClusterQueue's state after every scheduling instant it changed at: the GPUs its admitted
    workloads hold, those above its quota (borrowed), its pending workloads, and its weighted share
    (Kueue's fair-sharing dominant resource share, 0 when not borrowing)."""

    time_s: Float64
    queue: Labels
    admitted_gpus: Float64
    borrowed_gpus: Float64
    pending_jobs: Int32
    weighted_share: Float64

    @classmethod
    def empty(cls) -> QueueSeries:
        none = np.zeros(0, np.float64)
        return cls(none, Labels.constant("", 0), none, none, np.zeros(0, np.int32), none)


@dataclass(frozen=True)
class ModelRun:
    """One model's run: the jobs (in queue order), where and when each ran, and the services."""

    model: str
    settings: dict[str, Any]  # the model's policy settings, echoed into summary.json
    jobs: JobTable
    run_s: Float64  # how long each job held its nodes (cut at its time limit)
    state: npt.NDArray[np.int8]  # index into JOB_STATES
    start_s: Float64  # NaN: never started
    end_s: Float64
    pool_of_job: Int32  # index into pools
    pools: list[PoolSchedule]
    services: list[ServiceOutcome]
    simulate_s: float  # wall time of the simulation proper
    preemptions: Int32  # times each job was preempted
    lost_gpu_s: Float64  # GPU-seconds of each job's work lost to preemption (redone or never finished)
    job_gpus: Float64 | None = None  # GPUs each job occupies when not nodes x gpus_per_node (GPU shares)
    # CPUs and memory (MB) each job holds over all its nodes (sacct AllocTRES cpu, mem), NaN where
    # the model does not count them; None: counted for no job
    job_cpus: Float64 | None = None
    job_mem_mb: Float64 | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # model-specific figures, merged into the summary
    # Why each job was refused, else the last limit that held it pending other than waiting its turn
    # or for free nodes (kept when it ran, as sacct's Reason), else what held it at the end if it never
    # started; in the scheduler's words (Slurm: PartitionTimeLimit, QOSMaxGRESPerUser, ...; Kueue:
    # WaitingForQuota, ...); "" for none. The same meaning in every model.
    reason: Labels | None = None
    events: EventLog | None = None  # the model's own event log (sim/events.py); None: implied
    queues: QueueSeries | None = None  # Kueue's ClusterQueues over time; None: the model has none

    def __post_init__(self) -> None:
        # Every model's outcome obeys the states' meaning, so no summary counts a job that never
        # ran as done, or a rejected one as having run.
        started = self.started
        ran = np.isin(self.state, RAN_STATES)
        if (ran & ~started).any() or (started & (self.state == REJECTED)).any():
            wrong = int(np.flatnonzero((ran & ~started) | (started & (self.state == REJECTED)))[0])
            raise AssertionError(
                f"{self.model}: job {self.jobs.job_id[wrong]} is {JOB_STATES[self.state[wrong]]} "
                f"with start {self.start_s[wrong]}"
            )

    def event_log(self) -> EventLog:
        """The model's event log, else the one its outcome implies: each job's submission, first
        start and end (with its state), or its rejection (with its reason), at the partition."""
        if self.events is not None:
            return self.events
        recorder = EventRecorder()
        jobs = self.jobs
        reasons = self.reason.values() if self.reason is not None else [""] * len(jobs)
        partitions = jobs.partition.values()
        submit, start, end = jobs.submit_s.tolist(), self.start_s.tolist(), self.end_s.tolist()
        for j, state in enumerate(self.state.tolist()):
            recorder.add(j, submit[j], SUBMITTED, queue=partitions[j])
            if state == REJECTED:
                recorder.add(j, submit[j], REJECTED_EVENT, reasons[j], queue=partitions[j])
            elif start[j] == start[j]:
                recorder.add(j, start[j], STARTED, queue=partitions[j])
                if end[j] == end[j] and state != UNFINISHED:
                    recorder.add(j, end[j], ENDED, JOB_STATES[state], queue=partitions[j])
        return recorder.log()

    @property
    def started(self) -> npt.NDArray[np.bool_]:
        return ~np.isnan(self.start_s)

    @property
    def total_gpus(self) -> int:
        return sum(p.pool.gpus for p in self.pools)

    def node_lists(self) -> pa.Array:
        """Each job's nodes as a Slurm host list; null for jobs that never ran."""
        import pyarrow as pa

        if not self.pools:
            return pa.nulls(len(self.jobs), pa.large_string())
        lists = pa.concat_arrays([p.schedule.node_lists() for p in self.pools])
        order = np.concatenate([p.jobs for p in self.pools])
        if np.array_equal(order, np.arange(len(order))):
            return lists  # already in job order: no take, whose pyarrow.compute costs start-up time
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        return lists.take(pa.array(position))
