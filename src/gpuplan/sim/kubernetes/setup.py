"""From settings and jobs to the model's pieces: pod requests, priorities, Kueue's queues and quotas."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpuplan.errors import InputError
from gpuplan.scenario.kubernetes import (
    DEFAULT_LOCAL_QUEUE,
    HOSTNAME,
    FlavorQuota,
    KubernetesSettings,
    Toleration,
    parse_tolerations,
    timed_eviction,
    tolerates_all,
)
from gpuplan.scenario.kubernetes import Kueue as KueueSettings
from gpuplan.sim.kubernetes.cluster import MILLI, UNKNOWN, NodePoolSpec
from gpuplan.sim.kubernetes.kueue import Kueue, Placement, QueuePolicy
from gpuplan.sim.kubernetes.quota import NO_LIMIT, QuotaNode, QuotaTree
from gpuplan.sim.kubernetes.scheduler import NO_POOL, PodRequest, Scoring
from gpuplan.sim.kubernetes.tas import Mode as TasMode
from gpuplan.sim.kubernetes.tas import Topology
from gpuplan.workload.jobtable import (
    Float64,
    Int32,
    Int64,
    JobTable,
    Labels,
    parse_companions,
    unique_columns,
)

DEFAULT_QUEUE = "default"
UNMANAGED = -1  # the queue of a job Kueue does not manage
ANY_FLAVOR = "default-flavor"  # a ResourceFlavor without nodeLabels: its workloads' pods go to any pool


def scoring_of(settings: KubernetesSettings) -> Scoring:
    weights = {r.name: r.weight for r in settings.scheduler.resources}
    ratio = settings.scheduler.requestedToCapacityRatio
    return Scoring(
        strategy=settings.scheduler.scoringStrategy,
        cpu_weight=weights.get("cpu", 0),
        memory_weight=weights.get("memory", 0),
        gpu_weight=weights.get("nvidia.com/gpu", 0),
        shape=() if ratio is None else tuple((p.utilization, p.score) for p in ratio.shape),
    )


def pod_requests(
    jobs: JobTable,
    pools: list[NodePoolSpec],
    gpu_milli: npt.NDArray[np.integer] | None,
    cpu_milli: npt.NDArray[np.integer] | None,
    memory_mib: npt.NDArray[np.integer] | None,
    pool_aliases: dict[str, str] | None = None,
    tolerated: list[tuple[int, ...]] | None = None,
) -> tuple[list[PodRequest], Float64]:
    """Each job's pod request and the thousandths of GPUs each of its pods uses.

    The pool is the one the job's ``partition`` names (a node selector), else any. CPU and memory are
    the trace's (or the workload list's) when given (-1: not for this job), else the node's share
    for the pod's GPUs (a pod of 2 of 8 GPUs asks a quarter of the node's CPU and memory), as GPU pods
    are usually sized; 0 where the node's figure is UNKNOWN (nothing to take a share of, and nothing
    is checked there)."""
    by_name = {pool.name: i for i, pool in enumerate(pools)}
    aliases = pool_aliases or {}
    named = np.array(
        [by_name.get(aliases.get(label, label), -1) for label in jobs.partition.labels], np.int32
    )
    pool_of = named[jobs.partition.codes] if len(named) else np.full(len(jobs), -1, np.int32)
    # the node each job's shares are of: its pool's, or the largest pool's (index 0: no pool)
    reference = [max(pools, key=lambda q: q.gpus_per_node), *pools] if pools else []
    node = np.asarray(pool_of, np.int64) + 1
    node_gpus = np.array([max(q.gpus_per_node, 1) for q in reference], np.int64)[node]
    node_cpu = np.array([q.cpu_milli for q in reference], np.int64)[node]
    node_mem = np.array([q.memory_mib for q in reference], np.int64)[node]
    gpus = jobs.gpus_per_node.astype(np.int64)
    milli = np.asarray(gpu_milli, np.int64) if gpu_milli is not None else np.full(len(jobs), MILLI, np.int64)
    milli = np.where((gpus > 1) | (milli <= 0), MILLI, milli)
    whole = milli >= MILLI
    share = np.where(whole, gpus, milli / MILLI) / node_gpus
    cpus = jobs.cpus_per_node.astype(np.int64)
    cpu = np.where(cpus > 0, cpus * 1000, (node_cpu * share).astype(np.int64))  # int(): truncated
    if cpu_milli is not None:
        cpu = np.where(cpu_milli >= 0, cpu_milli, cpu)
    mems = jobs.mem_per_node
    mem = np.where(mems == mems, np.nan_to_num(mems), node_mem * share).astype(np.int64)
    if memory_mib is not None:
        mem = np.where(memory_mib >= 0, memory_mib, mem)
    # equal requests are one object (the scheduler's pass remembers requests by identity)
    allowed: dict[tuple[int, ...], int] = {} if tolerated is not None else {(): 0}
    allowed_code = (
        np.array([allowed.setdefault(t, len(allowed)) for t in tolerated], np.int64)
        if tolerated is not None
        else np.zeros(len(jobs), np.int64)
    )
    columns = np.stack([gpus, milli, cpu, mem, np.asarray(pool_of, np.int64), allowed_code])
    distinct, inverse = unique_columns(columns)
    by_code = list(allowed)
    interned = [
        PodRequest(gpus=g, milli=m, cpu=c, mem=r, pool=p, pools=by_code[a])
        for g, m, c, r, p, a in distinct.T.tolist()
    ]
    requests = [interned[i] for i in inverse.tolist()]
    milli_per_pod: Float64 = np.where(whole, gpus * MILLI, milli).astype(np.float64)
    return requests, milli_per_pod


def job_priorities(jobs: JobTable, settings: KubernetesSettings) -> tuple[Int64, Int64]:
    """Each job's pod priority and workload priority, as Kueue's WorkloadPriorityClass page puts it
    ("The relationship between pod's priority and workload's priority"; pkg/util/priority).

    Pods (kube-scheduler's queue sort and preemption): the PriorityClass they name
    (``priorityClassName``), else by ``priorities.assign`` (workload name, then trace QoS label, then
    kind), else the default. The workload (Kueue's queue order and preemption): its
    WorkloadPriorityClass when it names one (``kueue.x-k8s.io/priority-class``), else its pods'."""
    priorities = settings.priorities
    value = {c.name: c.value for c in priorities.classes}
    assign = {label: value[name] for label, name in priorities.assign.items()}
    pod = np.full(len(jobs), value[priorities.default], np.int64)
    for labels, by_label in (
        (jobs.kind, assign),
        (jobs.qos, assign),
        (jobs.text("workload"), assign),
        (jobs.text("priority_class"), value),
    ):
        _assign(pod, labels, by_label)
    workload = pod.copy()
    workload_value = {c.name: c.value for c in settings.kueue.workloadPriorityClasses}
    _assign(workload, jobs.text("workload_priority_class"), workload_value)
    return pod, workload


def _assign(result: Int64, labels: Labels, by_label: dict[str, int]) -> None:
    """``result[i] = by_label[label of row i]`` where the row's label has a value."""
    for code, label in enumerate(labels.labels):
        if label in by_label:
            result[labels.codes == code] = by_label[label]


def _current_name(policy: str) -> str:
    """flavorFungibility's deprecated names (Borrow, Preempt) as the ones that replaced them."""
    return "MayStopSearch" if policy in ("Borrow", "Preempt") else policy


def _limits(
    quotas: list[FlavorQuota], pools: list[str], where: str
) -> tuple[list[float], list[float], list[float]]:
    nominal = [0.0] * len(pools)
    borrowing = [NO_LIMIT] * len(pools)
    lending = [NO_LIMIT] * len(pools)
    for quota in quotas:
        if quota.name not in pools:
            raise InputError(
                f"no pool (ResourceFlavor) named {quota.name!r} (flavors: {', '.join(pools)})",
                field=f"models.kubernetes.kueue.{where}.flavors",
            )
        f = pools.index(quota.name)
        nominal[f] = quota.nominalQuota * MILLI
        if quota.borrowingLimit is not None:
            borrowing[f] = quota.borrowingLimit * MILLI
        if quota.lendingLimit is not None:
            lending[f] = quota.lendingLimit * MILLI
    return nominal, borrowing, lending


def build_kueue(
    jobs: JobTable,
    settings: KueueSettings,
    pools: list[str],
    request_milli: Float64,
    priority: Int64,
    pool_specs: list[NodePoolSpec],
    flavors_of_job: list[tuple[int, ...]],
    flavor_per_pool: bool = True,
    placement: Placement | None = None,
) -> tuple[Kueue, list[str]]:
    """Kueue's quota tree and ClusterQueues from ``models.kubernetes.kueue``, and each job's queue.

    Flavors are the pools, in order, then ``default-flavor`` (no nodeLabels: any pool). Without
    clusterQueues, one ClusterQueue ``default`` holds every GPU as nominal quota: per pool when
    ``flavor_per_pool`` (jobs name their pools), else in ``default-flavor``. A job goes to the
    ClusterQueue that lists no team (cluster_queues)."""
    pools = [*pools, ANY_FLAVOR]
    nodes: list[QuotaNode] = []
    cohort_index: dict[str, int] = {}
    for c, cohort in enumerate(settings.cohorts):
        nominal, borrowing, lending = _limits(cohort.flavors, pools, f"cohorts[{c}]")
        cohort_index[cohort.name] = len(nodes)
        nodes.append(QuotaNode(cohort.name, False, nominal, borrowing, lending))
    for cohort in settings.cohorts:
        if cohort.parent is not None:
            nodes[cohort_index[cohort.name]].parent = cohort_index[cohort.parent]
    queues = list(settings.clusterQueues)
    if not queues:
        from gpuplan.scenario.kubernetes import ClusterQueue

        quotas = [
            FlavorQuota(name=p.name, nominalQuota=max(p.nodes, p.max_nodes) * p.gpus_per_node)
            for p in pool_specs
        ]
        if not flavor_per_pool:
            quotas = [FlavorQuota(name=ANY_FLAVOR, nominalQuota=sum(q.nominalQuota for q in quotas))]
        queues = [ClusterQueue(name=DEFAULT_QUEUE, flavors=quotas)]
    policies: list[QueuePolicy] = []
    for q, queue in enumerate(queues):
        nominal, borrowing, lending = _limits(queue.flavors, pools, f"clusterQueues[{q}]")
        parent = -1
        if queue.cohort is not None:
            if queue.cohort not in cohort_index:  # a cohort named only by its queues: an implicit root
                cohort_index[queue.cohort] = len(nodes)
                zero = [0.0] * len(pools)
                nodes.append(
                    QuotaNode(queue.cohort, False, zero, [NO_LIMIT] * len(pools), [NO_LIMIT] * len(pools))
                )
            parent = cohort_index[queue.cohort]
        node = QuotaNode(
            queue.name, True, nominal, borrowing, lending, parent=parent, weight=queue.fairSharing.weight
        )
        policies.append(
            QueuePolicy(
                node=len(nodes),
                strict_fifo=queue.queueingStrategy == "StrictFIFO",
                flavors=tuple(pools.index(f.name) for f in queue.flavors),
                within_cluster_queue=queue.preemption.withinClusterQueue,
                reclaim_within_cohort=queue.preemption.reclaimWithinCohort,
                borrow_within_cohort=queue.preemption.borrowWithinCohort.policy,
                max_priority_threshold=queue.preemption.borrowWithinCohort.maxPriorityThreshold,
                when_can_borrow=_current_name(queue.flavorFungibility.whenCanBorrow),
                when_can_preempt=_current_name(queue.flavorFungibility.whenCanPreempt),
                preference=queue.flavorFungibility.preference,
            )
        )
        nodes.append(node)
    tree = QuotaTree(nodes, len(pools))
    kueue = Kueue(
        tree,
        policies,
        request_milli.tolist(),
        priority.tolist(),
        fair_sharing=settings.fairSharing.enable,
        strategies=tuple(settings.fairSharing.preemptionStrategies),
        flavors_of_job=flavors_of_job,
        placement=placement,
    )
    return kueue, [queue.name for queue in queues]


def cluster_queues(jobs: JobTable, settings: KueueSettings) -> Int32:
    """Each job's ClusterQueue (its index in ``clusterQueues``, 0 for the implicit ``default`` when
    there are none), UNMANAGED for a listed job Kueue leaves alone: the one its LocalQueue
    (``kueue.x-k8s.io/queue-name``) points to, else its namespace's ``default`` LocalQueue's, which a
    ClusterQueue's ``teams`` stand for (or one without teams, for every other namespace)."""
    queue_index = {name: q for q, name in enumerate(settings.cluster_queue_names())}
    local_queue = jobs.text("local_queue")
    # a job's LocalQueue: the one it names, else its namespace's "default" (Kueue's default LocalQueue)
    pairs, pair_codes = unique_columns(np.stack([jobs.team.codes, local_queue.codes]))
    named = jobs.text("name")
    # (namespace, LocalQueue) pairs whose every job is a listed one (generated and traced jobs need a queue)
    listed = np.ones((len(jobs.team.labels), max(len(local_queue.labels), 1)), bool)
    unnamed = np.array([n == "" for n in named.labels], bool)[named.codes] if len(jobs) else np.zeros(0, bool)
    listed[jobs.team.codes[unnamed], local_queue.codes[unnamed]] = False
    pair_queue = []
    for team_code, local_code in pairs.T.tolist():
        team, given = jobs.team.labels[team_code], local_queue.labels[local_code]
        name = settings.cluster_queue_of(team, given or DEFAULT_LOCAL_QUEUE)
        if name is None and not given and listed[team_code, local_code]:
            pair_queue.append(UNMANAGED)  # a listed job without a queue-name: Kueue leaves it alone
            continue
        local = given or DEFAULT_LOCAL_QUEUE
        if name is None:
            raise InputError(
                f"team {team!r} has no LocalQueue {local!r}: list the team in a ClusterQueue's teams, add "
                "a ClusterQueue without teams for everyone else, or a LocalQueue in localQueues",
                field="models.kubernetes.kueue.clusterQueues",
            )
        pair_queue.append(queue_index[name])
    return np.array(pair_queue, np.int32)[pair_codes] if len(jobs) else np.zeros(0, np.int32)


# Why a job can never run, in the schedulers' own words (jobs.parquet "reason"):
# kube-scheduler's NodeResourcesFit Filter (pkg/scheduler/framework/plugins/noderesources/fit.go,
# fitsRequest: "Insufficient <resource>"): no node a pod may use can ever hold it, or all the job's
# pods at once (a job runs only with every pod bound);
# Kueue's flavor assigner (pkg/scheduler/flavorassigner/flavorassigner.go): "NoMatchingFlavor", the
# ClusterQueue has no flavor whose nodes can hold the pod set, and "ExceedsMaxQuota"
# (fitsResourceQuota: "insufficient quota ... request > maximum capacity"), the request is above the
# most the ClusterQueue could ever get in each flavor it may use (PotentialAvailable).
GPU_RESOURCE, CPU_RESOURCE, MEMORY_RESOURCE = "nvidia.com/gpu", "cpu", "memory"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
UNTOLERATED_TAINT = "node(s) had untolerated taint"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
MANY = 1 << 40  # pods one node holds when no resource limits them


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


def pods_per_node(pod: PodRequest, pool: NodePoolSpec) -> tuple[int, str]:
    """How many of ``pod`` one empty node of ``pool`` holds, and the resource that limits it (GPUs
    first on a tie). Pods of one job may share a node, as the model places them; a resource whose
    capacity is UNKNOWN does not limit."""
    if pod.milli >= MILLI:
        by_gpu = pool.gpus_per_node // pod.gpus if pod.gpus > 0 else MANY
    else:  # shares of one GPU: each GPU holds MILLI // milli of them
        by_gpu = pool.gpus_per_node * (MILLI // max(pod.milli, 1))
    counts = [(by_gpu, GPU_RESOURCE)]
    if pool.cpu_milli != UNKNOWN and pod.cpu > 0:
        counts.append((pool.cpu_milli // pod.cpu, CPU_RESOURCE))
    if pool.memory_mib != UNKNOWN and pod.mem > 0:
        counts.append((pool.memory_mib // pod.mem, MEMORY_RESOURCE))
    return min(counts, key=lambda item: item[0])


@dataclass(frozen=True)
class Reach:
    """Where a job's pods could ever run, from its pod request, pod count and the pools at maxNodes.

    ``allowed``: pools its node selector allows (any with nodes when it has none). ``fit``: those
    whose empty nodes hold one pod (pods without a selector spread over these: kube-scheduler
    places each pod on any of them). ``whole``: those that alone hold every pod at once (a Kueue
    flavor of nodeLabels puts the whole pod set in one pool). ``spread``: whether the ``fit``
    pools together hold every pod. ``short``: kube-scheduler's reason when they do not."""

    allowed: tuple[int, ...]
    fit: tuple[int, ...]
    whole: tuple[int, ...]
    spread: bool
    short: str


def job_reach(requests: list[PodRequest], pods: Int64, pools: list[NodePoolSpec]) -> list[Reach]:
    """Each job's Reach (a pod asking 8 GPUs carries a node selector for nodes that can hold it, as
    users write it: those are the ResourceFlavors Kueue may assign)."""
    cache: dict[tuple[PodRequest, int], Reach] = {}
    result = []
    for pod, count in zip(requests, pods.tolist(), strict=True):
        key = (pod, int(count))
        if key not in cache:
            allowed = tuple(
                i for i, pool in enumerate(pools) if pod.may_use(i) and max(pool.max_nodes, pool.nodes) > 0
            )
            capacity: dict[int, tuple[int, str]] = {}
            for i in allowed:
                per_node, limit = pods_per_node(pod, pools[i])
                capacity[i] = (per_node * max(pools[i].max_nodes, pools[i].nodes), limit)
            fit = tuple(i for i in allowed if capacity[i][0] > 0)
            whole = tuple(i for i in fit if capacity[i][0] >= count)
            spread = bool(fit) and sum(capacity[i][0] for i in fit) >= count
            # the resource that limits the pool that holds the most of the job's pods
            largest = max(allowed, key=lambda i: capacity[i][0], default=-1)
            short = insufficient(capacity[largest][1] if largest >= 0 else GPU_RESOURCE)
            if not allowed and pod.pools:  # kube-scheduler's TaintToleration: ErrReasonNotMatch
                short = UNTOLERATED_TAINT
            cache[key] = Reach(allowed, fit, whole, spread, "" if spread else short)
        result.append(cache[key])
    return result


def kueue_flavors(reach: list[Reach], any_flavor: int) -> list[tuple[int, ...]]:
    """The flavors Kueue may assign each job: the pools that alone hold its pod set, then
    ``default-flavor`` (no nodeLabels: its pods go to any pool they fit) when the pools together
    hold it. Kueue checks quota, not nodes: a pod set no one pool holds may still get a flavor, of
    the pools that hold one of its pods, else of those its node selector allows, or default-flavor;
    once admitted, what its nodes cannot hold stays Pending."""
    flavors = []
    for r in reach:
        if r.whole:
            flavors.append(r.whole + ((any_flavor,) if r.spread else ()))
        else:
            flavors.append((r.fit or r.allowed) + (any_flavor,))
    return flavors


def refusals(
    reach: list[Reach],
    flavors: list[tuple[int, ...]],
    kueue: Kueue | None,
    queue_of_job: Int32,
    request_milli: Float64,
    most_quota: list[list[float]] | None = None,
) -> list[str]:
    """Why each job can never run ("" if it can, perhaps after waiting for capacity that frees up or
    that the autoscaler adds). Without Kueue: the nodes can never hold its pods (kube-scheduler
    would leave them Pending for ever). With Kueue, which admits on quota alone, only Kueue's
    reasons: its ClusterQueue has no flavor it may use (NoMatchingFlavor), or its request is above
    what the ClusterQueue could ever get in each of them, nominal quota plus what it may borrow
    (ExceedsMaxQuota; ``most_quota``, per ClusterQueue and flavor, when quotas change during the
    run); a job admitted whose pods no node can hold stays Unschedulable (then
    waitForPodsReady's timeout and requeues apply)."""

    def most(queue: int, node: int, flavor: int) -> float:
        assert kueue is not None
        return (
            kueue.tree.potential_available(node, flavor) if most_quota is None else most_quota[queue][flavor]
        )

    reasons = []
    for j, (where, usable_flavors) in enumerate(zip(reach, flavors, strict=True)):
        if kueue is None or queue_of_job[j] == UNMANAGED:
            reasons.append("" if where.spread else where.short or insufficient(GPU_RESOURCE))
            continue
        policy = kueue.queues[int(queue_of_job[j])].policy
        usable = [f for f in policy.flavors if f in usable_flavors]
        if not usable:
            reasons.append(NO_MATCHING_FLAVOR)
        elif all(most(int(queue_of_job[j]), policy.node, f) + 1e-9 < request_milli[j] for f in usable):
            reasons.append(EXCEEDS_MAX_QUOTA)
        else:
            reasons.append("")
    return reasons


def pool_topologies(settings: KubernetesSettings, pools: list[NodePoolSpec]) -> list[Topology | None]:
    """Each pool's Topology (its nodePools entry's topologyName), its nodes labelled in order: the
    first ``nodes`` of a level's size in its first domain, and so on; the hostname is the node's
    name. Domain values are the domain's number at that level, zero-padded so they sort as numbers."""
    by_name = {topology.name: topology for topology in settings.topologies}
    chosen = {pool.pool: by_name[pool.topologyName] for pool in settings.nodePools if pool.topologyName}
    result: list[Topology | None] = []
    for spec in pools:
        topology = chosen.get(spec.name)
        if topology is None:
            result.append(None)
            continue
        sizes, labels = topology.sizes(), [level.nodeLabel for level in topology.levels]
        paths = [
            tuple(
                spec.name_of(slot) if label == HOSTNAME else f"{slot // size:05d}"
                for label, size in zip(labels, sizes, strict=True)
            )
            for slot in range(max(spec.nodes, spec.max_nodes))
        ]
        if labels[-1] != HOSTNAME:  # the nodes are the leaves below the lowest level
            labels, paths = (
                [*labels, HOSTNAME],
                [(*path, spec.name_of(slot)) for slot, path in enumerate(paths)],
            )
        result.append(Topology(labels, paths))
    return result


def topology_requests(jobs: JobTable) -> list[tuple[TasMode, str | None] | None]:
    """Each job's Topology Aware Scheduling request (mode, node label), None for none."""
    column = jobs.text("topology_request")
    modes: dict[str, TasMode] = {
        "required": "required",
        "preferred": "preferred",
        "unconstrained": "unconstrained",
    }
    parsed: list[tuple[TasMode, str | None] | None] = []
    for label in column.labels:
        mode, _, level = label.partition("=")
        parsed.append((modes[mode], level or None) if mode in modes else None)
    return [parsed[code] for code in column.codes.tolist()]


class TaintFilter:
    """kube-scheduler's TaintToleration filter over the pools: the pools whose NoSchedule and
    NoExecute taints pods tolerate (PreferNoSchedule only scores and is not modelled), as
    PodRequest.pools: () for all of them, (NO_POOL,) for none. With extendedResourceToleration
    (kube-apiserver's ExtendedResourceToleration admission plugin) a pod asking nvidia.com/gpu
    tolerates the taints of that key.

    With ``with_flavor``, a pool's taints are tolerated also with its flavor's tolerations
    (``flavorTolerations``): Kueue counts them when it matches the flavor's nodeTaints
    (``flavorassigner.go``: ``checkFlavorForPodSets``) and adds them to the pods it admits to the
    flavor (``pkg/podset/podset.go``: ``FromAssignment``)."""

    def __init__(self, settings: KubernetesSettings, pools: list[NodePoolSpec]) -> None:
        taints_of = {pool.pool: pool.taints for pool in settings.nodePools if pool.taints}
        self.taints = [taints_of.get(spec.name, []) for spec in pools]
        self.tainted = any(t.effect != "PreferNoSchedule" for pool_taints in self.taints for t in pool_taints)
        flavor_tolerations_of = {pool.pool: pool.flavorTolerations for pool in settings.nodePools}
        self.flavor_tolerations = [flavor_tolerations_of.get(spec.name, []) for spec in pools]
        self.any_flavor_tolerations = any(self.flavor_tolerations)
        self.gpu_toleration = settings.extendedResourceToleration
        self.cache: dict[tuple[str, bool, bool], tuple[int, ...]] = {}

    def pools(self, tolerations: str, asks_gpus: bool, with_flavor: bool) -> tuple[int, ...]:
        """The pools pods of these ``tolerations`` (format_tolerations) tolerate."""
        key = (tolerations, asks_gpus and self.gpu_toleration, with_flavor and self.any_flavor_tolerations)
        found = self.cache.get(key)
        if found is None:
            parsed = parse_tolerations(tolerations)
            if key[1]:
                parsed.append(Toleration(key=GPU_RESOURCE, operator="Exists"))
            ok = tuple(
                i
                for i, pool_taints in enumerate(self.taints)
                if tolerates_all([*parsed, *(self.flavor_tolerations[i] if key[2] else [])], pool_taints)
            )
            found = self.cache[key] = () if len(ok) == len(self.taints) else ok or (NO_POOL,)
        return found

    def eviction_s(self, tolerations: str) -> tuple[float, ...]:
        """Per pool, how long after it is bound there a pod of these ``tolerations`` is evicted
        by a NoExecute taint it tolerates for tolerationSeconds (timed_eviction), inf for never.
        The pod's own tolerations decide: they come before those ExtendedResourceToleration and a
        flavor add, which give no tolerationSeconds (the first matching toleration counts)."""
        parsed = parse_tolerations(tolerations)
        found = [timed_eviction(parsed, pool_taints) for pool_taints in self.taints]
        return tuple(math.inf if f is None else float(f[1]) for f in found)


def tolerated_pools(
    jobs: JobTable, taint_filter: TaintFilter, managed: list[bool]
) -> tuple[list[tuple[int, ...]] | None, dict[int, tuple[int, ...]]]:
    """Per job, the pools its pods (those asking GPUs: ``nodes``) tolerate (TaintFilter.pools);
    None when no pool is tainted. A job Kueue manages (``managed``) tolerates them also with the
    pool's flavor's tolerations; the second value maps such a job, where that widens its pools, to
    the pools of its pods' own tolerations: those of default-flavor, which has no tolerations."""
    if not taint_filter.tainted:
        return None, {}
    column = jobs.text("tolerations")
    result = []
    own_pools: dict[int, tuple[int, ...]] = {}
    rows = zip(column.codes.tolist(), jobs.gpus_per_node.tolist(), managed, strict=True)
    for j, (code, gpus, by_kueue) in enumerate(rows):
        text = column.labels[code]
        own = taint_filter.pools(text, gpus > 0, False)
        pods_pools = taint_filter.pools(text, gpus > 0, True) if by_kueue else own
        result.append(pods_pools)
        if own != pods_pools:
            own_pools[j] = own
    return result, own_pools


@dataclass(frozen=True)
class Companions:
    """A job's companion pod sets (JobTable.companion_pods): pods asking other requests than its
    ``nodes`` pods, after them. ``requests`` carry the job's node selector and the pools their
    tolerations allow (with the flavors' tolerations when Kueue manages the job), ``own_pools``
    those of their own tolerations (default-flavor's), per pod set."""

    counts: tuple[int, ...]
    requests: tuple[PodRequest, ...]
    own_pools: tuple[tuple[int, ...], ...]


def companion_requests(
    jobs: JobTable, main: list[PodRequest], taint_filter: TaintFilter, managed: list[bool]
) -> dict[int, Companions]:
    """The Companions of each job that has some."""
    column, tolerations = jobs.text("companion_pods"), jobs.text("tolerations")
    result = {}
    for j, code in enumerate(column.codes.tolist()):
        if not column.labels[code]:
            continue
        text = tolerations.labels[int(tolerations.codes[j])]
        pod_sets = parse_companions(column.labels[code])
        own = [taint_filter.pools(text, gpus > 0, False) for _, gpus, _, _ in pod_sets]
        pools = [
            taint_filter.pools(text, gpus > 0, True) if managed[j] else mine
            for (_, gpus, _, _), mine in zip(pod_sets, own, strict=True)
        ]
        result[j] = Companions(
            counts=tuple(count for count, _, _, _ in pod_sets),
            requests=tuple(
                PodRequest(gpus=gpus, milli=MILLI, cpu=cpu, mem=mem, pool=main[j].pool, pools=allowed)
                for (_, gpus, cpu, mem), allowed in zip(pod_sets, pools, strict=True)
            ),
            own_pools=tuple(own),
        )
    return result


def eviction_times(jobs: JobTable, taint_filter: TaintFilter) -> dict[int, tuple[float, ...]]:
    """Per job some pool would evict the pods of after a while (TaintFilter.eviction_s), those
    times per pool."""
    if not taint_filter.tainted:
        return {}
    column = jobs.text("tolerations")
    per_label = [taint_filter.eviction_s(text) if text else () for text in column.labels]
    return {
        j: per_label[code]
        for j, code in enumerate(column.codes.tolist())
        if per_label[code] and min(per_label[code]) < math.inf
    }
