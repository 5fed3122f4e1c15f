"""FIFO and EASY schedules: hand-computed cases, properties, and agreement with the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.outcome import JOB_STATES

from builders import MAIN_EVERY_SECOND, Workload, bf_settings, reference_for, starts_of, workload, workloads

# Each case: (workload, cluster nodes, expected start by job id for none, for easy).
CASES = {
    "a blocked head blocks FIFO but EASY backfills a short job behind it": (
        workload().job(submit=0, run=10, nodes=3).job(submit=1, run=5, nodes=2).job(submit=2, run=1, nodes=1),
        4,
        {1: 0, 2: 10, 3: 10},
        {1: 0, 2: 10, 3: 2},
    ),
    "a long job may backfill only into the extra nodes, which it uses up": (
        # A holds 4 of 8 nodes until 10; head B needs 7: shadow 10, extra 1. C (long) takes the extra
        # node; D (long) then finds extra 0 and waits; E ends by the shadow time and backfills.
        workload()
        .job(submit=0, run=10, nodes=4)
        .job(submit=1, run=5, nodes=7)
        .job(submit=1, run=100, nodes=1)
        .job(submit=1, run=100, nodes=1)
        .job(submit=1, run=5, nodes=1),
        8,
        {1: 0, 2: 10, 3: 10, 4: 15, 5: 15},
        {1: 0, 2: 10, 3: 1, 4: 15, 5: 1},
    ),
    "backfill uses the time limit as the estimate, not the run time": (
        # Head B needs all 4 nodes: shadow 10, extra 0. C runs 3 s but asks 50 s, so by its estimate
        # it would end after the shadow time and may not backfill.
        workload()
        .job(submit=0, run=10, nodes=3, limit=10)
        .job(submit=1, run=5, nodes=4, limit=5)
        .job(submit=2, run=3, nodes=1, limit=50),
        4,
        {1: 0, 2: 10, 3: 15},
        {1: 0, 2: 10, 3: 15},
    ),
    "running jobs ending together are taken by job id for the shadow time": (
        # Y (id 1, 2 nodes) and X (id 2, 4 nodes) both end at 10. Head H needs 6 with 4 free: taking
        # Y first gives enough, so extra = 0 and the long job L may not backfill.
        workload()
        .job(submit=0, run=10, nodes=4, job_id=2)
        .job(submit=0, run=10, nodes=2, job_id=1)
        .job(submit=1, run=5, nodes=6, job_id=3)
        .job(submit=1, run=100, nodes=2, job_id=4),
        10,
        {1: 0, 2: 0, 3: 10, 4: 10},
        {1: 0, 2: 0, 3: 10, 4: 10},
    ),
    "the queue is ordered by submit time, then job id": (
        workload()
        .job(submit=0, run=10, nodes=2, job_id=7)
        .job(submit=5, run=1, nodes=2, job_id=9)
        .job(submit=5, run=1, nodes=2, job_id=8),
        2,
        {7: 0, 8: 10, 9: 11},
        {7: 0, 8: 10, 9: 11},
    ),
    "a zero-length job frees its nodes at the instant it starts": (
        workload().job(submit=0, run=0, nodes=2).job(submit=0, run=4, nodes=2),
        2,
        {1: 0, 2: 0},
        {1: 0, 2: 0},
    ),
    "a job larger than the cluster is rejected and blocks nobody": (
        workload().job(submit=0, run=10, nodes=5).job(submit=1, run=1, nodes=1),
        4,
        {1: None, 2: 1},
        {1: None, 2: 1},
    ),
}


@pytest.mark.parametrize("backfill", ["none", "easy"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hand_computed_schedules(case: str, backfill: str) -> None:
    jobs, total_nodes, expected_none, expected_easy = CASES[case]
    expected = expected_none if backfill == "none" else expected_easy
    assert jobs.starts(total_nodes, backfill) == expected


def test_slurm_backfill_reserves_for_every_tested_job() -> None:
    # 4 nodes, a backfill cycle every 10 s, a 1 s profile. A holds 3 nodes until 20. B (4 nodes) is
    # blocked and reserves 20-30. C (1 node, 5 s) backfills at the first cycle, t = 10, not at its
    # arrival as EASY would. D (1 node, 30 s) would cross B's reservation: it runs after B.
    jobs = (
        workload()
        .job(submit=0, run=20, nodes=3, limit=20)
        .job(submit=1, run=10, nodes=4, limit=10)
        .job(submit=2, run=5, nodes=1, limit=5)
        .job(submit=3, run=30, nodes=1, limit=30)
    )
    settings = {"bf_interval": 10, "bf_resolution": 1, **MAIN_EVERY_SECOND}
    assert jobs.starts(4, "slurm", **settings) == {1: 0, 2: 20, 3: 10, 4: 30}
    assert jobs.starts(4, "easy") == {1: 0, 2: 20, 3: 2, 4: 30}
    run = jobs.simulate(4, "slurm", **settings)
    # the reference's reservations, by job index: B at the cycle at 10; then C takes the last free
    # node, and with none free the cycle ends (nothing else could start now)
    assert reference_for(run, 4, "slurm")[1] == {1: [20]}


def test_slurm_backfill_window_touching_a_reservation_conflicts() -> None:
    # A holds 3 of 4 nodes until 20; B (4 nodes) reserves [20, 30). At the cycle at 5, C (1 node)
    # with a limit of 14 s ends before B's reservation and backfills; with 15 s its window
    # [5, 20] reaches the reservation's first second, which Slurm counts as a conflict
    # (backfill.c keeps map records that begin at or before start + limit).
    def jobs(limit: int) -> Workload:
        return (
            workload()
            .job(submit=0, run=20, nodes=3, limit=20)
            .job(submit=1, run=10, nodes=4, limit=10)
            .job(submit=2, run=5, nodes=1, limit=limit)
        )

    assert jobs(14).starts(4, "slurm", bf_interval=5, bf_resolution=1, **MAIN_EVERY_SECOND)[3] == 5
    assert jobs(15).starts(4, "slurm", bf_interval=5, bf_resolution=1, **MAIN_EVERY_SECOND)[3] == 30


def test_a_job_over_its_time_limit_is_killed_at_the_limit() -> None:
    run = workload().job(submit=0, run=100, limit=50).job(submit=0, run=20, limit=50).simulate(1, "easy")
    assert run.end_s.tolist() == [50.0, 70.0]
    assert [JOB_STATES[s] for s in run.state] == ["killed_at_limit", "completed"]


def test_jobs_take_the_lowest_numbered_free_nodes() -> None:
    run = (
        workload()
        .job(submit=0, run=10, nodes=2)
        .job(submit=0, run=5, nodes=3)
        .job(submit=6, run=1, nodes=4)
        .simulate(8, "none")
    )
    assert run.node_lists().to_pylist() == ["node[0-1]", "node[2-4]", "node[2-5]"]


@settings(max_examples=400, deadline=None)
@given(workloads(), st.sampled_from(["none", "easy", "slurm"]), bf_settings)
def test_schedule_properties_and_reference(
    case: tuple[Workload, int], backfill: str, bf: dict[str, int]
) -> None:
    jobs, total_nodes = case
    run = jobs.simulate(total_nodes, backfill, **(bf if backfill == "slurm" else {}))
    table = run.jobs
    start, end = run.start_s, run.end_s
    started = ~np.isnan(start)

    assert (start[started] >= table.submit_s[started]).all(), "a job started before its submit time"
    assert (started == (table.nodes <= total_nodes)).all(), "every job that fits runs; no other does"

    # No over-allocation at any instant: ends at an instant free nodes before starts use them.
    for t in np.unique(start[started]):
        running = started & (start <= t) & (end > t)
        assert table.nodes[running].sum() <= total_nodes

    # Busy GPU-seconds from the timeline equal the jobs' GPUs x run time.
    timeline = run.pools[0].schedule.timeline
    busy = float((timeline.busy_gpus[:-1] * np.diff(timeline.time_s)).sum())
    assert timeline.busy_gpus[-1:].sum() == 0, "the cluster ends idle"
    assert busy == float((table.gpus * run.run_s)[started].sum())

    # The compiled engine agrees with the straightforward reference, job by job.
    plans: list[tuple[float, str, int, frozenset[int], float, float]] = []
    expected, reservations = reference_for(run, total_nodes, backfill, plans)
    assert starts_of(run) == expected

    # slurm: no job a backfill cycle starts after a reservation on one of the reserved nodes may
    # still run (by its limit) when the reservation begins: no lower job delays a reserved one,
    # within the cycle's plan, which ends at floor_res(now + bf_window) (a reservation from then on
    # holds nothing, as in Slurm's node_space).
    for k, (cycle, kind, _, nodes, _, until) in enumerate(plans):
        if kind != "start":
            continue
        plan_end = (cycle + 60 * bf["bf_window"]) // bf["bf_resolution"] * bf["bf_resolution"]
        for earlier_cycle, earlier_kind, _, reserved, begins, _ in plans[:k]:
            if (
                earlier_cycle == cycle
                and earlier_kind == "reserve"
                and nodes & reserved
                and begins < plan_end
            ):
                assert until < begins, "a backfilled job runs into a reservation made before it"

    # EASY: the head never starts later than any reservation it was given.
    for job, shadows in reservations.items() if backfill == "easy" else ():
        assert start[job] <= min(shadows)
