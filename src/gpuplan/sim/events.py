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

import numpy as np

from gpuplan.workload.jobtable import Float64, Int64, Labels

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


def _labels(values: list[str], order: Int64) -> Labels:
    """``values`` taken in ``order``, dictionary-encoded: "" is code 0, the other labels in order of
    first appearance."""
    import pyarrow as pa

    encoded = pa.array(values, pa.string()).dictionary_encode()
    words: list[str] = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False)[order]
    present, first = np.unique(codes, return_index=True)
    appearing = present[np.argsort(first, kind="stable")].tolist()  # codes by first appearance
    labels = ["", *(words[c] for c in appearing if words[c] != "")]
    code_of = {label: code for code, label in enumerate(labels)}
    renumber = np.array([code_of[word] for word in words] or [0], np.int32)
    return Labels(renumber[codes], tuple(labels))


@dataclass
class EventRecorder:
    """Collects events as a run goes, a list per column; ``log()`` sorts them by time (stable)."""

    job: list[int] = field(default_factory=list)
    time_s: list[float] = field(default_factory=list)
    texts: tuple[list[str], ...] = field(default_factory=lambda: ([], [], [], [], []))

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
        self.job.append(job)
        self.time_s.append(time_s)
        texts = self.texts
        texts[0].append(event)
        texts[1].append(reason)
        texts[2].append(detail)
        texts[3].append(queue)
        texts[4].append(flavor)

    def log(self) -> EventLog:
        times = np.array(self.time_s, np.float64)
        order = np.argsort(times, kind="stable")
        event, reason, detail, queue, flavor = (_labels(column, order) for column in self.texts)
        return EventLog(
            job=np.array(self.job, np.int64)[order],
            time_s=times[order],
            event=event,
            reason=reason,
            detail=detail,
            queue=queue,
            flavor=flavor,
        )
