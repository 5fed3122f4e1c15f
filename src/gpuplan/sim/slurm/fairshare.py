"""Fair-share factors for Slurm's multifactor priority (``PriorityWeightFairshare``).

The association tree here has two levels: accounts (the scenario's teams, ``Fairshare=`` their
shares) under the root, and users under their account (``Fairshare=1`` each, Slurm's default).
Usage is billing-seconds (Slurm's calc_job_billable_tres: the job's CPUs, or its TRES weighted by
``TRESBillingWeights``; see the Slurm model), decayed with ``PriorityDecayHalfLife``: past usage
counts half as much after each half-life. The engine calls a hook every ``PriorityCalcPeriod`` with
each user association's usage since the previous call and takes a factor in [0, 1] for each.

- Fair Tree (https://slurm.schedmd.com/fair_tree.html; the default since Slurm 19.05): at each level
  an association's Level Fairshare is LF = S / U, its shares and its usage each normalised over itself
  and its siblings (U = 0 gives infinity). Accounts are visited by LF, highest first, and users ranked
  in that order, so every user of an account with a higher LF ranks above every user of one with a
  lower LF. A user's factor is its rank over the number of user associations (the first gets 1.0).
  Sibling users with equal LF share a rank; sibling accounts with equal LF have their users merged
  before ranking. The cluster's own ``root`` user association (made by ``sacctmgr add cluster``:
  ``Fairshare=1``, no jobs) is a sibling of the accounts: it counts among the user associations and
  in the shares at the top level, and ranks first (infinite LF, users before accounts on a tie); an
  account with no usage ties with it, so that account's first user keeps rank 1 (fair_tree.c:
  ``_calc_tree_fs`` passes the tie down to the account's children).
- Classic (``PriorityFlags=NO_FAIR_TREE``): F = 2 ** (-U / S) per account, with S the account's
  normalised shares and U its normalised usage; its users share it. An account using exactly its
  share gets 0.5; no usage, 1.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

Float64 = npt.NDArray[np.float64]


# PriorityUsageResetPeriod: the usage of every association goes back to 0 when the clock crosses
# into a new period (UTC here; slurmctld uses its local time). WEEKLY resets on Sundays at 00:00.
RESET_PERIODS = ("none", "daily", "weekly", "monthly", "quarterly", "yearly")
_SUNDAY_S = 3 * 86400.0  # the Unix epoch (a Thursday) to its first Sunday


def usage_period(period: str, unix_s: float) -> int:
    """Which PriorityUsageResetPeriod period the Unix time falls in (0 for "none")."""
    if period == "daily":
        return int(unix_s // 86400)
    if period == "weekly":
        return int((unix_s - _SUNDAY_S) // (7 * 86400))
    when = datetime.fromtimestamp(unix_s, tz=UTC)
    if period == "monthly":
        return when.year * 12 + when.month - 1
    if period == "quarterly":
        return when.year * 4 + (when.month - 1) // 3
    if period == "yearly":
        return when.year
    return 0


class FairShare:
    """Decayed usage per user association, and the hook the engine calls."""

    def __init__(
        self,
        account_of_user: npt.NDArray[np.int32],
        account_shares: Float64,
        half_life_s: float,
        reset_period: str = "none",
        epoch_s: float = 0.0,
    ) -> None:
        if (account_shares <= 0).any():
            raise ValueError("fair-share shares must be > 0")
        self.account_of_user = np.asarray(account_of_user, dtype=np.int64)
        self.account_shares = np.asarray(account_shares, dtype=np.float64)
        self.half_life_s = half_life_s
        self.reset_period = reset_period  # PriorityUsageResetPeriod
        self.epoch_s = epoch_s  # Unix time of t = 0, for the reset periods
        self.usage = np.zeros(len(account_of_user))
        self.last_s: float | None = None

    @property
    def users(self) -> int:
        return len(self.usage)

    def __call__(self, now: float, accrued: bytes) -> bytes:
        if self.last_s is not None and self.half_life_s > 0:
            self.usage *= 2.0 ** (-(now - self.last_s) / self.half_life_s)
        if self.last_s is not None and self.reset_period != "none":
            before, after = (usage_period(self.reset_period, self.epoch_s + t) for t in (self.last_s, now))
            if after != before:
                self.usage[:] = 0.0
        self.last_s = now
        self.usage += np.frombuffer(accrued, dtype=np.float64)
        return bytes(np.ascontiguousarray(self.factors(), dtype=np.float64).data)

    def factors(self) -> Float64:
        raise NotImplementedError


# Fairshare of the cluster's root user association (sacctmgr add cluster)
ROOT_USER_SHARES = 1.0


def _level_fairshare(shares: Float64, usage: Float64) -> Float64:
    """LF = S / U among siblings; infinity for no usage (with shares)."""
    s = shares / shares.sum()
    total = usage.sum()
    u = usage / total if total > 0 else np.zeros_like(usage)
    # a usage so small that S / U overflows gives an infinite LF, as IEEE division (and fairshare.c) does
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(u > 0, s / np.where(u > 0, u, 1.0), np.inf)


class FairTree(FairShare):
    def factors(self) -> Float64:
        n = self.users
        accounts = len(self.account_shares)
        account_usage = np.bincount(self.account_of_user, weights=self.usage, minlength=accounts).astype(
            np.float64
        )
        # the root user association is one more sibling of the accounts, with shares 1 and no usage
        top_shares = np.append(self.account_shares, ROOT_USER_SHARES)
        account_lf = _level_fairshare(top_shares, np.append(account_usage, 0.0))[:accounts]
        # a user's LF among its siblings: shares 1 each, usage over its account's
        siblings = np.bincount(self.account_of_user, minlength=accounts)[self.account_of_user]
        parent_usage = account_usage[self.account_of_user]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (overflow: infinite LF)
            used = np.where(parent_usage > 0, self.usage / np.where(parent_usage > 0, parent_usage, 1.0), 0.0)
            user_lf = np.where(used > 0, (1.0 / siblings) / np.where(used > 0, used, 1.0), np.inf)
        # accounts from the highest LF down, accounts with equal LF merged into one group; users of a
        # group by their LF, highest first; rank = user associations left (the root user is first),
        # a tie keeps the rank of the user before
        group = np.unique(-account_lf, return_inverse=True)[1].reshape(-1)[self.account_of_user]
        order = np.lexsort((-user_lf, group))
        in_group, lf = group[order], user_lf[order]
        new_rank = np.ones(n, dtype=bool)
        new_rank[1:] = (in_group[1:] != in_group[:-1]) | (lf[1:] != lf[:-1])
        # the first group's first user ties with the root user when that group's LF is infinite
        first_tied = n > 0 and account_lf[self.account_of_user[order[0]]] == np.inf
        position = np.arange(1, n + 1)
        first_of_tie = np.maximum.accumulate(np.where(new_rank, position, 0))
        if first_tied:
            first_of_tie[: np.argmax(new_rank[1:]) + 1 if new_rank[1:].any() else n] = 0
        factors = np.empty(n)
        factors[order] = (n + 1 - first_of_tie) / (n + 1)
        return factors


class Classic(FairShare):
    def factors(self) -> Float64:
        account_usage = np.bincount(
            self.account_of_user, weights=self.usage, minlength=len(self.account_shares)
        )
        total = account_usage.sum()
        normalised_usage = account_usage / total if total > 0 else np.zeros_like(account_usage)
        normalised_shares = self.account_shares / self.account_shares.sum()
        return np.asarray(
            np.exp2(-normalised_usage / normalised_shares)[self.account_of_user], dtype=np.float64
        )


ALGORITHMS: dict[str, type[FairShare]] = {"fair_tree": FairTree, "classic": Classic}
