"""A run's per-job event log (``events.parquet``): what happened to each job and when, in the
scheduler's own words.

Kubernetes (the Kueue Workload's conditions and events, apis/kueue/v1beta2 workload_types.go):
``Created``; ``QuotaReserved`` and ``Admitted`` with the ClusterQueue and ResourceFlavor; ``PodsReady``
(every pod bound: the job runs); ``Evicted`` with the Evicted condition's reason (``Preempted``,
``PodsReadyTimeout``, ``InactiveWorkload``) and, for a preemption, the Preempted condition's reason
as ``detail`` (``InClusterQueue``, ``InCohortReclamation``, ``InCohortReclaimWhileBorrowing``,
``InCohortFairSharing``; kube-scheduler's DefaultPreemption: ``PreemptionByScheduler``, the pod's
DisruptionTarget reason); ``Requeued``; ``Finished``; ``Rejected`` with the reason it can never run.

A model that keeps no log of its own (Slurm's, whose C core returns each job's outcome) gets the one
its outcome implies (``ModelRun.event_log``): ``Submitted``, ``Started``, ``Ended`` (with the job's state)
or ``Rejected`` (with its reason); its preemptions are counted in jobs.parquet, not dated here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.workload.jobtable import Float64, Int64, Labels

if TYPE_CHECKING:
    import pyarrow as pa

CREATED, QUOTA_RESERVED, ADMITTED, PODS_READY = "Created", "QuotaReserved", "Admitted", "PodsReady"
EVICTED, REQUEUED, FINISHED, REJECTED = "Evicted", "Requeued", "Finished", "Rejected"
SUBMITTED, STARTED, ENDED = "Submitted", "Started", "Ended"
# the Evicted condition's reasons (kueue.WorkloadEvictedBy...)
# (PodsReadyTimeout is the Kubernetes model's EVICTED_BY_PODS_READY_TIMEOUT)
PREEMPTED, INACTIVE_WORKLOAD = "Preempted", "InactiveWorkload"
CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"  # its ClusterQueue's stopPolicy became HoldAndDrain
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"  # a pod's DisruptionTarget condition reason


@dataclass(frozen=True)
class EventLog:
    """Events in time order (ties: the order they happened in): ``job`` is the row in the run's
    jobs; ``queue`` the ClusterQueue or partition, ``flavor`` the ResourceFlavor ("" for none)."""

    job: Int64
    time_s: Float64
    event: Labels
    reason: Labels
    detail: Labels
    queue: Labels
    flavor: Labels

    def __len__(self) -> int:
        return len(self.job)

    @classmethod
    def concat(cls, logs: list[tuple[int, EventLog]]) -> EventLog:
        """The logs of runs whose jobs were concatenated, each with its jobs' offset, in time order
        (ties: in the order of ``logs``)."""
        time_s = np.concatenate([log.time_s for _, log in logs]) if logs else np.zeros(0)
        order = np.argsort(time_s, kind="stable")

        def merged(column: str) -> Labels:
            return Labels.concat([getattr(log, column) for _, log in logs]).take(order)

        jobs = [log.job + offset for offset, log in logs]
        return cls(
            job=(np.concatenate(jobs) if jobs else np.zeros(0, np.int64))[order],
            time_s=time_s[order],
            event=merged("event"),
            reason=merged("reason"),
            detail=merged("detail"),
            queue=merged("queue"),
            flavor=merged("flavor"),
        )


def _labels(values: pa.Array) -> Labels:
    """Dictionary-encoded, the labels in order of first appearance after "" (code 0)."""
    encoded = values.dictionary_encode()
    words: list[str] = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    if "" not in words:
        return Labels(codes + 1 if len(codes) else codes, ("", *words))
    empty = words.index("")
    shift = np.arange(len(words), dtype=np.int32)  # "" moves to 0, the words before it up one
    shift[:empty] += 1
    shift[empty] = 0
    return Labels(shift[codes], ("", *(w for i, w in enumerate(words) if i != empty)))


@dataclass
class EventRecorder:
    """Collects events as a run goes; ``log()`` sorts them by time (stable)."""

    rows: list[tuple[int, float, str, str, str, str, str]] = field(default_factory=list)

    def add(
        self,
        job: int,
        time_s: float,
        event: str,
        reason: str = "",
        detail: str = "",
        queue: str = "",
        flavor: str = "",
    ) -> None:
        self.rows.append((job, time_s, event, reason, detail, queue, flavor))

    def log(self) -> EventLog:
        import pyarrow as pa

        if not self.rows:
            empty = Labels(np.zeros(0, np.int32), ("",))
            return EventLog(np.zeros(0, np.int64), np.zeros(0), empty, empty, empty, empty, empty)
        job, time_s, *texts = zip(*self.rows, strict=True)
        times = np.array(time_s, np.float64)
        order = np.argsort(times, kind="stable")
        taken = pa.array(order)
        event, reason, detail, queue, flavor = (
            _labels(pa.array(column, pa.string()).take(taken)) for column in texts
        )
        return EventLog(
            job=np.array(job, np.int64)[order],
            time_s=times[order],
            event=event,
            reason=reason,
            detail=detail,
            queue=queue,
            flavor=flavor,
        )
