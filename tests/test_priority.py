"""Multifactor priority and fair share (PriorityType=priority/multifactor)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.cluster import Pool
from gpuplan.sim.fairshare import ClassicFairShare
from gpuplan.sim.priority import MultifactorSettings
from gpuplan.sim.slurm import SlurmSettings, simulate_slurm
from test_policies import bf_settings, workloads

from builders import Workload, reference_for, starts_of, workload


def starts(
    jobs: Workload, nodes: int, settings: SlurmSettings, shares: dict[str, float] | None = None
) -> dict:
    run = simulate_slurm(jobs.table(), [Pool("batch", nodes, 1)], settings, team_shares=shares)
    return dict(zip(run.jobs.job_id.tolist(), starts_of(run), strict=True))


def test_fair_share_puts_the_lighter_account_first() -> None:
    # One node. Team a's first job runs 0-1000. a2 (t=10) and b1 (t=20) wait. At the recalculation
    # at t=300, a has used 300 GPU-seconds and b none: F(a) = 2^(-1/0.5) = 0.25, F(b) = 1, so b1
    # overtakes a2 when the node frees at 1000.
    jobs = (
        workload()
        .job(submit=0, run=1000, team="a")
        .job(submit=10, run=10, team="a")
        .job(submit=20, run=10, team="b")
    )
    fair = SlurmSettings(
        "none", priority_type="multifactor", multifactor=MultifactorSettings(weight_fairshare=1000)
    )
    assert starts(jobs, 1, fair) == {1: 0, 2: 1010, 3: 1000}
    assert starts(jobs, 1, SlurmSettings("none")) == {1: 0, 2: 1000, 3: 1010}


def test_shares_weigh_usage() -> None:
    # Two nodes, used equally by a and b until 1000. Then b1 (submitted first) and a2 each need both
    # nodes. Equal shares: the factors tie and b1 goes first. With a's share ten times b's, the same
    # usage is far below a's share and far above b's: a2 goes first.
    jobs = (
        workload()
        .job(submit=0, run=1000, team="a")
        .job(submit=0, run=1000, team="b")
        .job(submit=10, run=10, nodes=2, team="b")
        .job(submit=20, run=10, nodes=2, team="a")
    )
    fair = SlurmSettings(
        "none", priority_type="multifactor", multifactor=MultifactorSettings(weight_fairshare=1000)
    )
    assert starts(jobs, 2, fair) == {1: 0, 2: 0, 3: 1000, 4: 1010}
    assert starts(jobs, 2, fair, {"a": 10, "b": 1}) == {1: 0, 2: 0, 3: 1010, 4: 1000}


def test_classic_fair_share_factor_and_decay() -> None:
    fairshare = ClassicFairShare(np.array([1.0, 1.0, 2.0]), decay_half_life_s=100.0)
    factors = np.frombuffer(fairshare(0.0, np.array([0.0, 0.0, 0.0]).tobytes()))
    assert factors.tolist() == [1.0, 1.0, 1.0]  # no usage yet
    factors = np.frombuffer(fairshare(10.0, np.array([50.0, 0.0, 50.0]).tobytes()))
    # usage shares 0.5, 0, 0.5 against shares 0.25, 0.25, 0.5
    assert factors.tolist() == pytest.approx([2**-2, 1.0, 2**-1])
    fairshare(110.0, np.zeros(3).tobytes())
    assert fairshare.usage.tolist() == pytest.approx([25.0, 0.0, 25.0])  # one half-life later


@settings(max_examples=200, deadline=None)
@given(workloads(), st.sampled_from(["none", "easy", "slurm"]), bf_settings, st.integers(1, 400))
def test_age_alone_keeps_first_come_first_served(
    case, backfill: str, bf: dict[str, int], period: int
) -> None:
    """With only PriorityWeightAge, priority falls with submit time: the multifactor queue must give
    the very schedule of the submit-ordered one (checked against the reference)."""
    jobs, total_nodes = case
    age_only = MultifactorSettings(weight_age=1000, max_age_s=10_000, calc_period_s=period)
    slurm = SlurmSettings(
        backfill, priority_type="multifactor", multifactor=age_only, **(bf if backfill == "slurm" else {})
    )
    run = simulate_slurm(jobs.table(), [Pool("batch", total_nodes, 1)], slurm)
    assert starts_of(run) == reference_for(run, total_nodes, backfill)[0]
