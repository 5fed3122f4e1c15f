"""Advance reservations (https://slurm.schedmd.com/reservations.html): a maintenance window that no
job may cross, a team's reserved nodes, repeats; every scheduling mode respects them."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.errors import InputError
from gpuplan.scenario.model import SlurmSection
from gpuplan.sim.slurm.reservations import Reservation
from gpuplan.sim.slurm.settings import from_scenario

from builders import MAIN_EVERY_SECOND, expand_hosts, run_slurm, start_times, workload

MAINTENANCE = Reservation("maint", "batch", nodes=1, start_s=100.0, duration_s=50.0)  # node1, 100..150


# every run here, unless it says otherwise: backfill cycles every second on a 1-s resolution
run = partial(run_slurm, base={"bf_interval": 1, "bf_resolution": 1})


def test_no_job_crosses_into_a_maintenance_window() -> None:
    # 2 nodes; node1 is down for maintenance over 100..150 s
    jobs = (
        workload()
        .job(submit=0, run=200, limit=200)  # A: would cross on node1, takes node0
        .job(submit=0, run=60, limit=60)  # B: ends before the window on node1
        .job(submit=10, run=60, limit=60)  # C: at 60 s node1 is free but 60..120 crosses: waits to 150
        .job(submit=20, run=30, limit=30)  # D: 60..90 fits before the window
    )
    for backfill in ("easy", "slurm"):
        main = MAIN_EVERY_SECOND if backfill == "slurm" else {}
        result = run(jobs, 2, reservations=(MAINTENANCE,), backfill=backfill, **main)
        assert start_times(result) == {1: 0.0, 2: 0.0, 3: 150.0, 4: 60.0}, backfill
        assert result.node_lists().to_pylist() == ["node0", "node1", "node1", "node1"]
    # strict FIFO: C blocks the queue, so D waits behind it
    fifo = run(jobs, 2, reservations=(MAINTENANCE,), backfill="none")
    assert start_times(fifo) == {1: 0.0, 2: 0.0, 3: 150.0, 4: 200.0}


def test_reserved_nodes_serve_their_accounts_only() -> None:
    reserved = Reservation("llm-demo", "batch", nodes=1, start_s=0.0, duration_s=1000.0, accounts=("llm",))
    jobs = (
        workload()
        .job(submit=0, run=100, limit=100, team="vision")  # node0
        .job(submit=1, run=100, limit=100, team="vision")  # node1 is llm's: waits for node0
        .job(submit=2, run=100, limit=100, team="llm")  # takes its reserved node1 at once
    )
    result = run(jobs, 2, reservations=(reserved,), backfill="easy")
    assert start_times(result) == {1: 0.0, 2: 100.0, 3: 2.0}
    assert result.node_lists().to_pylist() == ["node0", "node0", "node1"]


def test_a_weekly_window_repeats_and_overlaps_are_refused() -> None:
    weekly = Reservation("maint", "batch", nodes=1, start_s=0.0, duration_s=10.0, repeat_s=100.0)
    jobs = workload().job(submit=95, run=20, limit=20)  # 95..115 would cross the second window
    assert start_times(run(jobs, 1, reservations=(weekly,), backfill="easy")) == {1: 110.0}
    clash = Reservation("other", "batch", nodes=1, start_s=5.0, duration_s=10.0)
    with pytest.raises(InputError, match="overlap"):
        run(jobs, 1, reservations=(weekly, clash), backfill="easy")


@settings(max_examples=100, deadline=None)
@given(
    submits=st.lists(st.integers(0, 300), min_size=1, max_size=25),
    backfill=st.sampled_from(["none", "easy", "slurm"]),
    select=st.sampled_from(["cons_tres", "linear"]),
)
def test_no_job_runs_on_a_node_during_its_maintenance(submits: list[int], backfill: str, select: str) -> None:
    rng = np.random.default_rng(len(submits))
    jobs = workload()
    for submit in sorted(submits):
        run_s = float(rng.integers(1, 80))
        jobs.job(
            submit=float(submit),
            run=run_s,
            limit=run_s + float(rng.integers(0, 30)),
            gpus=int(rng.integers(1, 3)),
        )
    windows = Reservation("maint", "batch", nodes=2, start_s=50.0, duration_s=40.0, repeat_s=150.0)
    result = run(jobs, 3, 2, backfill=backfill, select_type=select, reservations=(windows,))
    for start, end, hosts in zip(result.start_s, result.end_s, result.node_lists().to_pylist(), strict=True):
        if not {1, 2} & set(expand_hosts(hosts)):
            continue
        for window_start in (50.0, 200.0, 350.0):
            assert end <= window_start or start >= window_start + 40.0, (start, end, hosts)


@pytest.mark.parametrize("backfill", ["none", "easy", "slurm"])
def test_preemption_never_starts_a_job_into_a_reservation(backfill: str) -> None:
    """With preemption on, a job that does not fit because an advance reservation holds a node (and
    no running job could make room) waits: the preemption path counted free nodes without the
    reservation and started it into the window ("policy ... started a job that did not fit")."""
    from gpuplan.sim.slurm.partitions import Partition

    tiers = (Partition("high", "batch", priority_tier=2), Partition("low", "batch", priority_tier=1))
    jobs = workload().job(submit=0, run=50, limit=50, nodes=1).job(submit=95, run=80, limit=80, nodes=2)
    result = run(
        jobs,
        2,
        reservations=(MAINTENANCE,),  # node1 from 100 to 150 s
        backfill=backfill,
        partitions=tiers,
        preempt_type="partition_prio",
        preempt_mode="requeue",
        **MAIN_EVERY_SECOND,
    )
    assert start_times(result)[2] >= 150.0  # after the window, not into it


def test_backfill_tries_a_job_again_just_after_a_reservation_ends() -> None:
    """backfill.c:_attempt_backfill: when an advance reservation overlaps a job's run
    (reservation.c:job_test_resv sets resv_overlap), its next start to try is one second after the
    first reservation end, rounded up to bf_resolution (find_resv_end), even when no running job or
    plan frees a node before then. A (2 nodes) cannot start at 90 s, since node1 is reserved from
    100 to 150 s: its plan at 151 s holds node0, so B may not take node0 over 91..171 s."""
    jobs = (
        workload()
        .job(submit=90, run=100, limit=100, nodes=2)  # A: planned at 151 s, starts at the window's end
        .job(submit=91, run=80, limit=80)  # B: would cross A's plan on node0
    )
    result = run(jobs, 2, reservations=(MAINTENANCE,), backfill="slurm", **MAIN_EVERY_SECOND)
    assert start_times(result) == {1: 150.0, 2: 250.0}
    # without a plan for A (no later try), B would start at once and A only when B ends (171 s):
    # a job short enough to end before A's planned start still backfills
    short = workload().job(submit=90, run=100, limit=100, nodes=2).job(submit=91, run=50, limit=50)
    assert start_times(run(short, 2, reservations=(MAINTENANCE,), backfill="slurm", **MAIN_EVERY_SECOND)) == {
        1: 150.0,
        2: 91.0,
    }


def test_a_backfill_plan_may_lie_on_nodes_a_reservation_takes_later() -> None:
    """Slurm's will-run test sees only the nodes no reservation holds over the try's window [s, s + L]
    (job_test_resv); the start T it finds is not checked against reservations again
    (backfill.c:_attempt_backfill), so the plan may hold nodes a later window takes. At 70 s, A
    (2 nodes, 30 s) waits for C on node0 until 80 s: its window 70..100 s misses node1's maintenance
    from 100 s, but its plan [80, 110) runs into it, and holds node1 all the same, so B (30 s) may
    not take node1 over 70..100 s. It takes node0 when C ends; A starts after the window."""
    jobs = (
        workload()
        .job(submit=0, run=80, limit=80)  # C: node0 until 80 s
        .job(submit=70, run=30, limit=30, nodes=2)  # A: planned at 80 s on both nodes
        .job(submit=70, run=30, limit=30)  # B: 70..100 on node1 would cross A's plan
    )
    result = run(jobs, 2, reservations=(MAINTENANCE,), backfill="slurm", **MAIN_EVERY_SECOND)
    assert start_times(result) == {1: 0.0, 2: 150.0, 3: 80.0}
    assert result.node_lists().to_pylist() == ["node0", "node[0-1]", "node0"]


@pytest.mark.parametrize(
    ("written", "asked_s", "held_s"), [("90s", 90.0, 120.0), ("2m", 120.0, 120.0), ("121s", 121.0, 180.0)]
)
def test_a_reservation_lasts_whole_minutes_as_scontrol_keeps_it(
    written: str, asked_s: float, held_s: float
) -> None:
    """scontrol create reservation reads Duration with parse_time.c:time_str2mins, which rounds
    seconds up to a whole minute: Duration=00:01:30 holds the nodes two minutes (a replay's
    slurmctld log: "Created reservation=gp_maint ... start=20:54:30 end=20:56:30")."""
    spec = SlurmSection.model_validate(
        {
            "reservations": [
                {"name": "maint", "pool": "batch", "nodes": 1, "start": "100s", "duration": written}
            ]
        }
    )
    (reservation,) = from_scenario(spec).reservations
    assert reservation.duration_s == held_s
    # a 2-node job that comes when the window would end as written waits for its whole minute
    jobs = workload().job(submit=100 + asked_s, run=30, limit=30, nodes=2)
    window = replace(MAINTENANCE, duration_s=reservation.duration_s)
    starts = start_times(run(jobs, 2, reservations=(window,), backfill="slurm", **MAIN_EVERY_SECOND))
    assert starts == {1: 100.0 + held_s}
