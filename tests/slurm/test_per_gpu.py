"""Per-GPU allocation (SelectType=select/cons_tres): jobs take the GPUs they ask on each node and
share nodes; select/linear and OverSubscribe=EXCLUSIVE give whole nodes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.slurm.partitions import Partition

from builders import (
    MAIN_EVERY_SECOND,
    Workload,
    assert_no_node_overcommitted,
    run_slurm,
    start_times,
    workload,
)


def test_jobs_share_nodes_with_cons_tres_and_not_with_linear_or_exclusive() -> None:
    jobs = workload()
    for k in range(4):
        jobs.job(submit=float(k), run=100, gpus=4)
    shared = run_slurm(jobs, 2, 8, backfill="none")
    assert start_times(shared) == {1: 0.0, 2: 1.0, 3: 2.0, 4: 3.0}
    assert shared.node_lists().to_pylist() == ["node0", "node0", "node1", "node1"]
    whole = {1: 0.0, 2: 1.0, 3: 100.0, 4: 101.0}
    assert start_times(run_slurm(jobs, 2, 8, backfill="none", select_type="linear")) == whole
    exclusive = (Partition("batch", "batch", exclusive=True),)
    assert start_times(run_slurm(jobs, 2, 8, backfill="none", partitions=exclusive)) == whole


def test_easy_backfills_a_job_that_leaves_the_head_its_gpus() -> None:
    # 2 nodes x 4 GPUs. A takes node0, B half of node1; the head C needs both nodes whole at 100 s.
    # E (1 GPU, 200 s) would leave node1 with 3 free GPUs at 100 s: it must wait. D (2 GPUs, ends
    # by 100 s) fits in node1's free half and starts at once.
    jobs = (
        workload()
        .job(submit=0, run=100, limit=100, gpus=4)  # A
        .job(submit=0, run=100, limit=100, gpus=2)  # B
        .job(submit=1, run=50, limit=50, nodes=2, gpus=4)  # C
        .job(submit=2, run=200, limit=200, gpus=1)  # E
        .job(submit=3, run=50, limit=50, gpus=2)  # D
    )
    for backfill in ("easy", "slurm"):
        main = MAIN_EVERY_SECOND if backfill == "slurm" else {}
        result = run_slurm(jobs, 2, 4, backfill=backfill, bf_interval=1, bf_resolution=1, **main)
        assert start_times(result) == {1: 0.0, 2: 0.0, 3: 100.0, 4: 150.0, 5: 3.0}, backfill
    linear = run_slurm(jobs, 2, 4, backfill="easy", select_type="linear")
    assert start_times(linear) == {1: 0.0, 2: 0.0, 3: 100.0, 4: 150.0, 5: 150.0}


def test_slurm_backfill_reserves_whole_nodes_for_jobs_sharing_them() -> None:
    # One node of 4 GPUs. A holds 3 until 100; H (2 GPUs) reserves the node from 100 in Slurm's
    # map, which holds whole nodes (backfill.c:_add_reservation): L (1 GPU for 150 s), whose window
    # crosses that reservation, may not use the node's free GPU now, though H and L would both fit
    # at 100. EASY's per-GPU rule lets L start at once, as H still fits at its shadow time.
    jobs = (
        workload()
        .job(submit=0, run=100, limit=100, gpus=3)  # A
        .job(submit=1, run=100, limit=100, gpus=2)  # H
        .job(submit=2, run=150, limit=150, gpus=1)  # L
    )
    slurm = run_slurm(jobs, 1, 4, backfill="slurm", bf_interval=1, bf_resolution=1, **MAIN_EVERY_SECOND)
    assert start_times(slurm) == {1: 0.0, 2: 100.0, 3: 100.0}
    assert start_times(run_slurm(jobs, 1, 4, backfill="easy")) == {1: 0.0, 2: 100.0, 3: 2.0}


def test_slurm_backfill_starts_on_shared_nodes_leave_them_in_the_map() -> None:
    # One node of 4 GPUs; A holds 2 until 100; H (4 GPUs) is blocked and reserves from 100. At the
    # cycle of 10, B1 and B2 (1 GPU, 50 s, ending before H's reservation) both start on the node's
    # free GPUs: a job that shares a node does not take it out of the map for the jobs tested after
    # it (backfill.c:_bf_reserve_running only reserves whole-node jobs).
    jobs = (
        workload()
        .job(submit=0, run=100, limit=100, gpus=2)  # A
        .job(submit=1, run=50, limit=50, gpus=4)  # H
        .job(submit=2, run=50, limit=50, gpus=1)  # B1
        .job(submit=3, run=50, limit=50, gpus=1)  # B2
    )
    result = run_slurm(jobs, 1, 4, backfill="slurm", bf_interval=10, bf_resolution=1, **MAIN_EVERY_SECOND)
    assert start_times(result) == {1: 0.0, 2: 100.0, 3: 10.0, 4: 10.0}


@st.composite
def gpu_workloads(draw: st.DrawFn) -> Workload:
    jobs = workload()
    for _ in range(draw(st.integers(1, 30))):
        run_s = float(draw(st.integers(1, 100)))
        jobs.job(
            submit=float(draw(st.integers(0, 150))),
            run=run_s,
            limit=run_s + float(draw(st.integers(0, 60))),
            nodes=draw(st.integers(1, 3)),
            gpus=draw(st.integers(1, 4)),
        )
    return jobs


@settings(max_examples=150, deadline=None)
@given(jobs=gpu_workloads(), backfill=st.sampled_from(["none", "easy", "slurm"]))
def test_no_node_gives_more_gpus_than_it_has(jobs: Workload, backfill: str) -> None:
    result = run_slurm(jobs, 3, 4, backfill=backfill, bf_interval=5, bf_resolution=1)
    assert (result.start_s >= result.jobs.submit_s).all()
    assert_no_node_overcommitted(result, 3, 4)
