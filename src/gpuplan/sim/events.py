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

from dataclasses import dataclass

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
