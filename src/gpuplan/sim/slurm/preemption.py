"""Slurm preemption (https://slurm.schedmd.com/preempt.html): which running jobs a pending job may
preempt, in which order, and what happens to them.

- ``PreemptType=preempt/partition_prio``: a job may preempt jobs of partitions with a lower
  ``PriorityTier`` that share its nodes (all partitions of a pool do here).
- ``PreemptType=preempt/qos``: a job may preempt jobs whose QoS its QoS lists in ``Preempt=``.
- ``PreemptMode`` of the preempted job's partition (partition_prio) or QoS (qos), else the
  cluster's: ``OFF`` (never preempted), ``CANCEL`` (ends, state PREEMPTED), ``REQUEUE`` (back to
  the queue, restarting from zero, or from its last checkpoint when the workload checkpoints),
  ``SUSPEND`` (stopped and resumed later, losing nothing; Slurm needs ``GANG`` for it).
- ``GraceTime`` of that partition or QoS: the victim keeps its nodes that long after the
  preemption (SIGTERM, then SIGKILL) and the preemptor waits.
- Candidates are taken in the order of Slurm's ``preempt_p_get_prio``: the partition's tier (or the
  QoS's priority) shifted left 16 bits plus the job's node count, smallest first, so low-tier,
  small jobs go first; ties in job-list order, the oldest job first (slurmctld/preempt.c,
  slurm_find_preemptable_jobs). With ``SchedulerParameters=preempt_youngest_first``
  (``PreemptParameters=youngest_first`` from Slurm 23.02) by start time alone, the youngest first.
  Only the jobs needed to free enough nodes are preempted.
- A requeued job gets a new SubmitTime (the requeue) and its age priority restarts when it is
  eligible again, so it sorts behind older jobs of equal priority (priority.c).
- A requeued job is eligible again ``requeue_delay_s`` after it ends: slurmctld refuses to launch a
  requeued batch job until its old credential expired (``AuthInfo=cred_expire``, 120 s) and a
  second has passed.

The main scheduler preempts (each pass, for a job that does not fit); the backfill cycle plans with
the nodes victims in their grace time will free. Checkpointing saves work at whole multiples of the
workload's ``checkpoint_interval`` since the job (re)started.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gpuplan.workload.jobtable import Float64, Int32

PREEMPT_TYPES = ("none", "partition_prio", "qos")
PREEMPT_MODES = ("off", "cancel", "requeue", "suspend")  # engine codes 0..3
DEFAULT_REQUEUE_DELAY_S = 121.0  # cred_expire (120 s) + 1 s


@dataclass(frozen=True)
class PreemptionInputs:
    """Per job its preemption class and the key that orders it as a victim; per class pair
    whether the first may preempt the second; per class (of a victim) its mode and grace time."""

    job_class: Int32
    victim_key: Float64
    checkpoint_s: Float64  # 0: restarts from zero
    can_preempt: npt.NDArray[np.uint8]  # classes x classes
    mode: npt.NDArray[np.uint8]  # index into PREEMPT_MODES
    grace_s: Float64
    requeue_delay_s: float = DEFAULT_REQUEUE_DELAY_S
    youngest_first: bool = False  # SchedulerParameters=preempt_youngest_first
    # the compiled piece (``_core/preempt.c``): preempt/partition_prio, preempt/qos, or
    # preempt/none (no job preempts another; jobs evicted from lent nodes are still requeued)
    plugin: str = "preempt/none"

    def take(self, rows: npt.NDArray[np.int64]) -> PreemptionInputs:
        return replace(
            self,
            job_class=self.job_class[rows],
            victim_key=self.victim_key[rows],
            checkpoint_s=self.checkpoint_s[rows],
        )

    def for_engine(self) -> dict[str, object]:
        """The settings ``_core/preempt.c`` reads, by name."""
        return {
            "plugin": self.plugin,
            "job_class": np.ascontiguousarray(self.job_class, dtype=np.int32),
            "can_preempt": np.ascontiguousarray(self.can_preempt, dtype=np.uint8),
            "mode": np.ascontiguousarray(self.mode, dtype=np.uint8),
            "grace_s": np.ascontiguousarray(self.grace_s, dtype=np.float64),
            "victim_key": np.ascontiguousarray(self.victim_key, dtype=np.float64),
            "checkpoint_s": np.ascontiguousarray(self.checkpoint_s, dtype=np.float64),
            "requeue_delay_s": float(self.requeue_delay_s),
            "youngest_first": self.youngest_first,
        }


@dataclass(frozen=True)
class PreemptClass:
    """A partition (partition_prio) or a QoS (qos) as preemption sees it."""

    rank: int  # PriorityTier, or the QoS's Priority
    mode: str  # PreemptMode of its jobs as victims
    grace_s: float  # GraceTime
    preempts: frozenset[int]  # classes it may preempt (qos); partition_prio uses the ranks


def preemption_inputs(
    preempt_type: str,
    classes: list[PreemptClass],
    job_class: Int32,
    nodes: Int32,
    checkpoint_s: Float64,
    requeue_delay_s: float = DEFAULT_REQUEUE_DELAY_S,
    youngest_first: bool = False,
) -> PreemptionInputs | None:
    """Engine inputs for ``preempt_type``, or None when no job can preempt another."""
    if preempt_type == "none" or not classes:
        return None
    count = len(classes)
    mode = np.array([PREEMPT_MODES.index(c.mode) for c in classes], dtype=np.uint8)
    ranks = np.array([c.rank for c in classes], dtype=np.int64)
    if preempt_type == "partition_prio":
        allowed = ranks[:, None] > ranks[None, :]
    else:
        allowed = np.zeros((count, count), dtype=bool)
        for a, preemptor in enumerate(classes):
            allowed[a, sorted(preemptor.preempts)] = True
    allowed &= (mode != 0)[None, :]
    if not allowed.any():
        return None
    rank_of_job = np.minimum(ranks, 0xFFFF)[job_class].astype(np.float64)
    return PreemptionInputs(
        job_class=job_class.astype(np.int32),
        victim_key=rank_of_job * 65536.0 + np.minimum(nodes, 0xFFFF),
        checkpoint_s=np.nan_to_num(checkpoint_s, nan=0.0),
        can_preempt=allowed.astype(np.uint8),
        mode=mode,
        grace_s=np.array([c.grace_s for c in classes], dtype=np.float64),
        requeue_delay_s=requeue_delay_s,
        youngest_first=youngest_first,
        plugin=f"preempt/{preempt_type}",
    )


def requeue_state(
    checkpoint_s: Float64, requeue_delay_s: float = DEFAULT_REQUEUE_DELAY_S
) -> PreemptionInputs:
    """Inputs under which no job preempts another, for an engine that may still requeue jobs (those
    evicted from nodes lent away)."""
    rows = len(checkpoint_s)
    return PreemptionInputs(
        job_class=np.zeros(rows, dtype=np.int32),
        victim_key=np.zeros(rows),
        checkpoint_s=np.nan_to_num(checkpoint_s, nan=0.0),
        can_preempt=np.zeros((1, 1), dtype=np.uint8),
        mode=np.array([PREEMPT_MODES.index("requeue")], dtype=np.uint8),
        grace_s=np.zeros(1),
        requeue_delay_s=requeue_delay_s,
    )
