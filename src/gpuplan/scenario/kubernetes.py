"""``models.kubernetes``: settings of the Kubernetes/OKE model, with the names Kubernetes and Kueue use.

Kueue's API objects keep their camelCase field names (``nominalQuota``, ``borrowingLimit``,
``queueingStrategy``...) so a ClusterQueue can be copied from a cluster into a scenario almost as is:

- ClusterQueue, cohorts, quotas and preemption: https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/
- preemption algorithms and fair sharing: https://kueue.sigs.k8s.io/docs/concepts/preemption/
- ``waitForPodsReady``: https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/
- kube-scheduler ``NodeResourcesFit`` scoring: the KubeSchedulerConfiguration reference
  (``scoringStrategy.type`` LeastAllocated | MostAllocated | RequestedToCapacityRatio,
  ``scoringStrategy.resources``, ``scoringStrategy.requestedToCapacityRatio.shape``)
- HPA: https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/ (algorithm, tolerance,
  ``behavior.scaleUp/scaleDown.stabilizationWindowSeconds``, ``--horizontal-pod-autoscaler-sync-period``)
- cluster autoscaler FAQ (kubernetes/autoscaler): ``--scan-interval``, ``--scale-down-unneeded-time``,
  ``--scale-down-delay-after-add``, ``--scale-down-utilization-threshold``.

Cross-references to teams, pools and services are listed by ``kubernetes_problems`` (the model checks
them when it runs, naming file, line and field).
"""

from __future__ import annotations

import difflib
import itertools
from typing import Annotated, Literal

from pydantic import Field, StrictFloat, StrictInt, model_validator
from pydantic_core import PydanticCustomError

from gpuplan.scenario.names import Name
from gpuplan.scenario.section import Section
from gpuplan.scenario.units import MAX_SIZE_NODES, Duration

# Bounds of figures beyond any cluster (a typo, not a setting); Kubernetes' own int32 fields keep theirs.
MAX_GPUS = 10_000_000.0
MAX_WEIGHT = 1_000_000.0
INT32_MAX = 2_147_483_647
MAX_REPLICAS = 100_000  # of one Deployment: Kubernetes' scalability limit is 150,000 pods a cluster


class FlavorQuota(Section):
    """One ResourceFlavor's quota of ``nvidia.com/gpu`` in a ClusterQueue (``resourceGroups[].flavors[]``).

    A flavor is a pool (``name`` = the pool's name: its nodes carry the flavor's nodeLabels), or
    ``default-flavor``, a flavor without nodeLabels whose workloads' pods may go to any pool."""

    name: Name = Field(description="ResourceFlavor: a pool name, or default-flavor (any pool)")
    nominalQuota: StrictFloat = Field(
        ge=0, le=MAX_GPUS, description="GPUs guaranteed to this ClusterQueue (at most 10,000,000)"
    )
    borrowingLimit: StrictFloat | None = Field(
        None, ge=0, le=MAX_GPUS, description="most GPUs it may borrow from its cohort (null: unlimited)"
    )
    lendingLimit: StrictFloat | None = Field(
        None,
        ge=0,
        le=MAX_GPUS,
        description="most of its unused nominal quota it lends to the cohort (null: all)",
    )


class BorrowWithinCohort(Section):
    """``preemption.borrowWithinCohort``: may a workload that must borrow preempt in the cohort."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    maxPriorityThreshold: StrictInt | None = Field(
        None, ge=-INT32_MAX - 1, le=INT32_MAX, description="only workloads at or below this priority (int32)"
    )


class Preemption(Section):
    """``ClusterQueue.spec.preemption`` (Kueue's defaults: Never, Never, Never)."""

    withinClusterQueue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaimWithinCohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrowWithinCohort: BorrowWithinCohort = BorrowWithinCohort()


class FairSharingWeight(Section):
    weight: StrictFloat = Field(
        1.0, ge=0, le=MAX_WEIGHT, description="ClusterQueue.spec.fairSharing.weight (at most 1,000,000)"
    )


class FlavorFungibility(Section):
    """ClusterQueue ``flavorFungibility``: how far the flavor search goes when a flavor needs
    borrowing or preemption (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/#flavorfungibility).
    ``Borrow`` and ``Preempt`` are the deprecated names of ``MayStopSearch``."""

    whenCanBorrow: Literal["MayStopSearch", "TryNextFlavor", "Borrow"] = "MayStopSearch"
    whenCanPreempt: Literal["MayStopSearch", "TryNextFlavor", "Preempt"] = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] = Field(
        "BorrowingOverPreemption", description="how the feasible flavors seen compare"
    )


StopPolicy = Literal["None", "Hold", "HoldAndDrain"]


class ClusterQueue(Section):
    """A Kueue ClusterQueue and the LocalQueues (one per team namespace) that point at it."""

    name: Name
    cohort: Name | None = Field(None, description="cohort name (cohorts may have a parent, see cohorts)")
    teams: list[str] = Field(default_factory=list, description="namespaces whose LocalQueue points here")
    queueingStrategy: Literal["StrictFIFO", "BestEffortFIFO"] = "BestEffortFIFO"
    flavors: list[FlavorQuota] = Field(min_length=1, description="resourceGroups[0].flavors, in order")
    preemption: Preemption = Preemption()
    flavorFungibility: FlavorFungibility = FlavorFungibility()
    stopPolicy: StopPolicy = Field(
        "None", description="Hold: admit nothing new; HoldAndDrain: also evict what is admitted"
    )
    fairSharing: FairSharingWeight = FairSharingWeight()


class Cohort(Section):
    """A Cohort object (hierarchical cohorts): its parent and its own nominal quota per flavor."""

    name: Name
    parent: str | None = None
    flavors: list[FlavorQuota] = Field(default_factory=list)


Strategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


def _default_strategies() -> list[Strategy]:
    return ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


class FairSharing(Section):
    """Kueue Configuration ``fairSharing``: order admission by weighted dominant resource share."""

    enable: bool = False
    preemptionStrategies: list[Strategy] = Field(default_factory=_default_strategies)

    @model_validator(mode="after")
    def _supported(self) -> FairSharing:
        if self.preemptionStrategies not in (
            ["LessThanOrEqualToFinalShare"],
            ["LessThanInitialShare"],
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        ):
            raise PydanticCustomError(
                "strategies", "Kueue does not support this preemptionStrategies list", {}
            )
        return self


class RequeuingStrategy(Section):
    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoffLimitCount: StrictInt | None = Field(
        None, ge=0, le=INT32_MAX, description="null: requeue for ever (int32)"
    )
    backoffBaseSeconds: StrictFloat = Field(
        60, ge=0, le=INT32_MAX, description="seconds of the first requeue back-off (Kueue: int32)"
    )
    backoffMaxSeconds: StrictFloat = Field(
        3600, ge=0, le=INT32_MAX, description="seconds: the longest requeue back-off (Kueue: int32)"
    )


class WaitForPodsReady(Section):
    """Kueue Configuration ``waitForPodsReady``: all-or-nothing admission with a timeout."""

    enable: bool = False
    timeout: Duration = Field(
        1800.0, gt=0, description="evict and requeue when pods are not all ready by then"
    )
    blockAdmission: bool = False
    requeuingStrategy: RequeuingStrategy = RequeuingStrategy()


DEFAULT_LOCAL_QUEUE = "default"  # Kueue's constants.DefaultLocalQueueName


class LocalQueue(Section):
    """A LocalQueue: jobs of ``namespace`` labelled ``kueue.x-k8s.io/queue-name: <name>`` go to
    ``clusterQueue``. (A ClusterQueue's ``teams`` stand for a LocalQueue named ``default`` in each of
    those namespaces, which jobs without the label go to: Kueue's default LocalQueue.)"""

    name: Name
    namespace: str
    clusterQueue: str


class WorkloadPriorityClass(Section):
    """Kueue's WorkloadPriorityClass: the priority of workloads labelled
    ``kueue.x-k8s.io/priority-class: <name>``, for queueing and preemption; it wins over the pods'
    PriorityClass (pkg/util/priority/priority.go)."""

    name: Name
    value: StrictInt = Field(ge=-INT32_MAX - 1, le=INT32_MAX, description="int32")


class KueueChange(Section):
    """What an administrator changes at ``at``, as ``kubectl apply`` of the edited object: the quotas
    of some flavors of a ClusterQueue or Cohort (each given flavor's nominalQuota, borrowingLimit
    and lendingLimit replace the old ones), or a ClusterQueue's ``stopPolicy``. Admitted workloads
    keep running when quota shrinks, as in Kueue; pending ones are tried again at once."""

    at: Duration = Field(description="from the scenario's start")
    clusterQueue: str | None = None
    cohort: str | None = None
    flavors: list[FlavorQuota] = Field(default_factory=list)
    stopPolicy: StopPolicy | None = None

    @model_validator(mode="after")
    def _what(self) -> KueueChange:
        if (self.clusterQueue is None) == (self.cohort is None):
            raise PydanticCustomError("change", "give exactly one of clusterQueue or cohort", {})
        if self.cohort is not None and self.stopPolicy is not None:
            raise PydanticCustomError("change", "stopPolicy is a ClusterQueue's, not a Cohort's", {})
        if not self.flavors and self.stopPolicy is None:
            raise PydanticCustomError("change", "change flavors or stopPolicy", {})
        return self


class Kueue(Section):
    """Kueue admission. ``enable: false`` runs plain Jobs: pods go to kube-scheduler one by one."""

    enable: bool = True
    clusterQueues: list[ClusterQueue] = Field(
        default_factory=list,
        description="empty: one ClusterQueue 'default' for all teams with every GPU as nominalQuota "
        "(per pool when jobs name pools, else in default-flavor)",
    )
    cohorts: list[Cohort] = Field(default_factory=list)
    localQueues: list[LocalQueue] = Field(
        default_factory=list, description="LocalQueues that jobs of a workload list name (queue-name)"
    )
    workloadPriorityClasses: list[WorkloadPriorityClass] = Field(default_factory=list)
    changes: list[KueueChange] = Field(
        default_factory=list, description="ClusterQueue and Cohort changes during the run, in time order"
    )
    fairSharing: FairSharing = FairSharing()
    waitForPodsReady: WaitForPodsReady = WaitForPodsReady()

    def cluster_queue_names(self) -> list[str]:
        """The ClusterQueues, in order: the scenario's, or the one ``default`` for all."""
        return [q.name for q in self.clusterQueues] or ["default"]

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        """The ClusterQueue the LocalQueue ``local_queue`` of ``namespace`` points at, or None when
        there is no such LocalQueue. ``default`` is also the LocalQueue a ClusterQueue's ``teams``
        give each of those namespaces, else the first ClusterQueue without teams (everyone else's)."""
        for queue in self.localQueues:
            if queue.namespace == namespace and queue.name == local_queue:
                return queue.clusterQueue
        if local_queue != DEFAULT_LOCAL_QUEUE:
            return None
        if not self.clusterQueues:
            return "default"
        listing = next((q.name for q in self.clusterQueues if namespace in q.teams), None)
        return listing or next((q.name for q in self.clusterQueues if not q.teams), None)


class ScoringResource(Section):
    name: Literal["cpu", "memory", "nvidia.com/gpu"]
    weight: StrictInt = Field(1, ge=1, le=100, description="1 to 100, as KubeSchedulerConfiguration allows")


class UtilizationShapePoint(Section):
    utilization: StrictInt = Field(ge=0, le=100, description="percent of the node's allocatable requested")
    score: StrictInt = Field(ge=0, le=10, description="the score at that utilisation (0 to 10)")


class RequestedToCapacityRatio(Section):
    """``scoringStrategy.requestedToCapacityRatio``: a node's score per resource is the broken
    line through ``shape`` at its utilisation with the pod (the Resource Bin Packing page)."""

    shape: list[UtilizationShapePoint] = Field(min_length=1)

    @model_validator(mode="after")
    def _increasing(self) -> RequestedToCapacityRatio:
        points = [p.utilization for p in self.shape]
        if any(b <= a for a, b in itertools.pairwise(points)):
            # kube-scheduler's validation: "utilization values must be sorted in increasing order"
            raise PydanticCustomError("shape", "utilization values must be sorted in increasing order", {})
        return self


class Scheduler(Section):
    """kube-scheduler's ``NodeResourcesFit`` plugin args (KubeSchedulerConfiguration)."""

    scoringStrategy: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ScoringResource] = Field(
        default_factory=lambda: [ScoringResource(name="cpu"), ScoringResource(name="memory")],
        min_length=1,
        description="scoringStrategy.resources (upstream default: cpu and memory, weight 1)",
    )
    requestedToCapacityRatio: RequestedToCapacityRatio | None = Field(
        None, description="the shape, for scoringStrategy RequestedToCapacityRatio (and only then)"
    )
    coscheduling: bool = Field(
        False,
        description="the scheduler-plugins Coscheduling plugin: each Job Kueue does not admit is a "
        "PodGroup of all its pods (minMember), bound all at once or not at all",
    )

    @model_validator(mode="after")
    def _shape(self) -> Scheduler:
        needs = self.scoringStrategy == "RequestedToCapacityRatio"
        if needs != (self.requestedToCapacityRatio is not None):
            raise PydanticCustomError(
                "shape",
                "requestedToCapacityRatio (its shape) is given with scoringStrategy "
                "RequestedToCapacityRatio, and only with it",
                {},
            )
        return self


class PriorityClass(Section):
    name: Name
    value: StrictInt = Field(
        ge=-INT32_MAX - 1,
        le=1_000_000_000,
        description="PriorityClass value: int32, at most 1,000,000,000 (higher values are the system's)",
    )


class Priorities(Section):
    """PriorityClasses and which pods get them: by workload name, trace QoS label, or kind.

    kube-scheduler's DefaultPreemption lets a pending pod evict pods of lower priority."""

    classes: list[PriorityClass] = Field(
        default_factory=lambda: [
            PriorityClass(name="production", value=1000),
            PriorityClass(name="batch", value=0),
        ]
    )
    assign: dict[str, str] = Field(
        default_factory=lambda: {"service": "production", "LS": "production", "Guaranteed": "production"},
        description="workload name, trace QoS label or kind -> PriorityClass",
    )
    default: str = Field("batch", description="PriorityClass of pods nothing else assigns")


class Hpa(Section):
    """HorizontalPodAutoscaler of each inference Deployment (targets requests/s per ready replica)."""

    targetUtilization: StrictFloat = Field(
        0.7, gt=0, le=1, description="target requests/s over replica capacity"
    )
    tolerance: StrictFloat = Field(
        0.1, ge=0, le=1, description="--horizontal-pod-autoscaler-tolerance (0 to 1)"
    )
    syncPeriod: Duration = Field(15.0, gt=0, description="--horizontal-pod-autoscaler-sync-period")
    scaleUpStabilizationWindow: Duration = Field(
        0.0, description="behavior.scaleUp.stabilizationWindowSeconds"
    )
    scaleDownStabilizationWindow: Duration = Field(
        300.0, description="behavior.scaleDown.stabilizationWindowSeconds"
    )
    coldStart: Duration = Field(180.0, description="image pull + model load before a new replica serves")
    maxReplicas: dict[str, Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)]] = Field(
        default_factory=dict,
        description="per service: override the workload's replicas.max (1 to 100,000)",
    )


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Section):
    """A node taint every node of the pool has (``kubectl taint``; OKE node pools: ``initial_node_labels``
    and taints in the stack's node pool settings)."""

    key: str
    value: str = ""
    effect: TaintEffect


class Toleration(Section):
    """A pod's toleration (core/v1 Toleration). ``tolerationSeconds`` is how long a pod that a
    NoExecute taint would evict stays bound to the node (the taint-eviction controller); kube-
    scheduler's filter does not look at it."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: TaintEffect | Literal[""] = ""
    tolerationSeconds: StrictInt | None = Field(
        None, ge=-(2**63), le=2**63 - 1, description="NoExecute: seconds bound before eviction (int64)"
    )

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 ``Toleration.ToleratesTaint``: the effect matches (or the toleration gives none),
        the key matches (or the toleration gives none, with Exists), and Exists, or Equal with the
        value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


def tolerates_all(tolerations: list[Toleration], taints: list[Taint]) -> bool:
    """Whether each NoSchedule and NoExecute taint is tolerated (PreferNoSchedule only scores)."""
    return all(
        any(t.tolerates(taint) for t in tolerations) for taint in taints if taint.effect != "PreferNoSchedule"
    )


def timed_eviction(tolerations: list[Toleration], taints: list[Taint]) -> tuple[Taint, int] | None:
    """The NoExecute taint whose toleration gives a ``tolerationSeconds``, with the soonest such
    seconds: the taint-eviction controller evicts a pod that long after it is bound to a node with
    those taints (``pkg/controller/tainteviction/taint_eviction.go``: ``processPodOnNode``,
    ``getMinTolerationTime``). Each taint counts the first toleration that tolerates it
    (``pkg/apis/core/v1/helper/helpers.go``: ``GetMatchingTolerations``). None: never evicted."""
    soonest: tuple[Taint, int] | None = None
    for taint in taints:
        if taint.effect != "NoExecute":
            continue
        used = next((t for t in tolerations if t.tolerates(taint)), None)
        if used is not None and used.tolerationSeconds is not None:
            seconds = max(used.tolerationSeconds, 0)  # zero and below: evicted at once
            if soonest is None or seconds < soonest[1]:
                soonest = (taint, seconds)
    return soonest


def format_tolerations(tolerations: list[Toleration]) -> str:
    """Tolerations as one text (a job table's ``tolerations`` column), read back by parse_tolerations."""
    return ";".join(
        f"{t.key}|{t.operator}|{t.value}|{t.effect}|{'' if seconds is None else seconds}"
        for t in tolerations
        for seconds in [t.tolerationSeconds]
    )


def parse_tolerations(text: str) -> list[Toleration]:
    result = []
    for part in filter(None, text.split(";")):
        key, operator, value, effect, seconds = part.split("|")
        result.append(
            Toleration.model_validate(
                {
                    "key": key,
                    "operator": operator,
                    "value": value,
                    "effect": effect,
                    "tolerationSeconds": int(seconds) if seconds else None,
                }
            )
        )
    return result


HOSTNAME = "kubernetes.io/hostname"
# the levels the OCI HPC OKE stack labels GPU nodes with, top first
OCI_RDMA_LEVELS = (
    "oci.oraclecloud.com/rdma.hpc_island_id",
    "oci.oraclecloud.com/rdma.network_block_id",
    "oci.oraclecloud.com/rdma.local_block_id",
    HOSTNAME,
)


class TopologyLevel(Section):
    nodeLabel: str
    nodes: StrictInt | None = Field(
        None,
        ge=1,
        le=MAX_SIZE_NODES,
        description="nodes in each domain of the level, in node order (1 for kubernetes.io/hostname)",
    )


class Topology(Section):
    """A Kueue Topology (Topology Aware Scheduling): its levels, top first, each with the nodes of
    one of its domains, as the node labels put them: a pool's nodes in order fill the first domain
    of every level, then the next (https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/)."""

    name: Name
    levels: list[TopologyLevel] = Field(min_length=1)

    @model_validator(mode="after")
    def _nested(self) -> Topology:
        labels = [level.nodeLabel for level in self.levels]
        if len(set(labels)) < len(labels):
            raise PydanticCustomError("topology", "a node label is named twice", {})
        sizes = [1 if level.nodeLabel == HOSTNAME else level.nodes for level in self.levels]
        if any(size is None for size in sizes):
            raise PydanticCustomError("topology", "give each level but kubernetes.io/hostname its nodes", {})
        if HOSTNAME in labels and labels[-1] != HOSTNAME:
            raise PydanticCustomError("topology", "kubernetes.io/hostname is the lowest level", {})
        for upper, lower in itertools.pairwise(sizes):
            assert upper is not None and lower is not None
            if upper % lower or upper <= lower:
                raise PydanticCustomError(
                    "topology", "each level's domains hold a whole number (> 1) of the next level's", {}
                )
        return self

    def sizes(self) -> list[int]:
        return [1 if level.nodeLabel == HOSTNAME else level.nodes or 1 for level in self.levels]


class NodePool(Section):
    """An OKE node pool's autoscaling bounds (cluster autoscaler node group), its nodes' taints, and
    what its ResourceFlavor (the pool's flavor) says beside nodeLabels: ``topologyName`` and
    ``tolerations`` (``flavorTolerations``). The taints are also the flavor's ``nodeTaints``."""

    pool: str
    topologyName: str | None = Field(None, description="a topologies[] name: its flavor uses TAS")
    taints: list[Taint] = Field(
        default_factory=list, description="taints of every node (e.g. nvidia.com/gpu=present:NoSchedule)"
    )
    flavorTolerations: list[Toleration] = Field(
        default_factory=list,
        description="its ResourceFlavor's spec.tolerations: Kueue adds them to the pods it admits to it",
    )
    minNodes: StrictInt | None = Field(None, ge=0, le=MAX_SIZE_NODES, description="default: the pool's nodes")
    maxNodes: StrictInt | None = Field(
        None,
        ge=0,
        le=MAX_SIZE_NODES,
        description="default: the pool's nodes (no autoscaling); at most 100,000",
    )
    provisionDelay: Duration = Field(600.0, description="launch to Ready; bare-metal GPU nodes take minutes")

    @model_validator(mode="after")
    def _bounds(self) -> NodePool:
        if self.minNodes is not None and self.maxNodes is not None and self.minNodes > self.maxNodes:
            raise PydanticCustomError("bounds", "minNodes is above maxNodes", {})
        if any(t.tolerationSeconds is not None for t in self.flavorTolerations):
            raise PydanticCustomError(
                "toleration",
                "tolerationSeconds in a flavor's tolerations is not modelled (a timed eviction)",
                {},
            )
        return self


class ClusterAutoscaler(Section):
    scanInterval: Duration = Field(10.0, gt=0, description="--scan-interval")
    scaleDownUnneededTime: Duration = Field(600.0, description="--scale-down-unneeded-time")
    scaleDownDelayAfterAdd: Duration = Field(600.0, description="--scale-down-delay-after-add")
    scaleDownUtilizationThreshold: StrictFloat = Field(
        0.5, ge=0, le=1, description="--scale-down-utilization-threshold (GPU nodes: GPU requests)"
    )


class ControllerManager(Section):
    """kube-controller-manager's client to the API server, which the Job controller creates pods
    through: a token bucket of ``kubeAPIBurst`` requests refilled at ``kubeAPIQPS`` per second."""

    kubeAPIQPS: StrictFloat = Field(20.0, gt=0, le=1e6, description="--kube-api-qps (upstream default 20)")
    kubeAPIBurst: StrictInt = Field(
        30, ge=1, le=1_000_000, description="--kube-api-burst (upstream default 30)"
    )


class KubernetesSettings(Section):
    """The Kubernetes/OKE model: Kueue, kube-scheduler, priorities, HPA, cluster autoscaler."""

    kueue: Kueue = Kueue()
    scheduler: Scheduler = Scheduler()
    priorities: Priorities = Priorities()
    hpa: Hpa = Hpa()
    nodePools: list[NodePool] = Field(default_factory=list)
    topologies: list[Topology] = Field(default_factory=list)
    extendedResourceToleration: bool = Field(
        False,
        description="kube-apiserver's ExtendedResourceToleration admission plugin: pods asking "
        "nvidia.com/gpu tolerate the taints of that key",
    )
    clusterAutoscaler: ClusterAutoscaler = ClusterAutoscaler()
    controllerManager: ControllerManager = ControllerManager()

    @model_validator(mode="after")
    def _names(self) -> KubernetesSettings:
        classes = [c.name for c in self.priorities.classes]
        for name in [self.priorities.default, *self.priorities.assign.values()]:
            if name not in classes:
                raise PydanticCustomError(
                    "priority",
                    "no PriorityClass named {name}{hint}",
                    {"name": repr(name), "hint": _hint(name, classes)},
                )
        queues = [q.name for q in self.kueue.clusterQueues]
        cohorts = [c.name for c in self.kueue.cohorts]
        if len(set(queues)) < len(queues):
            raise PydanticCustomError("names", "two clusterQueues share a name", {})
        local = [(q.namespace, q.name) for q in self.kueue.localQueues]
        if len(set(local)) < len(local):
            raise PydanticCustomError("names", "two localQueues share a namespace and name", {})
        workload_classes = [c.name for c in self.kueue.workloadPriorityClasses]
        if len(set(workload_classes)) < len(workload_classes):
            raise PydanticCustomError("names", "two workloadPriorityClasses share a name", {})
        for cohort in self.kueue.cohorts:
            if cohort.parent is not None and cohort.parent not in cohorts:
                raise PydanticCustomError(
                    "cohort",
                    "cohort {name}: no parent cohort named {parent}{hint}",
                    {
                        "name": repr(cohort.name),
                        "parent": repr(cohort.parent),
                        "hint": _hint(cohort.parent, cohorts),
                    },
                )
        return self


def _hint(name: str, known: list[str]) -> str:
    if not known:
        return " (there are none)"
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"


def kubernetes_problems(
    settings: KubernetesSettings, teams: list[str], pools: list[str], services: list[str]
) -> list[tuple[tuple[str | int, ...], str]]:
    """References ``models.kubernetes`` makes to the rest of the scenario that do not resolve: (field
    location, message) pairs, in the scenario's location form (``("models", "kubernetes", ...)``)."""
    at: tuple[str | int, ...] = ("models", "kubernetes")
    problems: list[tuple[tuple[str | int, ...], str]] = []

    def known(loc: tuple[str | int, ...], name: str, names: list[str], what: str) -> None:
        if name not in names:
            problems.append((loc, f"no {what} named {name!r}{_hint(name, names)}"))

    kueue = settings.kueue
    flavors = [*pools, "default-flavor"]
    for q, queue in enumerate(kueue.clusterQueues):
        for t, team in enumerate(queue.teams):
            known((*at, "kueue", "clusterQueues", q, "teams", t), team, teams, "team")
        for f, flavor in enumerate(queue.flavors):
            known((*at, "kueue", "clusterQueues", q, "flavors", f, "name"), flavor.name, flavors, "flavor")
    for c, cohort in enumerate(kueue.cohorts):
        for f, flavor in enumerate(cohort.flavors):
            known((*at, "kueue", "cohorts", c, "flavors", f, "name"), flavor.name, flavors, "flavor")
    cohort_names = sorted(
        {c.name for c in kueue.cohorts} | {q.cohort for q in kueue.clusterQueues if q.cohort}
    )
    by_queue = {q.name: [f.name for f in q.flavors] for q in kueue.clusterQueues}
    last = 0.0
    for c, change in enumerate(kueue.changes):
        where = (*at, "kueue", "changes", c)
        if change.at < last:
            problems.append(((*where, "at"), "changes are listed in time order"))
        last = change.at
        if change.clusterQueue is not None:
            known((*where, "clusterQueue"), change.clusterQueue, list(by_queue), "ClusterQueue")
            # a ClusterQueue's resource groups are not changed: only the quotas of its flavors
            of_queue = by_queue.get(change.clusterQueue, [])
            for f, flavor in enumerate(change.flavors):
                known((*where, "flavors", f, "name"), flavor.name, of_queue, "flavor of that ClusterQueue")
        else:
            assert change.cohort is not None
            known((*where, "cohort"), change.cohort, cohort_names, "cohort")
            for f, flavor in enumerate(change.flavors):
                known((*where, "flavors", f, "name"), flavor.name, flavors, "flavor")
    for q, local in enumerate(kueue.localQueues):
        where = (*at, "kueue", "localQueues", q)
        known((*where, "clusterQueue"), local.clusterQueue, kueue.cluster_queue_names(), "ClusterQueue")
        known((*where, "namespace"), local.namespace, teams, "team (namespace)")
    if kueue.enable and kueue.clusterQueues:
        listed = {team for queue in kueue.clusterQueues for team in queue.teams}
        listed |= {local.namespace for local in kueue.localQueues}
        catch_all = any(not queue.teams for queue in kueue.clusterQueues)
        for team in teams:
            if team not in listed and not catch_all:
                problems.append(
                    ((*at, "kueue", "clusterQueues"), f"team {team!r} has no LocalQueue in any ClusterQueue")
                )
    topologies = [t.name for t in settings.topologies]
    for p, pool in enumerate(settings.nodePools):
        known((*at, "nodePools", p, "pool"), pool.pool, pools, "pool")
        if pool.topologyName is not None:
            known((*at, "nodePools", p, "topologyName"), pool.topologyName, topologies, "topology")
    for name in settings.hpa.maxReplicas:
        known((*at, "hpa", "maxReplicas", name), name, services, "service")
    return problems
