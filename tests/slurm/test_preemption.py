"""Partitions sharing nodes (PriorityTier, per-partition blocking, MaxTime, DefaultTime,
AllowAccounts) and preemption (PreemptType partition_prio and qos; PreemptMode CANCEL, REQUEUE,
SUSPEND; GraceTime; checkpoints), after https://slurm.schedmd.com/preempt.html: a "high" partition
of a higher PriorityTier over the same nodes as "low" preempts low's jobs."""

from __future__ import annotations

from functools import partial

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.outcome import JOB_STATES
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.qos import Qos

from builders import Workload, by_job_id, run_slurm, workload

TIERS = (Partition("low", "batch", priority_tier=1), Partition("high", "batch", priority_tier=2))


# every run here, unless it says otherwise: strict FIFO, the two tiers over the one pool, partition_prio
# preemption that requeues the preempted job at once
run = partial(
    run_slurm,
    base={
        "backfill": "none",
        "partitions": TIERS,
        "preempt_type": "partition_prio",
        "preempt_mode": "requeue",
        "requeue_delay_s": 0.0,
    },
)


def low_then_high() -> Workload:
    # a low job holds all 4 nodes; 10 s later a high job wants 2 of them
    return (
        workload()
        .job(submit=0, run=100, nodes=4, partition="low", checkpoint=None)
        .job(submit=10, run=20, nodes=2, partition="high")
    )


def test_requeue_restarts_the_preempted_job_from_zero() -> None:
    result = run(low_then_high(), 4)
    assert by_job_id(result, result.start_s) == {1: 0.0, 2: 10.0}
    assert by_job_id(result, result.end_s) == {1: 130.0, 2: 30.0}  # job 1 runs its 100 s again from 30 s
    assert result.preemptions.tolist() == [1, 0]
    assert result.lost_gpu_s.tolist() == [40.0, 0.0]  # 10 s on 4 GPUs
    assert [JOB_STATES[s] for s in result.state] == ["completed", "completed"]


def test_requeued_job_waits_for_the_requeue_delay() -> None:
    result = run(low_then_high(), 4, requeue_delay_s=121.0)
    assert by_job_id(result, result.end_s) == {1: 231.0, 2: 30.0}  # eligible again at 131 s


def test_a_checkpointing_job_loses_only_the_work_since_its_last_checkpoint() -> None:
    jobs = (
        workload()
        .job(submit=0, run=100, nodes=4, partition="low", checkpoint=4)
        .job(submit=10, run=20, nodes=2, partition="high")
    )
    result = run(jobs, 4)
    assert result.lost_gpu_s.tolist() == [8.0, 0.0]  # checkpoint at 8 s: 2 s on 4 GPUs lost
    assert by_job_id(result, result.end_s)[1] == 30.0 + 92.0


def test_cancel_ends_the_preempted_job() -> None:
    result = run(low_then_high(), 4, preempt_mode="cancel")
    assert [JOB_STATES[s] for s in result.state] == ["preempted", "completed"]
    assert by_job_id(result, result.end_s) == {1: 10.0, 2: 30.0}
    assert result.lost_gpu_s.tolist() == [40.0, 0.0]
    assert result.run_s.tolist() == [0.0, 20.0]


def test_suspend_resumes_without_losing_work() -> None:
    result = run(low_then_high(), 4, preempt_mode="suspend")
    assert result.lost_gpu_s.tolist() == [0.0, 0.0]
    assert by_job_id(result, result.end_s) == {1: 30.0 + 90.0, 2: 30.0}


def test_grace_time_delays_the_preemptor() -> None:
    partitions = (Partition("low", "batch", priority_tier=1, grace_time_s=5.0), TIERS[1])
    result = run(low_then_high(), 4, partitions=partitions)
    assert by_job_id(result, result.start_s) == {1: 0.0, 2: 15.0}
    assert result.lost_gpu_s.tolist() == [60.0, 0.0]  # it ran 15 s before leaving


def test_no_preemption_without_a_lower_tier_or_a_mode() -> None:
    for overrides in (
        {"preempt_type": "none"},
        {"preempt_mode": "off"},
        {"partitions": (Partition("low", "batch", 2), Partition("high", "batch", 2))},
    ):
        result = run(low_then_high(), 4, **overrides)
        assert by_job_id(result, result.start_s) == {1: 0.0, 2: 100.0}, overrides
        assert result.preemptions.sum() == 0


def test_victims_are_low_tier_small_and_young_first_and_only_as_many_as_needed() -> None:
    # 4 nodes: low jobs A (2 nodes), B (1 node, started at 1 s), C (1 node, started at 2 s)
    base = (
        workload()
        .job(submit=0, run=1000, nodes=2, partition="low")
        .job(submit=1, run=1000, nodes=1, partition="low")
        .job(submit=2, run=1000, nodes=1, partition="low")
    )
    two = run(base.copy().job(submit=10, run=5, nodes=2, partition="high"), 4)
    assert two.preemptions.tolist() == [0, 1, 1, 0]  # the two 1-node jobs
    # three nodes: C (youngest 1-node), then B, then A would free 4; C is then not needed
    three = run(base.copy().job(submit=10, run=5, nodes=3, partition="high"), 4)
    assert three.preemptions.tolist() == [1, 1, 0, 0]


def test_victims_of_equal_rank_go_in_job_list_order_unless_youngest_first() -> None:
    # 3 nodes, three 1-node low jobs started at 0, 1 and 2 s; a 1-node high job at 10 s. Slurm sorts
    # the candidates by preempt_p_get_prio alone, ties in job-list order (slurmctld/preempt.c:
    # slurm_find_preemptable_jobs, _sort_by_prio): the oldest goes. preempt_youngest_first sorts by
    # start time, latest first (_sort_by_youngest).
    jobs = workload()
    for submit in (0, 1, 2):
        jobs.job(submit=submit, run=1000, nodes=1, partition="low")
    jobs.job(submit=10, run=5, nodes=1, partition="high")
    assert run(jobs.copy(), 3).preemptions.tolist() == [1, 0, 0, 0]
    assert run(jobs.copy(), 3, preempt_youngest_first=True).preemptions.tolist() == [0, 0, 1, 0]


def test_youngest_first_ignores_rank_and_size() -> None:
    # The three-node case above with preempt_youngest_first: C (2 s), B (1 s), then A (0 s) make
    # room; Slurm's reorder pass (job_test.c:_run_now) puts A, the last needed, first and takes C
    # after it: A and C go, B stays.
    base = (
        workload()
        .job(submit=0, run=1000, nodes=2, partition="low")
        .job(submit=1, run=1000, nodes=1, partition="low")
        .job(submit=2, run=1000, nodes=1, partition="low")
        .job(submit=10, run=5, nodes=3, partition="high")
    )
    assert run(base, 4, preempt_youngest_first=True).preemptions.tolist() == [1, 0, 1, 0]


def test_a_requeued_job_gets_a_new_submit_time() -> None:
    # 1 node: R (low) runs from 0 s; W (low) waits from 5 s; H (high) preempts R at 10 s. Slurm
    # requeues R with SubmitTime 10 s (job_mgr.c:_job_requeue_op), so when H ends at 30 s W, now the
    # older of the two equal-priority jobs, runs first and R after it.
    jobs = (
        workload()
        .job(submit=0, run=100, nodes=1, partition="low")
        .job(submit=5, run=50, nodes=1, partition="low")
        .job(submit=10, run=20, nodes=1, partition="high")
    )
    result = run(jobs, 1)
    assert by_job_id(result, result.start_s) == {1: 0.0, 2: 30.0, 3: 10.0}
    assert by_job_id(result, result.end_s)[1] == 80.0 + 100.0


def test_qos_preemption_follows_the_preempt_list() -> None:
    jobs = (
        workload()
        .job(submit=0, run=100, nodes=4, qos="scavenger")
        .job(submit=10, run=20, nodes=2, qos="urgent")
        .job(submit=20, run=20, nodes=4, qos="normal")
    )
    qos = (Qos("scavenger"), Qos("urgent", priority=100, preempt=("scavenger",)))
    result = run(jobs, 4, partitions=(), preempt_type="qos", qos=qos)
    # normal may not preempt; the requeued scavenger job is back in the queue (at 10 s) before it
    assert result.preemptions.tolist() == [1, 0, 0]
    assert by_job_id(result, result.start_s) == {1: 0.0, 2: 10.0, 3: 130.0}
    assert by_job_id(result, result.end_s)[1] == 130.0


def test_the_backfill_cycle_preempts_for_a_job_the_main_scheduler_never_reaches() -> None:
    # 2 nodes: a scavenger job and a normal one run. A (normal, 2 nodes, first in the queue) may
    # preempt no one: it blocks the main scheduler, which never reaches U (urgent, 1 node, may
    # preempt scavenger). The backfill cycle tests U too (backfill.c: the will-run test with
    # preemptable jobs gone, job_test.c:_will_run_test): U preempts the scavenger job at the
    # cycle of 30 s instead of reserving behind A.
    jobs = (
        workload()
        .job(submit=0, run=1000, limit=1000, qos="scavenger")
        .job(submit=0, run=1000, limit=1000, qos="normal")
        .job(submit=5, run=100, limit=100, nodes=2, qos="normal")
        .job(submit=6, run=50, limit=50, qos="urgent")
    )
    qos = (Qos("scavenger"), Qos("urgent", preempt=("scavenger",)))
    options = {"partitions": (), "preempt_type": "qos", "qos": qos, "controller_start_s": -60.0}
    result = run(jobs, 2, backfill="slurm", **options)
    assert by_job_id(result, result.start_s) == {1: 0.0, 2: 0.0, 3: 1000.0, 4: 30.0}
    assert result.preemptions.tolist() == [1, 0, 0, 0]
    # without backfill only the main scheduler could preempt, and it stops at A
    fifo = run(jobs, 2, backfill="none", **options)
    assert fifo.preemptions.tolist() == [0, 0, 0, 0]
    assert by_job_id(fifo, fifo.start_s)[4] == 1100.0  # after A


def test_higher_tier_partitions_schedule_first_with_basic_priority() -> None:
    jobs = (
        workload()
        .job(submit=0, run=10, nodes=2, partition="low")
        .job(submit=1, run=10, nodes=2, partition="low")
        .job(submit=2, run=10, nodes=2, partition="high")
    )
    result = run(jobs, 2, preempt_type="none")
    assert by_job_id(result, result.start_s) == {1: 0.0, 2: 20.0, 3: 10.0}


def test_a_blocked_job_blocks_every_partition_on_its_nodes() -> None:
    # slurmctld takes a failed partition's nodes out of the pass: partition b's small job, behind
    # a's blocked job on the same nodes, waits too (strict FIFO); with backfill it may go around
    same_nodes = (Partition("a", "batch"), Partition("b", "batch"))
    jobs = (
        workload()
        .job(submit=0, run=10, limit=10, nodes=3, partition="a")
        .job(submit=1, run=10, limit=10, nodes=2, partition="a")  # does not fit until 10 s
        .job(submit=2, run=5, limit=5, nodes=1, partition="b")
    )
    strict = run(jobs, 4, partitions=same_nodes, preempt_type="none", backfill="none")
    assert by_job_id(strict, strict.start_s) == {1: 0.0, 2: 10.0, 3: 10.0}
    easy = run(jobs, 4, partitions=same_nodes, preempt_type="none", backfill="easy")
    assert by_job_id(easy, easy.start_s) == {1: 0.0, 2: 10.0, 3: 2.0}  # ends by the head's shadow time


def test_partition_limits_refuse_or_fill_in_time_limits() -> None:
    partitions = (
        Partition("short", "batch", max_time_s=3600.0, default_time_s=600.0, allow_accounts=("physics",)),
    )
    jobs = (
        workload()
        .job(submit=0, run=100, limit=7200, team="physics", partition="short")  # over MaxTime
        .job(submit=0, run=1000, team="physics", partition="short")  # DefaultTime 600 s: killed
        .job(submit=0, run=100, team="biology", partition="short")  # not in AllowAccounts
    )
    result = run(jobs, 4, partitions=partitions, preempt_type="none")
    assert [JOB_STATES[s] for s in result.state] == ["rejected", "killed_at_limit", "rejected"]
    assert result.reason is not None
    assert [result.reason.labels[c] for c in result.reason.codes] == [
        "PartitionTimeLimit",
        "",
        "AccountNotAllowed",
    ]
    assert result.run_s.tolist()[1] == 600.0


@st.composite
def tiered_workloads(draw: st.DrawFn) -> Workload:
    jobs = workload()
    for _ in range(draw(st.integers(1, 25))):
        jobs.job(
            submit=float(draw(st.integers(0, 200))),
            run=float(draw(st.integers(1, 120))),
            nodes=draw(st.integers(1, 4)),
            partition=draw(st.sampled_from(["low", "high"])),
            checkpoint=draw(st.sampled_from([None, 7.0])),
        )
    return jobs


@settings(max_examples=150, deadline=None)
@given(
    jobs=tiered_workloads(),
    mode=st.sampled_from(["cancel", "requeue", "suspend"]),
    backfill=st.sampled_from(["none", "easy", "slurm"]),
    grace=st.sampled_from([0.0, 3.0]),
)
def test_preemption_invariants(jobs: Workload, mode: str, backfill: str, grace: float) -> None:
    partitions = (Partition("low", "batch", 1, grace_time_s=grace), TIERS[1])
    result = run(jobs, 4, preempt_mode=mode, backfill=backfill, partitions=partitions)
    partition = np.array([result.jobs.partition.labels[c] for c in result.jobs.partition.codes])
    # only low jobs are preempted, and every job ends
    assert (result.preemptions[partition == "high"] == 0).all()
    assert not np.isnan(result.end_s).any()
    assert (result.lost_gpu_s >= 0).all()
    if mode == "suspend":
        assert (result.lost_gpu_s == 0).all()
    # busy GPU-seconds in the timeline = useful work + lost work (nothing double-booked: the
    # engine refuses a start that does not fit)
    timeline = result.pools[0].schedule.timeline
    busy = float(np.sum(timeline.busy_gpus[:-1] * np.diff(timeline.time_s)))
    expected = float(np.sum(result.jobs.gpus * result.run_s) + result.lost_gpu_s.sum())
    assert abs(busy - expected) < 1e-6
    assert timeline.busy_gpus.max() <= 4


def test_a_waiting_preemptor_keeps_the_nodes_it_freed() -> None:
    # Found by hypothesis: a high job waiting out its victim's GraceTime must get the freed nodes.
    # Were low jobs allowed onto them, it would preempt them in turn, forever.
    partitions = (Partition("low", "batch", 1, grace_time_s=3.0), TIERS[1])
    jobs = (
        workload()
        .job(submit=12, run=90, nodes=2, partition="low", checkpoint=7)
        .job(submit=18, run=114, nodes=4, partition="high")
        .job(submit=40, run=68, nodes=2, partition="low")
        .job(submit=73, run=37, nodes=2, partition="high", checkpoint=7)
        .job(submit=162, run=30, nodes=4, partition="high", checkpoint=7)
    )
    result = run(jobs, 4, backfill="easy", partitions=partitions)
    assert by_job_id(result, result.start_s)[5] == 175.0  # after job 1's 3 s of grace from 172 s
    assert not np.isnan(result.end_s).any()
    assert result.preemptions.tolist() == [2, 0, 0, 0, 0]
