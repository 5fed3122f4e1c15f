"""Inference Deployments: replicas created and deleted by the HPA, bound by kube-scheduler, serving
after a cold start (image pull + model load), and how well they met their demand.

SLO attainment is sampled at every HPA sync: the share of syncs at which the ready replicas' capacity
(ready x throughput per replica) covered the demand; unmet demand = requests/s beyond capacity over
all requests/s; mean replicas = bound replica pods; GPU-hours = GPUs of bound replicas x time.

A sync changes nothing while every Deployment is *quiet*: all its replicas bound and ready, and
every HPA recommendation in its stabilisation windows equal to its replica count. Until a
Deployment's demand next changes, later syncs then see the same inputs and keep the same count, so
the run does not hold them as instants of their own: ``quiet_until`` says when the next sync must
run and keeps the ones skipped, and ``catch_up`` records each of them (its SLO sample and its HPA
recommendation, in order, with the same arithmetic) before anything else changes a Deployment.
"""

from __future__ import annotations

import math
from collections import deque
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
            self.deployments.append(_Deployment(service, Hpa(spec), request, priority))
        self.span_s = max((len(s.demand_rps) * DEMAND_STEP_S for s in services), default=0.0)
        self.skipped: deque[float] = deque()  # quiet syncs not yet recorded, in time order

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
        """One HPA sync: sample the SLO, then set each Deployment's replicas."""
        self.catch_up(now)
        for s, deployment in enumerate(self.deployments):
            sampled = self._sample(deployment, now, period)
            if sampled is None:
                continue
            demand, ready = sampled
            desired = deployment.hpa.desired(now, len(deployment.replicas), ready, demand)
            while len(deployment.replicas) < desired:
                self._create(s, now, queue, warm=False)
            while len(deployment.replicas) > desired:
                self._delete(s, now, unbind)

    def _sample(self, deployment: _Deployment, now: float, period: float) -> tuple[float, int] | None:
        """A sync's SLO sample at ``now``, counted; the demand and ready replicas it saw (None past
        the demand's end)."""
        service = deployment.service
        step = int(now // DEMAND_STEP_S)
        if step >= len(service.demand_rps):
            return None
        demand = float(service.demand_rps[step])
        bound, ready = deployment.bound, self._ready(deployment, now)
        capacity = ready * service.throughput_per_replica
        deployment.samples += 1
        deployment.met += capacity + 1e-9 >= demand
        deployment.demand_sum += demand
        deployment.unmet_sum += max(0.0, demand - capacity)
        deployment.bound_sum += bound
        deployment.gpu_s += bound * service.gpus_per_replica * period
        return demand, ready

    def _quiet(self, deployment: _Deployment, now: float) -> bool:
        current = len(deployment.replicas)
        if self._ready(deployment, now) != current:  # pending or starting replicas
            return False
        return deployment.hpa.steady(current)

    def quiet_until(self, now: float, period: float) -> float:
        """After the sync at ``now``, the time of the next sync that must run (the syncs come every
        ``period``): the next one unless every Deployment is quiet, else the first at which a demand
        changes, or the last before the demands end. The syncs before it are kept to be recorded."""
        after = now + period
        if not all(self._quiet(d, now) for d in self.deployments):
            return after
        change = math.inf
        for d in self.deployments:
            demand = d.service.demand_rps
            step = int(now // DEMAND_STEP_S)
            if step >= len(demand):
                continue
            later = step + 1
            while later < len(demand) and demand[later] == demand[step]:
                later += 1
            change = min(change, later * DEMAND_STEP_S)
        t = after
        while t < change and t + period < self.span_s:
            self.skipped.append(t)
            t += period
        return t

    def catch_up(self, until: float) -> None:
        """Record the quiet syncs skipped up to and including ``until``: nothing changed since they
        were skipped, so each sees what the last sync saw."""
        while self.skipped and self.skipped[0] <= until:
            t = self.skipped.popleft()
            for deployment in self.deployments:
                sampled = self._sample(deployment, t, self.settings.hpa.syncPeriod)
                if sampled is not None:
                    current = len(deployment.replicas)
                    kept = deployment.hpa.desired(t, current, sampled[1], sampled[0])
                    assert kept == current, "a quiet Deployment's HPA changed its replicas"

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
