"""Topology-aware placement (topology/block, topology/tree): multi-node jobs in one block (best fit)
when they can be, across the fewest blocks otherwise, or waiting for one block when required."""

from __future__ import annotations

from functools import partial

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.slurm.topology import Topology

from builders import Workload, assert_no_node_overcommitted, run_slurm, workload

# every run here, unless it says otherwise: EASY backfill on 8 nodes
run = partial(run_slurm, nodes=8, base={"backfill": "easy"})


def small_jobs_then_four() -> Workload:
    # 8 nodes in two blocks of 4; two 1-node jobs take node0 and node1, then a 4-node job comes
    return (
        workload()
        .job(submit=0, run=100, limit=100)
        .job(submit=0, run=100, limit=100)
        .job(submit=1, run=50, limit=50, nodes=4)
    )


def test_a_multi_node_job_goes_to_one_block_when_it_can() -> None:
    flat = run(small_jobs_then_four(), topology=None)
    assert flat.node_lists().to_pylist()[2] == "node[2-5]"  # lowest-numbered: across both blocks
    placed = run(small_jobs_then_four(), topology=Topology("block", 4))
    assert placed.node_lists().to_pylist()[2] == "node[4-7]"
    assert placed.extra["topology"] == {
        "multi_node_jobs": 1,
        "within_one_block_share": 1.0,
        "mean_blocks_per_multi_node_job": 1.0,
    }
    assert (
        run(small_jobs_then_four(), topology=Topology("tree", 2)).extra["topology"][
            "mean_blocks_per_multi_node_job"
        ]
        == 2.0
    )


def test_best_fit_prefers_the_fullest_block_that_holds_the_job() -> None:
    jobs = workload().job(submit=0, run=100, limit=100, nodes=2).job(submit=1, run=50, limit=50, nodes=2)
    # block0 has 2 free nodes after the first job, block1 has 4: the second job fills block0
    assert run(jobs, topology=Topology("block", 4)).node_lists().to_pylist() == ["node[0-1]", "node[2-3]"]


def test_a_required_block_makes_the_job_wait() -> None:
    jobs = (
        workload()
        .job(submit=0, run=50, limit=50, nodes=2)  # node0-1
        .job(submit=0, run=200, limit=200, nodes=2)  # best fit: node2-3, filling block0
        .job(submit=0, run=300, limit=300)  # node4
        .job(submit=60, run=50, limit=50, nodes=4)  # 5 nodes free at 60 s, at most 3 in one block
    )
    preferred = run(jobs, topology=Topology("block", 4))
    assert preferred.start_s.tolist()[3] == 60.0
    assert preferred.node_lists().to_pylist()[3] == "node[0,5-7]"  # the fullest block first
    assert preferred.extra["topology"]["within_one_block_share"] == 2 / 3
    required = run(jobs, topology=Topology("block", 4, require=True))
    assert required.start_s.tolist()[3] == 200.0  # block0 is whole again when the 200 s job ends
    assert required.node_lists().to_pylist()[3] == "node[0-3]"
    assert required.extra["topology"]["within_one_block_share"] == 1.0


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(
        st.tuples(st.integers(0, 200), st.integers(1, 6), st.integers(1, 80)), min_size=1, max_size=25
    ),
    require=st.booleans(),
    backfill=st.sampled_from(["none", "easy", "slurm"]),
)
def test_topology_never_overcommits_and_every_job_runs(
    sizes: list[tuple[int, int, int]], require: bool, backfill: str
) -> None:
    jobs = workload()
    for submit, nodes, run_s in sorted(sizes):
        jobs.job(submit=float(submit), run=float(run_s), limit=float(run_s + 10), nodes=nodes)
    result = run(
        jobs, backfill=backfill, topology=Topology("block", 4, require), bf_interval=5, bf_resolution=1
    )
    assert not np.isnan(result.start_s).any()
    assert_no_node_overcommitted(result, 8, 1)
    if require:  # every job that fits one block ran in one block
        assert result.extra["topology"]["within_one_block_share"] in (None, 1.0)
