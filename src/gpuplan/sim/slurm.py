"""The Slurm operating model (OCI HPC Stack).

This slice models one partition of whole nodes (``OverSubscribe=EXCLUSIVE``), jobs in submit
order, and the backfill modes ``none`` and ``easy`` (see ``gpuplan.sim.policies``). Time limits
are enforced as Slurm does without ``OverTimeLimit``: a job whose run time exceeds its time limit
(``--time``, SWF "requested time") is killed at the limit; the scheduler's estimate of a job's
run time is its time limit, or its run time when it has none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine import BatchJobs, run_batch
from gpuplan.sim.outcome import COMPLETED, KILLED_AT_LIMIT, REJECTED, ModelRun
from gpuplan.sim.policies import BACKFILL
from gpuplan.workload.jobtable import JobTable

MODEL = "slurm"


@dataclass(frozen=True)
class SlurmSettings:
    backfill: str = "easy"  # none | easy


def simulate_slurm(jobs: JobTable, pool: Pool, settings: SlurmSettings) -> ModelRun:
    """Schedule ``jobs`` on ``pool`` under the Slurm model; jobs come back in queue order."""
    schedule_pass = BACKFILL.get(settings.backfill)
    jobs = jobs.take(jobs.queue_order())
    limit = jobs.time_limit_s
    has_limit = limit > 0  # NaN (unknown) compares False
    killed = has_limit & (jobs.duration_s > limit)
    run_s = np.where(killed, limit, jobs.duration_s)
    estimate_s = np.where(has_limit, limit, jobs.duration_s)
    batch = BatchJobs(
        job_id=jobs.job_id,
        submit_s=jobs.submit_s,
        run_s=run_s,
        estimate_s=estimate_s,
        nodes=jobs.nodes,
        gpus_per_node=jobs.gpus_per_node,
    )
    began = time.perf_counter()
    schedule = run_batch(batch, pool, schedule_pass.compiled_name)
    simulate_s = time.perf_counter() - began

    state = np.where(killed, KILLED_AT_LIMIT, COMPLETED).astype(np.int8)
    state[schedule.rejected] = REJECTED
    return ModelRun(
        model=MODEL,
        settings={"backfill": settings.backfill},
        pool=pool,
        jobs=jobs,
        run_s=run_s,
        state=state,
        schedule=schedule,
        simulate_s=simulate_s,
    )
