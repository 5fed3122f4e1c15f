"""The order of Slurm 22.05's queue and what fair share charges, from the source (issue 15):
job_scheduler.c:sort_job_queue2 (a job that may preempt another first, then priority, then
SubmitTime), priority_multifactor.c:_apply_new_usage with job_mgr.c:calc_job_billable_tres (usage is
billing: the job's CPUs without TRESBillingWeights), and a requeued job keeping its priority until
the next recalculation, which recomputes it even while it waits out its requeue delay
(decay_apply_weighted_factors skips only jobs that are not pending)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gpuplan.inputs import load_input
from gpuplan.sim.slurm.billing import billing_weights
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.priority import MultifactorSettings
from gpuplan.sim.slurm.qos import Qos
from gpuplan.sim.slurm.settings import SlurmSettings

from builders import run_slurm, start_times, workload

LADDER = (Qos("low"), Qos("normal", preempt=("low",)), Qos("high", preempt=("low", "normal")))
TIERS = (Partition("low", "batch", priority_tier=1), Partition("high", "batch", priority_tier=2))
# Slurm's backfill with its loops every second
EVERY_SECOND = {"bf_interval": 1, "bf_resolution": 1, "sched_interval": 1, "batch_sched_delay": 0}


@pytest.mark.parametrize("priority_type", ["basic", "multifactor"])
def test_a_job_that_may_preempt_another_is_queued_before_it(priority_type: str) -> None:
    # One node, held by a high job until 100. L (low) waits from 1, N (normal, which may preempt
    # low) from 2: N goes first although L is older, as sort_job_queue2 tests preempt_g_job_preempt_check
    # before priorities (with age counting, L's priority is the higher)
    jobs = (
        workload()
        .job(submit=0, run=100, qos="high")
        .job(submit=1, run=10, qos="low")
        .job(submit=2, run=10, qos="normal")
    )
    aged = MultifactorSettings(weight_age=1000, max_age_s=100, calc_period_s=1)
    settings = SlurmSettings(
        "none",
        priority_type=priority_type,
        multifactor=aged,
        qos=LADDER,
        preempt_type="qos",
        preempt_mode="requeue",
    )
    assert start_times(run_slurm(jobs, 1, settings=settings)) == {1: 0.0, 2: 110.0, 3: 100.0}
    # without preemption the older job goes first
    plain = replace(settings, preempt_type="none")
    assert start_times(run_slurm(jobs, 1, settings=plain)) == {1: 0.0, 2: 100.0, 3: 110.0}


def test_equal_priorities_go_by_when_sbatch_ran_not_by_begin_time() -> None:
    # X was submitted at 0 with --begin at 10, Y at 5; both wait for the one node until 100 with the
    # same priority: X's SubmitTime is the earlier (details->submit_time), so X starts first
    jobs = workload().job(submit=0, run=100).job(submit=10, run=10).job(submit=5, run=10)
    table = jobs.table()
    table = replace(table, submitted_s=np.array([0.0, 0.0, 5.0]))
    early = [False, True, False]
    assert start_times(run_slurm(table, 1, backfill="none", submitted_early=early)) == {
        1: 0.0,
        2: 100.0,
        3: 110.0,
    }
    assert start_times(run_slurm(jobs.table(), 1, backfill="none")) == {1: 0.0, 2: 110.0, 3: 100.0}


def fair(**options: object) -> SlurmSettings:
    return SlurmSettings(
        "none",
        priority_type="multifactor",
        multifactor=MultifactorSettings(weight_fairshare=1000, calc_period_s=5),
        **options,  # type: ignore[arg-type]
    )


def test_fair_share_charges_cpus_unless_billing_weights_say_otherwise() -> None:
    # Account a ran a 1-GPU job holding 48 CPUs, account b a 7-GPU job holding 1 CPU, each for 50 s.
    # Slurm bills CPUs (calc_job_billable_tres without TRESBillingWeights), so a used more and b's
    # next job goes first; billing GPUs (GRES/gpu=1) puts a's first
    jobs = (
        workload()
        .job(submit=0, run=50, gpus=1, cpus=48, team="a")
        .job(submit=0, run=50, gpus=7, team="b", job_id=2)
        .job(submit=10, run=50, gpus=8, team="a")
        .job(submit=10, run=50, gpus=8, team="b")
    )
    nodes = {"node_cpus": 64, "node_mem_mb": 512000}
    by_cpus = run_slurm(jobs, 1, 8, settings=fair(), **nodes)
    assert start_times(by_cpus) == {1: 0.0, 2: 0.0, 3: 100.0, 4: 50.0}
    by_gpus = run_slurm(jobs, 1, 8, settings=fair(tres_billing_weights="GRES/gpu=1"), **nodes)
    assert start_times(by_gpus) == {1: 0.0, 2: 0.0, 3: 50.0, 4: 100.0}


def test_billing_weights_read_as_slurm_conf_writes_them() -> None:
    assert billing_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0") == {"cpu": 1.0, "mem": 0.25 / 1024, "gpu": 2.0}
    assert billing_weights("") == {}
    with pytest.raises(ValueError, match="GRES/foo"):
        billing_weights("GRES/foo=1")
    with pytest.raises(ValueError, match="not a number"):
        billing_weights("CPU=x")


def test_a_requeued_job_keeps_its_priority_until_the_next_recalculation() -> None:
    # One node, recalculations every 5 s. B0 (account b) runs 0-3, A (account a) from 3: by the
    # recalculation at 10, a has used more. H (a higher tier) preempts A at 12 and ends at 13; W
    # (account b) was submitted at 12.5. A requeued keeps the priority it had while pending (set at
    # its submit, with no usage yet), so it goes first at 13, before the next recalculation at 15;
    # recomputed at once with a's usage it would go after W
    jobs = (
        workload()
        .job(submit=0, run=3, team="b", partition="low")
        .job(submit=1, run=100, team="a", partition="low")
        .job(submit=12, run=1, team="c", partition="high")
        .job(submit=12.5, run=50, team="b", partition="low")
    )
    settings = fair(
        partitions=TIERS, preempt_type="partition_prio", preempt_mode="requeue", requeue_delay_s=0.0
    )
    run = run_slurm(jobs, 1, settings=settings)
    assert run.preemptions.tolist() == [0, 1, 0, 0]
    assert start_times(run) == {1: 0.0, 2: 3.0, 3: 12.0, 4: 113.0}
    # the decay thread keeps its own clock (decay_start): with ticks at 2.5 + 5k, the one at 12.5
    # recomputes the requeued A with a's usage, and W goes first
    shifted = run_slurm(jobs, 1, settings=replace(settings, decay_start_s=2.5))
    assert start_times(shifted) == {1: 0.0, 2: 3.0, 3: 12.0, 4: 13.0}


def test_a_job_waiting_out_its_requeue_delay_is_recomputed_at_a_tick() -> None:
    # As above, but H runs 12-18 and A waits out a 5-s requeue delay (eligible at 17). It is pending
    # meanwhile, so the tick at 15 recomputes its priority with a's usage
    # (decay_apply_weighted_factors skips only jobs not pending) and W, of the account that used
    # less, goes first at 18; kept from its submit until a tick after it is queued again, A's
    # priority would put it first
    jobs = (
        workload()
        .job(submit=0, run=3, team="b", partition="low")
        .job(submit=1, run=100, team="a", partition="low")
        .job(submit=12, run=6, team="c", partition="high")
        .job(submit=12.5, run=50, team="b", partition="low")
    )
    settings = fair(
        partitions=TIERS, preempt_type="partition_prio", preempt_mode="requeue", requeue_delay_s=5.0
    )
    run = run_slurm(jobs, 1, settings=settings)
    assert run.preemptions.tolist() == [0, 1, 0, 0]
    assert start_times(run) == {1: 0.0, 2: 3.0, 3: 12.0, 4: 18.0}
    assert run.end_s.tolist()[1] == 18.0 + 50.0 + 100.0  # A restarts after W, from zero


def test_backfill_plans_a_preemptor_as_if_its_victims_were_gone() -> None:
    # Three nodes: Lr (low) holds node0 until 1000, Nr (normal) node1 until 100, node2 is free. P
    # (normal, 3 nodes) cannot start now even by preempting Lr; the will-run test takes Lr as gone
    # (cons_common job_test.c:_will_run_test with preemptee candidates), so P is planned at 100 on
    # every node, and Q (low, 1 node for 200 s) may not backfill onto node2. Planned at Lr's end,
    # 1000, P would leave node2 to Q, and preempt it at 100.
    jobs = (
        workload()
        .job(submit=0, run=1000, limit=1000, qos="low")
        .job(submit=0, run=100, limit=100, qos="normal")
        .job(submit=1, run=50, limit=50, nodes=3, qos="normal")
        .job(submit=2, run=200, limit=200, qos="low")
    )
    settings = SlurmSettings(
        "slurm",
        **EVERY_SECOND,
        qos=LADDER,
        preempt_type="qos",
        preempt_mode="requeue",
        requeue_delay_s=0.0,
    )
    run = run_slurm(jobs, 3, settings=settings)
    assert start_times(run)[3] == 100.0
    assert start_times(run)[4] == 150.0
    assert run.preemptions.tolist() == [1, 0, 0, 0]


def test_a_traces_sbatch_times_share_the_clock_of_its_arrivals(tmp_path: Path) -> None:
    # sacct: job 1 was submitted at 00:00:10 with --begin for 00:01:00, job 2 at 00:00:30. The
    # scenario's clock starts at the first arrival (job 2 at 30 s): sbatch times move with it
    header = "JobID|User|Account|Partition|Submit|Eligible|Start|End|NNodes|AllocTRES|State\n"
    rows = [
        "1|alice|acct_a|batch|2026-11-30T00:00:10|2026-11-30T00:01:00|2026-11-30T00:01:00|2026-11-30T00:02:00|1|"
        "cpu=1,gres/gpu=1,node=1|COMPLETED",
        "2|bob|acct_a|batch|2026-11-30T00:00:30|2026-11-30T00:00:30|2026-11-30T00:00:30|2026-11-30T00:01:30|1|"
        "cpu=1,gres/gpu=1,node=1|COMPLETED",
    ]
    (tmp_path / "trace.sacct").write_text(header + "\n".join(rows) + "\n")
    (tmp_path / "s.yaml").write_text(
        "name: t\nstart: 2026-11-30T00:00:30+00:00\n"
        "cluster:\n  pools:\n    - {name: gpu, nodes: 1, gpus_per_node: 8}\n"
        "teams:\n  - {name: acct_a}\nworkloads:\n  - name: replay\n    kind: batch\n    pool: gpu\n"
        "    trace: {path: trace.sacct, format: sacct, team: acct_a}\n"
    )
    jobs = load_input(tmp_path / "s.yaml").workload.jobs
    times = sorted(zip(jobs.submit_s.tolist(), np.asarray(jobs.column("submitted_s")).tolist(), strict=True))
    assert times == [(0.0, 0.0), (30.0, -20.0)]  # bob's at once; alice's sbatch 20 s before the clock starts


def test_a_requeue_stamps_whole_seconds() -> None:
    # Loops at x.7 s (controller_start 0.7): H preempts L at 25.7; Slurm stamps L's new SubmitTime
    # with time(NULL), 25 (batch_requeue_fini), the same second W was submitted in, so the tie of
    # equal priorities goes to the lower job id, L, when H ends
    jobs = (
        workload()
        .job(submit=0, run=100, partition="low")
        .job(submit=25, run=5, partition="high")
        .job(submit=25, run=50, partition="low")
    )
    settings = SlurmSettings(
        "slurm",
        **EVERY_SECOND,
        controller_start_s=0.7,
        partitions=TIERS,
        preempt_type="partition_prio",
        preempt_mode="requeue",
        requeue_delay_s=0.0,
    )
    run = run_slurm(jobs, 1, settings=settings)
    assert run.preemptions.tolist() == [1, 0, 0]
    starts = start_times(run)
    assert starts[3] == pytest.approx(130.7)  # after L's second run of 100 s


def test_age_counts_only_once_a_pass_has_read_the_job() -> None:
    # One node, held by B from 3 (the thread's first pass). X (--begin 10, sbatch at 2) and Z
    # (--begin 12, sbatch at 1) are read by no pass before the periodic one at 60 (sched_interval
    # 60; --begin jobs ask for none; no backfill cycle before 3 h), so the recalculations at 30 and
    # 60 (PriorityCalcPeriod 30, the one at 60 before the pass) give them no age: accrue_time is set
    # only by build_job_queue (acct_policy.c:acct_policy_handle_accrue_time), and
    # set_priority_factors counts age from it. Their priorities tie and Z, sbatch'ed first, starts
    # when B ends at 68. After the pass at 60 has read them, the recalculation at 90 counts each
    # one's age from its eligibility: X, 2 s older, goes first when B ends at 98.
    # (The decay thread ticks at exactly 30 k here, decay_start 0; by default it starts 0.83 s after
    # slurmctld, as measured, and its tick at 60.83 comes after the pass: X then goes first at 68.)
    aged = MultifactorSettings(weight_age=36000, max_age_s=3600, calc_period_s=30, weight_fairshare=0)
    settings = SlurmSettings(
        "slurm",
        bf_interval=10800,
        sched_interval=60,
        priority_type="multifactor",
        multifactor=aged,
        decay_start_s=0.0,
    )
    lagged = replace(settings, decay_start_s=None)
    assert lagged.decay_phase_s() == pytest.approx(0.83)
    for b_run, first, options in ((65, 3, settings), (95, 2, settings), (65, 2, lagged)):
        jobs = workload().job(submit=0, run=b_run).job(submit=10, run=10).job(submit=12, run=10)
        table = replace(jobs.table(), submitted_s=np.array([0.0, 2.0, 1.0]))
        run = run_slurm(table, 1, settings=options, submitted_early=[False, True, True])
        assert start_times(run)[first] == 3 + b_run


def test_fair_share_counts_whole_seconds_of_use() -> None:
    # _apply_new_usage charges time(NULL) stamps: from max(start, last tick) to the tick, in whole
    # seconds. A1 (account a, 10 CPUs) and B1 (account b, 1 CPU) start at 29.2 (the main loop's
    # ticks at x.2), the decay thread ticks at 29.9 (decay_start -0.1): neither has used a whole
    # second, so a and b tie, and of Xa (sbatch at 40) and Xb (41), waiting for C's node until 50,
    # Xa goes first. Charged by the fraction, a would have used ten times b's 0.7 s and Xb gone first.
    jobs = (
        workload()
        .job(submit=0, run=50, team="c")
        .job(submit=29, run=1000, team="a", cpus=10)
        .job(submit=29, run=1000, team="b", cpus=1)
        .job(submit=40, run=10, team="a")
        .job(submit=41, run=10, team="b")
    )
    settings = SlurmSettings(
        "slurm",
        **EVERY_SECOND,
        controller_start_s=0.2,
        decay_start_s=-0.1,
        priority_type="multifactor",
        multifactor=MultifactorSettings(weight_fairshare=1000, calc_period_s=30),
    )
    starts = start_times(run_slurm(jobs, 3, settings=settings, node_cpus=64))
    assert (starts[2], starts[3]) == (29.2, 29.2)
    assert (starts[4], starts[5]) == (50.2, 60.2)
