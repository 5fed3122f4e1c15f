"""Inference Deployments: replicas created and deleted by the HPA, bound by kube-scheduler, serving
after a cold start (image pull + model load), and how well they met their demand.

SLO attainment is sampled at every HPA sync: the share of syncs at which the ready replicas' capacity
(ready x throughput per replica) covered the demand; unmet demand = requests/s beyond capacity over
all requests/s; mean replicas = bound replica pods; GPU-hours = GPUs of bound replicas x time.

Most syncs change nothing: the demand has not changed since the last (it changes every
``DEMAND_STEP_S``), no replica is pending or ends its cold start, and the recommendation, the same
at each, keeps the replica count until the stabilisation windows let it act. The run does not hold
them as instants of their own: after each sync that runs, ``Deployments._resume_at`` says when the
Deployment's next sync must run, and the ones before it are recorded when it runs or when
something else changes the Deployment (``wake``): each SLO sample with the same arithmetic, in
order, and the recommendation kept as every one of them would have kept it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.sim.kubernetes.cluster import MILLI, NodePoolSpec
from gpuplan.sim.kubernetes.hpa import Hpa, HpaSpec
from gpuplan.sim.kubernetes.scheduler import PodRequest
from gpuplan.sim.outcome import ServiceOutcome
from gpuplan.workload.services import DEMAND_STEP_S, Service

WARM = -1.0  # ready_at of replicas already serving when the run starts


@dataclass
class Replica:
    service: int
    created: float
    node: int = -1  # -1: not bound to a node (pending)
    mask: int = 0
    ready_at: float = math.inf


@dataclass
class _Deployment:
    service: Service
    hpa: Hpa
    request: PodRequest
    priority: int
    replicas: list[int] = field(default_factory=list)  # replica ids, oldest first
    bound: int = 0  # replicas bound to a node
    starting: dict[int, float] = field(default_factory=dict)  # bound, maybe not ready: id -> ready_at
    next_ready: float = math.inf  # no replica of ``starting`` is ready before this
    demand: list[float] = field(default_factory=list)  # requests/s per DEMAND_STEP_S
    next_change: list[int] = field(default_factory=list)  # per step: the next step whose demand differs
    recorded_until: float = -math.inf  # the latest sync recorded (run or skipped)
    resume_at: float = 0.0  # the next sync that must run (those before it change nothing)
    samples: int = 0
    met: int = 0
    demand_sum: float = 0.0
    unmet_sum: float = 0.0
    bound_sum: float = 0.0
    gpu_s: float = 0.0


class Deployments:
    """Every service's Deployment and HPA. Pods are queued and unbound through the callbacks the run
    passes in, since kube-scheduler and the nodes belong to the run."""

    def __init__(
        self, services: list[Service], settings: KubernetesSettings, pools: list[NodePoolSpec]
    ) -> None:
        self.settings = settings
        self.replicas: dict[int, Replica] = {}
        self.next_id = 0
        names = [p.name for p in pools]
        classes = {c.name: c.value for c in settings.priorities.classes}
        assign = settings.priorities.assign
        self.deployments = []
        for service in services:
            pool = names.index(service.pool) if service.pool in names else -1
            node = pools[pool] if pool >= 0 else max(pools, key=lambda p: p.gpus_per_node)
            share = service.gpus_per_replica / max(node.gpus_per_node, 1)
            request = PodRequest(
                service.gpus_per_replica,
                MILLI,
                int(node.cpu_milli * share),
                int(node.memory_mib * share),
                pool,
            )
            hpa = settings.hpa
            spec = HpaSpec(
                min_replicas=service.min_replicas,
                max_replicas=hpa.maxReplicas.get(service.name, service.max_replicas),
                throughput_per_replica=service.throughput_per_replica,
                target_utilization=hpa.targetUtilization,
                tolerance=hpa.tolerance,
                scale_up_window_s=hpa.scaleUpStabilizationWindow,
                scale_down_window_s=hpa.scaleDownStabilizationWindow,
            )
            priority = classes[assign.get(service.name, assign.get("service", settings.priorities.default))]
            demand = service.demand_rps.tolist()
            next_change = [len(demand)] * len(demand)
            for step in range(len(demand) - 2, -1, -1):
                differs = demand[step + 1] != demand[step]
                next_change[step] = step + 1 if differs else next_change[step + 1]
            self.deployments.append(
                _Deployment(service, Hpa(spec), request, priority, demand=demand, next_change=next_change)
            )
        self.span_s = max((len(s.demand_rps) * DEMAND_STEP_S for s in services), default=0.0)
        self.synced_at = 0.0  # the latest sync time the run reached
        self.scheduled = 0.0  # when the sync due next runs

    def __bool__(self) -> bool:
        return bool(self.deployments)

    def request(self, rid: int) -> PodRequest:
        return self.deployments[self.replicas[rid].service].request

    def priority(self, rid: int) -> int:
        return self.deployments[self.replicas[rid].service].priority

    def _create(self, s: int, now: float, queue: Callable[[int, int, float], None], warm: bool) -> None:
        rid = self.next_id
        self.next_id += 1
        self.replicas[rid] = Replica(s, created=now, ready_at=WARM if warm else math.inf)
        self.deployments[s].replicas.append(rid)
        queue(rid, self.deployments[s].priority, now)

    def _delete(self, s: int, now: float, unbind: Callable[[int], None]) -> None:
        """ReplicaSet scale-down order: pending pods first, then not ready, then the newest."""
        deployment = self.deployments[s]

        def rank(rid: int) -> tuple[int, float]:
            r = self.replicas[rid]
            return (0 if r.node < 0 else 1 if r.ready_at > now else 2, -r.created)

        rid = min(deployment.replicas, key=rank)
        deployment.replicas.remove(rid)
        if self.replicas[rid].node >= 0:
            unbind(rid)
        del self.replicas[rid]

    def bind(self, rid: int, node: int, mask: int, now: float) -> None:
        """kube-scheduler bound the replica: it serves after its cold start (a warm one at once)."""
        replica = self.replicas[rid]
        deployment = self.deployments[replica.service]
        replica.node, replica.mask = node, mask
        deployment.bound += 1
        if replica.ready_at != WARM:
            replica.ready_at = now + self.settings.hpa.coldStart
            deployment.starting[rid] = replica.ready_at
            deployment.next_ready = min(deployment.next_ready, replica.ready_at)

    def unbind(self, rid: int) -> None:
        replica = self.replicas[rid]
        deployment = self.deployments[replica.service]
        deployment.bound -= 1
        deployment.starting.pop(rid, None)
        replica.node, replica.mask, replica.ready_at = -1, 0, math.inf

    def _ready(self, deployment: _Deployment, now: float) -> int:
        """Bound replicas serving at ``now`` (those whose cold start is over leave ``starting``)."""
        starting = deployment.starting
        if now >= deployment.next_ready:
            for rid in [rid for rid, ready_at in starting.items() if ready_at <= now]:
                del starting[rid]
            deployment.next_ready = min(starting.values(), default=math.inf)
        return deployment.bound - len(starting)

    def start(self, queue: Callable[[int, int, float], None]) -> None:
        """At t = 0 each Deployment already serves its first demand (within its replica bounds)."""
        for s, deployment in enumerate(self.deployments):
            service, spec = deployment.service, deployment.hpa.spec
            first = float(service.demand_rps[0]) if len(service.demand_rps) else 0.0
            per_replica = spec.throughput_per_replica * spec.target_utilization
            count = min(max(math.ceil(first / per_replica - 1e-9), spec.min_replicas), spec.max_replicas)
            for _ in range(count):
                self._create(s, 0.0, queue, warm=True)

    def sync(
        self,
        now: float,
        period: float,
        queue: Callable[[int, int, float], None],
        unbind: Callable[[int], None],
    ) -> None:
        """One HPA sync at ``now`` for each Deployment whose sync must run (``_resume_at``): the
        syncs it skipped before are recorded, then it samples the SLO and sets its replicas."""
        self.synced_at = now
        for s, deployment in enumerate(self.deployments):
            if now < deployment.resume_at:
                continue  # a sync that changes nothing: recorded later
            self._record_skipped(deployment, now, period)
            sampled = self._sample(deployment, now, period)
            if sampled is None:
                deployment.resume_at = math.inf
                continue
            demand, ready = sampled
            desired = deployment.hpa.desired(now, len(deployment.replicas), ready, demand)
            while len(deployment.replicas) < desired:
                self._create(s, now, queue, warm=False)
            while len(deployment.replicas) > desired:
                self._delete(s, now, unbind)
            deployment.recorded_until = now
            deployment.resume_at = self._resume_at(deployment, now, period)

    def next_sync(self) -> float:
        """When the next sync must run: the earliest any Deployment's must."""
        self.scheduled = min((d.resume_at for d in self.deployments), default=math.inf)
        return self.scheduled

    def _sample(self, deployment: _Deployment, now: float, period: float) -> tuple[float, int] | None:
        """A sync's SLO sample at ``now``, counted; the demand and ready replicas it saw (None past
        the demand's end)."""
        step = int(now // DEMAND_STEP_S)
        if step >= len(deployment.demand):
            return None
        demand, ready = deployment.demand[step], self._ready(deployment, now)
        self._count(deployment, demand, ready, period)
        return demand, ready

    @staticmethod
    def _count(deployment: _Deployment, demand: float, ready: int, period: float) -> None:
        service, bound = deployment.service, deployment.bound
        capacity = ready * service.throughput_per_replica
        deployment.samples += 1
        deployment.met += capacity + 1e-9 >= demand
        deployment.demand_sum += demand
        deployment.unmet_sum += max(0.0, demand - capacity)
        deployment.bound_sum += bound
        deployment.gpu_s += bound * service.gpus_per_replica * period

    def _resume_at(self, deployment: _Deployment, now: float, period: float) -> float:
        """After its sync at ``now``, the next sync of the Deployment that must run. The ones
        before it see what the first of them sees -- the same demand (its step has not changed),
        the same replicas bound (a pending one bound meanwhile calls ``wake`` first) and ready (no
        cold start ends) -- and so the same recommendation, which keeps the replica count until
        the stabilisation windows let it act (Hpa.acts_at); each of them is recorded later, with
        the same arithmetic, in time order. The last sync before the demands end always runs."""
        first = now + period
        current, spec = len(deployment.replicas), deployment.hpa.spec
        step = int(first // DEMAND_STEP_S)
        if not spec.min_replicas <= current <= spec.max_replicas or step >= len(deployment.demand):
            return first
        ready = self._ready_then(deployment, first)
        raw = deployment.hpa.recommendation(current, ready, deployment.demand[step])
        later = min(
            deployment.hpa.acts_at(current, raw, first, period),
            deployment.next_change[step] * DEMAND_STEP_S,  # the demand changes
            min((r for r in deployment.starting.values() if r > first), default=math.inf),  # one is ready
        )
        t = first
        while t < later and t + period < self.span_s:
            t += period
        return t

    @staticmethod
    def _ready_then(deployment: _Deployment, at: float) -> int:
        """Bound replicas serving at ``at`` (later than now), as they are now."""
        return deployment.bound - sum(1 for ready_at in deployment.starting.values() if ready_at > at)

    def _record_skipped(self, deployment: _Deployment, until: float, period: float) -> None:
        """Record the Deployment's skipped syncs up to ``until`` (one at ``until`` only if it was
        skipped): each sees what the first saw (``_resume_at``), samples it, and keeps the same
        recommendation, which changes nothing."""
        if deployment.recorded_until == -math.inf:
            return  # its first sync has not run
        t = deployment.recorded_until + period
        if t > until or t >= deployment.resume_at or t >= self.span_s:
            return
        current = len(deployment.replicas)
        ready = self._ready_then(deployment, t)
        step = int(t // DEMAND_STEP_S)
        demand = deployment.demand[step]
        raw = deployment.hpa.recommendation(current, ready, demand)
        # _count's sums, each sample added in turn (the same floating-point results)
        service, bound = deployment.service, deployment.bound
        capacity = ready * service.throughput_per_replica
        met, unmet = capacity + 1e-9 >= demand, max(0.0, demand - capacity)
        gpu_s = bound * service.gpus_per_replica * period
        demand_sum, unmet_sum = deployment.demand_sum, deployment.unmet_sum
        bound_sum, gpu_sum = deployment.bound_sum, deployment.gpu_s
        count, last = 0, t
        while t <= until and t < deployment.resume_at:
            demand_sum += demand
            unmet_sum += unmet
            bound_sum += bound
            gpu_sum += gpu_s
            count, last = count + 1, t
            t += period
        deployment.samples += count
        deployment.met += met * count
        deployment.demand_sum, deployment.unmet_sum = demand_sum, unmet_sum
        deployment.bound_sum, deployment.gpu_s = bound_sum, gpu_sum
        # the windows after each of them kept ``raw``: as after the last (older ones that ``raw``
        # supersedes or that left the window are gone either way)
        deployment.hpa.record(last, raw)
        deployment.recorded_until = last

    def wake(self, now: float, period: float, service: int | None = None) -> float | None:
        """Replicas change outside a sync: a pending one of Deployment ``service`` is bound, or
        (``service`` None) replicas move off a removed node. Before the change, the skipped syncs up
        to ``now`` are recorded; the Deployment (every one, for None) syncs again from the next
        sync, whose time is returned when it comes before the sync already due (else None)."""
        following = self.synced_at
        while following <= now:
            following += period
        woken = self.deployments if service is None else [self.deployments[service]]
        for deployment in woken:
            self._record_skipped(deployment, now, period)
            deployment.resume_at = min(deployment.resume_at, following)
        if following < self.scheduled and following < self.span_s:
            self.scheduled = following
            return following
        return None

    def on_node(self, node: int) -> list[int]:
        return [rid for rid, replica in self.replicas.items() if replica.node == node]

    def outcomes(self) -> list[ServiceOutcome]:
        outcomes = []
        for d in self.deployments:
            samples = max(d.samples, 1)
            outcomes.append(
                ServiceOutcome(
                    name=d.service.name,
                    team=d.service.team,
                    pool=d.service.pool,
                    slo_attainment=d.met / samples,
                    mean_replicas=d.bound_sum / samples,
                    unmet_demand_fraction=d.unmet_sum / d.demand_sum if d.demand_sum > 0 else 0.0,
                    gpu_hours=d.gpu_s / 3600.0,
                    span_s=len(d.service.demand_rps) * DEMAND_STEP_S,
                )
            )
        return outcomes
