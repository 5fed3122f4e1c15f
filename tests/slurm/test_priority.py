"""Multifactor priority and fair share (PriorityType=priority/multifactor)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.sim.slurm.fairshare import Classic, FairTree, usage_period
from gpuplan.sim.slurm.model import SlurmSettings
from gpuplan.sim.slurm.priority import ControllerClock, MultifactorSettings, multifactor
from gpuplan.workload.jobtable import Labels

from builders import bf_settings, reference_for, run_slurm, start_times, starts_of, workload, workloads


@pytest.mark.parametrize("algorithm", ["fair_tree", "classic"])
def test_fair_share_puts_the_lighter_account_first(algorithm: str) -> None:
    # One node. Team a's first job runs 0-1000. a2 (t=10) and b1 (t=20) wait. At the recalculation
    # at t=300, a has used 300 GPU-seconds and b none (classic: F(a) = 2^(-1/0.5) = 0.25, F(b) = 1;
    # Fair Tree: b's LF is infinite, a's 0.5, so b's user ranks first), so b1 overtakes a2 at 1000.
    jobs = (
        workload()
        .job(submit=0, run=1000, team="a")
        .job(submit=10, run=10, team="a")
        .job(submit=20, run=10, team="b")
    )
    fair = SlurmSettings(
        "none", priority_type="multifactor", multifactor=MultifactorSettings(weight_fairshare=1000)
    )
    assert start_times(run_slurm(jobs, 1, settings=fair)) == {1: 0, 2: 1010, 3: 1000}
    assert start_times(run_slurm(jobs, 1, settings=SlurmSettings("none"))) == {1: 0, 2: 1000, 3: 1010}


@pytest.mark.parametrize("algorithm", ["fair_tree", "classic"])
def test_shares_weigh_usage(algorithm: str) -> None:
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
    assert start_times(run_slurm(jobs, 2, settings=fair)) == {1: 0, 2: 0, 3: 1000, 4: 1010}
    weighted = run_slurm(jobs, 2, settings=fair, team_shares={"a": 10, "b": 1})
    assert start_times(weighted) == {1: 0, 2: 0, 3: 1010, 4: 1000}


def usage(fairshare: Classic | FairTree, now: float, values: list[float]) -> list[float]:
    return np.frombuffer(fairshare(now, np.array(values, dtype=np.float64).tobytes())).tolist()


def test_classic_fair_share_factor_and_decay() -> None:
    # three accounts with one user each, shares 1, 1, 2
    fairshare = Classic(np.array([0, 1, 2], dtype=np.int32), np.array([1.0, 1.0, 2.0]), half_life_s=100.0)
    assert usage(fairshare, 0.0, [0, 0, 0]) == [1.0, 1.0, 1.0]  # no usage yet
    # usage shares 0.5, 0, 0.5 against shares 0.25, 0.25, 0.5
    assert usage(fairshare, 10.0, [50, 0, 50]) == pytest.approx([2**-2, 1.0, 2**-1])
    usage(fairshare, 110.0, [0, 0, 0])
    assert fairshare.usage.tolist() == pytest.approx([25.0, 0.0, 25.0])  # one half-life later


def test_usage_resets_at_each_priority_usage_reset_period() -> None:
    # PriorityUsageResetPeriod=DAILY: usage goes back to 0 when the clock enters a new day (UTC);
    # t = 0 is 23:00, so the recalculation at 2 h (01:00) is on the next day
    eleven_pm = 1_800_000_000.0 - 1_800_000_000.0 % 86400 + 23 * 3600
    fairshare = Classic(
        np.array([0, 1], dtype=np.int32),
        np.array([1.0, 1.0]),
        half_life_s=0,
        reset_period="daily",
        epoch_s=eleven_pm,
    )
    usage(fairshare, 0.0, [0, 0])
    assert usage(fairshare, 1800.0, [100, 0]) == pytest.approx([2**-2, 1.0])  # a used it all
    assert fairshare.usage.tolist() == [100.0, 0.0]
    assert usage(fairshare, 7200.0, [0, 50]) == pytest.approx([1.0, 2**-2])  # reset at 00:00, then b
    assert fairshare.usage.tolist() == [0.0, 50.0]
    for period, days in (("weekly", 7), ("monthly", 31), ("yearly", 366)):
        assert usage_period(period, 1_800_000_000.0) != usage_period(period, 1_800_000_000.0 + days * 86400)
        assert usage_period(period, 1_800_000_000.0) == usage_period(period, 1_800_000_000.0 + 60)


def test_fair_tree_ranks_users_account_by_account() -> None:
    # accounts 0 (shares 1) and 1 (shares 3); users 0, 1 in account 0 and 2, 3, 4 in account 1.
    tree = FairTree(np.array([0, 0, 1, 1, 1], dtype=np.int32), np.array([1.0, 3.0]), half_life_s=0)
    # with the root user's association (shares 1) beside them: account 0 used 20 of 100 (LF 0.2 /
    # 0.2 = 1); account 1 used 80 (LF 0.6 / 0.8 = 0.75): both of account 0's users rank above all of
    # account 1's, whatever their own usage; 6 user associations, root's first
    factors = usage(tree, 0.0, [5, 15, 0, 40, 40])
    assert factors == pytest.approx([5 / 6, 4 / 6, 3 / 6, 2 / 6, 2 / 6])  # users 3, 4 tie: same rank


def test_fair_tree_merges_tied_accounts() -> None:
    # equal shares and usage: the accounts tie, and their users are ranked together by their own LF
    tree = FairTree(np.array([0, 0, 1, 1], dtype=np.int32), np.array([1.0, 1.0]), half_life_s=0)
    factors = usage(tree, 0.0, [10, 30, 20, 20])
    # LF within their accounts: user 0: 0.5/0.25 = 2, user 1: 0.5/0.75, users 2 and 3: 1; ranks of
    # 5 user associations (root's is 5)
    assert factors == pytest.approx([0.8, 0.2, 0.6, 0.6])


def test_fair_tree_counts_the_root_user_association() -> None:
    # Two accounts of one user each, as `sacctmgr add cluster` leaves them: 3 user associations.
    # Seen with `sshare -a` / `sprio` on Slurm 22.05 (bench/fidelity_slurm): an account with no usage
    # ties with root's user (factor 1); else the less used account's user gets 2/3, the other 1/3.
    tree = FairTree(np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]), half_life_s=0)
    assert usage(tree, 0.0, [0, 0]) == [1.0, 1.0]
    assert usage(tree, 0.0, [0, 50]) == pytest.approx([1.0, 1 / 3])
    assert usage(tree, 0.0, [10, 50]) == pytest.approx([2 / 3, 1 / 3])
    # a tie with root's user carries down to the first users of the tied account (fair_tree.c)
    tree = FairTree(np.array([0, 0, 1], dtype=np.int32), np.array([1.0, 1.0]), half_life_s=0)
    assert usage(tree, 0.0, [0, 0, 20]) == pytest.approx([1.0, 1.0, 0.25])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.lists(st.floats(0.5, 5), min_size=4, max_size=4),
    st.data(),
)
def test_fair_tree_keeps_accounts_in_level_fairshare_order(
    accounts: list[int], shares: list[float], data
) -> None:
    used = data.draw(st.lists(st.integers(0, 100), min_size=len(accounts), max_size=len(accounts)))
    tree = FairTree(np.array(accounts, dtype=np.int32), np.array(shares), half_life_s=0)
    factors = np.array(usage(tree, 0.0, [float(u) for u in used]))
    assert factors.max() <= 1.0 and (factors > 0).all()
    account_usage = np.bincount(accounts, weights=used, minlength=4)
    total = account_usage.sum()
    level = [
        np.inf
        if total == 0 or account_usage[a] == 0
        else (shares[a] / sum(shares)) / (account_usage[a] / total)
        for a in range(4)
    ]
    for i, a in enumerate(accounts):
        for j, b in enumerate(accounts):
            # (levels equal but for rounding, 0.1/0.25 against 0.3/0.75, tie in the tree too)
            if level[a] > level[b] * (1 + 1e-12):
                assert factors[i] > factors[j]


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
    run = run_slurm(jobs, total_nodes, settings=slurm)
    assert starts_of(run) == reference_for(run, total_nodes, backfill)[0]


def test_the_usage_reset_period_reaches_the_simulation() -> None:
    # One node; t = 0 is 23:00 UTC. a's job runs 0-3000 (past midnight); a2 (t=3100) and b1 (t=3200)
    # then wait behind b0 (3000-3700). At the recalculation at 3600 a has used the node and b not much:
    # b1 goes first; with PriorityUsageResetPeriod=DAILY the usage was reset at midnight (3600 s) and
    # the factors tie again, so a2, submitted first, goes first.
    jobs = (
        workload()
        .job(submit=0, run=3000, team="a")
        .job(submit=2900, run=700, team="b")
        .job(submit=3100, run=10, team="a")
        .job(submit=3200, run=10, team="b")
    )
    eleven_pm = 1_800_000_000.0 - 1_800_000_000.0 % 86400 + 23 * 3600

    def run(reset: str) -> list[float | None]:
        fair = MultifactorSettings(weight_fairshare=1000, calc_period_s=600, usage_reset_period=reset)
        settings = SlurmSettings("none", priority_type="multifactor", multifactor=fair)
        return starts_of(run_slurm(jobs, 1, settings=settings, epoch_s=eleven_pm))

    assert run("none")[2:] == [3710.0, 3700.0]
    assert run("daily")[2:] == [3700.0, 3710.0]


def test_fair_tree_ranks_user_associations_that_run_no_jobs() -> None:
    # Accounts a (used 10) and b (none) run jobs; ops has one user association, root, with no jobs
    # (sacctmgr). Fair Tree ranks every user association: b/u and ops/root tie first (no usage), a/u
    # is third of three, factor (3 + 1 - 3) / (3 + 1) = 0.25; counting only the users with jobs it
    # would be second of two, 1/3
    teams = Labels(np.array([0, 1], dtype=np.int32), ("a", "b"))
    users = Labels(np.array([0, 0], dtype=np.int32), ("u",))
    clock = ControllerClock(calc_phase_s=0.0)
    usage = np.array([10.0, 0.0, 0.0])
    for team_users, expected in (({"a": 1, "b": 1, "ops": 1}, [0.25, 1.0]), (None, [1 / 3, 1.0])):
        inputs = multifactor(
            np.ones(2, dtype=np.int32),
            teams,
            users,
            1,
            MultifactorSettings(weight_fairshare=1000),
            None,
            usage_billing=np.ones(2),
            submitted_s=np.zeros(2),
            team_users=team_users,
            clock=clock,
        )
        assert inputs.fairshare is not None
        accrued = usage[: inputs.fairshare.users]
        factors = np.frombuffer(inputs.fairshare(0.0, bytes(accrued.data)), dtype=np.float64)
        assert factors[inputs.association].tolist() == pytest.approx(expected)
