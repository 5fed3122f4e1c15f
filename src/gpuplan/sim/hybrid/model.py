"""The hybrid operating model: Slurm for research and batch training, Kubernetes (OKE) for services,
pipelines and application teams, each on its own part of every pool.

- Routing (``models.hybrid.routing``): the first rule whose fields all match a job (kind, team,
  workload, multi-node) or a service sends it to its side; by default services and pipelines go to
  Kubernetes and every other job to Slurm.
- Split (``models.hybrid.split``): the nodes of each pool given to Slurm; Kubernetes gets the rest.
  By default it is proposed from the workload: Kubernetes gets the nodes its services need at their
  peak (replicas at peak demand, packed per node) plus a share of the rest in proportion to the
  GPU-hours of the jobs routed to it; Slurm the remainder; a side with work keeps at least one node
  and a side with none gets none.
- Each side runs its own model (``gpuplan.sim.slurm.model``, ``gpuplan.sim.kubernetes``) on its part, and
  the two runs are reported as one: pools are named ``POOL/slurm`` and ``POOL/kubernetes``.
- Lending (``models.hybrid.lending``, ``kubernetes_borrows``): Kubernetes runs first, its node pool
  allowed to grow by the nodes Slurm may lend, a borrowed node taking ``grace_time`` (the drain)
  plus ``move_time`` to become Ready. Each borrowed node the Kubernetes run used then leaves Slurm
  that long before it was Ready (idle nodes first; jobs still on a busy one are requeued after the
  grace time) and comes back ``move_time`` after Kubernetes removed it, so no GPU serves both.
  Kubernetes has first call on the nodes: Slurm does not reclaim them.
  With lending the proposed split gives Kubernetes the nodes its services need at their trough.
  ``lending`` in the settings counts the moves, the node-hours lent and the GPU-hours in transit.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.scenario.hybrid import KUBERNETES_KINDS, HybridSettings, Lending, RoutingRule
from gpuplan.scenario.kubernetes import NodePool
from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine.core import Lending as EngineLending
from gpuplan.sim.events import EventLog
from gpuplan.sim.hybrid.settings import HybridModelSettings
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings
from gpuplan.sim.outcome import ModelRun, PoolSchedule
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.workload.jobtable import Bool, Int32, JobTable, Labels
from gpuplan.workload.services import Service

if TYPE_CHECKING:
    from gpuplan.workload.workload import Workload

MODEL = "hybrid"
SIDES = ("slurm", "kubernetes")


def _label_values(labels: Labels | None, rows: int) -> np.ndarray:
    if labels is None:
        return np.full(rows, "", dtype=object)
    return np.array((*labels.labels, ""), dtype=object)[labels.codes] if rows else np.zeros(0, dtype=object)


def route_jobs(jobs: JobTable, rules: list[RoutingRule]) -> tuple[Bool, Bool]:
    """For each job, whether it runs on Kubernetes, and whether a routing rule decided it (the
    others follow the defaults: services and pipelines to Kubernetes, other jobs to Slurm)."""
    rows = len(jobs)
    kind = _label_values(jobs.kind, rows)
    team = _label_values(jobs.team, rows)
    workload = _label_values(jobs.workload, rows)
    multi_node = jobs.nodes > 1
    decided = np.zeros(rows, dtype=bool)
    to_kubernetes = np.zeros(rows, dtype=bool)
    for rule in rules:
        match = ~decided
        if rule.kind is not None:
            match &= kind == rule.kind
        if rule.team is not None:
            match &= team == rule.team
        if rule.workload is not None:
            match &= workload == rule.workload
        if rule.multi_node is not None:
            match &= multi_node == rule.multi_node
        to_kubernetes[match] = rule.to == "kubernetes"
        decided |= match
    to_kubernetes[~decided] = np.isin(kind[~decided], KUBERNETES_KINDS)
    return to_kubernetes, decided


def route_jobs_to_kubernetes(jobs: JobTable, rules: list[RoutingRule]) -> Bool:
    """True for each job that runs on Kubernetes."""
    return route_jobs(jobs, rules)[0]


def route_service_to_kubernetes(service: Service, settings: HybridSettings) -> bool:
    return settings.side_of("service", service.team, service.name, False)[0] == "kubernetes"


def _pool_of_jobs(jobs: JobTable, pools: list[Pool], partitions: tuple[Partition, ...]) -> np.ndarray:
    """Each job's pool name: the pool or Slurm partition its label names, else the first pool."""
    aliases = {pool.name: pool.name for pool in pools}
    for partition in partitions:
        aliases.setdefault(partition.name, partition.pool)
    names = np.array([aliases.get(label, pools[0].name) for label in jobs.partition.labels] or [""])
    return names[jobs.partition.codes] if len(jobs) else np.zeros(0, dtype=names.dtype)


def _largest(nodes: Int32, rows: Bool) -> int:
    return int(nodes[rows].max()) if rows.any() else 0


def propose_split(
    pools: list[Pool],
    partitions: tuple[Partition, ...],
    jobs: JobTable,
    to_kubernetes: Bool,
    services: list[Service],
    services_to_kubernetes: list[bool],
    size_for: str = "peak",
    by_rule: Bool | None = None,
) -> dict[str, int]:
    """Nodes of each pool for Slurm (see the module docstring). Each side's part holds the largest job
    routed to it (nodes it may borrow do not count: they are not there when Slurm is busy): the jobs a
    routing rule sends (``by_rule``) always, the others when the pool is large enough for both sides'
    largest jobs (else they may move side, see ``fit_routing``)."""
    pool_of_job = _pool_of_jobs(jobs, pools, partitions)
    gpu_hours = jobs.gpus * jobs.duration_s / 3600.0
    by_rule = np.ones(len(jobs), dtype=bool) if by_rule is None else by_rule
    split = {}
    for pool in pools:
        service_nodes = 0
        for service, on_kubernetes in zip(services, services_to_kubernetes, strict=True):
            if on_kubernetes and service.pool == pool.name:
                per_node = max(pool.gpus_per_node // service.gpus_per_replica, 1)
                needed = service.replicas_needed()
                replicas = needed.max(initial=0) if size_for == "peak" else needed.min(initial=0)
                service_nodes += math.ceil(int(replicas) / per_node)
        service_nodes = min(service_nodes, pool.nodes)
        mine = pool_of_job == pool.name
        batch_kubernetes = float(gpu_hours[mine & to_kubernetes].sum())
        batch_slurm = float(gpu_hours[mine & ~to_kubernetes].sum())
        rest = pool.nodes - service_nodes
        share = batch_kubernetes / (batch_kubernetes + batch_slurm) if batch_kubernetes + batch_slurm else 0.0
        kubernetes_nodes = service_nodes + round(rest * share)
        if batch_slurm == 0 and (service_nodes or batch_kubernetes > 0):
            kubernetes_nodes = pool.nodes  # no Slurm work here
        if batch_slurm > 0 and kubernetes_nodes >= pool.nodes:
            kubernetes_nodes = pool.nodes - 1
        if (service_nodes or batch_kubernetes > 0) and kubernetes_nodes == 0:
            kubernetes_nodes = 1
        # the largest job of each side fits its part
        need: dict[str, dict[bool, int]] = {}
        for side in SIDES:
            on_side = mine & (to_kubernetes == (side == "kubernetes"))
            need[side] = {rule: _largest(jobs.nodes, on_side & (by_rule == rule)) for rule in (True, False)}
        low = max(need["kubernetes"][True], need["kubernetes"][False])
        high = pool.nodes - max(need["slurm"][True], need["slurm"][False])
        if low > high:  # not both: the rules' jobs first, the defaults' may move side
            low, high = need["kubernetes"][True], pool.nodes - need["slurm"][True]
        if low <= high:
            kubernetes_nodes = min(max(kubernetes_nodes, low), high)
        split[pool.name] = max(pool.nodes - kubernetes_nodes, 0)
    return split


def fit_routing(
    pools: list[Pool],
    partitions: tuple[Partition, ...],
    jobs: JobTable,
    to_kubernetes: Bool,
    by_rule: Bool,
    capacity: dict[str, dict[str, int]],
) -> Bool:
    """The routing after the split: a job the defaults send to a side whose part of its pool is too
    small for it goes to the other side when it fits there (a routing rule's choice is kept)."""
    pool_of_job = _pool_of_jobs(jobs, pools, partitions)
    routed = to_kubernetes.copy()
    for pool in pools:
        mine = (pool_of_job == pool.name) & ~by_rule
        kubernetes, slurm = capacity[pool.name]["kubernetes"], capacity[pool.name]["slurm"]
        routed[mine & to_kubernetes & (jobs.nodes > kubernetes) & (jobs.nodes <= slurm)] = False
        routed[mine & ~to_kubernetes & (jobs.nodes > slurm) & (jobs.nodes <= kubernetes)] = True
    return routed


def _rerouted(jobs: JobTable, before: Bool, after: Bool) -> dict[str, dict[str, Any]]:
    """Per workload, the jobs ``fit_routing`` moved and the side they went to, for the settings echo."""
    moved = np.flatnonzero(before != after)
    workload = _label_values(jobs.workload, len(jobs))
    echo: dict[str, dict[str, Any]] = {}
    for row in moved.tolist():
        entry = echo.setdefault(
            workload[row] or "trace", {"to": "kubernetes" if after[row] else "slurm", "jobs": 0}
        )
        entry["jobs"] += 1
    return echo


def check_split(
    settings: HybridModelSettings,
    pools: list[Pool],
    jobs: JobTable,
    to_kubernetes: Bool,
    capacity: dict[str, dict[str, int]],
) -> None:
    """A split the scenario gives (``models.hybrid.split``) must hold every job routed to each side:
    otherwise the scenario is wrong, not the model's outcome."""
    pool_of_job = _pool_of_jobs(jobs, pools, settings.slurm.partitions)
    workload = _label_values(jobs.workload, len(jobs))
    for pool in pools:
        if pool.name not in settings.hybrid.split:
            continue
        for side in SIDES:
            rows = (pool_of_job == pool.name) & (to_kubernetes == (side == "kubernetes"))
            too_big = rows & (jobs.nodes > capacity[pool.name][side])
            if too_big.any():
                first = int(np.flatnonzero(too_big)[np.argmax(jobs.nodes[too_big])])
                name = workload[first] or "a traced workload"
                raise InputError(
                    f"the split gives {side} {capacity[pool.name][side]} node(s) of pool {pool.name!r}, "
                    f"but workload {name!r} routed to {side} has {jobs.nodes[first]}-node jobs "
                    f"({int(too_big.sum())} job(s)); give {side} more nodes or route the workload "
                    "elsewhere (models.hybrid.routing)",
                    path=settings.path,
                    line=settings.split_lines.get(pool.name),
                    field=f"models.hybrid.split.{pool.name}",
                )


def _side(
    workload: Workload, pools: list[Pool], jobs: Bool, services: list[Service], nodes: dict[str, int]
) -> tuple[Workload, list[Pool]]:
    """One side's workload (its jobs and services) and its part of each pool."""
    rows = np.flatnonzero(jobs)
    requests = None if workload.pod_requests is None else workload.pod_requests.take(rows)
    side_workload = replace(workload, jobs=workload.jobs.take(rows), services=services, pod_requests=requests)
    return side_workload, [replace(pool, nodes=nodes[pool.name]) for pool in pools]


def run_hybrid(workload: Workload, pools: list[Pool], settings: HybridModelSettings) -> ModelRun:
    """The model contract's entry (``gpuplan.sim.models``): route, split, run each side with its own
    model and settings, and merge the runs."""
    from gpuplan.sim.kubernetes.model import run_kubernetes
    from gpuplan.sim.slurm.model import run_slurm

    hybrid = settings.hybrid
    partitions = settings.slurm.partitions
    jobs = workload.jobs
    to_kubernetes, by_rule = route_jobs(jobs, hybrid.routing)
    services = workload.services
    services_to_kubernetes = [route_service_to_kubernetes(s, hybrid) for s in services]
    lending = hybrid.lending
    size_for = "trough" if lending.policy == "kubernetes_borrows" else "peak"

    proposed = propose_split(
        pools, partitions, jobs, to_kubernetes, services, services_to_kubernetes, size_for, by_rule
    )
    slurm_nodes = {**proposed, **hybrid.split}
    capacity = {
        pool.name: {"slurm": slurm_nodes[pool.name], "kubernetes": pool.nodes - slurm_nodes[pool.name]}
        for pool in pools
    }
    routed = fit_routing(pools, partitions, jobs, to_kubernetes, by_rule, capacity)
    rerouted = _rerouted(jobs, to_kubernetes, routed)
    to_kubernetes = routed
    check_split(settings, pools, jobs, to_kubernetes, capacity)
    sides = {}
    for side in SIDES:
        on_side = to_kubernetes if side == "kubernetes" else ~to_kubernetes
        side_services = [
            s for s, k in zip(services, services_to_kubernetes, strict=True) if k == (side == "kubernetes")
        ]
        nodes = {
            pool.name: slurm_nodes[pool.name] if side == "slurm" else pool.nodes - slurm_nodes[pool.name]
            for pool in pools
        }
        sides[side] = _side(workload, pools, on_side, side_services, nodes)
    lending_echo: dict[str, Any] = {"policy": lending.policy}
    if lending.policy == "none":
        parts = [
            ("slurm", run_slurm(*sides["slurm"], settings.slurm)),
            ("kubernetes", run_kubernetes(*sides["kubernetes"], settings.kubernetes)),
        ]
    else:
        lendable = {
            name: nodes if lending.max_nodes is None else min(nodes, lending.max_nodes)
            for name, nodes in slurm_nodes.items()
        }
        kubernetes_pools = sides["kubernetes"][1]
        kubernetes_run = run_kubernetes(
            *sides["kubernetes"], _borrowing(settings.kubernetes, kubernetes_pools, lendable, lending)
        )
        lent = _lent_nodes(kubernetes_run, pools, slurm_nodes, lendable, lending)
        parts = [("slurm", run_slurm(*sides["slurm"], settings.slurm, lent)), ("kubernetes", kubernetes_run)]
        lending_echo |= _lending_figures(lent, pools, lending)
        parts = _count_lent_capacity(parts, lent, slurm_nodes, pools)
    echo = {
        "split": {
            pool.name: {"slurm": slurm_nodes[pool.name], "kubernetes": pool.nodes - slurm_nodes[pool.name]}
            for pool in pools
        },
        "split_source": {
            pool.name: "scenario" if pool.name in hybrid.split else "proposed" for pool in pools
        },
        "routing": [rule.model_dump(exclude_none=True) for rule in hybrid.routing]
        or "default: services and pipelines to kubernetes, other jobs to slurm",
        "lending": lending_echo,
        **({"rerouted": rerouted} if rerouted else {}),
        **{side: run.settings for side, run in parts},
    }
    return merge_runs(MODEL, parts, echo)


def _concat_labels(parts: list[Labels]) -> Labels:
    """Labels.concat, with "" as the one label when the parts have none (no jobs)."""
    merged = Labels.concat(parts)
    return merged if merged.labels else Labels(merged.codes, ("",))


def merge_runs(model: str, parts: list[tuple[str, ModelRun]], settings: dict[str, Any]) -> ModelRun:
    """One run of the parts' jobs and pools, pools named ``POOL/SIDE``."""
    runs = [run for _, run in parts]
    job_offsets = np.cumsum([0, *(len(run.jobs) for run in runs)])
    pool_offsets = np.cumsum([0, *(len(run.pools) for run in runs)])
    pools: list[PoolSchedule] = []
    for (side, run), offset in zip(parts, job_offsets, strict=False):
        for schedule in run.pools:
            pool = replace(schedule.pool, name=f"{schedule.pool.name}/{side}")
            pools.append(replace(schedule, pool=pool, jobs=schedule.jobs + offset))
    job_gpus = None
    if any(run.job_gpus is not None for run in runs):
        job_gpus = np.concatenate(
            [run.jobs.gpus.astype(np.float64) if run.job_gpus is None else run.job_gpus for run in runs]
        )
    reasons = [run.reason or Labels.constant("", len(run.jobs)) for run in runs]
    return ModelRun(
        model=model,
        settings=settings,
        jobs=JobTable.concat([run.jobs for run in runs]),
        run_s=np.concatenate([run.run_s for run in runs]),
        state=np.concatenate([run.state for run in runs]),
        start_s=np.concatenate([run.start_s for run in runs]),
        end_s=np.concatenate([run.end_s for run in runs]),
        pool_of_job=np.concatenate(
            [run.pool_of_job + offset for run, offset in zip(runs, pool_offsets, strict=False)]
        ).astype(np.int32),
        pools=pools,
        services=[service for run in runs for service in run.services],
        simulate_s=sum(run.simulate_s for run in runs),
        preemptions=np.concatenate([run.preemptions for run in runs]),
        lost_gpu_s=np.concatenate([run.lost_gpu_s for run in runs]),
        job_gpus=job_gpus,
        extra={side: run.extra for side, run in parts if run.extra},
        reason=_concat_labels(reasons),
        events=EventLog.concat(
            [(int(offset), run.event_log()) for run, offset in zip(runs, job_offsets, strict=False)]
        ),
        queues=next((run.queues for run in runs if run.queues is not None), None),  # the Kubernetes side's
    )


# ---- lending --------------------------------------------------------------------------------------


def _borrowing(
    settings: KubernetesModelSettings, pools: list[Pool], lendable: dict[str, int], lending: Lending
) -> KubernetesModelSettings:
    """The Kubernetes side's settings with node pools that may grow by the lendable nodes, a
    borrowed node Ready after the drain and the move."""
    given = {node_pool.pool: node_pool for node_pool in settings.kubernetes.nodePools}
    delay = lending.grace_time + lending.move_time
    node_pools = []
    for pool in pools:
        spec = given.get(pool.name)
        part = pool.nodes
        cloud_extra = 0 if spec is None or spec.maxNodes is None else max(spec.maxNodes - part, 0)
        node_pools.append(
            NodePool(
                pool=pool.name,
                minNodes=part,
                maxNodes=part + lendable[pool.name] + cloud_extra,
                provisionDelay=f"{delay:f}s",  # a scenario duration needs its unit
            )
        )
    return replace(settings, kubernetes=settings.kubernetes.model_copy(update={"nodePools": node_pools}))


def _lent_nodes(
    kubernetes: ModelRun,
    pools: list[Pool],
    slurm_nodes: dict[str, int],
    lendable: dict[str, int],
    lending: Lending,
) -> dict[str, EngineLending]:
    """Per pool, when Slurm gives nodes up and gets them back, from the Kubernetes run's nodes up."""
    lent = {}
    lead = lending.grace_time + lending.move_time
    for schedule in kubernetes.pools:
        name = schedule.pool.name
        if not lendable.get(name):
            continue
        part = next(pool.nodes for pool in pools if pool.name == name) - slurm_nodes[name]
        timeline = schedule.schedule.timeline
        up = timeline.nodes_up if timeline.nodes_up is not None else np.full(len(timeline.time_s), part)
        borrowed = np.clip(up.astype(np.int64) - part, 0, lendable[name])
        change = np.diff(np.concatenate([[0], borrowed]))
        rows = np.flatnonzero(change)
        times = np.where(
            change[rows] > 0, timeline.time_s[rows] - lead, timeline.time_s[rows] + lending.move_time
        )
        order = np.argsort(np.maximum(times, 0.0), kind="stable")
        lent[name] = EngineLending(
            np.maximum(times, 0.0)[order],
            change[rows][order].astype(np.int32),
            lending.grace_time,
        )
    return lent


def _lending_figures(lent: dict[str, EngineLending], pools: list[Pool], lending: Lending) -> dict[str, Any]:
    gpus = {pool.name: pool.gpus_per_node for pool in pools}
    moves = {name: int(plan.delta[plan.delta > 0].sum()) for name, plan in lent.items()}
    node_s = {}
    for name, plan in lent.items():
        lent_count = np.cumsum(plan.delta)
        node_s[name] = float(np.sum(lent_count[:-1] * np.diff(plan.time_s))) if len(plan.time_s) > 1 else 0.0
    transit_s = lending.grace_time + 2 * lending.move_time
    return {
        "moves_to_kubernetes": moves,
        "node_hours_lent": {name: s / 3600.0 for name, s in node_s.items()},
        "gpu_hours_in_transit": sum(moves[name] * transit_s * gpus[name] for name in moves) / 3600.0,
    }


def _count_lent_capacity(
    parts: list[tuple[str, ModelRun]],
    lent: dict[str, EngineLending],
    slurm_nodes: dict[str, int],
    pools: list[Pool],
) -> list[tuple[str, ModelRun]]:
    """Each side's pools with the GPU-hours they held: Slurm's less what it lent (until the last
    end), Kubernetes' as its run counted them, and the cluster listing at the split."""
    end_s = max(
        [float(np.nanmax(run.end_s)) for _, run in parts if run.started.any()]
        + [service.span_s for _, run in parts for service in run.services]
        + [0.0]
    )
    physical = {pool.name: pool.nodes for pool in pools}
    counted = []
    for side, run in parts:
        schedules = []
        for schedule in run.pools:
            name = schedule.pool.name
            if side == "slurm" and name in lent:
                plan = lent[name]
                times = np.concatenate([np.minimum(plan.time_s, end_s), [end_s]])
                lent_s = float(np.sum(np.cumsum(plan.delta) * np.diff(times)))
                gpu_hours = (slurm_nodes[name] * end_s - lent_s) * schedule.pool.gpus_per_node / 3600.0
                schedule = replace(schedule, gpu_hours_up=gpu_hours)
            elif side == "kubernetes" and name in physical:
                schedule = replace(
                    schedule, pool=replace(schedule.pool, nodes=physical[name] - slurm_nodes[name])
                )
            schedules.append(schedule)
        counted.append((side, replace(run, pools=schedules)))
    return counted
