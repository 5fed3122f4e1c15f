"""Slurm's priority plugins: ``PriorityType=priority/basic`` (first come, first served) and
``priority/multifactor`` (https://slurm.schedmd.com/priority_multifactor.html).

With multifactor a job's priority is the sum of factors in [0, 1] times their weights:
``PriorityWeightAge`` x min(age / ``PriorityMaxAge``, 1) + ``PriorityWeightFairshare`` x fair-share
factor + ``PriorityWeightJobSize`` x nodes / nodes of the partition + ``PriorityWeightPartition`` x
partition factor (``PriorityJobFactor`` / the highest) + ``PriorityWeightQOS`` x QoS factor (its
``Priority`` / the highest). The engine keeps the queue in priority order and recomputes it every
``PriorityCalcPeriod`` (``_core/priority.c``); the fair-share factor comes from
``gpuplan.sim.slurm.fairshare``. Partitions sharing nodes are ordered by ``PriorityTier`` before any
priority (with ``priority/basic`` too), which ``tiered`` folds into the priority's high part.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gpuplan.sim.slurm.fairshare import ALGORITHMS, RESET_PERIODS, FairShare, FairTree
from gpuplan.workload.jobtable import Float64, Int32, Labels, unique_columns

DAY_S = 86400.0


@dataclass(frozen=True)
class MultifactorSettings:
    """slurm.conf priority settings; defaults are Slurm's (every weight 0)."""

    weight_age: float = 0.0  # PriorityWeightAge
    weight_fairshare: float = 0.0  # PriorityWeightFairshare
    weight_job_size: float = 0.0  # PriorityWeightJobSize
    weight_qos: float = 0.0  # PriorityWeightQOS
    weight_partition: float = 0.0  # PriorityWeightPartition
    max_age_s: float = 7 * DAY_S  # PriorityMaxAge (7-0)
    decay_half_life_s: float = 7 * DAY_S  # PriorityDecayHalfLife (7-0)
    calc_period_s: float = 300.0  # PriorityCalcPeriod (5 minutes)
    fairshare: str = "fair_tree"  # fair_tree | classic (PriorityFlags=NO_FAIR_TREE)
    usage_reset_period: str = "none"  # PriorityUsageResetPeriod: none | daily | weekly | monthly | ...


@dataclass(frozen=True)
class ControllerClock:
    """What the priority engine takes from the rest of the cluster's configuration and clock."""

    calc_phase_s: float = 0.0  # recalculations every PriorityCalcPeriod from here (slurmctld's start)
    epoch_s: float = 0.0  # Unix time of t = 0, for PriorityUsageResetPeriod
    # AccountingStorageEnforce without "limits": a job's use after the last recalculation is lost
    tick_usage_only: bool = False


@dataclass(frozen=True)
class PriorityInputs:
    """What the engine needs to keep the queue in multifactor order."""

    static: Float64  # per job: the factors that do not change while it waits, weighted
    association: Int32  # per job: index of its user association (account and user)
    usage_billing: Float64  # per job: what its fair-share usage counts (billing TRES x QoS UsageFactor)
    submitted_s: Float64  # per job: its SubmitTime (sbatch), which breaks ties of priority
    settings: MultifactorSettings
    fairshare: FairShare | None  # None: no fair-share factor (the tiers of priority/basic)
    clock: ControllerClock

    def take(self, rows: npt.NDArray[np.int64]) -> PriorityInputs:
        return replace(
            self,
            static=self.static[rows],
            association=self.association[rows],
            usage_billing=self.usage_billing[rows],
            submitted_s=self.submitted_s[rows],
        )

    @property
    def plugin(self) -> str:
        """The compiled piece: multifactor, or basic's submit order within PriorityTier (no fair share)."""
        return "priority/basic" if self.fairshare is None else "priority/multifactor"

    def for_engine(self, fair_tree_in_c: bool = True) -> dict[str, object]:
        """The settings ``_core/priority.c`` reads, by name. Fair Tree is computed in the engine
        (``_core/fairshare.c``, the same factors), unless ``fair_tree_in_c`` is off: then, as
        classic fair share, by the hook in Python at each recalculation."""
        s = self.settings
        fairshare = self.fairshare
        in_c: dict[str, object] = {}
        if fair_tree_in_c and isinstance(fairshare, FairTree):
            in_c = {
                "fair_tree_accounts": np.ascontiguousarray(fairshare.account_of_user, dtype=np.int32),
                "fair_tree_shares": np.ascontiguousarray(fairshare.account_shares, dtype=np.float64),
                "decay_half_life_s": fairshare.half_life_s,
                "usage_reset_period": RESET_PERIODS.index(fairshare.reset_period),
                "epoch_s": fairshare.epoch_s,
            }
            fairshare = None
        return {
            "plugin": self.plugin,
            "static": np.ascontiguousarray(self.static, dtype=np.float64),
            "association": np.ascontiguousarray(self.association, dtype=np.int32),
            "usage_billing": np.ascontiguousarray(self.usage_billing, dtype=np.float64),
            "submitted_s": np.ascontiguousarray(self.submitted_s, dtype=np.float64),
            "accounts": 1 if self.fairshare is None else self.fairshare.users,
            "weight_age": s.weight_age,
            "max_age_s": s.max_age_s,
            "weight_fairshare": s.weight_fairshare,
            "calc_period_s": s.calc_period_s,
            "fairshare": fairshare,  # called as fairshare(now, usage) at each recalculation
            "calc_phase_s": self.clock.calc_phase_s,
            "tick_usage_only": self.clock.tick_usage_only,
            **in_c,
        }


def multifactor(
    nodes: Int32,
    teams: Labels,
    users: Labels,
    pool_nodes: int,
    settings: MultifactorSettings,
    shares: dict[str, float] | None,
    qos_factor: Float64 | None = None,
    partition_factor: Float64 | None = None,
    *,
    usage_billing: Float64,
    submitted_s: Float64,
    clock: ControllerClock,
    team_users: dict[str, int] | None = None,
) -> PriorityInputs:
    """Priority inputs for jobs of ``nodes`` nodes submitted by ``users`` of accounts ``teams``;
    ``qos_factor`` and ``partition_factor`` are each job's QoS and partition factors in [0, 1];
    ``usage_billing`` what its usage counts per second it runs (its billing TRES, Slurm's
    calc_job_billable_tres, x its QoS's ``UsageFactor``); ``submitted_s`` its SubmitTime, the
    tie-break of equal priorities (job_scheduler.c:sort_job_queue2: details->submit_time, when
    sbatch ran even for a job held by --begin). ``team_users`` are the user associations of each
    account (sacctmgr's), those with no job among ``users`` included: Fair Tree ranks every user
    association (fair_tree.c), so one that runs nothing still takes a rank, and an account with none
    of the jobs still is a sibling with its shares."""
    static = settings.weight_job_size * nodes.astype(np.float64) / max(pool_nodes, 1)
    if qos_factor is not None:
        static = static + settings.weight_qos * qos_factor
    if partition_factor is not None:
        static = static + settings.weight_partition * partition_factor
    # user associations: one per (account, user) pair that submits jobs
    pairs, association = unique_columns(np.stack([teams.codes, users.codes]))
    accounts = list(teams.labels)
    account_of_user = pairs[0].astype(np.int32)
    if team_users:
        with_jobs = np.bincount(account_of_user, minlength=len(accounts))
        idle: list[int] = []
        for team, count in team_users.items():
            if team not in accounts:
                accounts.append(team)
            index = accounts.index(team)
            submitting = int(with_jobs[index]) if index < len(with_jobs) else 0
            idle += [index] * max(count - submitting, 0)
        account_of_user = np.concatenate([account_of_user, np.array(idle, dtype=np.int32)])
    account_shares = np.array([(shares or {}).get(team, 1.0) for team in accounts] or [1.0])
    fairshare = ALGORITHMS[settings.fairshare](
        account_of_user,
        account_shares,
        settings.decay_half_life_s,
        settings.usage_reset_period,
        clock.epoch_s,
    )
    return PriorityInputs(
        static,
        association.astype(np.int32),
        usage_billing,
        submitted_s,
        settings,
        fairshare,
        clock,
    )


# Priorities stay below 2**36 (five 32-bit weights), so tier x 2**36 + priority orders by tier
# first and is exact in float64 for every PriorityTier (at most 65533).
TIER_SCALE = 2.0**36


def tiered(
    priority: PriorityInputs | None,
    tier: Float64,
    settings: MultifactorSettings,
    clock: ControllerClock,
    submitted_s: Float64,
) -> PriorityInputs:
    """``priority`` (None: priority/basic, submit order) with the jobs' partition ``PriorityTier``
    ahead of it: Slurm schedules higher tiers first whatever the priorities (``submitted_s``: the
    jobs' SubmitTime, for ties)."""
    if priority is None:
        basic = MultifactorSettings(calc_period_s=settings.calc_period_s)
        rows = len(tier)
        return PriorityInputs(
            tier * TIER_SCALE, np.zeros(rows, dtype=np.int32), np.zeros(rows), submitted_s, basic, None, clock
        )
    return replace(priority, static=priority.static + tier * TIER_SCALE)
