"""Slurm's main scheduler on its own clock (`--backfill slurm`): sched_interval, batch_sched_delay,
default_queue_depth, and --begin jobs noticed at the next pass.

controller.c:_slurmctld_background ticks every second from slurmctld's start (here 0): a full pass
every sched_interval seconds; otherwise, when a submission or a job end asked for one
(queue_job_scheduler) and batch_sched_delay seconds passed since the last pass, a pass testing at
most default_queue_depth + 1 jobs (job_scheduler.c:_schedule). The backfill cycles are moved out of
the way (bf_interval = 3 h) unless a test is about them.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pyarrow.parquet as pq

from gpuplan.inputs import InputOptions
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.qos import Qos
from gpuplan.simulate import SimulateRequest, simulate
from gpuplan.workload.sacct import read_sacct

from builders import run_slurm, starts_of, workload

NO_BACKFILL_CYCLE = 10800  # the first cycle comes 3 h after the controller's start


# every run here, unless it says otherwise: `--backfill slurm` with the backfill cycles out of the way
run = partial(run_slurm, base={"backfill": "slurm", "bf_interval": NO_BACKFILL_CYCLE})


def test_a_submission_is_served_batch_sched_delay_after_the_last_pass() -> None:
    # The thread's last pass counts from its start (0): A, submitted at 1, starts at the tick of 3;
    # B at 5 waits for 6 (3 s after A's pass); C at 20 starts at once.
    jobs = workload().job(submit=1, run=100).job(submit=5, run=100).job(submit=20, run=100)
    assert starts_of(run(jobs, 4)) == [3.0, 6.0, 20.0]
    assert starts_of(run(jobs, 4, batch_sched_delay=0)) == [1.0, 5.0, 20.0]


def test_a_job_end_queues_a_pass() -> None:
    # One node. A runs 10-20; B, queued at 11, is refused by the pass at 13; A's end at 20 asks for
    # a pass, served at once (7 s since the last). With A ending at 15 the pass waits for 16.
    for run_a, b_start in ((10, 20.0), (5, 16.0)):
        jobs = workload().job(submit=10, run=run_a).job(submit=11, run=10)
        assert starts_of(run(jobs, 1)) == [10.0, b_start]


def test_default_queue_depth_bounds_event_passes_not_the_periodic_one() -> None:
    # QOSMaxJobsPerUser=1 holds alice's 2nd-4th jobs; bob's job behind them fits. A pass for an
    # event tests default_queue_depth + 1 jobs: with a depth of 2 it tests only alice's held jobs,
    # and bob waits for the periodic full pass (sched_interval = 60); with 100 he starts at once.
    jobs = workload().job(submit=0, run=1000, user="alice")
    for k in range(3):
        jobs.job(submit=10 + k, run=10, user="alice")
    jobs.job(submit=20, run=10, user="bob")
    limited = (Qos("normal", max_jobs_per_user=1),)
    assert starts_of(run(jobs, 4, qos=limited, default_queue_depth=2))[4] == 60.0
    assert starts_of(run(jobs, 4, qos=limited))[4] == 20.0


def test_the_ticks_keep_the_sub_second_phase_of_the_controller_start() -> None:
    # Issue 15: a real pass at 50.88 s missed a job made eligible by --begin at 51, which the next
    # tick (51.88) started; whole-second ticks would have started it at 51. The ticks come every
    # second from slurmctld's start (controller_start_s, a real number); sbatch never allocates at
    # submission, so a job submitted at 0 waits for the first tick too.
    jobs = workload().job(submit=0, run=100).job(submit=51, run=10)
    options = {"sched_interval": 1, "batch_sched_delay": 0, "submitted_early": [False, True]}
    assert starts_of(run(jobs.copy(), 2, controller_start_s=0.88, **options)) == [0.88, 51.88]
    assert starts_of(run(jobs.copy(), 2, controller_start_s=-0.12, **options)) == [0.88, 51.88]
    assert starts_of(run(jobs, 2, **options)) == [0.0, 51.0]


def test_the_main_loop_ticks_from_its_own_thread_start() -> None:
    # controller.c:_slurmctld_background takes `last_full_sched_time = now` (time(NULL)) when the
    # background thread starts, after the controller's set-up, and runs a full pass once
    # sched_interval whole seconds have passed; each tick is 10 x usleep(100000) after the last.
    # On the 22 replays of the wide calibration set the thread's ticks came 0.8-0.9 s after
    # slurmctld's "started" line (the first periodic pass 61.0-61.1 s after it with the default
    # sched_interval): main_loop_start. The backfill cycles keep controller_start's clock.
    begin_job = workload().job(submit=10, run=5)
    early = {"submitted_early": [True]}
    assert starts_of(run(begin_job.copy(), 2, controller_start_s=-0.5, **early)) == [59.5]
    own_thread = {"controller_start_s": -0.5, "main_loop_start_s": 0.4}
    assert starts_of(run(begin_job.copy(), 2, **own_thread, **early)) == [60.4]
    # event passes tick on the thread's phase too: a submission at 3 waits for the tick at 3.4
    submitted = workload().job(submit=3, run=5)
    assert starts_of(run(submitted, 2, controller_start_s=-0.5, main_loop_start_s=0.4)) == [3.4]
    # with no main_loop_start the thread starts with the controller
    assert starts_of(run(workload().job(submit=3, run=5), 2, controller_start_s=-0.5)) == [3.5]


def test_begin_jobs_wait_for_the_next_pass() -> None:
    # A job submitted ahead with --begin=10 asks for no pass when it becomes eligible: the periodic
    # pass at 60 starts it; or a pass another event asks for (B's submission at 30).
    alone = workload().job(submit=10, run=5)
    assert starts_of(run(alone, 2, submitted_early=[True])) == [60.0]
    assert starts_of(run(alone, 2, submitted_early=[False])) == [10.0]
    assert starts_of(run(alone, 2, submitted_early=[True], sched_interval=20)) == [20.0]
    with_b = workload().job(submit=10, run=5).job(submit=30, run=5)
    assert starts_of(run(with_b, 2, submitted_early=[True, False])) == [30.0, 30.0]
    # and the backfill cycle may start it: every 30 s here (bf_interval), the first at 30
    assert starts_of(run(alone, 2, submitted_early=[True], bf_interval=30)) == [30.0]


def test_without_periodic_passes_a_begin_job_waits_for_an_event() -> None:
    # sched_interval=-1: no periodic pass, and no backfill cycle before 3 h: the --begin job starts
    # at the pass B's submission asks for; alone it would start at the first backfill cycle.
    jobs = workload().job(submit=10, run=5).job(submit=500, run=5)
    assert starts_of(run(jobs, 2, submitted_early=[True, False], sched_interval=-1)) == [500.0, 500.0]
    assert starts_of(run(jobs.copy(), 2, submitted_early=[True, True], sched_interval=-1)) == [10800.0] * 2


def test_sacct_eligible_after_submit_marks_a_job_submitted_early(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|User|Account|Partition|Submit|Eligible|Start|End|Timelimit|NNodes|AllocTRES|State\n"
        "1|u|a|gpu|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T00:01:00|"
        "00:10:00|1|gres/gpu=8|COMPLETED\n"
        "2|u|a|gpu|2024-01-01T00:00:00|2024-01-01T00:00:40|2024-01-01T00:01:00|2024-01-01T00:02:00|"
        "00:10:00|1|gres/gpu=8|COMPLETED\n"
    )
    jobs = read_sacct(path, gpus_per_node=8).jobs
    assert jobs.submitted_early is not None
    assert jobs.submitted_early.tolist() == [False, True]
    assert jobs.submit_s.tolist() == [0.0, 40.0]
    # simulated from the file: job 1 starts at the tick of 3 (3 s after the thread's start) and runs
    # 55 s; job 2, eligible at 40 on the free node, at the next pass: the one job 1's end asks for
    options = InputOptions(nodes=2, gpus_per_node=8)
    result = simulate(SimulateRequest(path, backfill="slurm", options=options, out=tmp_path / "out"))
    assert result.summary["models"]["slurm"]["settings"]["sched_interval"] == 60
    table = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pydict()
    assert dict(zip(table["job_id"], table["start_s"], strict=True)) == {1: 3.0, 2: 58.0}


def test_a_scenario_states_each_thread_start(tmp_path: Path) -> None:
    # models.slurm.main_loop_start / backfill_start (scenario seconds), echoed in summary.json: one
    # job submitted at 1 (sacct, at its submit time) waits for the main loop's tick at 3.4, as
    # batch_sched_delay (3 s) counts from the thread's start at 0.4
    trace = tmp_path / "sacct.txt"
    trace.write_text(
        "JobID|User|Account|Partition|Submit|Eligible|Start|End|Timelimit|NNodes|AllocTRES|State\n"
        "1|u|a|gpu|2024-01-01T00:00:01|2024-01-01T00:00:01|2024-01-01T00:00:05|2024-01-01T00:01:00|"
        "00:10:00|1|gres/gpu=8|COMPLETED\n"
    )
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "name: threads\nstart: 2024-01-01T00:00:00+00:00\n"
        "cluster:\n  pools:\n    - {name: gpu, nodes: 2, gpus_per_node: 8}\n"
        "teams:\n  - {name: a}\n"
        "workloads:\n  - {name: replay, kind: batch, pool: gpu,\n"
        "     trace: {path: sacct.txt, format: sacct, team: a}}\n"
        "models:\n  slurm:\n    backfill: slurm\n    controller_start: -0.5\n"
        "    main_loop_start: 0.4\n    backfill_start: -0.45\n"
    )
    result = simulate(SimulateRequest(scenario, out=tmp_path / "out"))
    settings = result.summary["models"]["slurm"]["settings"]
    assert (settings["main_loop_start_s"], settings["backfill_start_s"]) == (0.4, -0.45)
    table = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pydict()
    assert table["start_s"] == [3.4]


def test_a_preemption_queues_no_later_pass() -> None:
    # One 8-GPU node: L (batch) holds it from 3; H (high, 4 GPUs) preempts it. Each victim's epilog
    # complete calls schedule() at once (proc_req.c:_slurm_rpc_epilog_complete), a pass that
    # batch_sched_delay does not gate and that queues nothing for later; a job end's request is
    # gated (agent.c -> queue_job_scheduler, controller.c:_slurmctld_background). So J (4 GPUs,
    # --begin 1 s after the preemption) waits for the periodic pass at 60, not for a pass 3 s
    # after the preemption. H submitted at 10 preempts in the main pass at 10; H --begin 10 is
    # first tested by the backfill cycle at 30, which preempts, and the main pass it runs at once
    # comes before J is eligible at 31 (the next cycle is at 60 too).
    tiers = (Partition("batch", "batch", priority_tier=1), Partition("high", "batch", priority_tier=2))
    options = {
        "backfill": "slurm",
        "partitions": tiers,
        "preempt_type": "partition_prio",
        "preempt_mode": "requeue",
    }
    for preempt_at, by_backfill, bf_interval in ((10, False, NO_BACKFILL_CYCLE), (30, True, 30)):
        jobs = (
            workload()
            .job(submit=0, run=1000, gpus=8, partition="batch")
            .job(submit=10, run=500, gpus=4, partition="high")
            .job(submit=preempt_at + 1, run=10, gpus=4, partition="batch")
        )
        early = [False, by_backfill, True]
        ran = run_slurm(jobs, 1, 8, bf_interval=bf_interval, submitted_early=early, **options)
        assert starts_of(ran)[1:] == [float(preempt_at), 60.0]
        assert ran.preemptions.tolist() == [1, 0, 0]
