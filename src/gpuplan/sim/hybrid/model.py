"""The hybrid operating model: Slurm for research and batch training, Kubernetes (OKE) for services,
pipelines and application teams, each on its own part of every pool.

- Routing (``models.hybrid.routing``): the first rule whose fields all match a job (kind, team,
  workload, multi-node) or a service sends it to its side; by default services and pipelines go to
  Kubernetes and every other job to Slurm.
- Split (``models.hybrid.split``): the nodes of each pool given to Slurm; Kubernetes gets the rest.
  By default it is proposed from the workload, sized rather than rounded (``plan_split``):
  Kubernetes gets the nodes its services need at their peak (replicas at peak demand, packed per
  node) plus, for the jobs routed to it, the larger of their mean GPU demand (GPU-hours / horizon)
  and their GPU-hour share of the nodes left, each rounded up to whole nodes; Slurm the remainder;
  each side's part holds the largest job routed to it, a side with work keeps at least one node and
  a side with none gets none. ``candidate_splits`` lists a few splits around the proposal for a
  search to judge by simulation; ``settings.with_split`` runs the one chosen.
- Each side runs its own model (``gpuplan.sim.slurm.model``, ``gpuplan.sim.kubernetes``) on its part, and
  the two runs are reported as one: pools are named ``POOL/slurm`` and ``POOL/kubernetes``. The
  user's Kueue quotas are scaled to the Kubernetes side's part of each pool
  (``settings.scale_quotas``; echoed as ``kubernetes.quota_scaled`` and ``assumptions``).
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.scenario.hybrid import KUBERNETES_KINDS, HybridSettings, Lending, RoutingRule
from gpuplan.scenario.kubernetes import NodePool
from gpuplan.sim.backlog import backlog, span_s, work_figures
from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine.core import Lending as EngineLending
from gpuplan.sim.events import EventLog
from gpuplan.sim.hybrid.settings import HybridModelSettings, scale_quotas
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings, documented_defaults
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


@dataclass(frozen=True)
class PoolPlan:
    """How one pool is split: the Kubernetes nodes proposed, and every Kubernetes part that holds the
    work routed to each side (``feasible``, ascending), the proposal among them. ``contested``: both
    sides have work here, so the split is a choice (else one side takes the pool)."""

    pool: str
    nodes: int
    kubernetes: int
    feasible: tuple[int, ...]
    contested: bool


def _span_s(jobs: JobTable, horizon_s: float | None) -> float:
    """The span the jobs' mean GPU demand is taken over: the scenario's horizon, else (a trace) from
    the first submit to the last end were every job to start at once."""
    if horizon_s is not None and horizon_s > 0:
        return float(horizon_s)
    if not len(jobs):
        return 1.0
    return max(float((jobs.submit_s + jobs.duration_s).max() - jobs.submit_s.min()), 1.0)


def plan_split(
    pools: list[Pool],
    partitions: tuple[Partition, ...],
    jobs: JobTable,
    to_kubernetes: Bool,
    services: list[Service],
    services_to_kubernetes: list[bool],
    size_for: str = "peak",
    by_rule: Bool | None = None,
    horizon_s: float | None = None,
    *,
    path: Path | None = None,
    lines: dict[str, int | None] | None = None,
    given: frozenset[str] = frozenset(),
) -> list[PoolPlan]:
    """Per pool, the Kubernetes nodes proposed and the feasible Kubernetes parts (see ``PoolPlan``).

    The proposal gives Kubernetes the nodes its services need (replicas at their peak, or trough with
    lending, packed per node) plus, for the jobs routed to it, the larger of their mean GPU demand
    (GPU-hours / horizon) and their GPU-hour share of the nodes left, both rounded *up* to whole nodes:
    rounding a small side down starves it (4.5 % of 28 nodes rounds to 1 node for pipelines averaging
    6.7 GPUs, whose p95 wait then reached days, issue 39). Slurm gets the rest. Then each side's part
    must hold the largest job routed to it (nodes it may borrow do not count: they are not there when
    Slurm is busy); when no split holds both, only the routing rules' jobs (``by_rule``) are held and
    the defaults' must fit one side or the other (``fit_routing`` moves them). No split doing even that
    is an InputError on ``models.hybrid.split.POOL`` (``path``, ``lines``: where to point), unless
    the pool's split is ``given`` (``check_split`` then judges that one).

        >>> plan_split([Pool("gpu", 28, 8)], (), jobs, to_kubernetes, [], [], horizon_s=14 * 86400.0)
        [PoolPlan(pool='gpu', nodes=28, kubernetes=2, feasible=(1, 2, ..., 27), contested=True)]
    """
    pool_of_job = _pool_of_jobs(jobs, pools, partitions)
    gpu_hours = jobs.gpus * jobs.duration_s / 3600.0
    span_h = _span_s(jobs, horizon_s) / 3600.0
    by_rule = np.ones(len(jobs), dtype=bool) if by_rule is None else by_rule
    plans = []
    for pool in pools:
        n = pool.nodes
        service_nodes = 0
        has_service = False
        for service, on_kubernetes in zip(services, services_to_kubernetes, strict=True):
            if on_kubernetes and service.pool == pool.name:
                has_service = True
                per_node = max(pool.gpus_per_node // service.gpus_per_replica, 1)
                needed = service.replicas_needed()
                replicas = needed.max(initial=0) if size_for == "peak" else needed.min(initial=0)
                service_nodes += math.ceil(int(replicas) / per_node)
        service_nodes = min(service_nodes, n)
        # jobs larger than the pool run under no model and on no split: they do not size it
        mine = (pool_of_job == pool.name) & (jobs.nodes <= n)
        kube_jobs, slurm_jobs = mine & to_kubernetes, mine & ~to_kubernetes
        batch_kubernetes = float(gpu_hours[kube_jobs].sum())
        batch_slurm = float(gpu_hours[slurm_jobs].sum())
        kubernetes_work = has_service or bool(kube_jobs.any())
        slurm_work = bool(slurm_jobs.any())
        if not kubernetes_work:
            target = 0
        elif not slurm_work:
            target = n
        else:
            rest = n - service_nodes
            total = batch_kubernetes + batch_slurm
            share = batch_kubernetes / total if total > 0 else 0.0
            mean_nodes = math.ceil(batch_kubernetes / span_h / pool.gpus_per_node - 1e-9)
            target = service_nodes + max(mean_nodes, math.ceil(rest * share - 1e-9))
            target = max(target, 1)
        feasible = _feasible_parts(n, jobs.nodes, kube_jobs, slurm_jobs, by_rule, has_service)
        if not feasible and pool.name in given:
            plans.append(PoolPlan(pool.name, n, min(target, n), (), kubernetes_work and slurm_work))
            continue
        if not feasible:
            raise InputError(
                f"no split of pool {pool.name!r} ({n} nodes) holds both sides' largest jobs: routing rules "
                f"send {_largest(jobs.nodes, kube_jobs & by_rule)}-node jobs to kubernetes and "
                f"{_largest(jobs.nodes, slurm_jobs & by_rule)}-node jobs to slurm; route one of them "
                "elsewhere (models.hybrid.routing) or give the pool more nodes",
                path=path,
                line=(lines or {}).get(pool.name),
                field=f"models.hybrid.split.{pool.name}",
            )
        # the feasible part nearest the target, on the Kubernetes side's favour on a tie
        kubernetes_nodes = min(feasible, key=lambda k: (abs(k - target), -k))
        plans.append(PoolPlan(pool.name, n, kubernetes_nodes, feasible, kubernetes_work and slurm_work))
    return plans


def _feasible_parts(
    n: int, nodes: Int32, kube_jobs: Bool, slurm_jobs: Bool, by_rule: Bool, has_service: bool
) -> tuple[int, ...]:
    """The Kubernetes parts of an ``n``-node pool that hold each side's largest job and, with a
    service, one node; when none does, those that hold the rules' jobs on their side and every
    other job on one side or the other."""
    low = max(_largest(nodes, kube_jobs), 1 if has_service else 0)
    high = n - _largest(nodes, slurm_jobs)
    if low <= high:
        return tuple(range(low, high + 1))
    rule_low = max(_largest(nodes, kube_jobs & by_rule), 1 if has_service else 0)
    rule_high = n - _largest(nodes, slurm_jobs & by_rule)
    movable = _largest(nodes, (kube_jobs | slurm_jobs) & ~by_rule)
    return tuple(k for k in range(rule_low, rule_high + 1) if movable <= max(k, n - k))


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
        if pool.name not in settings.hybrid.split and pool.name not in settings.split:
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


@dataclass(frozen=True)
class Routing:
    """The jobs' and services' sides before the split, and the split proposed for them."""

    to_kubernetes: Bool
    by_rule: Bool
    services_to_kubernetes: list[bool]
    plans: list[PoolPlan]


def _routing(workload: Workload, pools: list[Pool], settings: HybridModelSettings) -> Routing:
    hybrid = settings.hybrid
    to_kubernetes, by_rule = route_jobs(workload.jobs, hybrid.routing)
    services_to_kubernetes = [route_service_to_kubernetes(s, hybrid) for s in workload.services]
    plans = plan_split(
        pools,
        settings.slurm.partitions,
        workload.jobs,
        to_kubernetes,
        workload.services,
        services_to_kubernetes,
        "trough" if hybrid.lending.policy == "kubernetes_borrows" else "peak",
        by_rule,
        workload.horizon_s,
        path=settings.path,
        lines=settings.split_lines,
        given=frozenset(hybrid.split) | frozenset(settings.split),
    )
    return Routing(to_kubernetes, by_rule, services_to_kubernetes, plans)


def candidate_splits(
    workload: Workload,
    pools: list[Pool],
    settings: HybridModelSettings,
    limit: int = 5,
    around: dict[str, int] | None = None,
) -> list[dict[str, int]]:
    """A few plausible splits (Slurm nodes per pool, as ``models.hybrid.split``), best guess first: the
    proposal (or the split ``around``), then Kubernetes given 1 more, 1 fewer, 2 more and 2 fewer
    nodes of every pool both sides use (each pool's part kept feasible: every side holds its largest
    routed job; a pool the scenario splits keeps its split), duplicates dropped, at most ``limit``.
    A search judges them by simulation and runs the one it picks with ``with_split``:

        setup = MODELS.get("hybrid").setup(loaded)
        splits = candidate_splits(loaded.workload, setup.pools, setup.settings)
        for split in splits:
            run_model("hybrid", loaded.workload, setup.pools, with_split(setup.settings, split))

    An InputError (field ``models.hybrid.split.POOL``) when no split holds both sides' largest jobs.
    """
    plans = _routing(workload, pools, settings).plans
    given = settings.hybrid.split
    candidates: list[dict[str, int]] = []
    for delta in (0, 1, -1, 2, -2):
        split = {}
        for plan in plans:
            if plan.pool in given:
                split[plan.pool] = given[plan.pool]
                continue
            centre = (
                plan.kubernetes
                if around is None or plan.pool not in around
                else plan.nodes - around[plan.pool]
            )
            kubernetes = centre
            if plan.contested and plan.feasible and (delta or centre not in plan.feasible):
                kubernetes = min(plan.feasible, key=lambda k: (abs(k - centre - delta), -k))
            split[plan.pool] = plan.nodes - kubernetes
        if split not in candidates:
            candidates.append(split)
    return candidates[: max(limit, 1)]


def spread_splits(
    workload: Workload, pools: list[Pool], settings: HybridModelSettings, count: int = 4
) -> list[dict[str, int]]:
    """Splits spread over the whole feasible range, for a search whose neighbourhood of the proposal
    (``candidate_splits``) holds none that meets the targets: each pool both sides use gets its
    Kubernetes part at the same quantile of its feasible parts, at 1/(count + 1), 2/(count + 1), ...;
    other pools keep the proposal (or the scenario's split). Duplicates dropped."""
    plans = _routing(workload, pools, settings).plans
    given = settings.hybrid.split
    splits: list[dict[str, int]] = []
    for k in range(1, count + 1):
        split = {}
        for plan in plans:
            if plan.pool in given:
                split[plan.pool] = given[plan.pool]
                continue
            kubernetes = plan.kubernetes
            if plan.contested and plan.feasible:
                kubernetes = plan.feasible[round(k / (count + 1) * (len(plan.feasible) - 1))]
            split[plan.pool] = plan.nodes - kubernetes
        if split not in splits:
            splits.append(split)
    return splits


def _largest_jobs(
    jobs: JobTable, pools: list[Pool], settings: HybridModelSettings
) -> dict[tuple[str, str], int]:
    """(ClusterQueue, pool) -> GPUs of the largest Kubernetes-side job its LocalQueue sends there."""
    kueue = settings.kubernetes.kubernetes.kueue
    if not kueue.clusterQueues or not len(jobs):
        return {}
    pool_of_job = _pool_of_jobs(jobs, pools, settings.slurm.partitions)
    team = _label_values(jobs.team, len(jobs))
    local = _label_values(jobs.local_queue, len(jobs))
    largest: dict[tuple[str, str], int] = {}
    for t, q, pool, gpus in zip(
        team.tolist(), local.tolist(), pool_of_job.tolist(), jobs.gpus.tolist(), strict=True
    ):
        queue = kueue.cluster_queue_of(t, q or "default")
        if queue is not None:
            largest[queue, pool] = max(largest.get((queue, pool), 0), int(gpus))
    return largest


def run_hybrid(workload: Workload, pools: list[Pool], settings: HybridModelSettings) -> ModelRun:
    """The model contract's entry (``gpuplan.sim.models``): route, split, run each side with its own
    model and settings (the Kubernetes side's Kueue quotas scaled to its part), and merge the runs."""
    from gpuplan.sim.kubernetes.model import run_kubernetes
    from gpuplan.sim.slurm.model import run_slurm

    hybrid = settings.hybrid
    partitions = settings.slurm.partitions
    jobs = workload.jobs
    routing = _routing(workload, pools, settings)
    to_kubernetes, by_rule = routing.to_kubernetes, routing.by_rule
    services = workload.services
    services_to_kubernetes = routing.services_to_kubernetes
    lending = hybrid.lending

    proposed = {plan.pool: plan.nodes - plan.kubernetes for plan in routing.plans}
    for pool in pools:  # a split chosen in memory (with_split) was not checked against the pools
        if settings.split.get(pool.name, 0) > pool.nodes:
            raise InputError(
                f"{settings.split[pool.name]} nodes for Slurm: more than the pool's {pool.nodes}",
                field=f"models.hybrid.split.{pool.name}",
            )
    slurm_nodes = {**proposed, **hybrid.split, **settings.split}
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
    kubernetes_settings, quota_scaled, assumptions = scale_quotas(
        settings,
        pools,
        {name: sides_["kubernetes"] for name, sides_ in capacity.items()},
        _largest_jobs(sides["kubernetes"][0].jobs, pools, settings),
    )
    # Kueue as its documentation recommends for the jobs routed to Kubernetes, where the user did not
    # configure it (waitForPodsReady with multi-pod jobs: kubernetes.settings.documented_defaults)
    kubernetes_settings = documented_defaults(kubernetes_settings, sides["kubernetes"][0].jobs)
    assumptions = [*assumptions, *(f"Kubernetes side: {why}" for why in kubernetes_settings.assumptions)]
    lending_echo: dict[str, Any] = {"policy": lending.policy}
    if lending.policy == "none":
        parts = [
            ("slurm", run_slurm(*sides["slurm"], settings.slurm)),
            ("kubernetes", run_kubernetes(*sides["kubernetes"], kubernetes_settings)),
        ]
    else:
        lendable = {
            name: nodes if lending.max_nodes is None else min(nodes, lending.max_nodes)
            for name, nodes in slurm_nodes.items()
        }
        kubernetes_pools = sides["kubernetes"][1]
        kubernetes_run = run_kubernetes(
            *sides["kubernetes"], _borrowing(kubernetes_settings, kubernetes_pools, lendable, lending)
        )
        lent = _lent_nodes(kubernetes_run, pools, slurm_nodes, lendable, lending)
        parts = [("slurm", run_slurm(*sides["slurm"], settings.slurm, lent)), ("kubernetes", kubernetes_run)]
        lending_echo |= _lending_figures(lent, pools, lending)
        parts = _count_lent_capacity(parts, lent, slurm_nodes, pools)
    side_echo = {side: dict(run.settings) for side, run in parts}
    if quota_scaled:
        side_echo["kubernetes"]["quota_scaled"] = quota_scaled
    echo = {
        "split": {
            pool.name: {"slurm": slurm_nodes[pool.name], "kubernetes": pool.nodes - slurm_nodes[pool.name]}
            for pool in pools
        },
        "split_source": {pool.name: _split_source(pool.name, settings) for pool in pools},
        "routing": [rule.model_dump(exclude_none=True) for rule in hybrid.routing]
        or "default: services and pipelines to kubernetes, other jobs to slurm",
        "lending": lending_echo,
        **({"rerouted": rerouted} if rerouted else {}),
        **({"assumptions": assumptions} if assumptions else {}),
        **side_echo,
    }
    merged = merge_runs(MODEL, parts, echo)
    # each side's work and capacity over the same span (metrics.diagnose: starved_side), and the queue
    # at the horizon of both sides together (queue_never_drains)
    merged.extra["sides"] = {side: work_figures(run, span_s(merged)) for side, run in parts}
    merged.extra["backlog"] = backlog(merged, workload.horizon_s)
    return merged


def _split_source(pool: str, settings: HybridModelSettings) -> str:
    """``scenario`` (models.hybrid.split), ``chosen`` (with_split, a search's pick) or ``proposed``."""
    given = settings.hybrid.split
    if pool in settings.split and settings.split[pool] != given.get(pool):
        return "chosen"
    return "scenario" if pool in given else "proposed"


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
            origin = schedule.pool.origin or schedule.pool.name
            pool = replace(schedule.pool, name=f"{schedule.pool.name}/{side}", origin=origin)
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
