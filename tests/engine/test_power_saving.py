"""Slurm's power saving in the engine (slurm/_core/power.c): a node idle for SuspendTime powers
down, a job given a powered-down node waits for its boot (its start is reset then, as
job_mgr.c:job_config_fini does), nodes up are chosen first (node_scheduler.c:_pick_best_nodes),
and each node's time powered down is recorded for cost."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine.core import BatchJobs, PieceInputs, PowerSaving, run_batch

SUSPEND, BOOT = 300.0, 600.0


def batch(submit: list[float], run: list[float], nodes: list[int], gpus_per_node: int = 8) -> BatchJobs:
    count = len(submit)
    return BatchJobs(
        job_id=np.arange(1, count + 1, dtype=np.int64),
        submit_s=np.array(submit, dtype=np.float64),
        run_s=np.array(run, dtype=np.float64),
        estimate_s=np.array(run, dtype=np.float64),
        nodes=np.array(nodes, dtype=np.int32),
        gpus_per_node=np.full(count, gpus_per_node, dtype=np.int32),
    )


@pytest.mark.parametrize("select", ["select/cons_tres", "select/first_fit"])
def test_a_job_on_powered_down_nodes_starts_after_their_boot(select: str) -> None:
    # every node starts powered down (State=CLOUD): the first job boots its node
    run = run_batch(
        batch([0.0], [1000.0], [1]),
        Pool("p", 2, 8),
        PieceInputs("sched/builtin"),
        PieceInputs(select),
        power=PowerSaving(SUSPEND, BOOT),
    )
    assert run.start_s.tolist() == [BOOT]
    assert run.end_s.tolist() == [BOOT + 1000.0]
    assert run.power is not None
    assert run.power.boots.tolist() == [1, 0]
    # node 0: down over [0, 0), up from 0 (booting, paid) to the end, and SuspendTime after it
    assert run.power.node_s_up == pytest.approx(BOOT + 1000.0 + SUSPEND)


def test_a_node_still_up_takes_the_next_job_at_once_and_one_idle_longer_boots_again() -> None:
    # job 1 ends at 600 + 100; job 2 comes within SuspendTime of it, job 3 long after job 2's end
    run = run_batch(
        batch([0.0, 800.0, 5000.0], [100.0, 100.0, 100.0], [1, 1, 1]),
        Pool("p", 1, 8),
        PieceInputs("sched/builtin"),
        PieceInputs("select/cons_tres"),
        power=PowerSaving(SUSPEND, BOOT),
    )
    assert run.start_s.tolist() == [BOOT, 800.0, 5000.0 + BOOT]
    assert run.power is not None
    assert run.power.boots.tolist() == [2]
    # down [0, 0), then from 900 + 300 to 5000; up again until 5700 + 300
    assert run.power.powered_down_s.tolist() == [5000.0 - 1200.0]
    assert run.power.node_s_up == pytest.approx(6000.0 - 3800.0)


def test_nodes_up_are_chosen_before_powered_down_ones() -> None:
    # nodes 0-3 boot for jobs 1 (nodes 0-2, ends at 2600) and 2 (node 3, ends at 2800); at 3000
    # nodes 0-2 are powered down (idle since 2600 + SuspendTime) and node 3 is still up: job 3
    # takes node 3, where the lowest-numbered (first_fit) or the first of the run (best fit) is 0
    for select in ("select/cons_tres", "select/first_fit"):
        run = run_batch(
            batch([0.0, 0.0, 3000.0], [2000.0, 2200.0, 100.0], [3, 1, 1]),
            Pool("p", 4, 8),
            PieceInputs("sched/builtin"),
            PieceInputs(select),
            power=PowerSaving(SUSPEND, BOOT),
        )
        job, first, _ = run.node_ranges()
        assert run.start_s.tolist() == [BOOT, BOOT, 3000.0], select
        assert first[job == 2].tolist() == [3], select


def test_a_job_larger_than_the_nodes_up_takes_them_all_and_boots_the_rest() -> None:
    # job 1 leaves node 0 up until 1000; job 2 asks 3 nodes at 900, while only node 0 is up
    run = run_batch(
        batch([0.0, 900.0], [100.0, 100.0], [1, 3]),
        Pool("p", 4, 8),
        PieceInputs("sched/builtin"),
        PieceInputs("select/cons_tres"),
        power=PowerSaving(SUSPEND, BOOT),
    )
    job, first, count = run.node_ranges()
    mine = zip(first[job == 1], count[job == 1], strict=True)
    nodes = sorted(int(n) for f, c in mine for n in range(f, f + c))
    assert int(first[job == 0][0]) in nodes  # the node up is taken
    assert run.start_s.tolist() == [BOOT, 900.0 + BOOT]  # and the job waits for the others' boot
    assert run.power is not None
    assert int(run.power.boots.sum()) == 3


def test_without_power_saving_nothing_changes_and_a_pool_never_idle_costs_the_same() -> None:
    # a job that keeps both nodes busy from t = 0: the same schedule (after the first boot) and
    # the same node-seconds up as a fixed pool over its run
    jobs = batch([0.0, 0.0], [10_000.0, 10_000.0], [1, 1])
    fixed = run_batch(jobs, Pool("p", 2, 8), PieceInputs("sched/builtin"), PieceInputs("select/cons_tres"))
    assert fixed.power is None
    saved = run_batch(
        jobs,
        Pool("p", 2, 8),
        PieceInputs("sched/builtin"),
        PieceInputs("select/cons_tres"),
        power=PowerSaving(SUSPEND, 0.0),
    )
    assert saved.start_s.tolist() == fixed.start_s.tolist()
    assert saved.power is not None
    assert saved.power.node_s_up == pytest.approx(2 * (10_000.0 + SUSPEND))


def test_a_pool_with_no_job_is_powered_down_throughout() -> None:
    run = run_batch(
        batch([], [], []),
        Pool("p", 3, 8),
        PieceInputs("sched/builtin"),
        PieceInputs("select/cons_tres"),
        power=PowerSaving(SUSPEND, BOOT),
    )
    assert run.power is not None
    assert run.power.node_s_up == 0.0


def test_jobs_sharing_a_booting_node_wait_for_the_same_boot() -> None:
    # two 4-GPU jobs on one 8-GPU node: the second, placed while the node boots, runs when it is up
    run = run_batch(
        batch([0.0, 10.0], [100.0, 100.0], [1, 1], gpus_per_node=4),
        Pool("p", 1, 8),
        PieceInputs("sched/builtin"),
        PieceInputs("select/cons_tres"),
        per_gpu=np.array([True, True]),
        power=PowerSaving(SUSPEND, BOOT),
    )
    assert run.start_s.tolist() == [BOOT, BOOT]
    assert run.power is not None
    assert run.power.boots.tolist() == [1]
