"""An administrator's edits to Kueue during a run (``models.kubernetes.kueue.changes``): the quotas
they set on the quota tree, and the most each ClusterQueue could ever get over all of them."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplan.scenario.kubernetes import KueueChange
from gpuplan.sim.kubernetes.cluster import MILLI
from gpuplan.sim.kubernetes.kueue import Kueue
from gpuplan.sim.kubernetes.quota import NO_LIMIT


def quota_node(kueue: Kueue, change: KueueChange, queue_names: list[str]) -> int:
    """The quota-tree node a change edits: its ClusterQueue's, or its cohort's."""
    if change.clusterQueue is not None:
        return kueue.queues[queue_names.index(change.clusterQueue)].policy.node
    return next(
        i for i, node in enumerate(kueue.tree.nodes) if not node.is_queue and node.name == change.cohort
    )


def set_quotas(kueue: Kueue, change: KueueChange, queue_names: list[str], flavor_names: list[str]) -> None:
    """The change's ``flavors`` quotas (nominalQuota, borrowingLimit, lendingLimit, in GPUs) on its
    node; every ClusterQueue's figures may change."""
    kueue.dirty.update(range(len(kueue.queues)))
    node = quota_node(kueue, change, queue_names)
    for quota in change.flavors:
        kueue.tree.set_quota(
            node,
            flavor_names.index(quota.name),
            quota.nominalQuota * MILLI,
            NO_LIMIT if quota.borrowingLimit is None else quota.borrowingLimit * MILLI,
            NO_LIMIT if quota.lendingLimit is None else quota.lendingLimit * MILLI,
        )


def most_quota(
    kueue: Kueue, changes: Sequence[KueueChange], queue_names: list[str], flavor_names: list[str]
) -> list[list[float]]:
    """Per ClusterQueue and flavor, the most it could ever get over every quota the changes give
    (ExceedsMaxQuota refuses only what exceeds them all). The quotas are put back."""
    tree, queues = kueue.tree, kueue.queues
    flavors = range(len(flavor_names))
    saved = tree.quotas()
    most = [[tree.potential_available(q.policy.node, f) for f in flavors] for q in queues]
    for change in changes:
        set_quotas(kueue, change, queue_names, flavor_names)
        for q, queue in enumerate(queues):
            for f in flavors:
                most[q][f] = max(most[q][f], tree.potential_available(queue.policy.node, f))
    tree.restore(saved)
    return most
