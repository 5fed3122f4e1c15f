"""Slurm Quality of Service: a priority and resource limits per QoS
(https://slurm.schedmd.com/qos.html, https://slurm.schedmd.com/resource_limits.html).

A job held by a limit stays pending (Slurm's reasons ``QOSMaxGRESPerUser``, ``QOSMaxJobsPerUser``,
``QOSGrpGRES``) and, as in slurmctld's scheduler, is skipped: it blocks no job behind it. A job whose
time limit exceeds ``MaxWall`` is refused at submit. The QoS ``normal`` (no limits) always exists;
jobs naming an unknown QoS get it. ``Preempt``, ``PreemptMode`` and ``GraceTime`` serve
``PreemptType=preempt/qos`` (``gpuplan.sim.slurm.preemption``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gpuplan.workload.jobtable import Int32, Int64, Labels, unique_columns

NO_LIMIT = -1


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int = 0  # Priority (scaled by PriorityWeightQOS)
    max_gpus_per_user: int | None = None  # MaxTRESPerUser=gres/gpu=N
    max_jobs_per_user: int | None = None  # MaxJobsPerUser
    grp_gpus: int | None = None  # GrpTRES=gres/gpu=N
    max_wall_s: float | None = None  # MaxWall
    preempt: tuple[str, ...] = ()  # Preempt: QoS its jobs may preempt (PreemptType=preempt/qos)
    preempt_mode: str | None = None  # PreemptMode of its jobs (None: the cluster's)
    grace_time_s: float = 0.0  # GraceTime of its jobs when preempted
    usage_factor: float = 1.0  # UsageFactor: its jobs' usage counts this much toward fair share

    @property
    def has_limits(self) -> bool:
        return any(
            limit is not None for limit in (self.max_gpus_per_user, self.max_jobs_per_user, self.grp_gpus)
        )


@dataclass(frozen=True)
class LimitInputs:
    """Per job its (QoS, user) group; per group its QoS; per QoS its limits (-1: none)."""

    group: Int32
    group_qos: Int32
    max_gpus_per_user: Int64
    max_jobs_per_user: Int64
    grp_gpus: Int64

    def take(self, rows: npt.NDArray[np.int64]) -> LimitInputs:
        return replace(self, group=self.group[rows])

    def for_engine(self) -> dict[str, object]:
        """The settings ``_core/qos.c`` reads, by name."""
        return {
            "plugin": "qos",
            "group": np.ascontiguousarray(self.group, dtype=np.int32),
            "group_qos": np.ascontiguousarray(self.group_qos, dtype=np.int32),
            "max_gpus_per_user": np.ascontiguousarray(self.max_gpus_per_user, dtype=np.int64),
            "max_jobs_per_user": np.ascontiguousarray(self.max_jobs_per_user, dtype=np.int64),
            "grp_gpus": np.ascontiguousarray(self.grp_gpus, dtype=np.int64),
        }


def qos_table(defined: tuple[Qos, ...]) -> list[Qos]:
    """The QoS list with ``normal`` first (Slurm's default QoS, no limits unless defined)."""
    by_name = {qos.name: qos for qos in defined}
    return [by_name.get("normal", Qos("normal")), *(qos for qos in defined if qos.name != "normal")]


def qos_of_jobs(labels: Labels, table: list[Qos]) -> Int32:
    """Index into ``table`` of each job's QoS (``normal`` for unknown names)."""
    index = {qos.name: i for i, qos in enumerate(table)}
    per_label = np.array([index.get(label, 0) for label in labels.labels] or [0], dtype=np.int32)
    return per_label[labels.codes] if len(labels) else np.zeros(0, dtype=np.int32)


def limits(qos: Int32, users: Labels, table: list[Qos]) -> LimitInputs | None:
    """Engine inputs for the limits of ``table``, or None when no QoS has any."""
    if not any(q.has_limits for q in table):
        return None
    pairs, group = unique_columns(np.stack([qos, users.codes]))

    def column(values: list[int | None]) -> Int64:
        return np.array([NO_LIMIT if v is None else v for v in values], dtype=np.int64)

    return LimitInputs(
        group=group.astype(np.int32),
        group_qos=pairs[0].astype(np.int32),
        max_gpus_per_user=column([q.max_gpus_per_user for q in table]),
        max_jobs_per_user=column([q.max_jobs_per_user for q in table]),
        grp_gpus=column([q.grp_gpus for q in table]),
    )
