"""The Slurm operating model (OCI HPC Stack).

Partitions (``gpuplan.sim.slurm.partitions``) share the whole nodes of a pool
(``OverSubscribe=EXCLUSIVE``); the queue is ordered by partition ``PriorityTier``, then by job
priority (``priority/basic``: submit order; ``priority/multifactor``: ``gpuplan.sim.slurm.priority``);
QoS limits hold jobs (``gpuplan.sim.slurm.qos``); the main scheduler and the backfill modes are
``gpuplan.sim.slurm.policies``; jobs preempt per ``PreemptType`` (``gpuplan.sim.slurm.preemption``).
Time limits are enforced as Slurm does without ``OverTimeLimit``: a job whose run time exceeds its
time limit (``--time``, SWF "requested time", else the partition's ``DefaultTime``) is killed at the
limit; the scheduler's estimate of a job's run time is its time limit, or its run time when it has
none.

Inference services have no autoscaler under Slurm: each runs as a long job sized for its peak
(``max`` replicas, whole nodes) for the whole run, so its nodes are taken out of the pool before
batch jobs are scheduled, and demand above that capacity goes unserved.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.sim.backlog import backlog
from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine.core import HELD_REASONS, BatchJobs, Lending, run_batch
from gpuplan.sim.outcome import (
    COMPLETED,
    KILLED_AT_LIMIT,
    PREEMPTED,
    REJECTED,
    UNFINISHED,
    ModelRun,
    PoolSchedule,
    PowerSaved,
    ServiceOutcome,
)
from gpuplan.sim.slurm.billing import billing, billing_weights
from gpuplan.sim.slurm.partitions import REFUSALS, Partition, partition_table, pool_index, route_jobs
from gpuplan.sim.slurm.policies import BACKFILL
from gpuplan.sim.slurm.preemption import (
    PreemptClass,
    preemption_inputs,
    requeue_state,
)
from gpuplan.sim.slurm.priority import (
    ControllerClock,
    PriorityInputs,
    multifactor,
    tiered,
)
from gpuplan.sim.slurm.qos import Qos, limits, qos_of_jobs, qos_table
from gpuplan.sim.slurm.reservations import reservation_inputs
from gpuplan.sim.slurm.resources import UNKNOWN_CPUS
from gpuplan.sim.slurm.resources import cpus_memory as cpus_memory_of
from gpuplan.sim.slurm.settings import SlurmSettings
from gpuplan.sim.slurm.topology import blocks_spanned, fragmentation
from gpuplan.workload.jobtable import JobTable, Labels
from gpuplan.workload.services import DEMAND_STEP_S, Service

if TYPE_CHECKING:
    from gpuplan.workload.workload import Workload

MODEL = "slurm"

# jobs.parquet "reason": the QoS limits that held jobs (engine codes), then refusals at submit. As
# sacct's Reason: "the last reason a job was blocked from running for something other than Priority
# or Resources", kept when the job ran (sacct(1), Reason).
# Beyond sacct: "Resources:cpu" and "Resources:mem" mark a job that waited with enough GPUs free but
# too few CPUs or too little memory (Slurm says only "Resources", and sacct keeps no such reason).
HETEROGENEOUS_JOB = "HeterogeneousJobNotModelled"
REASONS = (
    *HELD_REASONS,
    *REFUSALS[1:],
    "QOSMaxWallDurationPerJobLimit",
    "NodeConfigNotAvailable",
    "Resources:cpu",
    "Resources:mem",
    # gpuplan's: a Kubernetes workload whose pod sets ask different GPUs per pod would be a Slurm
    # heterogeneous job (sbatch's hetjob components), which is not modelled
    HETEROGENEOUS_JOB,
)
# the engine's held_by codes (engine.h GP_HELD_BY_*: none, CPUs, memory) as REASONS
_HELD_BY_REASON = np.array([0, REASONS.index("Resources:cpu"), REASONS.index("Resources:mem")], dtype=np.int8)


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


def _preempt_classes(
    settings: SlurmSettings, partitions: list[Partition], qos_list: list[Qos]
) -> list[PreemptClass]:
    """Partitions (preempt/partition_prio) or QoS (preempt/qos) as preemption classes."""
    if settings.preempt_type == "partition_prio":
        return [
            PreemptClass(
                p.priority_tier, p.preempt_mode or settings.preempt_mode, p.grace_time_s, frozenset()
            )
            for p in partitions
        ]
    index = {q.name: i for i, q in enumerate(qos_list)}
    return [
        PreemptClass(
            q.priority,
            q.preempt_mode or settings.preempt_mode,
            q.grace_time_s,
            frozenset(index[name] for name in q.preempt if name in index),
        )
        for q in qos_list
    ]


def simulate_slurm(
    jobs: JobTable,
    pools: list[Pool],
    settings: SlurmSettings,
    services: list[Service] | None = None,
    team_shares: dict[str, float] | None = None,
    lending: dict[str, Lending] | None = None,
    epoch_s: float | None = None,
    team_users: dict[str, int] | None = None,
) -> ModelRun:
    """Schedule ``jobs`` (and ``services``) on ``pools`` under the Slurm model; jobs come back in
    submit order (submit time, then job id). ``team_shares`` are the accounts' ``Fairshare=``,
    ``team_users`` their user associations (Fair Tree ranks them all, whether they run jobs or not);
    ``lending`` the nodes each pool lends over time (hybrid); ``epoch_s`` the Unix time of t = 0
    (Slurm rounds backfill plans on the epoch clock; unknown: t = 0 is taken as a whole minute)."""
    schedule_pass = BACKFILL.get(settings.backfill)
    mf = settings.multifactor
    clock = ControllerClock(
        calc_phase_s=settings.decay_phase_s(),
        epoch_s=epoch_s or 0.0,
        tick_usage_only="limits" not in settings.accounting_storage_enforce,
    )
    jobs = jobs.take(jobs.queue_order())
    partitions = partition_table(settings.partitions, pools)
    routing = route_jobs(jobs, partitions, pools)
    pool_of_job = pool_index(partitions, pools)[routing.partition]
    limit = routing.time_limit_s
    has_limit = limit > 0  # NaN (unknown) compares False
    # OverTimeLimit: a job runs this long past its limit before it is killed
    hard_limit = limit + 60.0 * settings.over_time_limit
    killed = has_limit & (jobs.duration_s > hard_limit)
    run_s = np.where(killed, hard_limit, jobs.duration_s)
    estimate_s = np.where(has_limit, limit, jobs.duration_s)
    qos_list = qos_table(settings.qos)
    qos_index = qos_of_jobs(jobs.qos, qos_list)
    max_wall = np.array([np.inf if q.max_wall_s is None else q.max_wall_s for q in qos_list])
    reason_of_refusal = np.array([0, *(REASONS.index(r) for r in REFUSALS[1:])], dtype=np.int8)
    reason = reason_of_refusal[routing.refusal]
    reason[(reason == 0) & has_limit & (limit > max_wall[qos_index])] = REASONS.index(
        "QOSMaxWallDurationPerJobLimit"
    )
    # A job that alone asks more GPUs than its QoS's MaxTRESPerUser or GrpTRES can never run. Slurm
    # refuses it at submit with DenyOnLimit, and without it leaves it pending forever with that
    # reason (sacctmgr(1), QOS flags DenyOnLimit); either way it is work the cluster never does.
    for name, cap in (
        ("QOSMaxGRESPerUser", [q.max_gpus_per_user for q in qos_list]),
        ("QOSGrpGRES", [q.grp_gpus for q in qos_list]),
    ):
        gpu_cap = np.array([np.inf if c is None else c for c in cap])[qos_index]
        reason[(reason == 0) & (jobs.gpus > gpu_cap)] = REASONS.index(name)
    if jobs.companion_pods is not None:  # pod sets asking other GPUs: not a job of nodes alike
        heterogeneous = jobs.gpus > jobs.nodes.astype(np.int64) * jobs.gpus_per_node
        reason[(reason == 0) & heterogeneous] = REASONS.index(HETEROGENEOUS_JOB)
    usage_factor = np.array([q.usage_factor for q in qos_list])
    top_qos_priority = max(q.priority for q in qos_list)
    qos_factor = np.array([q.priority / top_qos_priority if top_qos_priority else 0.0 for q in qos_list])
    top_job_factor = max(p.priority_job_factor for p in partitions)
    partition_factor = np.array([p.priority_job_factor / top_job_factor for p in partitions])
    tiers = np.array([p.priority_tier for p in partitions], dtype=np.float64)
    per_gpu = np.array([settings.select_type == "cons_tres" and not p.exclusive for p in partitions])
    classes = _preempt_classes(settings, partitions, qos_list)
    job_class = routing.partition if settings.preempt_type == "partition_prio" else qos_index
    checkpoint_s = jobs.checkpoint_s if jobs.checkpoint_s is not None else np.full(len(jobs), np.nan)
    preemption = preemption_inputs(
        settings.preempt_type,
        classes,
        job_class,
        jobs.nodes,
        checkpoint_s,
        settings.requeue_delay_s,
        settings.preempt_youngest_first,
    )

    # Repeated reservations are laid out over the time jobs may run: the last planned end, plus
    # twice the time the whole cluster would take to run every job's estimate (queues drain late).
    horizon_s = 0.0
    if len(jobs):
        cluster_nodes = max(sum(pool.nodes for pool in pools), 1)
        backlog_s = float((jobs.nodes * estimate_s).sum()) / cluster_nodes
        horizon_s = float((jobs.submit_s + estimate_s).max()) + 2.0 * backlog_s

    weights = billing_weights(settings.tres_billing_weights)
    # the engine places jobs by their CPUs and memory under Slurm's own select (cons_tres)
    counts_cpus = schedule_pass.slurm_placement and settings.select_type == "cons_tres"
    submitted = np.asarray(jobs.column("submitted_s"), dtype=np.float64)
    submitted_s = np.where(np.isnan(submitted), jobs.submit_s, submitted)
    began = time.perf_counter()
    outcomes: list[ServiceOutcome] = []
    schedules: list[PoolSchedule] = []
    start_s = np.full(len(jobs), np.nan)
    end_s = np.full(len(jobs), np.nan)
    preemptions = np.zeros(len(jobs), dtype=np.int32)
    lost_gpu_s = np.zeros(len(jobs))
    cancelled = np.zeros(len(jobs), dtype=bool)
    rejected = np.zeros(len(jobs), dtype=bool)
    blocks = np.zeros(len(jobs), dtype=np.int32)
    job_cpus = np.full(len(jobs), np.nan)
    job_mem_mb = np.full(len(jobs), np.nan)
    for i, pool in enumerate(pools):
        held_nodes = service_gpus = 0
        for service in services or []:
            if service.pool == pool.name:
                outcome, nodes = _static_service(service, pool, pool.nodes - held_nodes)
                outcomes.append(outcome)
                held_nodes += nodes
                service_gpus += int(outcome.mean_replicas) * service.gpus_per_replica
        batch_pool = replace(pool, nodes=pool.nodes - held_nodes)
        members = np.flatnonzero(pool_of_job == i)
        batch = BatchJobs(
            job_id=jobs.job_id[members],
            submit_s=jobs.submit_s[members],
            run_s=run_s[members],
            estimate_s=estimate_s[members],
            nodes=jobs.nodes[members],
            gpus_per_node=jobs.gpus_per_node[members],
        )
        whole = ~per_gpu[routing.partition[members]]
        holds, too_big = cpus_memory_of(
            jobs.take(members), batch_pool, settings, whole, partitions, routing.partition[members]
        )
        refused = reason[members] > 0
        reason[members[too_big & ~refused]] = REASONS.index("NodeConfigNotAvailable")
        refused |= too_big
        if holds.node_cpus != UNKNOWN_CPUS:
            job_cpus[members] = holds.cpus_per_node * batch.nodes
        if holds.node_mem_mb:
            job_mem_mb[members] = holds.mem_per_node_mb * batch.nodes
        job_tier = tiers[routing.partition[members]]
        priority: PriorityInputs | None = None
        if settings.priority_type == "multifactor":
            priority = multifactor(
                jobs.nodes[members],
                jobs.team.take(members),
                jobs.user.take(members),
                batch_pool.nodes,
                mf,
                team_shares,
                qos_factor[qos_index[members]],
                partition_factor[routing.partition[members]],
                usage_billing=billing(job_cpus[members], job_mem_mb[members], jobs.gpus[members], weights)
                * usage_factor[qos_index[members]],
                submitted_s=submitted_s[members],
                team_users=team_users,
                clock=clock,
            )
        # partitions of different PriorityTier share these nodes; or, under priority/basic, jobs
        # that may preempt others go first (sort_job_queue2), or jobs held by --begin sort by when
        # sbatch ran: the queue then needs an order other than the jobs' arrival
        early = submitted_s[members] < jobs.submit_s[members]
        if len(np.unique(job_tier)) > 1 or (priority is None and (preemption is not None or early.any())):
            priority = tiered(priority, job_tier, mf, clock, submitted_s[members])
        lend = (lending or {}).get(pool.name)
        # power saving: not on a pool hybrid lends from (its lent nodes are the other side's)
        power = settings.power_saving(pool.name) if lend is None else None
        pool_preemption = None if preemption is None else preemption.take(members)
        if lend is not None and pool_preemption is None:
            pool_preemption = requeue_state(checkpoint_s[members], settings.requeue_delay_s)
        schedule = run_batch(
            batch,
            batch_pool,
            schedule_pass.scheduler(
                settings.params(schedule_pass.parameters, epoch_s or 0.0),
                users=jobs.user.codes[members].astype(np.int32) if settings.bf_max_job_user else None,
            ),
            schedule_pass.select(settings.select_type),
            priority=priority,
            qos=limits(qos_index[members], jobs.user.take(members), qos_list),
            refused=refused,
            preemption=pool_preemption,
            per_gpu=per_gpu[routing.partition[members]],
            reservations=reservation_inputs(
                [r for r in settings.reservations if r.pool == pool.name],
                batch_pool.nodes,
                jobs.team.take(members),
                horizon_s,
            ),
            lending=lend,
            topology=settings.topology,
            submitted_early=None if jobs.submitted_early is None else jobs.submitted_early[members],
            cpus_memory=holds if counts_cpus else None,
            power=power,
        )
        if settings.topology is not None:
            blocks[members] = blocks_spanned(schedule, settings.topology.nodes_per_block)
        if lend is not None:
            timeline = schedule.timeline
            nodes_up = batch_pool.nodes - lend.lent_at(timeline.time_s)
            schedule = replace(schedule, timeline=replace(timeline, nodes_up=nodes_up.astype(np.int32)))
        start_s[members] = schedule.start_s
        end_s[members] = schedule.end_s
        rejected[members] = schedule.rejected
        preemptions[members] = schedule.preemptions
        lost_gpu_s[members] = schedule.lost_gpu_s
        cancelled[members] = schedule.cancelled
        held = schedule.held_reason > 0
        reason[members[held]] = schedule.held_reason[held]
        short = (schedule.held_by > 0) & ~held
        reason[members[short]] = _HELD_BY_REASON[schedule.held_by[short]]
        saved = None
        if power is not None and schedule.power is not None:
            saved = PowerSaved(
                batch_pool.nodes,
                power.suspend_time_s,
                power.boot_s,
                schedule.power.node_s_up * pool.gpus_per_node / 3600.0,
                int(schedule.power.boots.sum()),
            )
        schedules.append(PoolSchedule(pool, members, schedule, held_nodes, service_gpus, power=saved))
    simulate_s = time.perf_counter() - began

    state = np.where(killed, KILLED_AT_LIMIT, COMPLETED).astype(np.int8)
    state[cancelled] = PREEMPTED
    state[np.isnan(start_s)] = UNFINISHED  # still queued when the engine ran out of events
    state[rejected] = REJECTED
    job_cpus[np.isnan(start_s)] = job_mem_mb[np.isnan(start_s)] = np.nan  # held by jobs that ran
    reason[rejected & (reason == 0)] = REASONS.index("NodeConfigNotAvailable")
    # a cancelled job ran for its last run only; a completed one did all its work (run_s)
    final_run_s = np.where(cancelled, 0.0, run_s)
    return ModelRun(
        model=MODEL,
        settings=settings.echo(),
        jobs=jobs,
        run_s=final_run_s,
        state=state,
        start_s=start_s,
        end_s=end_s,
        pool_of_job=pool_of_job.astype(np.int32),
        pools=schedules,
        services=outcomes,
        simulate_s=simulate_s,
        preemptions=preemptions,
        lost_gpu_s=lost_gpu_s,
        reason=Labels(reason.astype(np.int32), REASONS),
        job_cpus=job_cpus,
        job_mem_mb=job_mem_mb,
        extra=(
            {}
            if settings.topology is None
            else {"topology": fragmentation(blocks, jobs.nodes, settings.topology.nodes_per_block)}
        ),
    )


def run_slurm(
    workload: Workload,
    pools: list[Pool],
    settings: SlurmSettings,
    lending: dict[str, Lending] | None = None,
) -> ModelRun:
    """The model contract's entry (``gpuplan.sim.models``); ``lending``: the nodes of each pool
    hybrid lends to Kubernetes over time."""
    run = simulate_slurm(
        workload.jobs,
        pools,
        settings,
        workload.services,
        workload.team_shares,
        lending,
        workload.epoch_s,
        workload.team_users,
    )
    run.extra["backlog"] = backlog(run, workload.horizon_s)  # the queue at the horizon (metrics.diagnose)
    return run
