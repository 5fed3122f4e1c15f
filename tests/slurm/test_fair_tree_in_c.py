"""Fair Tree computed in the engine (``_core/fairshare.c``) against the Python reference
(``sim/slurm/fairshare.py`` FairTree, the hook the engine calls otherwise): the same factors to the
last bit, so the same schedules, over accounts of unequal shares, users that run nothing, ties
(accounts and users with no usage), PriorityDecayHalfLife (none too) and every
PriorityUsageResetPeriod, with a clock near a month's and a year's end.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.engine import _batchcore
from gpuplan.sim.outcome import ModelRun
from gpuplan.sim.slurm.fairshare import RESET_PERIODS, FairTree
from gpuplan.sim.slurm.model import SlurmSettings
from gpuplan.sim.slurm.priority import MultifactorSettings, PriorityInputs

from builders import Workload, run_slurm, workload

# Unix times just before the turn of a month (2024-03-31 23:50 UTC) and of a year (2024-12-31 23:50 UTC)
EPOCHS = [0.0, 1_711_929_000.0, 1_735_689_000.0]


def run(
    jobs: Workload, nodes: int, slurm: SlurmSettings, shares: dict[str, float], epoch_s: float, in_c: bool
) -> ModelRun:
    engine_settings = PriorityInputs.for_engine

    def in_python(self: PriorityInputs, fair_tree_in_c: bool = True) -> dict[str, object]:
        return engine_settings(self, fair_tree_in_c=False)

    with nullcontext() if in_c else mock.patch.object(PriorityInputs, "for_engine", in_python):
        return run_slurm(jobs, nodes, 1, slurm, team_shares=shares, epoch_s=epoch_s)


@settings(max_examples=300, deadline=None)
@given(
    # each user association's account: of a few, or of up to 200 (np.sum adds over 128 pairwise)
    st.lists(st.integers(0, 4), min_size=1, max_size=40)
    | st.lists(st.integers(0, 199), min_size=1, max_size=40),
    st.lists(st.sampled_from([1.0, 2.0]) | st.floats(0.05, 50.0), min_size=200, max_size=200),
    st.sampled_from([0.0, 3600.0, 7 * 86400.0]),
    st.sampled_from(RESET_PERIODS),
    st.sampled_from(EPOCHS),
    st.data(),
)
def test_the_engines_factors_are_the_references_to_the_last_bit(
    accounts: list[int],
    shares: list[float],
    half_life: float,
    reset: str,
    epoch_s: float,
    data: st.DataObject,
) -> None:
    # usage with ties (zeros, equal amounts) and accounts of no user or no usage, over calls a
    # PriorityCalcPeriod apart or days apart (reset periods pass)
    account_of_user = np.array(accounts, dtype=np.int32)
    n_accounts = int(account_of_user.max()) + 1
    account_shares = np.array(shares[:n_accounts])
    users, calls = len(accounts), data.draw(st.integers(1, 8))
    steps = data.draw(
        st.lists(st.sampled_from([300.0, 3600.0, 86400.0, 40 * 86400.0]), min_size=calls, max_size=calls)
    )
    times = np.cumsum(steps)
    usage = st.sampled_from([0.0, 0.0, 1.0, 1.0, 3600.0, 1e-3, 7.5e6])
    accrued = np.array(data.draw(st.lists(usage, min_size=calls * users, max_size=calls * users)))
    reference = FairTree(account_of_user, account_shares, half_life, reset, epoch_s)
    expected = b"".join(
        reference(float(t), accrued[k * users : (k + 1) * users].tobytes()) for k, t in enumerate(times)
    )
    engine = _batchcore.fair_tree(
        account_of_user.tobytes(),
        account_shares.tobytes(),
        half_life,
        RESET_PERIODS.index(reset),
        epoch_s,
        times.tobytes(),
        accrued.tobytes(),
    )
    assert engine == expected


@st.composite
def accounts_at_work(draw: st.DrawFn) -> tuple[Workload, dict[str, float]]:
    teams = ["a", "b", "c"][: draw(st.integers(1, 3))]
    jobs = workload()
    for _ in range(draw(st.integers(2, 40))):
        team = draw(st.sampled_from(teams))
        jobs.job(
            submit=draw(st.integers(0, 4000)),
            run=draw(st.integers(1, 900)),
            nodes=draw(st.integers(1, 3)),
            team=team,
            user=f"{team}{draw(st.integers(1, 3))}",
        )
    shares = {team: float(draw(st.sampled_from([1, 1, 2, 5]))) for team in teams}
    return jobs, shares


@settings(max_examples=150, deadline=None)
@given(
    accounts_at_work(),
    st.sampled_from([0.0, 600.0, 7 * 86400.0]),  # PriorityDecayHalfLife (0: no decay)
    st.sampled_from(RESET_PERIODS),
    st.sampled_from(EPOCHS),
    st.sampled_from(["none", "slurm"]),
    st.sampled_from([0, 300, 3000]),  # PriorityWeightAge: against the factors' values, not only their order
)
def test_fair_tree_in_the_engine_schedules_as_the_reference(
    case: tuple[Workload, dict[str, float]],
    half_life: float,
    reset: str,
    epoch_s: float,
    backfill: str,
    age: int,
) -> None:
    jobs, shares = case
    fair = MultifactorSettings(
        weight_fairshare=10000,
        weight_age=age,
        max_age_s=3600,
        decay_half_life_s=half_life,
        calc_period_s=60,
        usage_reset_period=reset,
    )
    slurm = SlurmSettings(backfill, priority_type="multifactor", multifactor=fair)
    in_c, in_python = (run(jobs, 3, slurm, shares, epoch_s, flag) for flag in (True, False))
    np.testing.assert_array_equal(in_c.start_s, in_python.start_s)
    assert in_c.node_lists().to_pylist() == in_python.node_lists().to_pylist()


def test_the_engine_is_given_fair_tree_and_not_the_hook() -> None:
    # Fair Tree goes to the engine as arrays (no Python call per PriorityCalcPeriod); classic fair
    # share keeps the hook (its 2**x is NumPy's, which the C library's differs from in the last bit)
    jobs = workload().job(submit=0, run=10, team="a").job(submit=0, run=10, team="b")
    seen: list[dict[str, Any]] = []
    engine_settings = PriorityInputs.for_engine

    def spy(self: PriorityInputs, fair_tree_in_c: bool = True) -> dict[str, object]:
        values = engine_settings(self, fair_tree_in_c)
        seen.append(values)
        return values

    for algorithm in ("fair_tree", "classic"):
        fair = MultifactorSettings(weight_fairshare=10000, fairshare=algorithm)
        with mock.patch.object(PriorityInputs, "for_engine", spy):
            run_slurm(jobs, 1, 1, SlurmSettings("none", priority_type="multifactor", multifactor=fair))
    fair_tree, classic = seen
    assert fair_tree["fairshare"] is None and list(fair_tree["fair_tree_accounts"]) == [0, 1]  # type: ignore[call-overload]
    assert classic["fairshare"] is not None and "fair_tree_accounts" not in classic
