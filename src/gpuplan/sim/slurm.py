"""The Slurm operating model (OCI HPC Stack).

This slice models each pool as a partition of whole nodes (``OverSubscribe=EXCLUSIVE``), jobs in
submit order, and the backfill modes ``none`` and ``easy`` (see ``gpuplan.sim.policies``). A job
goes to the pool its ``partition`` names, else to the first pool it fits. Time limits are enforced
as Slurm does without ``OverTimeLimit``: a job whose run time exceeds its time limit (``--time``,
SWF "requested time") is killed at the limit; the scheduler's estimate of a job's run time is its
time limit, or its run time when it has none.

Inference services have no autoscaler under Slurm: each runs as a long job sized for its peak
(``max`` replicas, whole nodes) for the whole run, so its nodes are taken out of the pool before
batch jobs are scheduled, and demand above that capacity goes unserved.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine import BatchJobs, run_batch
from gpuplan.sim.outcome import (
    COMPLETED,
    KILLED_AT_LIMIT,
    REJECTED,
    ModelRun,
    PoolSchedule,
    ServiceOutcome,
)
from gpuplan.sim.policies import BACKFILL
from gpuplan.sim.priority import MultifactorSettings, multifactor
from gpuplan.sim.qos import Qos, limits, qos_of_jobs, qos_table
from gpuplan.workload.jobtable import Int32, JobTable
from gpuplan.workload.services import DEMAND_STEP_S, Service

MODEL = "slurm"


@dataclass(frozen=True)
class SlurmSettings:
    """Scheduler settings, named and defaulted as in slurm.conf (SchedulerParameters)."""

    backfill: str = "easy"  # none | easy | slurm
    bf_interval: int = 30  # seconds between backfill cycles
    bf_window: int = 1440  # minutes ahead a job may be reserved
    bf_resolution: int = 60  # seconds: granularity of the time profile
    bf_max_job_test: int = 500  # jobs tested per backfill cycle
    priority_type: str = "basic"  # PriorityType: priority/basic (FCFS) | priority/multifactor
    multifactor: MultifactorSettings = field(default_factory=MultifactorSettings)
    qos: tuple[Qos, ...] = ()  # besides "normal"

    def params(self, names: tuple[str, ...]) -> list[float]:
        values = {
            "bf_interval_s": float(self.bf_interval),
            "bf_window_s": 60.0 * self.bf_window,
            "bf_resolution_s": float(self.bf_resolution),
            "bf_max_job_test": float(self.bf_max_job_test),
        }
        return [values[name] for name in names]

    def echo(self) -> dict[str, Any]:
        """The settings that matter for the chosen modes, for summary.json."""
        echoed: dict[str, Any] = {"backfill": self.backfill}
        if self.backfill == "slurm":
            echoed |= {
                "bf_interval": self.bf_interval,
                "bf_window": self.bf_window,
                "bf_resolution": self.bf_resolution,
                "bf_max_job_test": self.bf_max_job_test,
            }
        if self.priority_type == "multifactor":
            echoed |= {"priority_type": "multifactor", **asdict(self.multifactor)}
        if self.qos:
            echoed["qos"] = [asdict(qos) for qos in self.qos]
        return echoed


def route_jobs(jobs: JobTable, pools: list[Pool]) -> Int32:
    """Pool index of each job: the pool its partition names, else the first it fits (else 0)."""
    index = np.full(len(jobs), -1, dtype=np.int32)
    by_name = {pool.name: i for i, pool in enumerate(pools)}
    named = np.array([by_name.get(label, -1) for label in jobs.partition.labels], dtype=np.int32)
    if len(named):
        index = named[jobs.partition.codes]
    for i, pool in enumerate(pools):
        fits = (index < 0) & (jobs.nodes <= pool.nodes) & (jobs.gpus_per_node <= pool.gpus_per_node)
        index[fits] = i
    index[index < 0] = 0
    return index


def _static_service(service: Service, pool: Pool, free_nodes: int) -> tuple[ServiceOutcome, int]:
    """A service as a peak-sized Slurm job: its outcome and the nodes it holds."""
    per_node = pool.gpus_per_node // service.gpus_per_replica
    nodes = min(math.ceil(service.max_replicas / per_node), free_nodes) if per_node else 0
    replicas = min(service.max_replicas, nodes * per_node)
    capacity = replicas * service.throughput_per_replica
    demand = service.demand_rps
    unmet = np.maximum(demand - capacity, 0.0)
    outcome = ServiceOutcome(
        name=service.name,
        team=service.team,
        pool=pool.name,
        slo_attainment=float((demand <= capacity + 1e-9).mean()) if len(demand) else 1.0,
        mean_replicas=float(replicas),
        unmet_demand_fraction=float(unmet.sum() / demand.sum()) if demand.sum() > 0 else 0.0,
        gpu_hours=replicas * service.gpus_per_replica * len(demand) * DEMAND_STEP_S / 3600.0,
        span_s=len(demand) * DEMAND_STEP_S,
    )
    return outcome, nodes


def simulate_slurm(
    jobs: JobTable,
    pools: list[Pool],
    settings: SlurmSettings,
    services: list[Service] | None = None,
    team_shares: dict[str, float] | None = None,
) -> ModelRun:
    """Schedule ``jobs`` (and ``services``) on ``pools`` under the Slurm model; jobs come back in
    submit order (submit time, then job id). ``team_shares`` are the accounts' ``Fairshare=``."""
    schedule_pass = BACKFILL.get(settings.backfill)
    jobs = jobs.take(jobs.queue_order())
    limit = jobs.time_limit_s
    has_limit = limit > 0  # NaN (unknown) compares False
    killed = has_limit & (jobs.duration_s > limit)
    run_s = np.where(killed, limit, jobs.duration_s)
    estimate_s = np.where(has_limit, limit, jobs.duration_s)
    pool_of_job = route_jobs(jobs, pools)
    qos_list = qos_table(settings.qos)
    qos_index = qos_of_jobs(jobs.qos, qos_list)
    max_wall = np.array([np.inf if q.max_wall_s is None else q.max_wall_s for q in qos_list])
    over_max_wall = has_limit & (limit > max_wall[qos_index])  # MaxWall: refused at submit
    top_qos_priority = max(q.priority for q in qos_list)
    qos_factor = np.array([q.priority / top_qos_priority if top_qos_priority else 0.0 for q in qos_list])

    began = time.perf_counter()
    outcomes: list[ServiceOutcome] = []
    schedules: list[PoolSchedule] = []
    start_s = np.full(len(jobs), np.nan)
    rejected = np.zeros(len(jobs), dtype=bool)
    for i, pool in enumerate(pools):
        held_nodes = service_gpus = 0
        for service in services or []:
            if service.pool == pool.name:
                outcome, nodes = _static_service(service, pool, pool.nodes - held_nodes)
                outcomes.append(outcome)
                held_nodes += nodes
                service_gpus += int(outcome.mean_replicas) * service.gpus_per_replica
        batch_pool = Pool(pool.name, pool.nodes - held_nodes, pool.gpus_per_node, pool.node_prefix)
        members = np.flatnonzero(pool_of_job == i)
        batch = BatchJobs(
            job_id=jobs.job_id[members],
            submit_s=jobs.submit_s[members],
            run_s=run_s[members],
            estimate_s=estimate_s[members],
            nodes=jobs.nodes[members],
            gpus_per_node=jobs.gpus_per_node[members],
        )
        priority = None
        if settings.priority_type == "multifactor":
            priority = multifactor(
                jobs.nodes[members],
                jobs.team.take(members),
                jobs.user.take(members),
                batch_pool.nodes,
                settings.multifactor,
                team_shares,
                qos_factor[qos_index[members]],
            )
        schedule = run_batch(
            batch,
            batch_pool,
            schedule_pass.compiled_name,
            settings.params(schedule_pass.parameters),
            priority,
            limits(qos_index[members], jobs.user.take(members), qos_list),
            over_max_wall[members],
        )
        start_s[members] = schedule.start_s
        rejected[members] = schedule.rejected
        schedules.append(PoolSchedule(pool, members, schedule, held_nodes, service_gpus))
    simulate_s = time.perf_counter() - began

    state = np.where(killed, KILLED_AT_LIMIT, COMPLETED).astype(np.int8)
    state[rejected] = REJECTED
    return ModelRun(
        model=MODEL,
        settings=settings.echo(),
        jobs=jobs,
        run_s=run_s,
        state=state,
        start_s=start_s,
        end_s=start_s + run_s,
        pool_of_job=pool_of_job,
        pools=schedules,
        services=outcomes,
        simulate_s=simulate_s,
        preemptions=np.zeros(len(jobs), dtype=np.int32),
        lost_gpu_s=np.zeros(len(jobs)),
    )
