"""Two shortcuts of the backfill cycle (backfill_map.c), which must change no schedule:
- quiet cycles: a cycle that starts nothing, followed by cycles that see the same queue, running
  jobs and nodes, is not run again while none of its decisions could change with the clock;
- short records: the tries of a job whose window holds a record with too few nodes fail, and are
  counted without being made.
Every case here runs both ways (``full_cycles`` runs every cycle, ``full_tries`` makes every try)
on deep queues, where most cycles are quiet and the map is full of reservations, with the map's end
(bf_window), its rounding (bf_resolution), fair share and age (the queue's order moves between
cycles), nodes shared by jobs of a few GPUs, and jobs past their time limit (OverTimeLimit).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.outcome import ModelRun
from gpuplan.sim.slurm.model import SlurmSettings
from gpuplan.sim.slurm.priority import MultifactorSettings

from builders import Workload, run_slurm, workload


def run(jobs: Workload, nodes: int, gpus_per_node: int, slurm: SlurmSettings, full: str | None) -> ModelRun:
    """The run, with the shortcut ``full`` names (``full_cycles``, ``full_tries``) turned off."""
    params = SlurmSettings.params

    def in_full(self: SlurmSettings, names: tuple[str, ...], epoch_s: float = 0.0) -> dict[str, Any]:
        return {**params(self, names, epoch_s), full: True}

    with mock.patch.object(SlurmSettings, "params", in_full) if full else nullcontext():
        return run_slurm(
            jobs, nodes, gpus_per_node, slurm, team_shares={"a": 1, "b": 3}, epoch_s=1_700_000_017
        )


def assert_same_schedule(a: ModelRun, b: ModelRun) -> None:
    np.testing.assert_array_equal(a.start_s, b.start_s)
    np.testing.assert_array_equal(a.end_s, b.end_s)
    assert a.node_lists().to_pylist() == b.node_lists().to_pylist()


@st.composite
def deep_queues(draw: st.DrawFn) -> tuple[Workload, int, int]:
    """More work than the cluster does: time limits none (the run is the estimate), exact, loose
    (beyond bf_window) or short (runs past them: OverTimeLimit), jobs of a few GPUs sharing nodes."""
    nodes = draw(st.integers(2, 40))
    gpus_per_node = draw(st.sampled_from([1, 1, 4, 8]))
    jobs = workload()
    for _ in range(draw(st.integers(5, 60))):
        run = draw(st.integers(1, 4 * 3600))
        jobs.job(
            submit=draw(st.integers(0, 7200)),
            run=run,
            nodes=draw(st.integers(1, nodes)),
            gpus=draw(st.integers(1, gpus_per_node)),
            limit=draw(
                st.one_of(
                    st.none(), st.just(run), st.integers(run, run + 6 * 3600), st.integers(60, run + 60)
                )
            ),
            team=draw(st.sampled_from(["a", "b"])),
        )
    return jobs, nodes, gpus_per_node


@settings(max_examples=300, deadline=None)
@given(
    deep_queues(),
    st.sampled_from([5, 30]),  # bf_interval
    st.sampled_from([1, 60, 300]),  # bf_resolution
    st.sampled_from([10, 60, 1440]),  # bf_window, minutes
    st.sampled_from(["basic", "multifactor"]),
    st.sampled_from([0, 10]),  # OverTimeLimit, minutes
    st.sampled_from(["full_cycles", "full_tries"]),
)
def test_the_shortcuts_change_no_schedule(
    case: tuple[Workload, int, int],
    interval: int,
    resolution: int,
    window: int,
    priority: str,
    over: int,
    full: str,
) -> None:
    jobs, nodes, gpus_per_node = case
    fair = MultifactorSettings(weight_age=1000, max_age_s=3600, weight_fairshare=10000, calc_period_s=120)
    slurm = SlurmSettings(
        "slurm",
        bf_interval=interval,
        bf_resolution=resolution,
        bf_window=window,
        priority_type=priority,
        multifactor=fair,
        over_time_limit=over,
    )
    assert_same_schedule(
        run(jobs, nodes, gpus_per_node, slurm, None), run(jobs, nodes, gpus_per_node, slurm, full)
    )


def test_a_deep_queue_schedules_alike_either_way() -> None:
    # 40 one-node jobs of an hour's limit on 4 nodes, all at once: ten hours of queue, hundreds of
    # cycles, nearly all quiet (the head reserves, nothing else fits before it)
    jobs = workload()
    for k in range(40):
        jobs.job(submit=k, run=1800 + 60 * (k % 7), nodes=1 + k % 3, limit=3600)
    slurm = SlurmSettings("slurm", bf_interval=30, bf_window=120)
    quiet, full = run(jobs, 4, 1, slurm, None), run(jobs, 4, 1, slurm, "full_cycles")
    assert_same_schedule(quiet, full)
    assert np.isfinite(quiet.start_s).all()
