"""The Kubernetes/OKE operating model: the run loop that composes Kueue, kube-scheduler, the HPA and
the cluster autoscaler over one event heap.

Each batch job is a Kubernetes Job of ``nodes`` pods, each asking ``gpus_per_node`` GPUs (or a share
of one GPU). At every instant the loop (1) applies the instant's events in a fixed order (pod ends,
nodes becoming Ready, job creations, waitForPodsReady timeouts, requeues, HPA syncs, autoscaler
scans, pods created), (2) runs Kueue's admission cycles, (3) runs one kube-scheduler pass over the
pending pods in queue order (PrioritySort: priority, then the pod's creation time, which the Job
controller's slow-start batches and kube-controller-manager's API rate limit set, controllers.py;
pods created at the same instant interleave across jobs, as the controller creates them
concurrently), with DefaultPreemption for pods that do not fit, (4) repeats (2)-(3) while a
preemption freed room, then (5) starts every job whose pods are all bound and records the timeline.

A job makes progress only while all its pods are bound (a distributed job waits for every worker);
GPUs held by a partly placed job are *idle but held*: the timeline's busy GPUs are those of running
jobs and bound service replicas, as in every model, and the idle-held GPU-hours are a figure of their
own (``gang.idle_held_gpu_hours``). Without Kueue nothing stops two jobs from each
holding part of what both need: the gang deadlock of kubeflow/trainer and mpi-operator users. A job
evicted (preempted, or timed out by waitForPodsReady) loses its work since its last checkpoint (all
of it without a checkpoint interval) and is queued again. Kubernetes Jobs have no time limit unless
``activeDeadlineSeconds`` is set, so the time limits of Slurm traces are not enforced.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.sim.backlog import backlog
from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine._batchcore import check_signals, checkpointed
from gpuplan.sim.engine.core import Timeline
from gpuplan.sim.events import (
    ADMITTED,
    CLUSTER_QUEUE_STOPPED,
    CREATED,
    EVICTED,
    FINISHED,
    INACTIVE_WORKLOAD,
    PODS_READY,
    PREEMPTED,
    PREEMPTION_BY_SCHEDULER,
    QUOTA_RESERVED,
    REQUEUED,
)
from gpuplan.sim.events import (
    REJECTED as REJECTED_EVENT,
)
from gpuplan.sim.kubernetes.autoscaler import scale_down_candidates, scale_up
from gpuplan.sim.kubernetes.changes import most_quota, set_quotas
from gpuplan.sim.kubernetes.cluster import MILLI, UNKNOWN, NodePoolSpec, Nodes
from gpuplan.sim.kubernetes.controllers import ApiClient, PodCreation
from gpuplan.sim.kubernetes.kueue import PENDING_EVALUATION, Decision, Kueue
from gpuplan.sim.kubernetes.placement import PoolPlacement
from gpuplan.sim.kubernetes.preemption import PodIndex, choose_victims
from gpuplan.sim.kubernetes.scheduler import NodeChooser, PodRequest, Scoring, select_node
from gpuplan.sim.kubernetes.services import Deployments
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings, node_pool_specs
from gpuplan.sim.kubernetes.setup import (
    ANY_FLAVOR,
    NO_MATCHING_FLAVOR,
    Companions,
    TaintFilter,
    build_kueue,
    cluster_queues,
    companion_requests,
    eviction_times,
    job_priorities,
    job_reach,
    kueue_flavors,
    pod_requests,
    pool_topologies,
    refusals,
    scoring_of,
    tolerated_pools,
    topology_requests,
)
from gpuplan.sim.kubernetes.tas import pod_capacity, tas_flavors
from gpuplan.sim.outcome import COMPLETED, REJECTED, UNFINISHED, ModelRun, PoolSchedule, QueueSeries
from gpuplan.sim.outcome import PREEMPTED as ENDED_BY_EVICTIONS  # events.PREEMPTED is Kueue's reason
from gpuplan.sim.recorder import EventRecorder
from gpuplan.workload.jobtable import Int32, Int64, JobTable, Labels, companion_gpus
from gpuplan.workload.k8s_pods import PodRequests
from gpuplan.workload.services import Service

if TYPE_CHECKING:
    from gpuplan.workload.synthesis import Workload

MODEL = "kubernetes"

# Event kinds, in the order they apply within one instant.
(
    END,
    NODE_READY,
    SUBMIT,
    PODS_READY_TIMEOUT,
    REQUEUE,
    HPA_SYNC,
    CA_SCAN,
    KUEUE_CHANGE,
    POD_CREATED,
    TAINT_EVICTION,
    POD_BACKOFF,
) = range(11)
PERIODIC = (HPA_SYNC, CA_SCAN)
MAX_ROUNDS = 20  # admission + scheduling rounds per instant (each round needs a preemption to repeat)

# Job states during the run.
WAITING, QUEUED, PLACING, RUNNING, DONE, INACTIVE = range(6)

# A pending pod: (-priority, creation time, pod index, owner, generation). owner >= 0 is a job (keys of
# an older generation are stale: the job was evicted since); owner < 0 is service replica -owner - 1.
PodKey = tuple[int, float, int, int, int]


# waitForPodsReady requeues of one job after which the simulation gives it up (deactivated) when
# requeuingStrategy.backoffLimitCount is unset (Kueue's default: requeue forever)
UNBOUNDED_REQUEUES = 1000

# Each job's reason (ModelRun.reason, jobs.parquet "reason"), in the schedulers' words, with the
# meaning Slurm's has (sacct's Reason: the last reason a job was held for something other than waiting
# its turn or for free nodes, kept when it ran):
# - rejected at submit, as it can never run (setup.refusals: kube-scheduler's "Insufficient ...",
#   Kueue's NoMatchingFlavor and ExceedsMaxQuota);
# - rejected when Kueue deactivates it past requeuingStrategy.backoffLimitCount:
#   RequeuingLimitExceeded (pkg/controller/core/workload_controller.go, triggerDeactivation);
# - held by Kueue before an admission: WaitingForQuota or WaitingForPodsReady (kueue.py), the last;
# - unfinished, what held it at the end: Kueue's reason, or PendingEvaluation (never tried: behind a
#   StrictFIFO head) in its ClusterQueue; Unschedulable (kube-scheduler's PodScheduled=False reason,
#   v1.PodReasonUnschedulable) with pods pending; PodsReadyTimeout (Kueue's eviction reason:
#   evicted UNBOUNDED_REQUEUES times, Kueue would go on requeuing it).
# Pods pending in kube-scheduler before the job ran are Slurm's Resources: not kept.
REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
# a batch Job's pods evicted by the taint-eviction controller (the DisruptionTarget condition's
# reason) more often than its backoffLimit allows: the Job fails (JobReasonBackoffLimitExceeded)
DELETION_BY_TAINT_MANAGER = "DeletionByTaintManager"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
# the Job controller's back-off before it replaces failed pods: 10 s, doubling, at most 6 min
# (pkg/controller/job/job_controller.go: DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff)
POD_FAILURE_BACKOFF_S, MAX_POD_FAILURE_BACKOFF_S = 10.0, 360.0
EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
UNSCHEDULABLE = "Unschedulable"


class KubernetesRun:
    """One simulation; ``run()`` then ``outcome()``."""

    def __init__(
        self,
        jobs: JobTable,
        pools: list[NodePoolSpec],
        settings: KubernetesSettings,
        services: list[Service],
        gpu_milli: Int32 | None = None,
        cpu_milli: Int64 | None = None,
        memory_mib: Int64 | None = None,
        horizon_s: float | None = None,
        pool_aliases: dict[str, str] | None = None,
    ) -> None:
        order = jobs.queue_order()
        self.jobs = jobs = jobs.take(order)

        def reorder(values: Int32 | Int64 | None) -> Int64 | None:
            return None if values is None else np.asarray(values, np.int64)[order]

        self.settings = settings
        self.pool_specs = pools
        self.nodes = Nodes(pools)
        self.horizon_s = horizon_s
        n = len(jobs)
        # each job's ClusterQueue (Kueue manages the jobs with one: _managed)
        self.queue_of_job: Int32 = (
            cluster_queues(jobs, settings.kueue) if settings.kueue.enable else np.zeros(n, np.int32)
        )
        self.managed: list[bool] = (self.queue_of_job >= 0).tolist() if settings.kueue.enable else [False] * n
        taint_filter = TaintFilter(settings, pools)
        tolerated, self.own_pools = tolerated_pools(jobs, taint_filter, self.managed)
        self.requests, self.milli_of_job = pod_requests(
            jobs, pools, reorder(gpu_milli), reorder(cpu_milli), reorder(memory_mib), pool_aliases, tolerated
        )
        self.base_requests = list(self.requests)  # before Kueue's flavor adds a node selector
        self.flavored: dict[tuple[PodRequest, int, tuple[int, ...]], PodRequest] = {}
        self.interned = {request: request for request in self.requests}
        # pod sets asking other requests (a launcher, a driver), after the job's ``nodes`` pods
        self.companions: dict[int, Companions] = companion_requests(
            jobs, self.requests, taint_filter, self.managed
        )
        # per job with companions, each pod's request (the GPU pods', then the companions'), and
        # those of its pods bound, in the order they were (pod_start[j] + k holds the k-th bound)
        self.mixed: dict[int, list[PodRequest]] = {
            j: self._pod_list(j, self.requests[j], companions.requests)
            for j, companions in self.companions.items()
        }
        self.bound: dict[int, list[PodRequest]] = {j: [] for j in self.companions}
        # NoExecute taints tolerated for tolerationSeconds: per job, per pool, how long after a pod
        # is bound there the taint-eviction controller evicts it, and the next such eviction due
        self.evict_after = eviction_times(jobs, taint_filter)
        self.eviction_due: dict[int, float] = {}
        self.backoff_limit: list[int] = np.asarray(jobs.column("backoff_limit"), np.int64).tolist()
        self.pod_failures = [0] * n
        self.ready_deadline: dict[int, float] = {}  # waitForPodsReady's, since the last admission
        # pods' priority (kube-scheduler) and the workload's (Kueue)
        self.priority, self.workload_priority = job_priorities(jobs, settings)
        self.pod_priority: list[int] = self.priority.tolist()
        self.scoring: Scoring = scoring_of(settings)
        self.chooser = NodeChooser(self.nodes, self.scoring)  # kube-scheduler's node choice in a pass
        # Per job and per pod, what the loop reads and writes at every step is in Python lists (an
        # element of a list is read several times faster than one of a NumPy array); the outcome
        # makes arrays of them.
        main_pods = jobs.nodes.astype(np.int64)  # those of its first pod set asking GPUs, and alike
        self.pods = main_pods.copy()
        for j, companions in self.companions.items():
            self.pods[j] += sum(companions.counts)
        self.pod_count: list[int] = self.pods.tolist()
        self.first_pod = np.concatenate([[0], np.cumsum(self.pods)]).astype(np.int64)
        self.pod_start: list[int] = self.first_pod.tolist()
        total_pods = self.pod_start[-1]
        self.pod_node: list[int] = [-1] * total_pods
        self.pod_mask: list[int] = [0] * total_pods
        self.final_node: list[int] = [-1] * total_pods  # nodes of each job's last run
        self.state: list[int] = [WAITING] * n
        self.placed: list[int] = [0] * n
        self.created: list[int] = [0] * n  # pods created, this generation (controllers.py)
        self.pool_sel: list[int] = [r.pool for r in self.requests]  # per job: its pods' node selector
        self.remaining = jobs.duration_s.astype(np.float64).copy()
        self.done_work = np.zeros(n)  # work saved by checkpoints before the last eviction
        self.run_began = np.full(n, np.nan)
        self.start_s = np.full(n, np.nan)
        self.end_s = np.full(n, np.nan)
        self.preemptions = np.zeros(n, np.int32)
        self.lost_gpu_s = np.zeros(n)
        self.generation: list[int] = [0] * n
        self.requeues = np.zeros(n, np.int32)
        self.queue_ts = jobs.submit_s.astype(np.float64).copy()  # Kueue queue-ordering timestamp
        self.queued_at = np.zeros(n)  # when the job last entered its ClusterQueue
        self.held: dict[int, str] = {}  # job -> what last held it pending in Kueue before an admission
        self.held_since = np.zeros(n)
        self.idle_held_gpu_s = np.zeros(n)
        self.checkpoint = np.asarray(jobs.column("checkpoint_s"), np.float64)
        # what Kueue counts against quota: the GPUs of every pod set
        self.gpu_milli_of_job = self.milli_of_job * main_pods + MILLI * companion_gpus(
            jobs.text("companion_pods")
        )
        self.job_gpus = self.gpu_milli_of_job / MILLI
        self.rejected = np.zeros(n, bool)
        self.log = EventRecorder()
        manager = settings.controllerManager
        self.api = ApiClient(manager.kubeAPIQPS, manager.kubeAPIBurst)
        self.creations: dict[int, PodCreation] = {}  # jobs whose pods are being created
        self.sending: deque[tuple[int, int]] = deque()  # (job, generation) with a batch to send now
        self.kueue_preemption_reasons: dict[str, int] = {}  # Kueue's Preempted reason -> evictions
        self.given_up: dict[int, str] = {}  # job -> why the run gave it up (REQUEUING_LIMIT_EXCEEDED, ...)
        self.placing = 0  # jobs with pods created but not all bound
        self.placing_admitted = 0  # of those, the ones Kueue admitted (blockAdmission waits for them)
        self.events: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.batch_events = 0  # events in the heap other than the periodic syncs and scans
        self.now = 0.0
        self.pending: list[PodKey] = []
        # the requests of the pending pods when each fitted nowhere and none may preempt, else None
        self.stuck: list[PodRequest] | None = []
        self.fresh: list[PodKey] = []
        self.freed = True  # capacity was freed since the last pass: every pending pod is tried again
        self.newly_admitted: list[int] = []
        self.counts = dict.fromkeys(
            (
                "fragmented",
                "timeouts",
                "deactivated",
                "kueue_preemptions",
                "pod_preemptions",
                "taint_evictions",
            ),
            0,
        )
        # timeline bookkeeping, per pool
        self.pool_used = [0] * len(pools)
        self.pool_of_node: list[int] = self.nodes.pool.tolist()
        self.pool_queued = [0] * len(pools)
        self.up_count = [int(c) for c in self.nodes.nodes_up()]
        self.rows: list[tuple[float, int, int, int, int]] = []
        self.last_row: list[tuple[int, int, int] | None] = [None] * len(pools)
        self.node_s_up = [0.0] * len(pools)
        self.up_since = [0.0] * len(pools)
        self.touched: set[int] = set(range(len(pools)))  # pools whose timeline row may have changed
        self.clock = 0.0  # time up to which node-hours and borrowing are integrated
        # Kueue
        self.reach = job_reach(self.requests, main_pods, pools)
        # Kueue may also assign default-flavor (no node labels, the index after the pools)
        flavors = kueue_flavors(self.reach, len(pools))
        self.flavor_names = [p.name for p in pools] + [ANY_FLAVOR]
        self.kueue: Kueue | None = None
        self.queue_names: list[str] = []
        # Topology Aware Scheduling: each pool's Topology (its flavor's), each job's request
        self.topologies = pool_topologies(settings, pools)
        self.topology_request = topology_requests(jobs)
        uses_tas = any(t is not None for t in self.topologies)
        if settings.kueue.enable:
            self.kueue, self.queue_names = build_kueue(
                jobs,
                settings.kueue,
                [p.name for p in pools],
                self.gpu_milli_of_job,
                self.workload_priority,
                pools,
                flavors,
                flavor_per_pool=any(pool >= 0 for pool in self.pool_sel) or uses_tas,
                placement=self._tas_placement if uses_tas else None,
            )
            if uses_tas:
                for j in range(n):
                    flavors[j] = self._tas_flavors(j, flavors[j])
        # Coscheduling's PodGroups: the multi-pod jobs Kueue does not admit (Kueue's own
        # all-or-nothing is admission plus waitForPodsReady)
        self.gang_scheduled: list[bool] = [False] * n
        self.job_queue: list[int] = self.queue_of_job.tolist()
        names = self.queue_names
        self.job_queue_name = [  # _queue_name
            names[q] if managed else "" for q, managed in zip(self.job_queue, self.managed, strict=True)
        ]
        if settings.scheduler.coscheduling:
            self.gang_scheduled = [
                not managed and pods > 1
                for managed, pods in zip(self.managed, self.pods.tolist(), strict=True)
            ]
        if self.kueue is not None:
            for q, queue in enumerate(settings.kueue.clusterQueues):
                if queue.stopPolicy != "None":
                    self.kueue.stopped[q] = True
        # jobs that can never run are rejected at submit, with the reason
        self.refusal = refusals(
            self.reach,
            flavors,
            self.kueue,
            self.queue_of_job,
            self.gpu_milli_of_job,
            most_quota(self.kueue, settings.kueue.changes, self.queue_names, self.flavor_names)
            if self.kueue is not None and settings.kueue.changes
            else None,
        )
        # the companions' requests once Kueue admits the job (None: on the flavor of its GPU pods)
        self.admitted_companions: dict[int, tuple[PodRequest | None, ...]] = {}
        for j, companions in self.companions.items():
            if not self.refusal[j]:
                self.refusal[j] = self._companion_refusal(j, companions, pools)
        self.merged_pod_sets = self._merged_pod_sets(np.asarray(jobs.column("pod_sets"), np.int32), flavors)
        self.cohort_queues = (
            [
                q
                for q, queue in enumerate(self.kueue.queues)
                if self.kueue.tree.nodes[queue.policy.node].parent >= 0
            ]
            if self.kueue is not None
            else []
        )
        self.borrowed_gpu_s = [0.0] * len(self.queue_names)
        self.borrowing: list[tuple[int, float]] = []  # (ClusterQueue, GPUs it borrows), as of ...
        self.borrowing_at = -1  # ... this count of the quota tree's changes
        # queues.parquet: (time, queue, admitted GPUs, borrowed GPUs, pending, weighted share)
        self.queue_rows: list[tuple[float, int, float, float, int, float]] = []
        self.last_queue_row: list[tuple[float, float, int, float] | None] = [None] * len(self.queue_names)
        self.wait_ready = settings.kueue.waitForPodsReady
        # services and node autoscaling
        self.deployments = Deployments(services, settings, pools)
        replica_priorities = [d.priority for d in self.deployments.deployments]
        self.index = PodIndex(self.nodes.count, self.pod_priority, self.pod_priority + replica_priorities)
        self.autoscaled = np.array([p.autoscaled for p in pools], bool)
        self.any_autoscaled = bool(self.autoscaled.any())
        self.provisioning = [0] * len(pools)
        self.provisioning_slots: set[int] = set()
        self.unneeded_since: dict[int, float] = {}
        self.last_scale_up = -math.inf
        self.hpa_generation = 0  # HPA_SYNC events of an older generation are superseded
        self.scan_queued = False  # a CA_SCAN is in the heap
        self.pods_since_scan = False  # pods created that the last scan has not seen pending
        self.pool_added = [0] * len(pools)
        self.pool_removed = [0] * len(pools)

    # -- the loop ----------------------------------------------------------------------------------

    def _push(self, when: float, kind: int, a: int = 0, b: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, kind, self.seq, a, b))
        if kind not in PERIODIC:
            self.batch_events += 1

    def _pod_list(self, j: int, main: PodRequest, companions: tuple[PodRequest, ...]) -> list[PodRequest]:
        """Each pod's request, by its index, for a job with companions: its GPU pods first, then
        the companions' (the pods are created in this order; kube-scheduler then binds each on its
        own, as it finds a node for it)."""
        pods = [main] * int(self.jobs.nodes[j])
        for count, request in zip(self.companions[j].counts, companions, strict=True):
            pods += [self.interned.setdefault(request, request)] * count
        return pods

    def _companion_refusal(self, j: int, companions: Companions, pools: list[NodePoolSpec]) -> str:
        """Why a job can never run because of its companion pod sets ("" if it can), and under
        Kueue each one's request once admitted (admitted_companions). Kueue assigns flavors pod set
        by pod set (flavorassigner.go: assignFlavors). A companion asking GPUs gets the flavor of
        the job's GPU pods (the model's one flavor for the GPU quota, merged_pod_sets_jobs warns). A
        companion asking none takes no quota of the model's, so it gets the first of its
        ClusterQueue's flavors it may use (checkFlavorForPodSets: node selector and taints), of the
        pools whose nodes hold one of its pods (as kueue_flavors), or default-flavor. Without
        Kueue, the nodes must hold each companion's pods."""
        reach = job_reach(list(companions.requests), np.asarray(companions.counts, np.int64), pools)
        q = self.job_queue[j]
        if self.kueue is None or q < 0:
            return next((where.short for where in reach if not where.spread), "")
        order = self.kueue.queues[q].policy.flavors
        admitted: list[PodRequest | None] = []
        candidates = kueue_flavors(reach, len(pools))
        for s, (request, flavors) in enumerate(zip(companions.requests, candidates, strict=True)):
            if request.gpus:
                admitted.append(None)
                continue
            flavor = next((f for f in order if f in flavors), -1)
            if flavor < 0:
                return NO_MATCHING_FLAVOR
            admitted.append(self._on_flavor(request, flavor, companions.own_pools[s]))
        self.admitted_companions[j] = tuple(admitted)
        return ""

    def _on_flavor(self, pod: PodRequest, flavor: int, own_pools: tuple[int, ...]) -> PodRequest:
        """The request of a pod Kueue admits to ``flavor``: a node selector to its pool and the
        pools the flavor's tolerations allow; default-flavor has no nodeLabels and no tolerations,
        leaving the pod its own node selector and ``own_pools``."""
        if flavor < len(self.pool_specs):
            return self._flavored(pod, flavor, pod.pools)
        return self._flavored(pod, pod.pool, own_pools)

    def _merged_pod_sets(self, pod_sets: Int32, flavors: list[tuple[int, ...]]) -> int:
        """Workloads of several pod sets asking GPUs (merged into one as they ask alike, or
        companions asking GPUs) where Kueue could give each pod set a flavor, or a topology domain,
        of its own: it assigns them pod set by pod set (flavorassigner.go: assignFlavors, each pod
        set's quota counting the ones before), while the model gives all the workload's GPU pods
        one. Counted for a warning; exact with one flavor."""
        if self.kueue is None:
            return 0
        count = 0
        several = pod_sets > 1
        for j, companions in self.companions.items():
            several[j] |= any(r.gpus for r in companions.requests)
        for j in np.flatnonzero(several).tolist():
            q = self.job_queue[j]
            if q < 0 or self.refusal[j]:
                continue
            usable = [f for f in self.kueue.queues[q].policy.flavors if f in flavors[j]]
            by_topology = any(f < len(self.topologies) and self.topologies[f] is not None for f in usable)
            if len(usable) > 1 or by_topology:
                count += 1
        return count

    def _tas_flavors(self, j: int, flavors: tuple[int, ...]) -> tuple[int, ...]:
        """Of ``flavors``, those job ``j`` may use in its ClusterQueue (tas.tas_flavors)."""
        q = int(self.queue_of_job[j])
        if self.kueue is None or q < 0:
            return flavors
        queue_flavors = self.kueue.queues[q].policy.flavors
        return tas_flavors(flavors, self.topology_request[j], self.topologies, queue_flavors)

    def _tas_placement(self, j: int, flavor: int) -> tuple[tuple[int, int], ...] | None:
        """Where Topology Aware Scheduling puts the job's pods on ``flavor`` now (Kueue.Placement):
        each node of the pool holding as many more of them as its free GPUs, CPU and memory allow
        (nodes not up hold none)."""
        topology = self.topologies[flavor] if flavor < len(self.topologies) else None
        if topology is None or self.queue_of_job[j] < 0:
            return ()
        # no request on a TAS-only ClusterQueue: implied, as unconstrained (_tas_flavors)
        request = self.topology_request[j] or ("unconstrained", None)
        first, stop = int(self.nodes.pool_first[flavor]), int(self.nodes.pool_first[flavor + 1])
        capacity = pod_capacity(self.nodes, self.requests[j], first, stop)
        mode, label = request
        found = topology.assign(capacity, self.pod_count[j], label, mode)
        if found is None:
            return None
        return tuple(sorted((first + node, pods) for node, pods in found.items()))

    def _kueue_change(self, c: int) -> None:
        """An administrator's edit (models.kubernetes.kueue.changes[c]): new quotas, or a new
        stopPolicy; under HoldAndDrain the ClusterQueue's admitted workloads are evicted
        (ClusterQueueStopped) and wait in it."""
        assert self.kueue is not None
        change = self.settings.kueue.changes[c]
        set_quotas(self.kueue, change, self.queue_names, self.flavor_names)
        if change.stopPolicy is not None and change.clusterQueue is not None:
            q = self.queue_names.index(change.clusterQueue)
            admitted = self.kueue.set_stopped(q, change.stopPolicy != "None")
            if change.stopPolicy == "HoldAndDrain":
                for j in sorted(admitted):
                    self.log.add(j, self.now, EVICTED, CLUSTER_QUEUE_STOPPED, queue=self._queue_name(j))
                    self.log.add(j, self.now, REQUEUED, queue=self._queue_name(j))
                    self._evict(j, None)

    def run(self) -> None:
        for c, change in enumerate(self.settings.kueue.changes if self.kueue is not None else []):
            self._push(change.at, KUEUE_CHANGE, c)
        submit_s: list[float] = self.jobs.submit_s.astype(np.float64).tolist()
        arrivals: list[int] = []  # the jobs created, in submit order (the heap need not hold them)
        for j in range(len(self.jobs)):
            if self.refusal[j]:
                self.rejected[j] = True
                self.log.add(j, submit_s[j], CREATED, queue=self._queue_name(j))
                self.log.add(j, submit_s[j], REJECTED_EVENT, self.refusal[j], queue=self._queue_name(j))
            else:
                arrivals.append(j)
        self.batch_events += len(arrivals)
        if self.deployments:
            self.deployments.start(self._queue_replica)
            self._scheduler_pass()  # the warm replicas are bound before the first sync
            self._push(0.0, HPA_SYNC)
        if self.any_autoscaled:
            self._push(0.0, CA_SCAN)
            self.scan_queued = True
        events, arrived, pop = self.events, 0, heapq.heappop
        while events or arrived < len(arrivals):
            # Ctrl-C: compiled (mypyc), the loop never lets Python look, and an instant of a deep
            # queue can take milliseconds (a pass over every pending pod)
            now = events[0][0] if events else math.inf
            if arrived < len(arrivals) and submit_s[arrivals[arrived]] <= now:
                now = submit_s[arrivals[arrived]]
            check_signals(now)  # (and the progress clock: the instant it is at)
            self._advance(now)
            # the instant's events in kind order: those before SUBMIT, the jobs created, the rest
            while events and events[0][0] == now and events[0][1] < SUBMIT:
                _, kind, _, a, b = pop(events)
                self.batch_events -= kind not in PERIODIC
                self._handle(kind, a, b)
            while arrived < len(arrivals) and submit_s[arrivals[arrived]] == now:
                self.batch_events -= 1
                self._handle(SUBMIT, arrivals[arrived], 0)
                arrived += 1
            while events and events[0][0] == now:
                _, kind, _, a, b = pop(events)
                self.batch_events -= kind not in PERIODIC
                self._handle(kind, a, b)
            self._schedule()
            self._wake_autoscaler()
            self._record()
        self._advance(max(self.now, self.horizon_s or 0.0, self.deployments.span_s))
        for pool in range(len(self.pool_specs)):
            self._node_hours(pool)
        for j in self._in_state(PLACING):  # held idle to the end
            self._idle_until_now(j)

    def _in_state(self, state: int) -> list[int]:
        return [j for j, s in enumerate(self.state) if s == state]

    def _advance(self, now: float) -> None:
        """Move the clock, integrating the GPUs each ClusterQueue borrows."""
        dt = now - self.clock
        if dt > 0:
            if self.kueue is not None:
                tree, queues = self.kueue.tree, self.kueue.queues
                if self.borrowing_at != tree.changes:  # usage or quotas changed since last read
                    self.borrowing_at = tree.changes
                    self.borrowing = [
                        (q, borrowed / MILLI)
                        for q in self.cohort_queues
                        if (borrowed := tree.borrowed(queues[q].policy.node))
                    ]
                for q, gpus in self.borrowing:
                    self.borrowed_gpu_s[q] += gpus * dt
            self.clock = now
        self.now = now

    def _handle(self, kind: int, a: int, b: int) -> None:
        if kind == END:
            if self.generation[a] == b and self.state[a] == RUNNING:
                self._finish(a)
        elif kind == SUBMIT:
            self.log.add(a, self.now, CREATED, queue=self._queue_name(a))
            self._enqueue(a)
        elif kind == REQUEUE:
            if self.generation[a] == b:
                self.log.add(a, self.now, REQUEUED, queue=self._queue_name(a))
                self._enqueue(a)
        elif kind == PODS_READY_TIMEOUT:
            if self.generation[a] == b and self.state[a] == PLACING:
                self._pods_ready_timeout(a)
        elif kind == TAINT_EVICTION:
            # due still: not since released (its pods deleted, or a PodGroup's bind undone)
            if self.generation[a] == b and self.eviction_due.get(a) == self.now:
                self._taint_evicted(a)
        elif kind == POD_BACKOFF:
            if self.generation[a] == b and self.state[a] == PLACING:
                self._send_pods(a)
        elif kind == NODE_READY:
            self._node_ready(a)
        elif kind == HPA_SYNC:
            if a != self.hpa_generation:
                return  # superseded: a Deployment changed during quiet syncs (_wake_hpa)
            period = self.settings.hpa.syncPeriod
            self.deployments.sync(self.now, period, self._queue_replica, self._unbind_replica)
            following = self.deployments.next_sync()
            if self.now + period < self.deployments.span_s and following < math.inf:
                self._push(following, HPA_SYNC, a)
        elif kind == CA_SCAN:
            self._autoscale()
        elif kind == KUEUE_CHANGE:
            self._kueue_change(a)
        elif kind == POD_CREATED and self.generation[a] == b and a in self.creations:
            self.sending.append((a, b))
            self.pods_since_scan = True

    def _schedule(self) -> None:
        # Until nothing changes: a preemption frees room (and requeues its victim) that pods and
        # workloads tried earlier in this instant may use; a job whose pods all bound lifts
        # blockAdmission, and Kueue admits again at once.
        for _ in range(MAX_ROUNDS):
            if self.kueue is not None:
                self.kueue.schedule(self.now, self._admitted, self._preempted_by_kueue, self._blocked)
            held = self._blocked()
            self._scheduler_pass()
            if not (self.freed or self.fresh or (held and not self._blocked())):
                break
        for j in self.newly_admitted:
            if self.state[j] == PLACING:
                self.counts["fragmented"] += 1  # quota fitted, the nodes did not (Kueue issue 4329)
        self.newly_admitted.clear()

    # -- batch jobs --------------------------------------------------------------------------------

    def _queued(self, j: int, delta: int) -> None:
        pool = max(self.pool_sel[j], 0)
        self.pool_queued[pool] += delta
        self.touched.add(pool)

    def _used(self, node: int, delta: int) -> None:
        """Busy GPUs (thousandths) of ``node``'s pool: a running job's pods or a bound replica."""
        pool = self.pool_of_node[node]
        self.pool_used[pool] += delta
        self.touched.add(pool)

    def _enqueue(self, j: int) -> None:
        self.state[j] = QUEUED
        self._queued(j, +1)
        if self._managed(j):
            assert self.kueue is not None
            self.queued_at[j] = self.now
            self.kueue.push(j, self.job_queue[j], float(self.queue_ts[j]))
        else:
            self._create_pods(j)

    def _managed(self, j: int) -> bool:
        """Whether Kueue manages the job: it has a LocalQueue (a job of a workload list without
        the queue-name label, in a namespace without a default LocalQueue, is not: with Kueue's
        default manageJobsWithoutQueueName: false its pods go straight to kube-scheduler)."""
        return self.managed[j]

    def _queue_name(self, j: int) -> str:
        """The job's ClusterQueue ("" without Kueue)."""
        return self.job_queue_name[j]

    def _begin_placing(self, j: int) -> None:
        """The job's pods are created and bound from now (PLACING)."""
        self.state[j] = PLACING
        self.placing += 1
        self.placing_admitted += self._managed(j)
        self.held_since[j] = self.now

    def _end_placing(self, j: int) -> None:
        """The job leaves PLACING: its pods all bound, or deleted."""
        self._idle_until_now(j)
        self.placing -= 1
        self.placing_admitted -= self._managed(j)
        self._queued(j, -1)

    def _create_pods(self, j: int) -> None:
        """The Job runs (Kueue unsuspends it): the Job controller creates its pods (_send_batches)."""
        self._begin_placing(j)
        self._send_pods(j)

    def _send_pods(self, j: int) -> None:
        self.created[j] = 0
        self.creations[j] = PodCreation(self.pod_count[j])
        self.sending.append((j, self.generation[j]))
        self.pods_since_scan = True

    def _send_batches(self) -> None:
        """The Job controller creates the pods of the jobs it syncs now (controllers.py), each job's
        next slow-start batch in turn, as its workers do concurrently: the pods whose requests have
        gone through by now join kube-scheduler's queue; a batch still waiting for the API rate
        limit goes on at a POD_CREATED event."""
        sending = self.sending
        while sending:
            j, generation = sending.popleft()
            creation = self.creations.get(j)
            if creation is None or generation != self.generation[j]:
                continue  # evicted since
            if not creation.sent:
                creation.send(self.api, self.now)
            priority = -self.pod_priority[j]
            for created, k in creation.created_by(self.now):
                self.fresh.append((priority, created, k, j, generation))
                self.created[j] += 1
            if creation.sent:
                self._push(creation.sent[0][0], POD_CREATED, j, generation)
            elif creation.finished:
                del self.creations[j]
            else:
                sending.append((j, generation))

    def _admitted(self, decision: Decision) -> None:
        j = decision.job
        assert self.kueue is not None
        why = self.kueue.held_reason(j, float(self.queued_at[j]), self.now)
        if why:
            self.held[j] = why
        base = self.base_requests[j]
        request = self._on_flavor(base, decision.flavor, self.own_pools.get(j, base.pools))
        if request is not self.requests[j]:
            self._queued(j, -1)
            self.pool_sel[j] = request.pool
            self.requests[j] = request
            self._queued(j, +1)
        if j in self.mixed:
            companions = self.companions[j]
            self.mixed[j] = self._pod_list(
                j,
                request,
                tuple(
                    self._on_flavor(companions.requests[s], decision.flavor, companions.own_pools[s])
                    if admitted is None
                    else admitted
                    for s, admitted in enumerate(self.admitted_companions[j])
                ),
            )
        queue, flavor = self._queue_name(j), self.flavor_names[decision.flavor]
        self.log.add(j, self.now, QUOTA_RESERVED, queue=queue, flavor=flavor)
        self.log.add(j, self.now, ADMITTED, queue=queue, flavor=flavor)
        if decision.placement:
            self._place_by_topology(j, decision.placement)
        else:
            self._create_pods(j)
        self.newly_admitted.append(j)
        if self.wait_ready.enable:
            self.ready_deadline[j] = self.now + self.wait_ready.timeout
            self._push(self.ready_deadline[j], PODS_READY_TIMEOUT, j, self.generation[j])

    def _place_by_topology(self, j: int, placement: tuple[tuple[int, int], ...]) -> None:
        """The pods of a TAS workload go to the nodes Kueue assigned (the pod template's node
        selectors and scheduling gates pin them there); they fit, as the assignment was made from
        the nodes' free capacity this instant, so they are bound at once. (A workload with
        companions is refused on a TAS ClusterQueue: its pods ask alike.)"""
        self._begin_placing(j)
        pod = self.requests[j]
        for node, pods in placement:
            for _ in range(pods):
                self._bind(j, node, pod)
        self._start(j)

    def _flavored(self, pod: PodRequest, pool: int, pools: tuple[int, ...]) -> PodRequest:
        """The request with a node selector to ``pool`` and the tolerated ``pools``; equal requests
        are one object (the pass remembers requests that fit nowhere by identity)."""
        if pool == pod.pool and pools == pod.pools:
            return pod
        key = (pod, pool, pools)
        found = self.flavored.get(key)
        if found is None:
            made = replace(pod, pool=pool, pools=pools)
            found = self.flavored[key] = self.interned.setdefault(made, made)
        return found

    def _blocked(self) -> bool:
        """waitForPodsReady.blockAdmission: nothing is admitted while an admitted job waits for pods."""
        return self.wait_ready.enable and self.wait_ready.blockAdmission and self.placing_admitted > 0

    def _idle_until_now(self, j: int) -> None:
        if self.state[j] == PLACING and self.placed[j]:
            self.idle_held_gpu_s[j] += self._held_gpu_milli(j) / MILLI * (self.now - self.held_since[j])
        self.held_since[j] = self.now

    def _held_gpu_milli(self, j: int) -> int:
        """The GPUs (thousandths) job ``j``'s bound pods hold."""
        bound = self.bound.get(j) if self.bound else None
        if bound is None:
            return self.placed[j] * self.requests[j].gpu_milli_total
        return sum(pod.gpu_milli_total for pod in bound)

    def _bind(self, j: int, node: int, pod: PodRequest) -> None:
        """One of job ``j``'s pods, asking ``pod``, bound to ``node``."""
        mask = self.nodes.take(node, pod.gpus, pod.milli, pod.cpu, pod.mem, True)
        self.index.add(node, j, self.pod_priority[j], pod)
        if self.bound and j in self.bound:
            self.bound[j].append(pod)
        # a PodGroup's pods wait at Permit, not bound, until the group binds (_bind_pod_group)
        if self.evict_after and j in self.evict_after and not self.gang_scheduled[j]:
            self._evict_after(j, self.evict_after[j][self.pool_of_node[node]])
        self._idle_until_now(j)
        p = self.pod_start[j] + self.placed[j]
        self.pod_node[p], self.pod_mask[p] = node, mask
        self.placed[j] += 1

    def _evict_after(self, j: int, after: float) -> None:
        """A pod of job ``j`` bound now is evicted ``after`` seconds from now (inf: never), the
        job's pods from the first such eviction on (TAINT_EVICTION)."""
        if self.now + after < self.eviction_due.get(j, math.inf):
            self.eviction_due[j] = self.now + after
            self._push(self.now + after, TAINT_EVICTION, j, self.generation[j])

    def _release_pods(self, j: int) -> None:
        pod, priority = self.requests[j], self.pod_priority[j]
        bound = self.bound.get(j) if self.bound else None
        running = self.state[j] == RUNNING  # its GPUs were busy (a partly placed job's were idle)
        first = self.pod_start[j]
        for p in range(first, first + self.placed[j]):
            if bound is not None:
                pod = bound[p - first]
            node = self.pod_node[p]
            self.nodes.give_back(node, self.pod_mask[p], pod.milli, pod.cpu, pod.mem, True)
            if running:
                self._used(node, -pod.gpu_milli_total)
            self.index.remove(node, j, priority, pod)
            self.pod_node[p], self.pod_mask[p] = -1, 0
        self.placed[j] = 0
        if bound is not None:
            bound.clear()
        if self.eviction_due:
            self.eviction_due.pop(j, None)  # its pods' evictions are due no more
        self.freed = True

    def _leave(self, j: int, state: int) -> None:
        """The job leaves PLACING or RUNNING for ``state``: pods deleted, quota returned."""
        if self.state[j] == PLACING:
            self._end_placing(j)
        self.generation[j] += 1
        self.creations.pop(j, None)  # the pods not yet created never will be
        if self.ready_deadline:
            self.ready_deadline.pop(j, None)
        self._release_pods(j)
        if self.kueue is not None and self.kueue.flavor_of[j] >= 0:
            self.kueue.release(j)
        self.state[j] = state

    def _start(self, j: int) -> None:
        self._end_placing(j)
        if self.ready_deadline:
            self.ready_deadline.pop(j, None)  # ready: waitForPodsReady's timeout no longer applies
        self.state[j] = RUNNING
        if math.isnan(self.start_s[j]):
            self.start_s[j] = self.now
        self.run_began[j] = self.now
        first, last = self.pod_start[j], self.pod_start[j + 1]
        bound = self.bound.get(j) if self.bound else None
        if bound is None:
            for node in self.pod_node[first:last]:  # all its pods bound: their GPUs are busy now
                self._used(node, self.requests[j].gpu_milli_total)
        else:
            for node, pod in zip(self.pod_node[first:last], bound, strict=True):
                self._used(node, pod.gpu_milli_total)
        self.final_node[first:last] = self.pod_node[first:last]
        self.log.add(j, self.now, PODS_READY, queue=self._queue_name(j))
        self._push(self.now + float(self.remaining[j]), END, j, self.generation[j])

    def _finish(self, j: int) -> None:
        self.log.add(j, self.now, FINISHED, queue=self._queue_name(j))
        self.end_s[j] = self.now
        self._leave(j, DONE)

    def _interrupt(self, j: int) -> None:
        """A running job stops: the work since its last checkpoint is lost."""
        if self.state[j] == RUNNING:
            executed = self.now - float(self.run_began[j])
            saved = checkpointed(executed, float(self.checkpoint[j]))  # the engine's rule, as Slurm's
            self.lost_gpu_s[j] += (executed - saved) * self.job_gpus[j]
            self.done_work[j] += saved
            self.remaining[j] = float(self.jobs.duration_s[j]) - self.done_work[j]

    def _evict(self, j: int, requeue_after: float | None) -> None:
        """Preempted or timed out: pods deleted, work since the last checkpoint lost, queued again."""
        self._interrupt(j)
        self._leave(j, QUEUED)
        if requeue_after is None:
            self._enqueue(j)
        else:
            self._push(self.now + requeue_after, REQUEUE, j, self.generation[j])

    def _taint_evicted(self, j: int) -> None:
        """The taint-eviction controller deletes a pod of the job tolerationSeconds after it was
        bound to a node with a NoExecute taint it tolerates (taint_eviction.go: processPodOnNode).
        The Job controller counts the failed pod: past the Job's backoffLimit the Job fails
        (BackoffLimitExceeded), else it replaces the pod after its pod-failure back-off
        (job_controller.go). The model's job needs all its pods, so its run restarts, the work since
        its last checkpoint lost; it keeps its Kueue admission (the Workload stays admitted while the
        Job replaces pods)."""
        del self.eviction_due[j]
        queue = self._queue_name(j)
        self.counts["taint_evictions"] += 1
        self.log.add(j, self.now, EVICTED, DELETION_BY_TAINT_MANAGER, queue=queue)
        self.pod_failures[j] += 1
        self._interrupt(j)
        if self.pod_failures[j] > self.backoff_limit[j]:
            self.lost_gpu_s[j] += self.done_work[j] * self.job_gpus[j]  # its saved work, wasted too
            self._leave(j, INACTIVE)
            self.given_up[j] = BACKOFF_LIMIT_EXCEEDED
            self.end_s[j] = self.now
            self.log.add(j, self.now, FINISHED, BACKOFF_LIMIT_EXCEEDED, queue=queue)
            return
        if self.state[j] == RUNNING:  # its pods are pending again: not ready
            self._release_pods(j)
            self._begin_placing(j)
            self._queued(j, +1)
        else:
            self._idle_until_now(j)
            self._release_pods(j)
        self.generation[j] += 1  # the pods' keys and the run's END are stale
        self.creations.pop(j, None)
        self.created[j] = 0
        backoff = POD_FAILURE_BACKOFF_S * 2.0 ** min(self.pod_failures[j] - 1, 64)
        self._push(self.now + min(backoff, MAX_POD_FAILURE_BACKOFF_S), POD_BACKOFF, j, self.generation[j])
        ready_by = self.ready_deadline.get(j)
        if ready_by is not None:  # not ready since its admission: waitForPodsReady's timeout stands
            self._push(ready_by, PODS_READY_TIMEOUT, j, self.generation[j])

    def _preempted_by_kueue(self, j: int) -> None:
        self.preemptions[j] += 1
        self.counts["kueue_preemptions"] += 1
        assert self.kueue is not None
        reason = self.kueue.preemption_reasons[j]
        self.kueue_preemption_reasons[reason] = self.kueue_preemption_reasons.get(reason, 0) + 1
        self.log.add(j, self.now, EVICTED, PREEMPTED, reason, queue=self._queue_name(j))
        self.log.add(j, self.now, REQUEUED, queue=self._queue_name(j))
        self._evict(j, None)  # requeued in its place: ordered by creation time

    def _pods_ready_timeout(self, j: int) -> None:
        """waitForPodsReady.timeout: evict and requeue after backoffBaseSeconds x 2^(n-1) (at most
        backoffMaxSeconds), ordered by eviction or creation time; deactivated past backoffLimitCount."""
        self.counts["timeouts"] += 1
        self.log.add(j, self.now, EVICTED, EVICTED_BY_PODS_READY_TIMEOUT, queue=self._queue_name(j))
        strategy = self.wait_ready.requeuingStrategy
        self.requeues[j] += 1
        # Kueue requeues forever without backoffLimitCount; a job that can never get all its pods
        # ready would then keep the simulation going forever, so it is given up after this many
        limit = strategy.backoffLimitCount if strategy.backoffLimitCount is not None else UNBOUNDED_REQUEUES
        if self.requeues[j] > limit:
            self._leave(j, INACTIVE)
            self.counts["deactivated"] += 1
            # Kueue deactivates it past backoffLimitCount (it never runs: rejected); without one Kueue
            # would requeue it forever (still queued at the end: unfinished)
            limited = strategy.backoffLimitCount is not None
            self.given_up[j] = REQUEUING_LIMIT_EXCEEDED if limited else EVICTED_BY_PODS_READY_TIMEOUT
            if limited:  # Kueue deactivates it: evicted again, as inactive
                queue = self._queue_name(j)
                self.log.add(j, self.now, EVICTED, INACTIVE_WORKLOAD, REQUEUING_LIMIT_EXCEEDED, queue=queue)
            return
        if strategy.timestamp == "Eviction":
            self.queue_ts[j] = self.now
        # the exponent is capped: past 64 doublings the backoff is backoffMaxSeconds anyway
        backoff = strategy.backoffBaseSeconds * 2.0 ** min(int(self.requeues[j]) - 1, 64)
        self._evict(j, min(backoff, strategy.backoffMaxSeconds))

    # -- kube-scheduler ----------------------------------------------------------------------------

    def _scheduler_pass(self) -> None:
        """Pending pods in queue order; each bound to the best node, or preempting, or left pending.
        Without capacity freed since the last pass only new pods are tried (the others still fit
        nowhere: kube-scheduler's unschedulable queue waits for a cluster event)."""
        if self.sending:
            self._send_batches()
        if not (self.fresh or self.freed):
            return  # nothing new to try, nothing freed for the pods left pending
        # Binding only takes capacity away, so a request that fits nowhere fits nowhere for the rest of
        # the pass (until a preemption frees some): later pods asking the same are not tried again.
        unschedulable: dict[int, PodRequest] = {}  # (interned) requests by id
        freed = self.freed
        self.freed = False
        self.fresh.sort()
        if freed:
            # every pending pod is tried again: what fitted nowhere before the last epoch is known again
            self.chooser.new_epoch()
            if (
                self.stuck is not None
                and (not self.fresh or -self.fresh[0][0] <= self.index.lowest)  # no new pod preempts
                and self._still_stuck(self.stuck)
            ):
                # the pending pods would each fit nowhere again, whatever the new ones take: only
                # those are tried, as when nothing was freed
                freed = False
                unschedulable = {id(pod): pod for pod in self.stuck}
        if freed:
            queue = sorted(self.pending + self.fresh)
            self.pending = []
        else:
            queue = self.fresh
        self.fresh = []
        still: list[PodKey] = []
        started: list[int] = []
        plain = True  # what is left pending is only job pods that fitted nowhere, with no preemption
        waiting: set[int] = set()  # PodGroups that found no room this pass
        # the lists below are only changed in place during the pass
        state, generation, placed, pod_count = self.state, self.generation, self.placed, self.pod_count
        requests, gang_scheduled, mixed = self.requests, self.gang_scheduled, self.mixed
        chooser = self.chooser
        for key in queue:
            owner = key[3]
            if owner >= 0:
                if state[owner] != PLACING or key[4] != generation[owner]:
                    continue  # evicted since it was queued
                if placed[owner] >= pod_count[owner]:
                    continue  # bound with its PodGroup
                pod = requests[owner] if not mixed or owner not in mixed else mixed[owner][key[2]]
                if gang_scheduled[owner]:
                    plain = False  # a PodGroup's pods wait for one another, and a failed bind frees room
                    if self.created[owner] < pod_count[owner]:
                        still.append(key)  # PreFilter: a PodGroup waits until all its pods exist
                        continue
                    if owner in waiting or id(pod) in unschedulable or not self._bind_pod_group(owner):
                        waiting.add(owner)
                        still.append(key)  # the group waits whole (Coscheduling's Permit)
                        continue
                    started.append(owner)
                    continue
            else:
                replica = self.deployments.replicas.get(-owner - 1)
                if replica is None or replica.node >= 0:
                    continue
                pod = self.deployments.request(-owner - 1)
                plain = False  # replica ids are reused: a key left pending may not stay stale
            if id(pod) in unschedulable:
                still.append(key)
                continue
            node = chooser.select(pod)
            if node < 0 and -key[0] > self.index.lowest:
                plain = False  # the next pass tries preemption again
                node = self._preempt_for(pod, -key[0])
                if node >= 0:
                    unschedulable.clear()
            if node < 0:
                unschedulable[id(pod)] = pod
                still.append(key)
                continue
            if owner >= 0:
                self._bind(owner, node, pod)
                if placed[owner] == pod_count[owner]:
                    started.append(owner)
            else:
                self._bind_replica(-owner - 1, node)
        # both in queue order (keys are unique): sorting their concatenation merges two runs
        if still:
            self.pending = sorted(self.pending + still) if self.pending else still
        # what the pods now pending asked for, when a pass over them would only find that again
        if not plain or (self.stuck is None and not freed):
            self.stuck = None
        elif freed or not self.stuck:
            self.stuck = list(unschedulable.values())
        else:
            self.stuck = list({id(r): r for r in self.stuck + list(unschedulable.values())}.values())
        for j in started:
            self._start(j)

    def _still_stuck(self, stuck: list[PodRequest]) -> bool:
        """Whether every request the pending pods make still fits nowhere. Each fitted nowhere when
        last tried and may not preempt, so with no new pod preempting, a pass over them would bind
        and evict none of them (kube-scheduler leaves such pods in its unschedulable queue)."""
        return all(self.chooser.select(pod) < 0 for pod in stuck)

    def _bind_pod_group(self, j: int) -> bool:
        """Coscheduling (scheduler-plugins, pkg/coscheduling): the job's pods are a PodGroup whose
        minMember is all of them; they wait at Permit until every one has a node, then bind
        together. Here each is bound in turn on what the ones before left; if one finds no node,
        the others are released (the reservations undone) and the group waits for capacity."""
        mixed = self.mixed.get(j) if self.mixed else None
        while self.placed[j] < self.pod_count[j]:
            pod = self.requests[j] if mixed is None else mixed[self.placed[j]]  # from the first, in order
            node = self.chooser.select(pod)
            if node < 0:
                self._release_pods(j)
                return False
            self._bind(j, node, pod)
        if self.evict_after and j in self.evict_after:  # bound together: their evictions are due
            first, after = self.pod_start[j], self.evict_after[j]
            for node in self.pod_node[first : first + self.placed[j]]:
                self._evict_after(j, after[self.pool_of_node[node]])
        return True

    def _preempt_for(self, pod: PodRequest, priority: int) -> int:
        nodes = self.nodes

        def freed_on(j: int, node: int) -> tuple[list[int], int, int]:
            spec = self.requests[j]
            bound = self.bound.get(j) if self.bound else None
            bits: list[int] = []
            cpu = mem = 0
            first = self.pod_start[j]
            for p in range(first, first + self.placed[j]):
                if self.pod_node[p] == node:
                    if bound is not None:
                        spec = bound[p - first]
                    mask = self.pod_mask[p]
                    bits.extend(
                        x for g in range(nodes.max_gpus) if mask >> g & 1 for x in (g, min(spec.milli, MILLI))
                    )
                    cpu += spec.cpu
                    mem += spec.mem
            return bits, cpu, mem

        node, victims = choose_victims(
            nodes,
            self.index,
            pod,
            priority,
            lambda j: self.pod_priority[j],
            freed_on,
            lambda j: float(self.run_began[j]) if self.run_began[j] == self.run_began[j] else 0.0,
        )
        for victim in victims:
            self.preemptions[victim] += 1
            self.counts["pod_preemptions"] += 1
            queue = self._queue_name(victim)
            self.log.add(victim, self.now, EVICTED, PREEMPTED, PREEMPTION_BY_SCHEDULER, queue=queue)
            self.log.add(victim, self.now, REQUEUED, queue=queue)
            self._evict(victim, None)
        return node

    # -- service replicas --------------------------------------------------------------------------

    def _queue_replica(self, rid: int, priority: int, created: float) -> None:
        self.fresh.append((-priority, created, 0, -rid - 1, 0))
        self.pods_since_scan = True

    def _bind_replica(self, rid: int, node: int) -> None:
        self._wake_hpa(self.deployments.replicas[rid].service)
        pod = self.deployments.request(rid)
        mask = self.nodes.take(node, pod.gpus, pod.milli, pod.cpu, pod.mem, False)
        self.deployments.bind(rid, node, mask, self.now)
        self._used(node, pod.gpu_milli_total)

    def _unbind_replica(self, rid: int) -> None:
        replica = self.deployments.replicas[rid]
        pod = self.deployments.request(rid)
        self.nodes.give_back(replica.node, replica.mask, pod.milli, pod.cpu, pod.mem, False)
        self._used(replica.node, -pod.gpu_milli_total)
        self.deployments.unbind(rid)
        self.freed = True

    # -- cluster autoscaler ------------------------------------------------------------------------

    def _unschedulable(self) -> list[PodRequest]:
        requests = []
        for key in self.pending:  # tried by kube-scheduler and left pending (new pods are not yet)
            owner = key[3]
            if owner >= 0:
                if self.state[owner] == PLACING and key[4] == self.generation[owner]:
                    pods = self.mixed.get(owner) if self.mixed else None
                    requests.append(self.requests[owner] if pods is None else pods[key[2]])
            else:
                replica = self.deployments.replicas.get(-owner - 1)
                if replica is not None and replica.node < 0:
                    requests.append(self.deployments.request(-owner - 1))
        return requests

    def _set_up(self, node: int, up: bool) -> None:
        pool = self.pool_of_node[node]
        self._node_hours(pool)
        self.nodes.set_up(node, up)
        self.up_count[pool] += 1 if up else -1
        self.touched.add(pool)

    def _node_hours(self, pool: int) -> None:
        """Integrate the pool's nodes up to now (node-hours for cost)."""
        self.node_s_up[pool] += self.up_count[pool] * (self.now - self.up_since[pool])
        self.up_since[pool] = self.now

    def _node_ready(self, node: int) -> None:
        self.provisioning_slots.discard(node)
        self.provisioning[self.pool_of_node[node]] -= 1
        self._set_up(node, True)
        self.freed = True

    def _autoscale(self) -> None:
        """One cluster-autoscaler scan (see autoscaler.py): scale up for unschedulable pods, mark and
        remove unneeded nodes. Scans stop when nothing is left to do."""
        ca = self.settings.clusterAutoscaler
        changed = False
        self.scan_queued = False
        # created this instant, not yet tried by kube-scheduler
        self.pods_since_scan = bool(self.fresh or self.sending)
        pending = self._unschedulable()
        if pending:
            for pool, count in scale_up(self.nodes, self.provisioning, pending).items():
                first, stop = int(self.nodes.pool_first[pool]), int(self.nodes.pool_first[pool + 1])
                slots = [
                    s for s in range(first, stop) if not self.nodes.up[s] and s not in self.provisioning_slots
                ]
                for slot in slots[:count]:
                    self.provisioning_slots.add(slot)
                    self.provisioning[pool] += 1
                    self.pool_added[pool] += 1
                    self._push(self.now + self.pool_specs[pool].provision_delay_s, NODE_READY, slot)
                    changed = True
                self.last_scale_up = self.now
        unneeded = set(
            scale_down_candidates(self.nodes, ca.scaleDownUtilizationThreshold, self.autoscaled).tolist()
        )
        for node in [node for node in self.unneeded_since if node not in unneeded]:
            del self.unneeded_since[node]
        for node in unneeded:
            self.unneeded_since.setdefault(node, self.now)
        if self.now - self.last_scale_up >= ca.scaleDownDelayAfterAdd:
            changed |= self._scale_down(ca.scaleDownUnneededTime)
        removable = any(
            self.up_count[p] > self.pool_specs[p].min_nodes
            for p in {self.pool_of_node[node] for node in self.unneeded_since}
        )
        # Scans go on while anything may change; pods left pending with no node to add for them
        # wait for an event (the next scan then comes from _wake_autoscaler), so a cluster at its
        # maxNodes with pods that never fit does not scan forever.
        busy = self.batch_events > 0 or self.now < self.deployments.span_s or removable
        if busy or changed or any(self.provisioning):
            self._push(self.now + ca.scanInterval, CA_SCAN)
            self.scan_queued = True

    def _wake_autoscaler(self) -> None:
        """After an instant: pods created since the last scan that kube-scheduler left pending get a
        scan at the next scan interval (the autoscaler scans every ``scanInterval``; here it is woken
        only when there is something to look at)."""
        if self.scan_queued or not self.pods_since_scan or not self.any_autoscaled:
            return
        if self._unschedulable():
            self._push(self.now + self.settings.clusterAutoscaler.scanInterval, CA_SCAN)
            self.scan_queued = True

    def _scale_down(self, unneeded_time: float) -> bool:
        """Remove nodes unneeded for long enough: empty ones all, one with replicas per scan."""
        removed_busy = changed = False
        for node in sorted(self.unneeded_since):
            pool = self.pool_of_node[node]
            if (
                self.now - self.unneeded_since[node] < unneeded_time
                or self.up_count[pool] <= self.pool_specs[pool].min_nodes
            ):
                continue
            replicas = self.deployments.on_node(node)
            if replicas:
                if removed_busy or not self._fit_elsewhere(node, replicas):
                    continue
                removed_busy = True
                self._wake_hpa()
                for rid in replicas:  # the ReplicaSet recreates them; they cold-start elsewhere
                    self._unbind_replica(rid)
                    self._queue_replica(rid, self.deployments.priority(rid), self.now)
            del self.unneeded_since[node]
            self._set_up(node, False)
            self.pool_removed[pool] += 1
            changed = True
        return changed

    def _wake_hpa(self, service: int | None = None) -> None:
        """A Deployment's replicas change outside a sync (``service``'s, or any): the skipped syncs
        up to now are recorded and the HPA syncs again from the next one."""
        following = self.deployments.wake(self.now, self.settings.hpa.syncPeriod, service)
        if following is not None:
            self.hpa_generation += 1
            self._push(following, HPA_SYNC, self.hpa_generation)

    def _fit_elsewhere(self, node: int, replicas: list[int]) -> bool:
        self.nodes.up[node] = False
        try:
            return all(
                select_node(self.nodes, self.deployments.request(r), self.scoring) >= 0 for r in replicas
            )
        finally:
            self.nodes.up[node] = True

    # -- timeline and outcome ----------------------------------------------------------------------

    def _record(self) -> None:
        for i in sorted(self.touched):
            row = ((self.pool_used[i] + MILLI // 2) // MILLI, self.pool_queued[i], self.up_count[i])
            if row != self.last_row[i]:
                self.rows.append((self.now, i, *row))
                self.last_row[i] = row
        self.touched.clear()
        if self.kueue is not None and self.kueue.dirty:
            self._record_queues()

    def _record_queues(self) -> None:
        """Each ClusterQueue's row of queues.parquet, where it changed: GPUs admitted and borrowed,
        pending workloads, weighted share (QuotaTree.share)."""
        assert self.kueue is not None
        tree, queues = self.kueue.tree, self.kueue.queues
        for q in sorted(self.kueue.dirty):
            queue = queues[q]
            node = queue.policy.node
            borrowed = tree.borrowed(node)
            share = tree.share(node) if borrowed > 0 else 0.0  # 0 when not borrowing
            row = (sum(tree.nodes[node].usage) / MILLI, borrowed / MILLI, queue.pending(), share)
            if row != self.last_queue_row[q]:
                self.queue_rows.append((self.now, q, *row))
                self.last_queue_row[q] = row
        self.kueue.dirty.clear()

    def _queue_series(self) -> QueueSeries | None:
        if self.kueue is None:
            return None
        if not self.queue_rows:
            return QueueSeries.empty()
        rows = np.array(self.queue_rows, np.float64)  # every figure is exact in a float64
        return QueueSeries(
            time_s=rows[:, 0].copy(),
            queue=Labels(rows[:, 1].astype(np.int32), tuple(self.queue_names)),
            admitted_gpus=rows[:, 2].copy(),
            borrowed_gpus=rows[:, 3].copy(),
            pending_jobs=rows[:, 4].astype(np.int32),
            weighted_share=rows[:, 5].copy(),
        )

    def outcome(self, simulate_s: float) -> ModelRun:
        n = len(self.jobs)
        state = np.full(n, UNFINISHED, np.int8)
        completed = np.asarray(self.state, np.int8) == DONE
        state[completed] = COMPLETED
        state[self.rejected] = REJECTED
        reason = self._reasons()
        state[reason.codes == reason.labels.index(REQUEUING_LIMIT_EXCEEDED)] = REJECTED
        # a Job failed past its backoffLimit: ended by its evictions if it ran, else it never could
        failed = np.zeros(n, bool)
        if BACKOFF_LIMIT_EXCEEDED in reason.labels:
            failed = reason.codes == reason.labels.index(BACKOFF_LIMIT_EXCEEDED)
        ran = np.isfinite(self.start_s)
        state[failed & ran] = ENDED_BY_EVICTIONS
        state[failed & ~ran] = REJECTED
        ended = completed | (failed & ran)  # those whose start, end and last nodes stand
        start_s = np.where(ended, self.start_s, np.nan)
        end_s = np.where(ended, self.end_s, np.nan)
        final_node = np.array(self.final_node, np.int32)
        first_node = final_node[np.minimum(self.first_pod[:-1], max(len(final_node) - 1, 0))]
        ran_on = np.where((self.pods > 0) & ended, first_node, -1) if len(final_node) else np.full(n, -1)
        selected = np.maximum(np.array(self.pool_sel, np.int32), 0)
        pool_of_job = np.where(ran_on >= 0, self.nodes.pool[np.maximum(ran_on, 0)], selected).astype(np.int32)
        rows = np.array(self.rows, dtype=np.float64).reshape(-1, 5)
        schedules = []
        for i, spec in enumerate(self.pool_specs):
            members = np.flatnonzero(pool_of_job == i)
            mine = rows[rows[:, 1] == i]
            timeline = Timeline(
                mine[:, 0].copy(),
                mine[:, 2].astype(np.int64),
                mine[:, 3].astype(np.int32),
                mine[:, 4].astype(np.int32),
            )
            placement = PoolPlacement(
                timeline, self.nodes, final_node, self.first_pod, members, ended[members]
            )
            nodes = max(spec.nodes, spec.max_nodes)
            pool = Pool(spec.name, nodes, spec.gpus_per_node, spec.name, spec.origin)
            gpu_hours_up = self.node_s_up[i] * spec.gpus_per_node / 3600.0
            schedules.append(PoolSchedule(pool, members, placement, gpu_hours_up=gpu_hours_up))
        return ModelRun(
            model=MODEL,
            settings=self._echo(),
            jobs=self.jobs,
            run_s=np.where(failed, 0.0, self.jobs.duration_s),  # a failed job's runs are lost_gpu_s
            state=state,
            start_s=start_s,
            end_s=end_s,
            pool_of_job=pool_of_job,
            pools=schedules,
            services=self.deployments.outcomes(),
            simulate_s=simulate_s,
            preemptions=self.preemptions,
            lost_gpu_s=self.lost_gpu_s,
            job_gpus=self.job_gpus,
            extra={"kubernetes": self._figures()},
            reason=reason,
            events=self.log.log(),
            queues=self._queue_series(),
        )

    def _reasons(self) -> Labels:
        """Each job's reason (as the comment above REQUEUING_LIMIT_EXCEEDED says): why it was
        rejected or given up, what held it at the end, or what last held it in Kueue."""
        words = [""] * len(self.jobs)
        for j, why in self.held.items():
            words[j] = why
        for j in np.flatnonzero(self.rejected).tolist():
            words[j] = self.refusal[j]
        for j, why in self.given_up.items():
            words[j] = why
        if self.kueue is not None:  # pending in a ClusterQueue at the end (none are in a requeue backoff)
            for j in np.flatnonzero(
                (np.asarray(self.state, np.int8) == QUEUED) & ~self.rejected & (self.queue_of_job >= 0)
            ).tolist():
                at_end = self.kueue.held_reason(j, float(self.queued_at[j]))
                words[j] = at_end or words[j] or PENDING_EVALUATION
        for j in self._in_state(PLACING):
            words[j] = UNSCHEDULABLE
        labels = ("", REQUEUING_LIMIT_EXCEEDED, *sorted(set(words) - {"", REQUEUING_LIMIT_EXCEEDED}))
        index = {label: i for i, label in enumerate(labels)}
        return Labels(np.array([index[w] for w in words], np.int32), labels)

    def _echo(self) -> dict[str, Any]:
        s = self.settings
        echoed: dict[str, Any] = {"kueue": s.kueue.enable, "scoringStrategy": s.scheduler.scoringStrategy}
        if s.kueue.enable:
            echoed["clusterQueues"] = self.queue_names
            echoed["fairSharing"] = s.kueue.fairSharing.enable
            echoed["waitForPodsReady"] = s.kueue.waitForPodsReady.enable
        # what the nodes were taken to have: a user sees when CPU and memory were not checked
        echoed["node_resources"] = {spec.name: node_resources(spec) for spec in self.pool_specs}
        return echoed

    def _requests_not_checked(self) -> int:
        """Jobs that ask CPU or memory where a pool they may run in has that resource UNKNOWN."""
        count = 0
        for j, (pod, where) in enumerate(zip(self.requests, self.reach, strict=True)):
            if self.rejected[j] or not (pod.cpu > 0 or pod.mem > 0):
                continue
            pools = [self.pool_specs[i] for i in where.fit]
            if any(
                (pod.cpu > 0 and p.cpu_milli == UNKNOWN) or (pod.mem > 0 and p.memory_mib == UNKNOWN)
                for p in pools
            ):
                count += 1
        return count

    def _figures(self) -> dict[str, Any]:
        """Figures only this model has: gang idle time, Kueue admission and borrowing, node pools."""
        placed = np.asarray(self.placed, np.int64)
        partial = (np.asarray(self.state, np.int8) == PLACING) & (placed > 0)
        figures: dict[str, Any] = {
            "gang": {
                "idle_held_gpu_hours": float(self.idle_held_gpu_s.sum() / 3600.0),
                # jobs holding part of their GPUs when nothing else can happen: the deadlock
                "jobs_partly_placed_at_end": int(np.count_nonzero(partial)),
                "gpus_held_idle_at_end": sum(
                    self._held_gpu_milli(j) for j in np.flatnonzero(partial).tolist()
                )
                / MILLI,
                "deadlocked": bool(partial.any()),
            },
            "preemption": {
                "by_kueue": self.counts["kueue_preemptions"],
                "by_kube_scheduler": self.counts["pod_preemptions"],
            },
            # pods deleted by the taint-eviction controller (tolerationSeconds of a NoExecute taint)
            "taint_evictions": self.counts["taint_evictions"],
            # jobs whose CPU or memory requests were not checked against nodes of unknown capacity
            "requests_not_checked_jobs": self._requests_not_checked(),
            "merged_pod_sets_jobs": self.merged_pod_sets,
            "node_pools": {
                spec.name: {
                    "node_hours": self.node_s_up[i] / 3600.0,
                    "nodes_min": spec.min_nodes,
                    "nodes_max": max(spec.max_nodes, spec.nodes),
                    "nodes_added": self.pool_added[i],
                    "nodes_removed": self.pool_removed[i],
                }
                for i, spec in enumerate(self.pool_specs)
            },
        }
        if self.kueue is not None:
            kueue, tree = self.kueue, self.kueue.tree
            job_gpu_s = np.where(
                np.asarray(self.state, np.int8) == DONE, self.job_gpus * self.jobs.duration_s, 0.0
            )
            figures["kueue"] = {
                "quota_fit_but_fragmented": self.counts["fragmented"],
                "pods_ready_timeouts": self.counts["timeouts"],
                "deactivated": self.counts["deactivated"],
                "borrowing_admissions": kueue.borrowing_admissions,
                "reclaims": kueue.reclaims,
                "preemptions_within_cluster_queue": kueue.within_queue_preemptions,
                # the Preempted condition's reasons: InClusterQueue, InCohortReclamation,
                # InCohortReclaimWhileBorrowing, InCohortFairSharing
                "preemptions_by_reason": dict(sorted(self.kueue_preemption_reasons.items())),
                "cluster_queues": {
                    name: {
                        "nominal_gpus": sum(tree.nodes[kueue.queues[q].policy.node].nominal) / MILLI,
                        "gpu_hours": float(job_gpu_s[self.queue_of_job == q].sum() / 3600.0),
                        "borrowed_gpu_hours": self.borrowed_gpu_s[q] / 3600.0,
                        "peak_borrowed_gpus": kueue.peak_borrowed[q] / MILLI,
                    }
                    for q, name in enumerate(self.queue_names)
                },
                "flavors": self._flavor_quotas(),
            }
        return figures

    def _flavor_quotas(self) -> dict[str, dict[str, float]]:
        """Per ResourceFlavor with quota: the nominal GPUs of every ClusterQueue and cohort in it
        (at the end of the run), and the GPUs of the nodes it places on: its pool's at their most
        nodes, every pool's for default-flavor (no nodeLabels). Quota above them admits pods no node
        can hold (metrics.diagnose: quota_exceeds_capacity)."""
        assert self.kueue is not None
        names = [spec.name for spec in self.pool_specs] + [ANY_FLAVOR]
        pool_gpus = [max(spec.nodes, spec.max_nodes) * spec.gpus_per_node for spec in self.pool_specs]
        placeable = [*pool_gpus, sum(pool_gpus)]
        nominal = [0.0] * len(names)
        for node in self.kueue.tree.nodes:
            for f, quota in enumerate(node.nominal[: len(names)]):
                nominal[f] += quota
        return {
            name: {"nominal_gpus": nominal[f] / MILLI, "placeable_gpus": float(placeable[f])}
            for f, name in enumerate(names)
            if nominal[f] > 0
        }


def node_resources(spec: NodePoolSpec) -> str:
    """A pool's node CPU and memory as the run took them: ``64 CPUs, 512 GiB per node``, or which
    is unknown and not checked."""
    cpu = f"{spec.cpu_milli / 1000:g} CPUs" if spec.cpu_milli != UNKNOWN else ""
    memory = f"{spec.memory_mib / 1024:g} GiB" if spec.memory_mib != UNKNOWN else ""
    if cpu and memory:
        return f"{cpu}, {memory} per node"
    if not cpu and not memory:
        return "CPU and memory unknown: pods' requests not checked"
    known, unknown = (cpu, "memory") if cpu else (memory, "CPU")
    return f"{known} per node; {unknown} unknown: pods' requests not checked"


def simulate_kubernetes(
    jobs: JobTable,
    pools: list[NodePoolSpec],
    settings: KubernetesSettings,
    services: list[Service] | None = None,
    *,
    gpu_milli: Int32 | None = None,
    cpu_milli: Int64 | None = None,
    memory_mib: Int64 | None = None,
    horizon_s: float | None = None,
    pool_aliases: dict[str, str] | None = None,
) -> ModelRun:
    """Run ``jobs`` and ``services`` on ``pools`` under the Kubernetes model. ``gpu_milli`` (per job,
    aligned with ``jobs``) asks a share of one GPU where < 1000; ``cpu_milli`` and ``memory_mib`` are
    per-pod requests (default: the node's share for the pod's GPUs); ``pool_aliases`` maps partition
    labels that are not pool names (Slurm partitions, workloads) to pools."""
    run = KubernetesRun(
        jobs, pools, settings, services or [], gpu_milli, cpu_milli, memory_mib, horizon_s, pool_aliases
    )
    began = time.perf_counter()
    run.run()
    return run.outcome(time.perf_counter() - began)


def run_kubernetes(workload: Workload, pools: list[Pool], settings: KubernetesModelSettings) -> ModelRun:
    """The model contract's entry (``gpuplan.sim.models``): ``workload`` on ``pools`` as OKE node
    pools (``settings.kubernetes.nodePools`` gives their autoscaling bounds)."""
    requests = workload.pod_requests or PodRequests()
    run = simulate_kubernetes(
        workload.jobs,
        node_pool_specs(pools, settings.kubernetes),
        settings.kubernetes,
        workload.services,
        gpu_milli=requests.gpu_milli,
        cpu_milli=requests.cpu_milli,
        memory_mib=requests.memory_mib,
        horizon_s=workload.horizon_s,
        pool_aliases=settings.pool_aliases,
    )
    if settings.assumptions:  # what gpuplan configured where the user did not (settings.documented_defaults)
        run.settings["assumptions"] = list(settings.assumptions)
    run.extra["backlog"] = backlog(run, workload.horizon_s)  # the queue at the horizon (metrics.diagnose)
    return run
