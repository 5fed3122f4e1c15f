"""Inference Deployments: replicas created and deleted by the HPA, bound by kube-scheduler, serving
after a cold start (image pull + model load), and how well they met their demand.

SLO attainment is sampled at every HPA sync: the share of syncs at which the ready replicas' capacity
(ready x throughput per replica) covered the demand; unmet demand = requests/s beyond capacity over
all requests/s; mean replicas = bound replica pods; GPU-hours = GPUs of bound replicas x time.
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
        for s, deployment in enumerate(self.deployments):
            service = deployment.service
            step = int(now // DEMAND_STEP_S)
            if step >= len(service.demand_rps):
                continue
            demand = float(service.demand_rps[step])
            bound = ready = 0
            for rid in deployment.replicas:
                replica = self.replicas[rid]
                if replica.node >= 0:
                    bound += 1
                    ready += replica.ready_at <= now
            capacity = ready * service.throughput_per_replica
            deployment.samples += 1
            deployment.met += capacity + 1e-9 >= demand
            deployment.demand_sum += demand
            deployment.unmet_sum += max(0.0, demand - capacity)
            deployment.bound_sum += bound
            deployment.gpu_s += bound * service.gpus_per_replica * period
            desired = deployment.hpa.desired(now, len(deployment.replicas), ready, demand)
            while len(deployment.replicas) < desired:
                self._create(s, now, queue, warm=False)
            while len(deployment.replicas) > desired:
                self._delete(s, now, unbind)

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
