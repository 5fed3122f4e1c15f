"""``gpuplan simulate --model kubernetes``: the model's settings, node pools and jobs from the input.

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.scenario.load import LoadedScenario
from gpuplan.scenario.model import BatchWorkload
from gpuplan.sim.kubernetes.cluster import UNKNOWN, NodePoolSpec
from gpuplan.sim.kubernetes.model import simulate_kubernetes
from gpuplan.sim.outcome import ModelRun
from gpuplan.workload.k8s_pods import NodeList, PodTrace

if TYPE_CHECKING:
    from gpuplan.inputs import Input

MIB_PER_GB = 1024


def scenario_pools(loaded: LoadedScenario, settings: KubernetesSettings) -> list[NodePoolSpec]:
    bounds = {pool.pool: pool for pool in settings.nodePools}
    pools = []
    for pool in loaded.pools:
        spec = bounds.get(pool.name)
        nodes = pool.nodes
        pools.append(
            NodePoolSpec(
                name=pool.name,
                gpus_per_node=pool.gpus_per_node,
                cpu_milli=pool.cpus_per_node * 1000 if pool.cpus_per_node else UNKNOWN,
                memory_mib=int(pool.memory_gb * MIB_PER_GB) if pool.memory_gb else UNKNOWN,
                nodes=nodes,
                min_nodes=nodes if spec is None or spec.minNodes is None else min(spec.minNodes, nodes),
                max_nodes=nodes if spec is None or spec.maxNodes is None else max(spec.maxNodes, nodes),
                provision_delay_s=600.0 if spec is None else spec.provisionDelay,
                price_per_gpu_hour=pool.price_per_gpu_hour,
            )
        )
    return pools


def node_list_pools(nodes: NodeList) -> list[NodePoolSpec]:
    """Node pools of identical nodes from a node list, in order of first appearance; CPU-only nodes
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
        pools.append(
            NodePoolSpec(name, gpus, cpu, mem, len(names), len(names), len(names), node_names=tuple(names))
        )
    return pools


def _pool_aliases(loaded: LoadedScenario) -> dict[str, str]:
    """Partition labels of synthesised jobs -> pool: pools by name, Slurm partitions by the pool they span."""
    aliases = {pool.name: pool.name for pool in loaded.pools}
    slurm = loaded.scenario.models.slurm
    for partition in getattr(slurm, "partitions", []):
        aliases.setdefault(partition.name, partition.pool)
    for workload in loaded.scenario.workloads:
        if isinstance(workload, BatchWorkload) and workload.pool is not None:
            aliases.setdefault(workload.name, workload.pool)
    return aliases


def run_kubernetes(loaded: Input, request: Any) -> ModelRun:
    """The Kubernetes model with the scenario's ``models.kubernetes`` (defaults for a trace)."""
    workload = loaded.workload
    jobs = workload.jobs
    settings = KubernetesSettings()
    extras: dict[str, Any] = {}
    if loaded.scenario is not None:
        settings = loaded.scenario.scenario.models.kubernetes
        pools = scenario_pools(loaded.scenario, settings)
        extras["pool_aliases"] = _pool_aliases(loaded.scenario)
    elif loaded.node_list is not None:
        pools = node_list_pools(loaded.node_list)
    else:
        pools = [  # a trace without a node list: the nodes' CPU and memory are unknown
            NodePoolSpec(
                p.name,
                p.gpus_per_node,
                UNKNOWN,
                UNKNOWN,
                p.nodes,
                p.nodes,
                p.nodes,
                price_per_gpu_hour=p.price_per_gpu_hour,
            )
            for p in loaded.pools
        ]
    trace = loaded.trace
    if isinstance(trace, PodTrace) and trace.jobs is jobs:
        extras |= {"gpu_milli": trace.gpu_milli, "cpu_milli": trace.cpu_milli, "memory_mib": trace.memory_mib}
    return simulate_kubernetes(
        jobs, pools, settings, workload.services, horizon_s=workload.horizon_s, **extras
    )
