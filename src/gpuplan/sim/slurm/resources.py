"""CPUs and memory of jobs that share nodes under ``SelectType=select/cons_tres`` (Slurm 22.05).

What a job holds on each of its nodes (cpu-memory-spec R2, from the source at slurm-22-05-8-1):

- **CPUs**: what it asked or the trace recorded (AllocTRES ``cpu`` / nodes); else ``DefCpuPerGPU``
  (its partition's, else the cluster's: _set_gpu_defaults reads the partition's job_defaults_list
  first) x its GPUs per node when set (cons_common job_test.c:_set_gpu_defaults applies it only to a job
  that gave no ``--cpus-per-task``); else 1 (job_mgr.c:_validate_job_desc, "default 1 cpu per node").
- **Memory**, only with ``SelectTypeParameters=CR_Core_Memory`` (under ``CR_Core`` memory is not
  consumable, job_test.c:_job_test allocates none): what it asked or held; else ``DefMemPerGPU`` x
  its GPUs per node (gres_select_util.c:gres_select_util_job_mem_set, which overrides
  DefMemPerCPU/DefMemPerNode for a GPU job); else ``DefMemPerCPU`` x its CPUs; else
  ``DefMemPerNode`` (each the partition's when it sets one, else the cluster's: job_mgr.c takes
  part_ptr->def_mem_per_cpu, which holds DefMemPerCPU or DefMemPerNode, before
  slurm_conf.def_mem_per_cpu); else, nothing asked and no default, **the node's whole memory** (a
  ``pn_min_memory`` of 0), so such jobs never share a node.

A node takes a job only with its GPUs, CPUs and memory free (job_test.c:can_job_run_on_node), and
select's best fit measures nodes by their free CPUs, rounded down to a multiple of the job's
``--cpus-per-task`` (job_test.c:_eval_nodes). A job asking more CPUs or memory than a node has is
refused at submit ("Requested node configuration is not available").

A pool whose CPUs per node are unknown (no shape or ``cpus_per_node``) counts CPUs against
``UNKNOWN_CPUS`` per node, which no job fills: CPUs never hold a job back there, but select still
prefers the node most used, as Slurm does with one CPU per job. A pool whose memory is unknown does
not count memory.
"""

from __future__ import annotations

import numpy as np

from gpuplan.sim.cluster import UNKNOWN, Pool
from gpuplan.sim.engine.core import CpusMemory
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.settings import SlurmSettings
from gpuplan.workload.jobtable import Bool, Int32, Int64, JobTable

UNKNOWN_CPUS = 1 << 20  # CPUs per node of a pool whose CPUs are unknown: more than any node has


def _defaults(settings: SlurmSettings, partitions: list[Partition], partition: Int32) -> dict[str, Int64]:
    """Per job, DefCpuPerGPU and the DefMemPer* of its partition, else of the cluster (the
    partition table is never empty: partition_table gives every pool one)."""
    values: dict[str, Int64] = {}
    for name in ("def_cpu_per_gpu", "def_mem_per_gpu"):
        own = np.array([getattr(p, name) or getattr(settings, name) for p in partitions], np.int64)
        values[name] = own[partition]
    # DefMemPerCPU and DefMemPerNode are one setting of a partition (either overrides both)
    per_cpu_node = [
        (p.def_mem_per_cpu, p.def_mem_per_node)
        if p.def_mem_per_cpu or p.def_mem_per_node
        else (settings.def_mem_per_cpu, settings.def_mem_per_node)
        for p in partitions
    ]
    values["def_mem_per_cpu"] = np.array([c for c, _ in per_cpu_node], np.int64)[partition]
    values["def_mem_per_node"] = np.array([n for _, n in per_cpu_node], np.int64)[partition]
    return values


def cpus_memory(
    jobs: JobTable,
    pool: Pool,
    settings: SlurmSettings,
    whole_nodes: Bool,
    partitions: list[Partition],
    partition: Int32,
) -> tuple[CpusMemory, Bool]:
    """What each of ``jobs`` (all routed to ``pool``) holds on each of its nodes, and which ask more
    CPUs or memory than a node of the pool has (refused at submit). A job ``whole_nodes`` marks (an
    ``OverSubscribe=EXCLUSIVE`` partition) holds all its nodes' CPUs (cons_tres job_test.c:_cpus_to_use)
    and the memory it asked (sbatch(1) --exclusive). ``partition``: each job's index in
    ``partitions``, whose defaults come before the cluster's."""
    node_cpus = pool.cpu_milli // 1000 if pool.cpu_milli != UNKNOWN else UNKNOWN_CPUS
    counts_memory = settings.select_type_parameters == "CR_Core_Memory" and pool.memory_mib != UNKNOWN
    node_mem = pool.memory_mib if counts_memory else 0
    gpus = jobs.gpus_per_node.astype(np.int64)
    asked_cpus = jobs.cpus_per_node.astype(np.int64)
    defaults = _defaults(settings, partitions, partition)
    default_cpus = np.maximum(defaults["def_cpu_per_gpu"] * gpus, 1)
    cpus = np.where(asked_cpus > 0, asked_cpus, default_cpus)
    cpus = np.where(whole_nodes & (cpus <= node_cpus), node_cpus, cpus)
    per_task = jobs.column("cpus_per_task")
    cpu_step = np.maximum(np.asarray(per_task, dtype=np.int64), 1)
    mem = np.zeros(len(jobs), np.int64)
    if counts_memory:
        per_gpu, per_cpu, per_node = (
            defaults[name] for name in ("def_mem_per_gpu", "def_mem_per_cpu", "def_mem_per_node")
        )
        default_mem = np.select(
            [per_gpu > 0, per_cpu > 0, per_node > 0], [per_gpu * gpus, per_cpu * cpus, per_node], node_mem
        ).astype(np.int64)
        asked_mem = jobs.mem_per_node
        known = np.isfinite(asked_mem) & (asked_mem > 0)
        mem = np.where(known, np.ceil(np.where(known, asked_mem, 0.0)), default_mem).astype(np.int64)
    refused = (cpus > node_cpus) | (mem > node_mem)
    # the engine takes every job; a refused one never reaches it (run_batch drops it)
    within = CpusMemory(
        node_cpus=int(node_cpus),
        node_mem_mb=int(node_mem),
        cpus_per_node=np.minimum(cpus, node_cpus).astype(np.int32),
        cpu_step=np.minimum(cpu_step, node_cpus).astype(np.int32),
        mem_per_node_mb=np.minimum(mem, node_mem).astype(np.int32),
    )
    return within, refused
