"""The Kubernetes model's settings and their one translation from the input (``prepare``).

A scenario's pools become OKE node pools (``models.kubernetes.nodePools`` sets their autoscaling
bounds and provisioning delay); a pod trace runs on its node list, grouped into node pools of
identical nodes (GPU model, GPUs, CPU, memory); another trace runs on the pool ``simulate`` sizes.
A trace gets the default settings: Kueue with one ClusterQueue holding every GPU in ``default-flavor``
(pods go to any node, as the trace's pods name no GPU model), kube-scheduler's LeastAllocated on CPU
and memory, and the PriorityClasses ``production`` (the trace's LS and Guaranteed pods) and ``batch``.

Node CPU and memory: a node list's ``cpu_milli`` and ``memory_mib``; a scenario pool's
``cpus_per_node`` and ``memory_gb``, else its shape's (the OCI catalogue's cores and memory). Where
none is given -- a trace without a node list, a custom pool without those fields -- the nodes' CPU
and memory are unknown (``cluster.UNKNOWN``) and are not a constraint: pods' CPU and memory requests
are not checked against them (gpuplan does not invent a machine's size), and kube-scheduler's
scoring leaves them out. The settings echo ``node_resources`` says per pool what the nodes were
taken to have, and the figure ``requests_not_checked_jobs`` counts the jobs whose requests were not
checked.

Where the user has not set ``models.kubernetes.kueue.waitForPodsReady.enable`` (a trace: never),
``prepare`` configures Kueue as its documentation recommends for the workload (``documented_defaults``):
with jobs of more than one pod, which need all their pods at once, ``waitForPodsReady`` is enabled,
with Kueue's own defaults for its other fields. ``assumptions`` says so, and the run echoes it in
summary.json (``settings.assumptions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.errors import InputError
from gpuplan.scenario.kubernetes import KubernetesSettings, Kueue
from gpuplan.scenario.model import BatchWorkload
from gpuplan.scenario.units import format_duration
from gpuplan.sim.cluster import Pool
from gpuplan.sim.kubernetes.cluster import NodePoolSpec
from gpuplan.workload.jobtable import Bool, JobTable, parse_companions
from gpuplan.workload.pods import NodeList

if TYPE_CHECKING:
    from gpuplan.inputs import Input
    from gpuplan.scenario.load import LoadedScenario
    from gpuplan.sim.models import ModelSetup

DEFAULT_PROVISION_DELAY_S = 600.0  # a node pool without models.kubernetes.nodePools[].provisionDelay


@dataclass(frozen=True)
class KubernetesModelSettings:
    """What the Kubernetes model runs with besides its workload and pools: the scenario's
    ``models.kubernetes`` (Kueue, kube-scheduler, node pools' autoscaling, PriorityClasses) and
    the pools that partition labels which are not pool names (Slurm partitions, workloads) stand for."""

    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    pool_aliases: dict[str, str] | None = None
    # what gpuplan configured where the user did not (``documented_defaults``), in words; the run
    # echoes them as ``settings.assumptions``
    assumptions: tuple[str, ...] = ()


def node_pool_specs(pools: list[Pool], settings: KubernetesSettings) -> list[NodePoolSpec]:
    """The OKE node pools of ``pools``: their nodes, with the autoscaling bounds and provisioning
    delay ``models.kubernetes.nodePools`` gives (none: a fixed node pool)."""
    bounds = {pool.pool: pool for pool in settings.nodePools}
    specs = []
    for pool in pools:
        spec = bounds.get(pool.name)
        nodes = pool.nodes
        specs.append(
            NodePoolSpec(
                name=pool.name,
                gpus_per_node=pool.gpus_per_node,
                cpu_milli=pool.cpu_milli,
                memory_mib=pool.memory_mib,
                nodes=nodes,
                min_nodes=nodes if spec is None or spec.minNodes is None else min(spec.minNodes, nodes),
                max_nodes=nodes if spec is None or spec.maxNodes is None else max(spec.maxNodes, nodes),
                provision_delay_s=DEFAULT_PROVISION_DELAY_S if spec is None else spec.provisionDelay,
                origin=pool.origin or pool.name,
                node_names=pool.node_names,
            )
        )
    return specs


def node_list_pools(nodes: NodeList) -> list[Pool]:
    """Pools of identical nodes from a node list, in order of first appearance; CPU-only nodes
    are left out (every pod here asks for GPUs)."""
    groups: dict[tuple[str, int, int, int], list[str]] = {}
    for name, model, gpus, cpu, mem in zip(
        nodes.names,
        nodes.model,
        nodes.gpus.tolist(),
        nodes.cpu_milli.tolist(),
        nodes.memory_mib.tolist(),
        strict=True,
    ):
        if gpus > 0:
            groups.setdefault((model, gpus, cpu, mem), []).append(name)
    pools = []
    used: set[str] = set()
    for (model, gpus, cpu, mem), names in groups.items():
        base = f"{(model or 'gpu').lower()}-{gpus}gpu-{cpu // 1000}c"
        name = base if base not in used else f"{base}-{mem // 1024}g"
        used.add(name)
        pools.append(Pool(name, len(names), gpus, cpu_milli=cpu, memory_mib=mem, node_names=tuple(names)))
    return pools


def pool_aliases(loaded: LoadedScenario) -> dict[str, str]:
    """Partition labels of synthesised jobs -> pool: pools by name, Slurm partitions by the pool they span."""
    aliases = {pool.name: pool.name for pool in loaded.pools}
    for partition in loaded.scenario.models.slurm.partitions:
        aliases.setdefault(partition.name, partition.pool)
    for workload in loaded.scenario.workloads:
        if isinstance(workload, BatchWorkload) and workload.pool is not None:
            aliases.setdefault(workload.name, workload.pool)
    return aliases


def multi_pod_jobs(jobs: JobTable) -> Bool:
    """Jobs of more than one pod: ``nodes`` pods, plus the pods of their companion pod sets (an
    MPIJob's launcher, a JobSet's driver). Each needs all its pods at once (a distributed job waits
    for every worker), the all-or-nothing admission Kueue's ``waitForPodsReady`` is for."""
    pods = jobs.nodes.astype(np.int64)
    if jobs.companion_pods is not None:
        per_label = np.array(
            [sum(n for n, _, _, _ in parse_companions(text)) for text in jobs.companion_pods.labels],
            dtype=np.int64,
        )
        if len(per_label):
            pods = pods + per_label[jobs.companion_pods.codes]
    return pods > 1


def _kueue_managed(jobs: JobTable, kueue: Kueue) -> Bool:
    """The jobs Kueue admits: all but listed jobs without a queue (setup.cluster_queues)."""
    from gpuplan.sim.kubernetes.setup import UNMANAGED, cluster_queues

    try:
        managed: Bool = cluster_queues(jobs, kueue) != UNMANAGED
    except InputError:  # a team without a LocalQueue: the run says so, with its line
        return np.ones(len(jobs), dtype=bool)
    return managed


def documented_defaults(settings: KubernetesModelSettings, jobs: JobTable) -> KubernetesModelSettings:
    """``settings`` with what Kueue's documentation recommends for ``jobs`` where the user has not
    said otherwise, each recorded in ``assumptions``:

    >>> documented_defaults(KubernetesModelSettings(), mpi_jobs).kubernetes.kueue.waitForPodsReady.enable
    True

    ``waitForPodsReady``: jobs that need all their pods at once (distributed training, MPI) "may
    deadlock if the physical availability of resources do not match the configured quotas in Kueue"
    (https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/), and Kueue's
    all-or-nothing page recommends it "across your cluster as a safety net"
    (https://kueue.sigs.k8s.io/docs/concepts/all_or_nothing/; Topology Aware Scheduling, which it
    recommends first, needs the nodes' topology labels, ``topologies``, so it is not assumed). With
    multi-pod jobs it is enabled where ``enable`` was not written (told from pydantic's
    ``model_fields_set``, not the value: a user's ``enable: false`` stands). Fields the user wrote
    stand; ``blockAdmission`` is true, as in that page's example ("to enable sequential admission
    and prevent deadlock situations") and as Kueue defaulted it once enabled (kubernetes-sigs/kueue
    apis/config/v1beta1/defaults.go, SetDefaults_Configuration: BlockAdmission = Enable; without it
    two gangs that time out together are requeued together and deadlock again); the rest are
    Kueue's current defaults, the scenario's own (apis/config/v1beta2/defaults.go,
    SetDefaults_Configuration: timeout 30m, requeuingStrategy timestamp Eviction, backoffBaseSeconds
    60, backoffMaxSeconds 3600, backoffLimitCount unset). Idempotent: once set, ``enable`` counts as
    written."""
    kueue = settings.kubernetes.kueue
    wait = kueue.waitForPodsReady
    if not kueue.enable or "enable" in wait.model_fields_set:
        return settings
    multi = int(np.count_nonzero(multi_pod_jobs(jobs) & _kueue_managed(jobs, kueue)))
    if multi == 0:
        return settings
    update: dict[str, bool] = {"enable": True}
    if "blockAdmission" not in wait.model_fields_set:
        update["blockAdmission"] = True
    enabled = wait.model_copy(update=update)
    kubernetes = settings.kubernetes.model_copy(
        update={"kueue": kueue.model_copy(update={"waitForPodsReady": enabled})}
    )
    why = (
        f"waitForPodsReady enabled (timeout {format_duration(enabled.timeout)}, blockAdmission "
        f"{str(enabled.blockAdmission).lower()}): the workload has {multi:,} multi-pod job"
        f"{'' if multi == 1 else 's'} and Kueue's documentation recommends it for all-or-nothing "
        "admission; set models.kubernetes.kueue.waitForPodsReady.enable: false to model without it"
    )
    return replace(settings, kubernetes=kubernetes, assumptions=(*settings.assumptions, why))


def translate(loaded: Input) -> ModelSetup[KubernetesModelSettings]:
    """The scenario's ``models.kubernetes`` and pools as written; for a trace, the defaults on its
    node list's pools, else on the pool ``simulate`` sized (CPU and memory unknown)."""
    from gpuplan.sim.models import ModelSetup

    if loaded.scenario is not None:
        settings = KubernetesModelSettings(
            loaded.scenario.scenario.models.kubernetes, pool_aliases(loaded.scenario)
        )
        return ModelSetup(loaded.pools, settings)
    pools = loaded.pools if loaded.node_list is None else node_list_pools(loaded.node_list)
    return ModelSetup(pools, KubernetesModelSettings())


def prepare(loaded: Input) -> ModelSetup[KubernetesModelSettings]:
    """``translate`` and the documented defaults for the workload's jobs (``documented_defaults``):
    what the model runs on and echoes."""
    setup = translate(loaded)
    return replace(setup, settings=documented_defaults(setup.settings, loaded.workload.jobs))
