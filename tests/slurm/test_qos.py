"""QoS limits (MaxJobsPerUser, MaxTRESPerUser=gres/gpu, GrpTRES=gres/gpu, MaxWall) and priority."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.outcome import JOB_STATES
from gpuplan.sim.slurm.priority import MultifactorSettings
from gpuplan.sim.slurm.qos import Qos

from builders import MAIN_EVERY_SECOND, run_slurm, workload

LIMITED = (Qos("normal", max_jobs_per_user=1),)


def test_a_job_held_by_max_jobs_per_user_blocks_no_one() -> None:
    # 4 nodes. Alice's second job waits for her first (QOSMaxJobsPerUser); Bob's later job starts
    # at once, even under strict FIFO: a job held by a limit is skipped, not a blocked head.
    jobs = (
        workload()
        .job(submit=0, run=10, user="alice")
        .job(submit=1, run=10, user="alice")
        .job(submit=2, run=10, user="bob")
    )
    for backfill in ("none", "easy", "slurm"):
        main = MAIN_EVERY_SECOND if backfill == "slurm" else {}
        assert jobs.starts(4, backfill=backfill, qos=LIMITED, **main) == {1: 0, 2: 10, 3: 2}, backfill
        assert jobs.starts(4, backfill=backfill, **main) == {1: 0, 2: 1, 3: 2}, backfill


def test_gpu_limits_per_user_and_per_qos() -> None:
    jobs = (
        workload()
        .job(submit=0, run=10, nodes=2, user="alice", qos="small")
        .job(submit=1, run=10, nodes=2, user="alice", qos="small")  # alice would hold 4 > 3
        .job(submit=2, run=10, nodes=2, user="bob", qos="small")  # with GrpTRES 3 the QoS would hold 4
        .job(submit=3, run=10, nodes=1, user="carol", qos="normal")
    )
    per_user = (Qos("small", max_gpus_per_user=3),)
    assert jobs.starts(8, backfill="none", qos=per_user) == {1: 0, 2: 10, 3: 2, 4: 3}
    group = (Qos("small", grp_gpus=3),)
    assert jobs.starts(8, backfill="none", qos=group) == {1: 0, 2: 10, 3: 20, 4: 3}


def test_max_wall_refuses_longer_time_limits() -> None:
    jobs = (
        workload()
        .job(submit=0, run=10, limit=7200, qos="short")
        .job(submit=0, run=10, limit=600, qos="short")
    )
    result = run_slurm(jobs, 2, qos=(Qos("short", max_wall_s=3600),))
    assert [JOB_STATES[s] for s in result.state] == ["rejected", "completed"]


def test_qos_priority_orders_the_queue() -> None:
    jobs = (
        workload()
        .job(submit=0, run=100)
        .job(submit=10, run=10, qos="normal")
        .job(submit=20, run=10, qos="high")
    )
    multifactor = MultifactorSettings(weight_qos=1000)
    qos = (Qos("high", priority=100),)
    assert jobs.starts(1, backfill="none", priority_type="multifactor", multifactor=multifactor, qos=qos) == {
        1: 0,
        2: 110,
        3: 100,
    }


def test_usage_factor_scales_what_counts_toward_fair_share() -> None:
    # 2 nodes. Accounts a and b (equal shares) each run one 1,000 s job; a's is in a QoS with
    # UsageFactor=0, so a has used nothing. At 1,500 s (after a PriorityCalcPeriod) b2 and a2 want
    # both nodes: a2 goes first with the factor; without it the two accounts tie and b2 (the lower
    # job id) goes first.
    jobs = (
        workload()
        .job(submit=0, run=1000, team="a", qos="free")
        .job(submit=0, run=1000, team="b")
        .job(submit=1500, run=100, nodes=2, team="b")
        .job(submit=1500, run=100, nodes=2, team="a")
    )
    multifactor = MultifactorSettings(weight_fairshare=1000, calc_period_s=300.0)
    options: dict[str, object] = {
        "backfill": "none",
        "priority_type": "multifactor",
        "multifactor": multifactor,
    }
    free = jobs.starts(2, qos=(Qos("free", usage_factor=0.0),), **options)
    assert (free[4], free[3]) == (1500, 1600)
    counted = jobs.starts(2, qos=(Qos("free"),), **options)
    assert (counted[3], counted[4]) == (1500, 1600)


def test_over_time_limit_lets_a_job_run_past_its_limit() -> None:
    jobs = workload().job(submit=0, run=200, limit=100)
    assert run_slurm(jobs, 1).run_s.tolist() == [100.0]
    over = run_slurm(jobs, 1, over_time_limit=1)  # OverTimeLimit=1 (minute)
    assert over.run_s.tolist() == [160.0]
    assert [JOB_STATES[s] for s in over.state] == ["killed_at_limit"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 30), st.integers(1, 3), st.sampled_from("abc")),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from(["none", "easy", "slurm"]),
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(2, 6),
)
def test_limits_are_never_exceeded(jobs_spec, backfill: str, max_jobs: int, max_gpus: int, grp: int) -> None:
    jobs = workload()
    for submit, run_s, nodes, user in jobs_spec:
        jobs.job(submit=submit, run=run_s, nodes=nodes, user=user)
    qos = (
        Qos("normal", max_jobs_per_user=max_jobs, max_gpus_per_user=max(max_gpus, 3), grp_gpus=max(grp, 3)),
    )
    result = run_slurm(jobs, 6, backfill=backfill, qos=qos, bf_interval=5, bf_resolution=1)
    start, end = result.start_s, result.end_s
    started = ~np.isnan(start)
    assert started.all(), "every job fits the limits alone, so every job runs"
    users = np.array(result.jobs.user.values())
    for t in np.unique(start):
        running = started & (start <= t) & (end > t)
        assert result.jobs.gpus[running].sum() <= max(grp, 3)
        for user in "abc":
            mine = running & (users == user)
            assert mine.sum() <= max_jobs and result.jobs.gpus[mine].sum() <= max(max_gpus, 3)
