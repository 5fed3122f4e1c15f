"""Pathologies a model's run shows, named with their figure and the documented fix.

``diagnose`` reads one model's ``summary.json`` object (``gpuplan.metrics.summary.summarize``, with
the model's ``extra`` figures merged in) and returns what went wrong in terms a reviewer can act on:

- ``gang_deadlock``: jobs holding part of their pods' GPUs when nothing else can happen
  (``kubernetes.gang``); fix: Kueue's ``waitForPodsReady``;
- ``quota_exceeds_capacity``: Kueue's nominal quota in a flavor above the GPUs of the nodes it
  places on (``kubernetes.kueue.flavors``); fix: lower ``nominalQuota`` or add nodes;
- ``fragmentation``: admissions whose quota fit but whose pods no node could hold, under
  kube-scheduler's ``LeastAllocated`` (``kubernetes.kueue.quota_fit_but_fragmented``); fix:
  ``MostAllocated`` (bin packing);
- ``starved_side``: a side of the hybrid leaving work undone or waiting far longer while the other
  idles (``sides``); fix: the split or lending;
- ``queue_never_drains``: work still queued at the horizon (``backlog``), and whether the queue grew;
  fix: more nodes or less load.

Each is a dict with the keys of ``Diagnosis``. For the hybrid, the Kubernetes figures are its
Kubernetes side's (``kubernetes.kubernetes``, settings ``settings.kubernetes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from gpuplan.scenario.units import format_duration


class Diagnosis(TypedDict):
    """One pathology: ``id`` (stable, for code), ``title``, its ``figure`` in ``unit``, ``detail``
    (one sentence with the figure), ``fix`` (the documented fix, one sentence) and ``source`` (the
    documentation or upstream file:function the fix comes from)."""

    id: str
    title: str
    figure: float
    unit: str
    detail: str
    fix: str
    source: str


# A share of the work below this is noise a reviewer would not act on (one job of a small run can
# be more); above it, a result that leaves it undone is not a fair result for the model.
MATERIAL_SHARE = 0.05
# Fragmented admissions: at least this many and this share of the jobs Kueue managed. A few
# happen whenever a large pod arrives just after small ones spread; a pattern is many of them.
FRAGMENTED_MIN_ADMISSIONS = 10
FRAGMENTED_MIN_SHARE = 0.05
# A hybrid side is starved when its p95 wait is this many times the other side's (and at least
# STARVED_WAIT_MIN_S: minutes of waiting starve nobody) ...
STARVED_WAIT_FACTOR = 10.0
STARVED_WAIT_MIN_S = 3600.0
# ... while the other side left at least this share of its GPU-hours idle: capacity a different
# split or lending could have given it.
IDLE_SHARE = 0.3

KUEUE_ALL_OR_NOTHING = "https://kueue.sigs.k8s.io/docs/concepts/all_or_nothing/"
KUEUE_WAIT_FOR_PODS_READY = "https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/"
KUEUE_CLUSTER_QUEUE = "https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/#flavors-and-resources"
BIN_PACKING = "https://kubernetes.io/docs/concepts/scheduling-eviction/resource-bin-packing/"
HYBRID_DOCS = "docs/hybrid.md#the-hybrid-model (models.hybrid.split, models.hybrid.lending)"
RESULTS_DOCS = "docs/results.md#summaryjson (work_not_done)"


def _get(tree: Any, *path: str) -> Any:
    """``tree[path[0]][path[1]]...``, None where a key is missing or a level is not a mapping."""
    for key in path:
        if not isinstance(tree, Mapping):
            return None
        tree = tree.get(key)
    return tree


def _sentence(text: str) -> str:
    """``text`` with its first letter a capital (a sentence may open with ``where``'s words)."""
    return text[:1].upper() + text[1:]


def _duration(seconds: float) -> str:
    """``1d`` for a whole unit (a horizon as written), else ``10.9 h``, ``12 min`` or ``3 s``."""
    exact = format_duration(round(seconds))
    if not exact.endswith("s"):
        return exact
    if seconds >= 3600.0:
        return f"{seconds / 3600.0:,.1f} h"
    return f"{seconds / 60.0:.0f} min" if seconds >= 60.0 else f"{seconds:.0f} s"


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _kubernetes(model: str, summary: Mapping[str, Any]) -> tuple[Any, Any, str]:
    """The Kubernetes figures and settings of the run (the hybrid's: its Kubernetes side's), and how
    to name where they come from in a sentence."""
    if model == "hybrid":
        return (
            _get(summary, "kubernetes", "kubernetes"),
            _get(summary, "settings", "kubernetes"),
            "on the Kubernetes side, ",
        )
    return _get(summary, "kubernetes"), _get(summary, "settings"), ""


def _gang_deadlock(figures: Any, settings: Any, where: str) -> Diagnosis | None:
    gang = _get(figures, "gang")
    if not _get(gang, "deadlocked"):
        return None
    jobs = int(_number(_get(gang, "jobs_partly_placed_at_end")))
    gpus = _number(_get(gang, "gpus_held_idle_at_end"))
    held = _number(_get(gang, "idle_held_gpu_hours"))
    if not _get(settings, "kueue"):
        fix = (
            "Admit jobs through Kueue (models.kubernetes.kueue.enable: true) with waitForPodsReady "
            "(enable: true, blockAdmission: true), so a job's pods are admitted together and a job "
            "not all ready by the timeout is evicted and requeued."
        )
    elif not _get(settings, "waitForPodsReady"):
        fix = (
            "Enable Kueue's waitForPodsReady (models.kubernetes.kueue.waitForPodsReady: enable: true, "
            "blockAdmission: true): admission waits until the admitted job's pods are ready, and a job "
            "not all ready by the timeout (30m) is evicted and requeued."
        )
    else:
        fix = (
            "Set waitForPodsReady.blockAdmission: true so jobs are admitted one at a time, or lower "
            "nominalQuota to what the nodes hold (Topology Aware Scheduling checks placement at admission)."
        )
    return {
        "id": "gang_deadlock",
        "title": "Gang deadlock: partly placed jobs hold GPUs idle",
        "figure": held,
        "unit": "GPU-hours",
        "detail": _sentence(
            f"{where}{jobs:,} job{'' if jobs == 1 else 's'} ended the run holding {gpus:,.0f} GPUs with "
            f"only part of {'its' if jobs == 1 else 'their'} pods placed, each waiting for the other's "
            f"GPUs (a deadlock): {held:,.0f} GPU-hours held idle."
        ),
        "fix": fix,
        "source": f"{KUEUE_WAIT_FOR_PODS_READY}; {KUEUE_ALL_OR_NOTHING}",
    }


def _quota_exceeds_capacity(figures: Any, where: str) -> Diagnosis | None:
    flavors = _get(figures, "kueue", "flavors")
    if not isinstance(flavors, Mapping) or not flavors:
        return None
    over = {
        name: (_number(_get(f, "nominal_gpus")), _number(_get(f, "placeable_gpus")))
        for name, f in flavors.items()
    }
    excess = {name: nominal - gpus for name, (nominal, gpus) in over.items() if nominal > gpus}
    # default-flavor places on every pool, beside the pools' own flavors: in all, the quota may
    # exceed the GPUs although no one flavor does
    total_nominal = sum(nominal for nominal, _ in over.values())
    total_gpus = max((gpus for _, gpus in over.values()), default=0.0)
    if "default-flavor" in over:
        total_gpus = over["default-flavor"][1]
    figure = max(sum(excess.values()), total_nominal - total_gpus if "default-flavor" in over else 0.0)
    if figure <= 0:
        return None
    if excess:
        name = max(excess, key=lambda n: (excess[n], n))
        nominal, gpus = over[name]
        worst = f"flavor {name} has {nominal:,.0f} GPUs of nominal quota for nodes of {gpus:,.0f} GPUs"
        fix = (
            f"Lower nominalQuota of flavor {name} (over all ClusterQueues and cohorts) to its nodes' "
            f"{gpus:,.0f} GPUs, or add nodes to it."
        )
    else:
        worst = f"the flavors hold {total_nominal:,.0f} GPUs of nominal quota for {total_gpus:,.0f} GPUs"
        fix = (
            f"Lower the flavors' nominalQuota to {total_gpus:,.0f} GPUs in all (default-flavor shares "
            "every pool with the pools' own flavors), or add nodes."
        )
    return {
        "id": "quota_exceeds_capacity",
        "title": "Kueue quota exceeds the GPUs its nodes hold",
        "figure": figure,
        "unit": "GPUs",
        "detail": _sentence(
            f"{where}{worst}: Kueue admits {figure:,.0f} GPUs of pods no node can hold, which wait "
            "Pending holding their quota."
        ),
        "fix": fix,
        "source": f"{KUEUE_CLUSTER_QUEUE}; {KUEUE_ALL_OR_NOTHING}",
    }


def _fragmentation(figures: Any, settings: Any, jobs: float, where: str) -> Diagnosis | None:
    fragmented = _number(_get(figures, "kueue", "quota_fit_but_fragmented"))
    strategy = _get(settings, "scoringStrategy")
    if strategy != "LeastAllocated" or fragmented < FRAGMENTED_MIN_ADMISSIONS:
        return None
    if jobs > 0 and fragmented < FRAGMENTED_MIN_SHARE * jobs:
        return None
    timeouts = int(_number(_get(figures, "kueue", "pods_ready_timeouts")))
    then = f", and {timeouts:,} waitForPodsReady timeouts followed" if timeouts else ""
    return {
        "id": "fragmentation",
        "title": "Fragmentation: quota fit, the nodes did not",
        "figure": fragmented,
        "unit": "admissions",
        "detail": _sentence(
            f"{where}{fragmented:,.0f} admissions had the quota but no node with room for their pods, as "
            f"kube-scheduler's LeastAllocated spreads small pods over every node{then}."
        ),
        "fix": (
            "Score nodes for bin packing: models.kubernetes.scheduler.scoringStrategy: MostAllocated "
            "(kube-scheduler NodeResourcesFit, with nvidia.com/gpu among its resources), so small pods "
            "fill nodes already in use and leave whole nodes for large ones."
        ),
        "source": BIN_PACKING,
    }


def _starved_side(summary: Mapping[str, Any]) -> Diagnosis | None:
    sides = _get(summary, "sides")
    if not isinstance(sides, Mapping) or set(sides) != {"slurm", "kubernetes"}:
        return None
    found: list[tuple[float, Diagnosis]] = []
    for side, other in (("slurm", "kubernetes"), ("kubernetes", "slurm")):
        mine, theirs = sides[side], sides[other]
        available = _number(_get(theirs, "gpu_hours_available"))
        if available <= 0:
            continue
        idle_share = max(1.0 - _number(_get(theirs, "gpu_hours_busy")) / available, 0.0)
        if idle_share < IDLE_SHARE:
            continue
        asked = _number(_get(mine, "gpu_hours_asked"))
        undone = _number(_get(mine, "gpu_hours_not_done"))
        wait = _number(_get(mine, "wait_p95_s"))
        other_wait = _number(_get(theirs, "wait_p95_s"))
        idle = f"while {other} left {idle_share:.0%} of its GPU-hours idle"
        if asked > 0 and undone >= MATERIAL_SHARE * asked:
            figure, unit = undone, "GPU-hours not done"
            what = (
                f"the {side} side left {undone:,.0f} GPU-hours ({undone / asked:.0%} of its work) "
                f"undone {idle}"
            )
        elif wait >= STARVED_WAIT_MIN_S and wait >= STARVED_WAIT_FACTOR * other_wait:
            figure, unit = wait, "s (p95 wait)"
            what = (
                f"the {side} side's p95 wait was {_duration(wait)} against {other}'s "
                f"{_duration(other_wait)} {idle}"
            )
        else:
            continue
        if side == "kubernetes":
            fix = (
                "Give Kubernetes more nodes (a lower models.hybrid.split.POOL, the Slurm nodes) or let "
                "it borrow Slurm's idle nodes (models.hybrid.lending.policy: kubernetes_borrows)."
            )
        else:
            fix = (
                "Give Slurm more nodes: a higher models.hybrid.split.POOL (the nodes of each pool for Slurm)."
            )
        found.append(
            (
                undone if unit == "GPU-hours not done" else 0.0,
                {
                    "id": "starved_side",
                    "title": f"The {side.capitalize()} side is starved",
                    "figure": figure,
                    "unit": unit,
                    "detail": f"The split starves one side: {what}.",
                    "fix": fix,
                    "source": HYBRID_DOCS,
                },
            )
        )
    return max(found, key=lambda pair: pair[0])[1] if found else None


def _queue_never_drains(summary: Mapping[str, Any], horizon_s: float | None) -> Diagnosis | None:
    backlog = _get(summary, "backlog")
    if isinstance(backlog, Mapping):
        queued = _get(backlog, "queued_at_horizon")
        jobs, hours = _number(_get(queued, "jobs")), _number(_get(queued, "gpu_hours"))
        share = hours / max(_number(_get(backlog, "submitted_gpu_hours")), 1e-9)
        at = _number(_get(backlog, "horizon_s"))  # None (0 here): no horizon, the run's end
        samples = [int(_number(_get(s, "jobs"))) for s in _get(backlog, "queued_jobs") or []]
    else:  # a run without the figure: the jobs still queued when it ended
        unfinished = _get(summary, "work_not_done", "unfinished")
        jobs, hours = _number(_get(unfinished, "jobs")), _number(_get(unfinished, "gpu_hours"))
        share = hours / max(hours + _number(_get(summary, "gpu_hours")), 1e-9)
        at, samples = 0.0, []
    if jobs < 1 or share < MATERIAL_SHARE:
        return None
    when = f"at the {_duration(at)} horizon" if at > 0 else "when the run ended"
    if at == 0 and horizon_s and _number(_get(summary, "makespan_s")) > horizon_s:
        when += f", past the {_duration(horizon_s)} horizon"
    # growing: more queued at each of the last samples (half, three quarters of the horizon, and at it)
    growing = len(samples) >= 3 and samples[-3] < samples[-2] < samples[-1]
    # Jobs submitted late are queued at the horizon in any healthy run and drain after it: the queue
    # "never drains" when it grows towards the horizon, or when work is still unfinished at the end.
    unfinished = _number(_get(summary, "work_not_done", "unfinished", "gpu_hours"))
    asked = _number(_get(summary, "work_not_done", "workload_gpu_hours"))
    stuck = asked > 0 and unfinished / asked >= MATERIAL_SHARE
    if samples and not growing and not stuck:
        return None
    counts = ", ".join(f"{n:,}" for n in samples)
    trend = ""
    if samples:
        trend = f"the queue was {'' if growing else 'not '}growing ({counts} jobs queued at each quarter)"
    return {
        "id": "queue_never_drains",
        "title": "The queue never drains",
        "figure": hours,
        "unit": "GPU-hours",
        "detail": (
            f"{jobs:,.0f} jobs ({hours:,.0f} GPU-hours, {share:.0%} of the work submitted) were still "
            f"queued {when}{', and ' + trend if trend else ''}."
        ),
        "fix": (
            "Add nodes or lower the load until the queue drains within the horizon"
            + (" (a growing queue means demand above capacity)." if growing else ".")
        ),
        "source": RESULTS_DOCS,
    }


def _shared_nodes(summary: Mapping[str, Any]) -> bool:
    """Whether some pool's nodes hold more than one GPU: only there can pods of a few GPUs spread
    over nodes (on nodes of one GPU a pod takes a node whatever the scoring)."""
    pools = _get(summary, "cluster", "pools")
    return not isinstance(pools, Mapping) or any(
        _number(_get(pool, "gpus_per_node")) > 1 for pool in pools.values() if isinstance(pool, Mapping)
    )


def diagnose(model: str, summary: Mapping[str, Any], horizon_s: float | None) -> list[dict[str, Any]]:
    """The pathologies one model's summary shows, most structural first (each a ``Diagnosis``):

    >>> [d["id"] for d in diagnose("kubernetes", summarize(run), 7 * 86400.0)]
    ['gang_deadlock', 'quota_exceeds_capacity', 'queue_never_drains']

    ``model`` is the model's name (``hybrid`` reads its Kubernetes side's figures and its sides');
    ``horizon_s`` (None for a trace) words the queue's figure when the run has no ``backlog`` (its
    own, at the workload's horizon, comes first)."""
    figures, settings, where = _kubernetes(model, summary)
    submitted = _number(_get(summary, "sides", "kubernetes", "jobs") if model == "hybrid" else None)
    if model != "hybrid":
        submitted = _number(_get(summary, "jobs", "submitted"))
    found = [
        _gang_deadlock(figures, settings, where),
        _quota_exceeds_capacity(figures, where),
        _fragmentation(figures, settings, submitted, where) if _shared_nodes(summary) else None,
        _starved_side(summary) if model == "hybrid" else None,
        _queue_never_drains(summary, horizon_s),
    ]
    return [dict(diagnosis) for diagnosis in found if diagnosis is not None]


def over_seeds(found: Mapping[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The pathologies of several seeds of one model: each once, in the order first seen, with the
    seeds it shows in (``seeds``), its median figure over them and their range (``figure_range``);
    the sentences are the first such seed's. A pathology of one seed is one a reviewer must see.

    Example: ``over_seeds({1: diagnose("kubernetes", s1, h), 2: diagnose("kubernetes", s2, h)})``"""
    grouped: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for seed, diagnoses in found.items():
        for diagnosis in diagnoses:
            grouped.setdefault(diagnosis["id"], []).append((seed, diagnosis))
    combined = []
    for pairs in grouped.values():
        figures = sorted(float(d["figure"]) for _, d in pairs)
        middle = len(figures) // 2
        median = figures[middle] if len(figures) % 2 else (figures[middle - 1] + figures[middle]) / 2
        combined.append(
            {
                **pairs[0][1],
                "figure": median,
                "figure_range": [figures[0], figures[-1]],
                "seeds": [seed for seed, _ in pairs],
                "of_seeds": len(found),
            }
        )
    return combined


def diagnosis_sentence(model: str, diagnosis: Mapping[str, Any]) -> str:
    """A pathology as one warning: what, with its figure (and the seeds it shows in), and the fix."""
    seeds, of_seeds = diagnosis.get("seeds"), diagnosis.get("of_seeds", 1)
    where = f" (in {len(seeds)} of {of_seeds} seeds)" if seeds and of_seeds > 1 else ""
    return f"{model}: {diagnosis['title']}{where}: {diagnosis['detail']} Fix: {diagnosis['fix']}"
