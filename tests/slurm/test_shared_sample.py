"""The shared sacct sample (``../shared/traces/slurm/sacct_gpusim_22.05_30jobs.txt``: 30 jobs of 1-32
GPUs, four users in two accounts, partition_prio preemption with REQUEUE, replayed on a real Slurm
22.05.8) simulated with the settings of its run, as issue 15 lists them, against its real starts."""

from __future__ import annotations

import csv
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from gpuplan.inputs import load_input
from gpuplan.sim.models import run_input

# slurm.conf and sacctmgr of the sample's run, as a scenario (cred_expire=10: eligible again 11 s
# after a requeue). slurmctld's start is not recorded (controller_start 0), nor are its decay
# thread's ticks (decay_start), which re-sort the queue by fair share every PriorityCalcPeriod
# (60 s). The sample bounds the first tick that saw usage: sacct stores a job's Priority when it
# first writes the job, and every job submitted up to 39 s shows a fair-share factor of 1.0 (no
# usage yet); jobs 17 and 8 started at 47 s in the order before that tick, job 24 at 56 s in the
# order after it. So the tick fell in (47, 56] s: decay_start -8 (a tick at 52 s), inferred from the
# sample, not measured. Every tick in that interval gives the same 30 starts (decay_start -12 to -4:
# 30 of 30 within 2 s; -14, a tick at 46 s, outside it: 24); with decay_start 0 (a tick at 60 s),
# 28.
SETTINGS = """\
name: shared-sacct-sample
start: 2026-11-30T02:45:00+00:00
cluster:
  pools:
    - {name: gpu, nodes: 8, gpus_per_node: 8, cpus_per_node: 64, memory_gb: 500}
teams:  # sacctmgr's accounts and user associations (ops: root, with no jobs)
  - {name: acct_a, share: 1, users: 2}
  - {name: acct_b, share: 1, users: 2}
  - {name: ops, share: 1, users: 1}
workloads:
  - name: replay
    kind: batch
    pool: gpu
    trace: {path: TRACE, format: sacct, team_map: {acct_a: acct_a, acct_b: acct_b}}
models:
  slurm:
    backfill: slurm
    bf_interval: 1
    bf_resolution: 1
    bf_max_job_test: 10000
    default_queue_depth: 10000
    batch_sched_delay: 0
    sched_interval: 1
    controller_start: 0
    decay_start: -8
    priority_type: multifactor
    priority_weight_age: 1000
    priority_weight_fairshare: 10000
    priority_weight_partition: 1000
    priority_weight_qos: 10000
    priority_max_age: 1h
    priority_decay_half_life: 1h
    priority_calc_period: 60s
    fairshare: fair_tree
    preempt_type: partition_prio
    preempt_mode: requeue
    requeue_delay: 11s
    partitions:
      - {name: batch, pool: gpu, priority_tier: 1, priority_job_factor: 1, preempt_mode: requeue}
      - {name: high, pool: gpu, priority_tier: 10, priority_job_factor: 10}
"""


def real_attempts(path: Path) -> dict[int, list[float]]:
    """Each job's starts on the real Slurm (sacct -D: one row per attempt), seconds from the first submit."""
    lines = path.read_text().splitlines()
    rows = [row for row in csv.DictReader(lines, delimiter="|") if "." not in row["JobID"]]
    epoch = min(datetime.fromisoformat(row["Submit"]).timestamp() for row in rows)
    starts: dict[int, list[float]] = {}
    for row in rows:
        starts.setdefault(int(row["JobID"]), []).append(
            datetime.fromisoformat(row["Start"]).timestamp() - epoch
        )
    return {job: sorted(times) for job, times in starts.items()}


def test_the_shared_sample_with_its_own_settings(shared_trace: Callable[[str], Path], tmp_path: Path) -> None:
    trace = shared_trace("slurm/sacct_gpusim_22.05_30jobs.txt")
    scenario = tmp_path / "sample.yaml"
    scenario.write_text(SETTINGS.replace("TRACE", str(trace)))
    run = run_input("slurm", load_input(scenario))
    real = real_attempts(trace)
    agree = [
        abs(float(start) - real[int(job)][0]) <= 2.0 and int(preempted) == len(real[int(job)]) - 1
        for job, start, preempted in zip(run.jobs.job_id, run.start_s, run.preemptions, strict=True)
    ]
    # issue 15 asks >= 29 of 30; measured 30
    assert sum(agree) >= 29, [int(j) for j, ok in zip(run.jobs.job_id, agree, strict=True) if not ok]
    # the six requeued jobs (8, 10, 12, 13, 14, 18) are the ones preempted, once each
    assert sorted(int(j) for j, n in zip(run.jobs.job_id, run.preemptions, strict=True) if n) == [
        8,
        10,
        12,
        13,
        14,
        18,
    ]
