"""Slurm's backfill on named nodes, node choice and decay ticks, as a real Slurm 22.05 does them.

Each case is an example of bench/fidelity_slurm/README.md ("Semantics the engine must implement"),
which the harness derived from a real slurmctld's logs and checked against it; the hypothesis test
compares the engine with the pure-Python oracle (bench/fidelity_slurm/reference.py, which the harness
runs too) on clusters of several 64-node bitmap words.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.cluster import Pool
from gpuplan.sim.slurm.model import SlurmSettings, simulate_slurm
from gpuplan.sim.slurm.priority import MultifactorSettings

from builders import MAIN_EVERY_SECOND, Workload, reference_for, starts_of, workload


def nodes_of(jobs: Workload, total_nodes: int, backfill: str = "slurm", **bf: float) -> dict[int, str]:
    run = jobs.simulate(total_nodes, backfill, **bf)
    return dict(zip(run.jobs.job_id.tolist(), run.node_lists().to_pylist(), strict=True))


def one_node_jobs(ends: list[int]) -> Workload:
    """One 1-node job per node, started at 0 on nodes 0, 1, ... in order, ending at ``ends``."""
    jobs = workload()
    for end in ends:
        jobs.job(submit=0, run=end, nodes=1)
    return jobs


def test_best_fit_takes_the_smallest_run_of_consecutive_free_nodes() -> None:
    # job_test.c:_eval_nodes, in the main scheduler of the `slurm` mode (`none` and `easy` keep the
    # literature's lowest-numbered free nodes: their decisions only count nodes). Free nodes 0, 1,
    # 5, 7 (the others busy until 100): a 3-node job takes the largest run (0-1) whole, then the
    # first smallest run that holds the rest (5).
    jobs = one_node_jobs([10, 10, 100, 100, 100, 10, 100, 10]).job(submit=20, run=5, nodes=3)
    assert nodes_of(jobs, 8)[9] == "node[0-1,5]"
    # Free 0, 1, 2, 4: a 1-node job takes node 4, the smallest run it fits, not the lowest node.
    jobs = one_node_jobs([10, 10, 10, 100, 10, 100]).job(submit=20, run=5, nodes=1)
    assert nodes_of(jobs, 6)[7] == "node4"
    assert nodes_of(jobs, 6, "none")[7] == "node0"


def grouped_release() -> Workload:
    # A (nodes 0-3) has a planned end at 100, B (nodes 4-5) at 95; nodes 6-7 are free. H (4 nodes) is
    # blocked; L (2 nodes, long) arrives behind it.
    return (
        workload()
        .job(submit=0, run=100, nodes=4, limit=100)  # A
        .job(submit=0, run=95, nodes=2, limit=95)  # B
        .job(submit=1, run=50, nodes=4, limit=50)  # H
        .job(submit=2, run=200, nodes=2, limit=200)  # L
    )


def test_will_run_releases_running_jobs_in_30_second_groups() -> None:
    # job_test.c:_will_run_test: B's end (95) opens a group up to the 30-s boundary after it (120)
    # plus 30 s, so A (100) is released with it; H is planned at 100 on the best fit of all eight
    # nodes (0-3), which leaves 6-7 to L: L backfills at the first cycle (10). Released one by one,
    # H would be planned at 95 on 4-7 and L would wait for A.
    run = grouped_release().simulate(8, "slurm", bf_interval=10, bf_resolution=1, **MAIN_EVERY_SECOND)
    assert starts_of(run) == [0.0, 0.0, 100.0, 10.0]
    assert run.node_lists().to_pylist()[3] == "node[6-7]"


def test_backfill_cycles_count_from_the_controller_start() -> None:
    # the backfill thread's cycles come every bf_interval from slurmctld's start, the first one
    # bf_interval after it: with the start at -7 s, at 3, 13, ...; with the start at 3, at 13, ...
    for start, cycle in ((-7, 3.0), (3, 13.0)):
        run = grouped_release().simulate(
            8, "slurm", bf_interval=10, bf_resolution=1, controller_start_s=start
        )
        assert starts_of(run)[3] == cycle


def test_backfill_cycles_count_from_the_backfill_thread_start() -> None:
    # backfill.c:backfill_agent sleeps bf_interval before its first cycle, from when the thread
    # started (backfill_start; on the wide calibration set 0.54-0.59 s after slurmctld's "started"
    # line): with it at -6.45, L backfills at 3.55; the main loop keeps controller_start's clock
    for start, cycle in ((-6.45, 3.55), (3.3, 13.3)):
        run = grouped_release().simulate(
            8, "slurm", bf_interval=10, bf_resolution=1, controller_start_s=-7, backfill_start_s=start
        )
        assert starts_of(run)[3] == cycle


def rounding_case(limit: int) -> Workload:
    # A holds nodes 0-2 until 70 (its planned end); B (4 nodes, limit 60) is planned at 70; C (1 node)
    # may use node 3 now if its window stays clear of B's reservation.
    return (
        workload()
        .job(submit=0, run=70, nodes=3, limit=70)
        .job(submit=1, run=10, nodes=4, limit=60)
        .job(submit=2, run=5, nodes=1, limit=limit)
    )


def test_reservations_round_down_to_bf_resolution_on_the_epoch_clock() -> None:
    # backfill.c: a reservation spans [floor_res(T), floor_res(T + limit)). At the cycle at 10, B's
    # reservation starts at 70 with a 1-s resolution, at 60 with Slurm's default 60 s: a C of limit
    # 55 (window [10, 65]) backfills in the first case only; else it runs after B (70-80).
    main = MAIN_EVERY_SECOND
    assert rounding_case(55).starts(4, "slurm", bf_interval=10, bf_resolution=1, **main)[3] == 10
    assert rounding_case(55).starts(4, "slurm", bf_interval=10, bf_resolution=60, **main)[3] == 80
    assert rounding_case(49).starts(4, "slurm", bf_interval=10, bf_resolution=60, **main)[3] == 10
    # The rounding is on Unix time: with t = 0 at 30 s past a minute, 70 rounds down to 30 (Unix
    # second 60), and C's window must end before that.
    minute_and_half = 1_800_000_030.0
    for limit, start in ((19, 10), (20, 80)):
        run = rounding_case(limit).simulate(4, "slurm", bf_interval=10, epoch_s=minute_and_half, **main)
        assert run.start_s[2] == start


def fair_share_run(enforce: tuple[str, ...]) -> list[float | None]:
    # Two nodes, ticks every 100 s. a1 runs 1-99 (between two ticks), b1 50-150 (across the tick at
    # 100). a2 and b2 (both nodes) queue at 101 and 102; at 150 the one of the less used account goes.
    jobs = (
        workload()
        .job(submit=1, run=98, team="a")
        .job(submit=50, run=100, team="b")
        .job(submit=101, run=10, nodes=2, team="a")
        .job(submit=102, run=10, nodes=2, team="b")
    )
    fair = MultifactorSettings(weight_fairshare=10000, calc_period_s=100)
    slurm = SlurmSettings(
        "none", priority_type="multifactor", multifactor=fair, accounting_storage_enforce=enforce
    )
    return starts_of(simulate_slurm(jobs.table(), [Pool("batch", 2, 1)], slurm))


def test_use_between_ticks_is_lost_without_accounting_limits() -> None:
    # With AccountingStorageEnforce=limits a job's end adds its use since the last tick: a used 98
    # GPU-seconds, b 50, so b2 goes first. Without, the tick at 100 sees a1 no more and a's use is
    # never counted (acct_policy.c returns before priority_p_job_end): a2 goes first.
    assert fair_share_run(("associations", "limits"))[2:] == [160.0, 150.0]
    assert fair_share_run(("associations",))[2:] == [150.0, 160.0]


@st.composite
def wide_workloads(draw: st.DrawFn) -> tuple[Workload, int]:
    """Clusters of 63 to 130 nodes (bitmaps over several words) and jobs up to the whole of them."""
    total_nodes = draw(st.sampled_from([63, 64, 65, 127, 130]))
    jobs = workload()
    for _ in range(draw(st.integers(1, 20))):
        jobs.job(
            submit=draw(st.integers(0, 60)),
            run=draw(st.integers(0, 40)),
            nodes=draw(st.one_of(st.integers(1, 70), st.integers(1, total_nodes))),
            limit=draw(st.one_of(st.none(), st.integers(1, 60))),
            job_id=draw(st.integers(0, 10**6)),
        )
    return jobs, total_nodes


@settings(max_examples=150, deadline=None)
@given(
    wide_workloads(),
    st.integers(1, 15),
    st.sampled_from([1, 5, 60]),
    st.integers(1, 8),
    st.sampled_from([1, 10, 60]),
)
def test_the_engine_follows_the_reference_on_wide_clusters(
    case: tuple[Workload, int], interval: int, resolution: int, max_job_test: int, sched_interval: int
) -> None:
    jobs, total_nodes = case
    bf = {
        "bf_interval": interval,
        "bf_resolution": resolution,
        "bf_max_job_test": max_job_test,
        "sched_interval": sched_interval,
    }
    run = jobs.simulate(total_nodes, "slurm", **bf)
    assert starts_of(run) == reference_for(run, total_nodes, "slurm")[0]
    started = ~np.isnan(run.start_s)
    for t in np.unique(run.start_s[started]):
        running = started & (run.start_s <= t) & (run.end_s > t)
        assert run.jobs.nodes[running].sum() <= total_nodes


def test_bf_max_job_user_tests_few_jobs_of_one_user() -> None:
    # A holds 3 of 4 nodes until 100; u1's B1 (4 nodes) is blocked and reserves; u1's B2 and u2's C
    # (1 node, 20 s) could each backfill on the free node. Without a limit B2, ahead of C, takes it
    # at the first cycle (10); with bf_max_job_user=1 the cycle tests only B1 of u1, so C goes.
    jobs = (
        workload()
        .job(submit=0, run=100, nodes=3, limit=100, user="u0")
        .job(submit=1, run=10, nodes=4, limit=50, user="u1")
        .job(submit=2, run=20, nodes=1, limit=20, user="u1")
        .job(submit=3, run=20, nodes=1, limit=20, user="u2")
    )
    bf = {"bf_interval": 10, "bf_resolution": 1, **MAIN_EVERY_SECOND}
    unlimited = starts_of(jobs.simulate(4, "slurm", **bf))
    limited = starts_of(jobs.simulate(4, "slurm", bf_max_job_user=1, **bf))
    assert unlimited[2:] == [10.0, 30.0]
    assert limited[2:] == [110.0, 10.0]
