"""Slurm partitions (https://slurm.schedmd.com/slurm.conf.html#SECTION_PARTITION-CONFIGURATION).

With ``SelectType=select/cons_tres`` (Slurm's default, and what GPU clusters run) jobs take the
GPUs they ask on each node (``--gpus-per-node``, ``--gres=gpu:N``) and share nodes, unless the
partition is ``OverSubscribe=EXCLUSIVE``; with ``select/linear`` every job takes whole nodes.

A partition here spans all nodes of one pool, and several partitions may share a pool (the usual
``batch``/``high`` pair over the same nodes). A pool no partition names gets one of its own name.
Jobs go to the partition their ``partition`` names, else to the first partition of the pool it
names, else of the first pool they fit.

At submit, as with ``EnforcePartLimits=ALL``, a job is refused (reason in jobs.parquet) when its
time limit exceeds the partition's ``MaxTime`` (``PartitionTimeLimit``) or its account is not in
``AllowAccounts`` (``AccountNotAllowed``). A job without a time limit gets ``DefaultTime``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpuplan.sim.cluster import Pool
from gpuplan.workload.jobtable import Bool, Float64, Int32, JobTable


@dataclass(frozen=True)
class Partition:
    name: str
    pool: str
    priority_tier: int = 1  # PriorityTier: partitions are scheduled (and preempt) by tier first
    priority_job_factor: int = 1  # PriorityJobFactor: the partition factor of multifactor priority
    max_time_s: float | None = None  # MaxTime (None: UNLIMITED)
    default_time_s: float | None = None  # DefaultTime (None: MaxTime)
    allow_accounts: tuple[str, ...] | None = None  # AllowAccounts (None: ALL)
    preempt_mode: str | None = None  # PreemptMode of its jobs (None: the cluster's)
    grace_time_s: float = 0.0  # GraceTime
    exclusive: bool = False  # OverSubscribe=EXCLUSIVE: jobs take whole nodes even with cons_tres
    # its jobs' defaults, over the cluster's (0: the cluster's): DefCpuPerGPU, DefMemPerGPU (MB), and
    # DefMemPerCPU or DefMemPerNode (MB; Slurm keeps these two in one field, part_ptr->def_mem_per_cpu)
    def_cpu_per_gpu: int = 0
    def_mem_per_gpu: int = 0
    def_mem_per_cpu: int = 0
    def_mem_per_node: int = 0
    suspend_time_s: float | None = None  # SuspendTime of its nodes (None: the cluster's)
    resume_timeout_s: float | None = None  # ResumeTimeout of its nodes (None: the cluster's)


def partition_table(defined: tuple[Partition, ...], pools: list[Pool]) -> list[Partition]:
    """The defined partitions (of pools that exist) plus one named after each pool none covers."""
    pool_names = {pool.name for pool in pools}
    table = [p for p in defined if p.pool in pool_names]
    covered = {p.pool for p in table}
    table += [Partition(pool.name, pool.name) for pool in pools if pool.name not in covered]
    return table


# Why a job was refused at submit (codes of Routing.refusal), as Slurm words it.
REFUSALS = ("", "PartitionTimeLimit", "AccountNotAllowed")
PARTITION_TIME_LIMIT, ACCOUNT_NOT_ALLOWED = 1, 2


@dataclass(frozen=True)
class Routing:
    partition: Int32  # index into the partition table
    time_limit_s: Float64  # with DefaultTime filled in (NaN: none)
    refusal: npt.NDArray[np.int8]  # index into REFUSALS


def route_jobs(jobs: JobTable, table: list[Partition], pools: list[Pool]) -> Routing:
    """Each job's partition, its time limit after ``DefaultTime``, and refusals at submit."""
    by_name = {p.name: i for i, p in enumerate(table)}
    first_of_pool: dict[str, int] = {}
    for i, p in enumerate(table):
        first_of_pool.setdefault(p.pool, i)
    label_to_partition = np.array(
        [by_name.get(label, first_of_pool.get(label, -1)) for label in jobs.partition.labels] or [-1],
        dtype=np.int32,
    )
    partition = label_to_partition[jobs.partition.codes] if len(jobs) else np.zeros(0, dtype=np.int32)
    for pool in pools:
        fits = (partition < 0) & (jobs.nodes <= pool.nodes) & (jobs.gpus_per_node <= pool.gpus_per_node)
        partition[fits] = first_of_pool[pool.name]
    partition[partition < 0] = 0

    limit = jobs.time_limit_s.copy()
    default = np.array([np.nan if p.default_time_s is None else p.default_time_s for p in table])
    max_time = np.array([np.inf if p.max_time_s is None else p.max_time_s for p in table])
    no_limit = ~(limit > 0)
    limit[no_limit] = np.where(np.isnan(default), max_time, default)[partition[no_limit]]
    limit[np.isinf(limit)] = np.nan

    refusal = np.zeros(len(jobs), dtype=np.int8)
    refusal[limit > max_time[partition]] = PARTITION_TIME_LIMIT
    refusal[~_allowed_accounts(jobs, table)[partition, jobs.team.codes]] = ACCOUNT_NOT_ALLOWED
    return Routing(partition.astype(np.int32), limit, refusal)


def _allowed_accounts(jobs: JobTable, table: list[Partition]) -> Bool:
    """partitions x accounts: whether the account may submit to the partition."""
    allowed = np.ones((len(table), max(len(jobs.team.labels), 1)), dtype=bool)
    for i, p in enumerate(table):
        if p.allow_accounts is not None:
            allowed[i, : len(jobs.team.labels)] = [team in p.allow_accounts for team in jobs.team.labels]
    return allowed


def pool_index(table: list[Partition], pools: list[Pool]) -> Int32:
    """Index of each partition's pool."""
    index = {pool.name: i for i, pool in enumerate(pools)}
    return np.array([index[p.pool] for p in table], dtype=np.int32)
