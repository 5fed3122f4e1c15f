"""The hybrid model's settings and their one translation from a scenario (``prepare``): its
``models.hybrid`` (routing, split, lending) with each side's own settings; a split chosen in memory
(``with_split``); and the user's Kueue quotas scaled to the Kubernetes side (``scale_quotas``).

Kueue quotas follow the split. A scenario's ``models.kubernetes.kueue`` describes the whole cluster
(the Kubernetes model runs it on every node), so on a hybrid's Kubernetes side, which holds only
part of each pool, its ClusterQueues' ``nominalQuota`` would promise GPUs that are not there: Kueue
admits on quota alone, the pods of the workloads it admitted beyond the nodes stay Pending, and with
``waitForPodsReady`` they time out and requeue for ever (issue 39: 84,084 PodsReady timeouts on a
24-GPU side with 128-GPU quotas). Kueue's quotas are per ResourceFlavor (here a pool, or
``default-flavor``: any pool), a cohort's ClusterQueues lend each other their unused nominal quota,
``borrowingLimit`` caps what one borrows and ``lendingLimit`` what it lends
(https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/, "Cohort", "BorrowingLimit",
"LendingLimit"). So in every cohort tree (or lone ClusterQueue) and flavor whose pool is not all on
the Kubernetes side, every nominal quota, borrowing and lending limit is multiplied by the side's
share of the flavor's GPUs (side GPUs / pool GPUs), and further if the tree's nominal quotas would
still add up to more than the side's GPUs, then rounded to whole GPUs (limits down; nominal quotas
by largest remainder so that the tree's sum is the scaled sum rounded down, never above the side's
GPUs). ``models.kubernetes.kueue.changes`` are scaled by the same factors. A ClusterQueue whose
scaled quota can no longer admit the largest job routed to it there (a job its unscaled quota
could admit) is an InputError naming the file, line and field of that quota.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplan.errors import InputError
from gpuplan.scenario.hybrid import HybridSettings
from gpuplan.scenario.kubernetes import ClusterQueue, FlavorQuota, KueueChange
from gpuplan.sim.kubernetes import settings as kubernetes
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings
from gpuplan.sim.slurm import settings as slurm
from gpuplan.sim.slurm.settings import SlurmSettings

if TYPE_CHECKING:
    from gpuplan.inputs import Input
    from gpuplan.sim.cluster import Pool
    from gpuplan.sim.models import ModelSetup

ANY_FLAVOR = "default-flavor"  # a ResourceFlavor without nodeLabels: its pods go to any pool


@dataclass(frozen=True)
class HybridModelSettings:
    """``models.hybrid`` and the settings each side runs with; ``split_lines`` (per pool, the line
    of ``models.hybrid.split.POOL`` in ``path``, or of its nearest ancestor) place an error in a
    split that cannot hold a job, ``quota_lines`` (per field under ``models.kubernetes.kueue``,
    e.g. ``clusterQueues[0].flavors[1].nominalQuota``) one in a quota the split cannot scale.
    ``split``: Slurm nodes per pool chosen in memory (``with_split``), over the scenario's
    ``models.hybrid.split`` and the proposal."""

    hybrid: HybridSettings = field(default_factory=HybridSettings)
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    kubernetes: KubernetesModelSettings = field(default_factory=KubernetesModelSettings)
    path: Path | None = None
    split_lines: dict[str, int | None] = field(default_factory=dict)
    quota_lines: dict[str, int | None] = field(default_factory=dict)
    split: dict[str, int] = field(default_factory=dict)


def prepare(loaded: Input) -> ModelSetup[HybridModelSettings]:
    """A scenario's ``models.hybrid``, ``models.slurm`` and ``models.kubernetes`` on its pools
    (Kubernetes' documented defaults depend on the jobs routed to it: ``run_hybrid`` adds them)."""
    if loaded.scenario is None:
        raise InputError(
            "the hybrid model needs a scenario (its models.hybrid routes and splits)", field="--model"
        )
    from gpuplan.sim.models import ModelSetup

    scenario = loaded.scenario
    section = scenario.scenario.models.hybrid
    settings = HybridModelSettings(
        hybrid=section,
        slurm=slurm.prepare(loaded).settings,
        # as written: run_hybrid adds the documented defaults for the jobs routed to Kubernetes
        kubernetes=kubernetes.translate(loaded).settings,
        path=scenario.path,
        # every pool's: a proposal refused on a pool points at models.hybrid.split (or its parent)
        split_lines={
            pool.name: scenario.line_of(("models", "hybrid", "split", pool.name)) for pool in loaded.pools
        },
        quota_lines=_quota_lines(loaded),
    )
    return ModelSetup(loaded.pools, settings)


def _quota_lines(loaded: Input) -> dict[str, int | None]:
    """The line of each quota field under ``models.kubernetes.kueue`` (``clusterQueues[0].flavors[1].
    nominalQuota``), for an error in a quota the split cannot scale."""
    assert loaded.scenario is not None
    scenario = loaded.scenario
    kueue = scenario.scenario.models.kubernetes.kueue
    lines: dict[str, int | None] = {}
    counts = [("clusterQueues", [len(q.flavors) for q in kueue.clusterQueues])]
    counts.append(("cohorts", [len(c.flavors) for c in kueue.cohorts]))
    for kind, flavors in counts:
        for i, count in enumerate(flavors):
            for f in range(count):
                for name in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    at = ("models", "kubernetes", "kueue", kind, i, "flavors", f, name)
                    lines[f"{kind}[{i}].flavors[{f}].{name}"] = scenario.line_of(at)
    return lines


def with_backfill(settings: HybridModelSettings, backfill: str) -> HybridModelSettings:
    """``gpuplan simulate --backfill`` for the Slurm side."""
    return replace(settings, slurm=slurm.with_backfill(settings.slurm, backfill))


def with_split(settings: HybridModelSettings, split: dict[str, int]) -> HybridModelSettings:
    """The settings with ``split`` (Slurm nodes per pool, Kubernetes the rest) chosen in memory: the
    hybrid model runs it instead of the scenario's ``models.hybrid.split`` and the proposal for
    those pools (``split_source`` echoes ``chosen``). What a search over ``candidate_splits``
    (``gpuplan.sim.hybrid.model``) passes back; a split that cannot hold a routed job is refused as
    a scenario's is (field ``models.hybrid.split.POOL``).

        setup = MODELS.get("hybrid").setup(loaded)
        for split in candidate_splits(loaded.workload, setup.pools, setup.settings):
            run = run_model("hybrid", loaded.workload, setup.pools, with_split(setup.settings, split))
    """
    for name, nodes in split.items():
        if nodes < 0:
            raise InputError(f"{nodes} nodes for Slurm", field=f"models.hybrid.split.{name}")
    return replace(settings, split=dict(split))


# ---- Kueue quotas on the Kubernetes side -----------------------------------------------------------


@dataclass
class _Quota:
    """One flavor's quota of a ClusterQueue or Cohort, and where it is in the scenario."""

    owner: str  # "ClusterQueue NAME" or "Cohort NAME"
    key: str  # "clusterQueues[0].flavors[1]"
    quota: FlavorQuota
    scaled: dict[str, float] = field(default_factory=dict)


def _root(cohort: str | None, parents: dict[str, str | None]) -> str | None:
    seen = set()
    while cohort is not None and parents.get(cohort) is not None and cohort not in seen:
        seen.add(cohort)
        cohort = parents[cohort]
    return cohort


def _gpus(number: float) -> float | int:
    return int(number) if float(number).is_integer() else number


def scale_quotas(
    settings: HybridModelSettings,
    pools: list[Pool],
    kubernetes_nodes: dict[str, int],
    largest_jobs: dict[tuple[str, str], int] | None = None,
) -> tuple[KubernetesModelSettings, dict[str, Any], list[str]]:
    """The Kubernetes side's settings with the user's Kueue quotas scaled to its part of each pool
    (``kubernetes_nodes``; see the module docstring), what was scaled (ClusterQueue or ``cohort/NAME``
    -> flavor -> field -> ``{"from": GPUs, "to": GPUs}``) and the same as sentences. ``largest_jobs``
    ((ClusterQueue, pool) -> GPUs of the largest job routed to Kubernetes) is checked against the
    scaled quotas. Without user ClusterQueues (the model's default one holds the side's GPUs) or with
    Kueue off, nothing changes.

        side, scaled, sentences = scale_quotas(settings, pools, {"h100": 3}, {("pipelines", "h100"): 8})
        scaled == {"pipelines": {"h100": {"nominalQuota": {"from": 128, "to": 24}}}}
    """
    kueue = settings.kubernetes.kubernetes.kueue
    if not kueue.enable or not kueue.clusterQueues:
        return settings.kubernetes, {}, []
    side = {p.name: min(kubernetes_nodes.get(p.name, p.nodes), p.nodes) * p.gpus_per_node for p in pools}
    whole = {p.name: p.gpus for p in pools}
    side[ANY_FLAVOR], whole[ANY_FLAVOR] = sum(side.values()), sum(whole.values())
    if all(side[name] >= whole[name] for name in whole):
        return settings.kubernetes, {}, []
    parents = {c.name: c.parent for c in kueue.cohorts}
    groups: dict[tuple[str, str], list[_Quota]] = {}  # (cohort tree or lone queue, flavor) -> quotas
    for i, cohort in enumerate(kueue.cohorts):
        tree = f"cohort/{_root(cohort.name, parents)}"
        for f, quota in enumerate(cohort.flavors):
            item = _Quota(f"Cohort {cohort.name}", f"cohorts[{i}].flavors[{f}]", quota)
            groups.setdefault((tree, quota.name), []).append(item)
    tree_of: dict[str, str] = {}
    for i, queue in enumerate(kueue.clusterQueues):
        root = _root(queue.cohort, parents)
        tree_of[queue.name] = f"queue/{queue.name}" if root is None else f"cohort/{root}"
        for f, quota in enumerate(queue.flavors):
            item = _Quota(f"ClusterQueue {queue.name}", f"clusterQueues[{i}].flavors[{f}]", quota)
            groups.setdefault((tree_of[queue.name], quota.name), []).append(item)
    factors: dict[tuple[str, str], float] = {}
    for (tree, flavor), items in groups.items():
        if flavor not in side or side[flavor] >= whole[flavor]:
            continue
        nominal = sum(item.quota.nominalQuota for item in items)
        factor = side[flavor] / max(whole[flavor], nominal, 1e-9)
        factors[tree, flavor] = factor
        _scale_group(items, factor)
    by_key = {item.key: item for items in groups.values() for item in items}

    def scaled_flavors(kind: str, index: int, flavors: list[FlavorQuota]) -> list[FlavorQuota]:
        return [
            q.model_copy(update=by_key[f"{kind}[{index}].flavors[{f}]"].scaled) for f, q in enumerate(flavors)
        ]

    queues = [
        q.model_copy(update={"flavors": scaled_flavors("clusterQueues", i, q.flavors)})
        for i, q in enumerate(kueue.clusterQueues)
    ]
    cohorts = [
        c.model_copy(update={"flavors": scaled_flavors("cohorts", i, c.flavors)})
        for i, c in enumerate(kueue.cohorts)
    ]
    changes = [_scaled_change(change, tree_of, parents, factors) for change in kueue.changes]
    scaled_kueue = kueue.model_copy(update={"clusterQueues": queues, "cohorts": cohorts, "changes": changes})
    echo: dict[str, Any] = {}
    sentences = []
    for item in by_key.values():
        if not item.scaled:
            continue
        kind, owner = item.owner.split(" ", 1)
        name = owner if kind == "ClusterQueue" else f"cohort/{owner}"
        entry = echo.setdefault(name, {}).setdefault(item.quota.name, {})
        for key, value in item.scaled.items():
            before = getattr(item.quota, key)
            entry[key] = {"from": _gpus(before), "to": _gpus(value)}
            sentences.append(
                f"{item.owner} {key} of {item.quota.name} scaled from {_gpus(before)} to "
                f"{_gpus(value)} GPUs: the hybrid's Kubernetes side has {side[item.quota.name]} of its "
                f"{whole[item.quota.name]} GPUs"
            )
    _check_reach(settings, groups, largest_jobs or {}, side, whole)
    updated = settings.kubernetes.kubernetes.model_copy(update={"kueue": scaled_kueue})
    return replace(settings.kubernetes, kubernetes=updated), echo, sentences


def _scale_group(items: list[_Quota], factor: float) -> None:
    """Each item's ``scaled`` fields: nominal quotas by largest remainder (their sum the scaled sum
    rounded down), limits rounded down."""
    targets = [item.quota.nominalQuota * factor for item in items]
    floors = [math.floor(t + 1e-9) for t in targets]
    extra = math.floor(sum(targets) + 1e-9) - sum(floors)
    by_remainder = sorted(range(len(items)), key=lambda i: (-(targets[i] - floors[i]), i))
    for i in by_remainder[: max(extra, 0)]:
        floors[i] += 1
    for item, nominal in zip(items, floors, strict=True):
        changed = {"nominalQuota": float(nominal)}
        for key in ("borrowingLimit", "lendingLimit"):
            limit = getattr(item.quota, key)
            if limit is not None:
                changed[key] = float(math.floor(limit * factor + 1e-9))
        item.scaled = {key: value for key, value in changed.items() if value != getattr(item.quota, key)}


def _scaled_change(
    change: KueueChange,
    tree_of: dict[str, str],
    parents: dict[str, str | None],
    factors: dict[tuple[str, str], float],
) -> KueueChange:
    """A ``changes`` entry's quotas scaled by its tree's factors (rounded down)."""
    tree = (
        tree_of.get(change.clusterQueue, "")
        if change.clusterQueue is not None
        else f"cohort/{_root(change.cohort, parents)}"
    )
    flavors = []
    for quota in change.flavors:
        factor = factors.get((tree, quota.name), 1.0)
        update: dict[str, float] = {"nominalQuota": float(math.floor(quota.nominalQuota * factor + 1e-9))}
        for key in ("borrowingLimit", "lendingLimit"):
            limit = getattr(quota, key)
            if limit is not None:
                update[key] = float(math.floor(limit * factor + 1e-9))
        flavors.append(quota.model_copy(update=update) if factor != 1.0 else quota)
    return change.model_copy(update={"flavors": flavors})


def _reach(queue: ClusterQueue, items: list[_Quota], mine: _Quota, scaled: bool) -> float:
    """The most a ClusterQueue can be given in a flavor: its nominal quota plus what its cohort tree
    may lend it (the others' nominal quotas within their lending limits), within its borrowing limit."""

    def value(item: _Quota, key: str) -> float | None:
        if scaled and key in item.scaled:
            return item.scaled[key]
        result: float | None = getattr(item.quota, key)
        return result

    own = value(mine, "nominalQuota") or 0.0
    if queue.cohort is None:
        return own
    lent = 0.0
    for item in items:
        if item is mine:
            continue
        nominal = value(item, "nominalQuota") or 0.0
        lending = value(item, "lendingLimit")
        lent += nominal if lending is None else min(nominal, lending)
    borrowing = value(mine, "borrowingLimit")
    return own + (lent if borrowing is None else min(lent, borrowing))


def _check_reach(
    settings: HybridModelSettings,
    groups: dict[tuple[str, str], list[_Quota]],
    largest_jobs: dict[tuple[str, str], int],
    side: dict[str, int],
    whole: dict[str, int],
) -> None:
    """Refuse a scaled quota that no longer admits the largest job routed to its ClusterQueue (in a
    flavor of its pool or default-flavor) where the user's quota did."""
    kueue = settings.kubernetes.kubernetes.kueue
    group_of = {item.key: items for items in groups.values() for item in items}
    for i, queue in enumerate(kueue.clusterQueues):
        for (name, pool), gpus in sorted(largest_jobs.items()):
            if name != queue.name:
                continue
            usable = [(f, q.name) for f, q in enumerate(queue.flavors) if q.name in (pool, ANY_FLAVOR)]
            if not usable:
                continue  # NoMatchingFlavor whatever the split: the Kubernetes model reports it
            reach = []
            for f, flavor in usable:
                key = f"clusterQueues[{i}].flavors[{f}]"
                items = group_of[key]
                mine = next(item for item in items if item.key == key)
                reach.append((_reach(queue, items, mine, False), _reach(queue, items, mine, True), f, flavor))
            could = max(before for before, _, _, _ in reach) + 1e-9 >= gpus
            can = max(after for _, after, _, _ in reach) + 1e-9 >= gpus
            if can or not could:
                continue
            _, after, f, flavor = reach[0]
            where = (
                f"pool {flavor!r} has no node on the Kubernetes side"
                if side[flavor] == 0
                else f"the Kubernetes side has {side[flavor]} of the {whole[flavor]} GPUs of {flavor!r}"
            )
            raise InputError(
                f"ClusterQueue {queue.name!r} can be given at most {_gpus(after)} GPUs of {flavor!r} once "
                f"its quota is scaled to the hybrid's split ({where}), but jobs of {gpus} GPUs routed to "
                "Kubernetes need it; give Kubernetes more nodes (models.hybrid.split), route them to "
                "Slurm (models.hybrid.routing) or give this quota for the split",
                path=settings.path,
                line=settings.quota_lines.get(f"clusterQueues[{i}].flavors[{f}].nominalQuota"),
                field=f"models.kubernetes.kueue.clusterQueues[{i}].flavors[{f}].nominalQuota",
            )
