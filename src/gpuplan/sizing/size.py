"""``gpuplan size SCENARIO``: per model, the least-cost node counts that meet the scenario's targets.

A size meets the targets when it meets them in every seed, or in the share of the seeds
``quantile`` states (``advisor.scoring.target_misses``: a material share of the work left undone
misses them all). The targets that more nodes help (the p95
wait, SLO attainment) decide the search: they only get better with more nodes, so each pool's count
is found by bisection, the other pools held, then the pools again in turn (coordinate descent) until
no count moves. The search starts from the scenario's counts, doubled (every pool at once) until the
targets are met or ``MAX_FACTOR`` times the scenario's counts miss them. The targets more nodes hurt
(the utilisation floor, the budget) are then checked at that size: the least-cost size is the best
they can get, so missing one there means no size meets every target.

Each candidate is a variant of the scenario (``--set cluster.pools.NAME.nodes=N``; for Kubernetes
the node pool's ``maxNodes`` too, and ``minNodes`` when above it; for the hybrid a ``split`` the
scenario gives, scaled with the pool) run on every seed through ``sweep.points.evaluate``: its
points are stored in OUT/points, so a rerun, or a sweep over the same variants, reads them back.
Finally each pool's count minus one is checked to miss a target on some seed (``minimal``).

Example: ``size(SizeRequest(Path("examples/research-lab.yaml"), out=Path("size-out")))``
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuplan import __version__
from gpuplan.advisor.evidence import lookup
from gpuplan.advisor.scoring import target_misses
from gpuplan.compare import DEFAULT_SEEDS
from gpuplan.errors import InputError
from gpuplan.inputs import Input
from gpuplan.results import manifest
from gpuplan.results.files import prepare_out, write_json, write_text
from gpuplan.results.transaction import Stage, open_stage
from gpuplan.scenario.model import MAX_NODES
from gpuplan.sweep.points import (
    POINTS_DIR,
    Executor,
    PointStore,
    Progress,
    VariantOutcome,
    evaluate,
    load_variant,
)

# the targets more nodes help, and those more nodes hurt
HELPED = ("p95_wait", "slo_attainment")
HURT = ("gpu_utilization", "budget_usd_per_month")
MAX_FACTOR = 16  # the search gives up above this many times the scenario's nodes
MAX_PASSES = 4  # coordinate descent: passes over the pools at most


@dataclass(frozen=True)
class SizeRequest:
    scenario: Path
    out: Path = Path("gpuplan-out")
    models: tuple[str, ...] | None = None  # default: the scenario's models.compare
    seeds: int = DEFAULT_SEEDS
    sets: tuple[str, ...] = ()  # --set applied to every candidate
    executor: Executor | None = None
    # a target holds where it holds in at least this share of the seeds (1: every seed)
    quantile: float = 1.0

    def holds(self, met: Sequence[bool]) -> bool:
        """Does a target met in the seeds ``met`` hold (in at least ``quantile`` of them)?"""
        return bool(met) and sum(met) >= math.ceil(self.quantile * len(met) - 1e-9)


@dataclass
class Candidate:
    nodes: dict[str, int]
    meets: bool  # the targets more nodes help, in every seed
    outcome: VariantOutcome | None  # None: the scenario at this size is no valid one (why)
    why: str = ""

    def figure(self, model: str, path: str) -> Any:
        return None if self.outcome is None else lookup(self.outcome.gathered.models.get(model), path)


@dataclass
class ModelSize:
    model: str
    found: bool
    nodes: dict[str, int]  # the least-cost size (the largest tried when none met the targets)
    figures: dict[str, Any]  # its medians over the seeds
    targets: dict[str, str]  # target -> met | missed, in every seed
    minimal: dict[str, bool]  # pool -> one node fewer misses a target on some seed
    candidates: list[Candidate] = field(default_factory=list)
    simulations: int = 0
    extra_sets: list[str] = field(default_factory=list)  # what else the size sets (maxNodes, split)
    sets: list[str] = field(default_factory=list)  # the size as --set (after the request's own)
    why: str = ""

    def verdict(self) -> str:
        """ "meets the targets", or what it misses (or why there is no size)."""
        if self.found:
            return "meets the targets"
        missed = [target for target, status in self.targets.items() if status == "missed"]
        return f"misses {', '.join(missed)}" if missed else self.why


@dataclass
class SizeResult:
    sizes: list[ModelSize]
    files: list[Path]
    progress: Progress
    summary: dict[str, Any]  # size.json's
    warnings: list[str] = field(default_factory=list)


class _Search:
    """One model's search: candidates by node counts, each judged once."""

    def __init__(
        self, request: SizeRequest, model: str, executor: Executor, store: PointStore, base: Any
    ) -> None:
        self.request, self.model, self.executor, self.store = request, model, executor, store
        self.base = base  # the scenario as read (with the request's --set)
        targets = base.scenario.targets.values()
        self.helped = {name: targets[name] for name in HELPED}
        self.hurt = {name: targets[name] for name in HURT}
        self.judged: dict[tuple[int, ...], Candidate] = {}
        self.pools = [pool.name for pool in base.pools]
        self.progress = Progress()
        self.on_judged: Callable[[str, dict[str, int], bool, Progress], None] | None = None

    def sets_of(self, nodes: dict[str, int]) -> list[str]:
        """The --set of a candidate: every pool's nodes, and what must follow them."""
        sets = list(self.request.sets)
        scenario = self.base.scenario
        for pool in self.pools:
            sets.append(f"cluster.pools.{pool}.nodes={nodes[pool]}")
        if self.model == "kubernetes":
            for spec in scenario.models.kubernetes.nodePools:
                if spec.pool in nodes and spec.maxNodes is not None:
                    sets.append(f"models.kubernetes.nodePools.{spec.pool}.maxNodes={nodes[spec.pool]}")
                    if spec.minNodes is not None and spec.minNodes > nodes[spec.pool]:
                        sets.append(f"models.kubernetes.nodePools.{spec.pool}.minNodes={nodes[spec.pool]}")
        # a split the scenario gives scales with its pool (for every model: the scenario stays valid)
        written = {pool.name: pool.nodes for pool in self.base.pools}
        for pool, given in scenario.models.hybrid.split.items():
            if pool in nodes and written.get(pool):
                scaled = min(round(given * nodes[pool] / written[pool]), nodes[pool])
                sets.append(f"models.hybrid.split.{pool}={scaled}")
        return sets

    def judge(self, nodes: dict[str, int]) -> Candidate:
        key = tuple(nodes[p] for p in self.pools)
        if key in self.judged:
            return self.judged[key]

        request = self.request
        try:
            (outcome,), progress = evaluate(
                request.scenario,
                [self.sets_of(nodes)],
                [self.model],
                request.seeds,
                self.executor,
                self.store,
            )
        except InputError as exc:  # e.g. a pool too small for the hybrid's split: no size that works
            candidate = Candidate(dict(nodes), False, None, str(exc))
            self.judged[key] = candidate
            return candidate
        self.progress.total += progress.total
        self.progress.run += progress.run
        self.progress.reused += progress.reused
        seeds = [outcome.gathered.per_seed[seed].get(self.model) for seed in outcome.seeds]
        meets = self.request.holds([s is not None and target_misses(s, self.helped) == 0 for s in seeds])
        candidate = Candidate(dict(nodes), meets, outcome)
        self.judged[key] = candidate
        if self.on_judged:
            self.on_judged(self.model, candidate.nodes, meets, self.progress)
        return candidate

    def run(self) -> ModelSize:
        start = {pool.name: pool.nodes for pool in self.base.pools}
        cap = {p: min(n * MAX_FACTOR, MAX_NODES) for p, n in start.items()}
        nodes = dict(start)
        while not self.judge(nodes).meets:  # grow every pool until the targets are met
            if all(nodes[p] >= cap[p] for p in self.pools):
                return self._result(
                    nodes, found=False, why=f"{MAX_FACTOR} x the scenario's nodes miss the targets"
                )
            nodes = {p: min(2 * nodes[p], cap[p]) for p in self.pools}
        for _ in range(MAX_PASSES):  # then each pool down, the others held, until none moves
            moved = False
            for pool in self.pools:
                low, high = 1, nodes[pool]
                while low < high:
                    middle = (low + high) // 2
                    if self.judge({**nodes, pool: middle}).meets:
                        high = middle
                    else:
                        low = middle + 1
                moved |= high != nodes[pool]
                nodes[pool] = high
            if not moved:
                break
        return self._result(nodes, found=True)

    def _result(self, nodes: dict[str, int], found: bool, why: str = "") -> ModelSize:
        chosen = self.judge(nodes)
        assert chosen.outcome is not None  # (the scenario's own size, or one that met the targets)
        body = chosen.outcome.gathered.models.get(self.model)
        minimal = {}
        if found:
            for pool in self.pools:
                minimal[pool] = nodes[pool] == 1 or not self.judge({**nodes, pool: nodes[pool] - 1}).meets
        seeds = [chosen.outcome.gathered.per_seed[seed].get(self.model) for seed in chosen.outcome.seeds]
        targets = {}
        for name, required in {**self.helped, **self.hurt}.items():
            if required is None:
                continue
            met = [s is not None and target_misses(s, {name: required}) == 0 for s in seeds]
            targets[name] = "met" if self.request.holds(met) else "missed"
        if found and "missed" in targets.values():
            why = "the least-cost size meeting the wait and SLO targets misses " + ", ".join(
                t for t, status in targets.items() if status == "missed"
            )
        figures = {
            "p95_wait_s": lookup(body, "wait_s.p95"),
            "gpu_utilization": lookup(body, "gpu_utilization"),
            "cost_usd_per_month": lookup(body, "cost.usd_per_month"),
            "work_not_done_gpu_hours": lookup(body, "work_not_done.gpu_hours"),
            "gpus": sum(
                nodes[p] * next(x.gpus_per_node for x in self.base.pools if x.name == p) for p in nodes
            ),
        }
        if body is None:
            why = why or f"refused: {chosen.outcome.gathered.refused.get(self.model)}"
        pools_sets = {f"cluster.pools.{p}.nodes={nodes[p]}" for p in self.pools}
        own = [s for s in self.sets_of(nodes) if s not in self.request.sets]
        extra = [s for s in own if s not in pools_sets]
        return ModelSize(
            model=self.model,
            found=found and "missed" not in targets.values() and body is not None,
            nodes=dict(nodes),
            figures=figures,
            targets=targets,
            minimal=minimal,
            candidates=list(self.judged.values()),
            simulations=self.progress.total,
            extra_sets=extra,
            sets=own,
            why=why,
        )


def size(
    request: SizeRequest, on_judged: Callable[[str, dict[str, int], bool, Progress], None] | None = None
) -> SizeResult:
    """Search each model's least-cost size; write OUT/size.json, size.html and the manifest.
    ``on_judged(model, nodes, meets, simulations so far)`` is called as each size is judged."""
    base = load_variant(request.scenario, request.sets)
    assert base.scenario is not None
    loaded = base.scenario
    if not any(getattr(loaded.scenario.targets, name) is not None for name in HELPED):
        raise InputError(
            "size needs a target more nodes help: targets.p95_wait or targets.slo_attainment",
            path=request.scenario,
            field="targets",
        )
    models = list(request.models or loaded.scenario.models.compare)
    with open_stage(request.out) as stage:
        result = _size(request, models, base, on_judged, stage)
    return replace(result, files=stage.final(result.files))


def _size(
    request: SizeRequest,
    models: list[str],
    base: Input,
    on_judged: Callable[[str, dict[str, int], bool, Progress], None] | None,
    stage: Stage,
) -> SizeResult:
    from gpuplan.sizing.page import size_page
    from gpuplan.sweep.executors import LocalExecutor

    assert base.scenario is not None
    loaded = base.scenario
    # the point store lives in OUT itself (a rerun after a kill reuses it); the stage carries it over
    prepare_out(request.out)
    store = PointStore(request.out / POINTS_DIR)
    executor = request.executor or LocalExecutor()
    sizes = []
    total = Progress()
    for model in models:
        search = _Search(request, model, executor, store, loaded)
        search.on_judged = on_judged
        sizes.append(search.run())
        total.total += search.progress.total
        total.run += search.progress.run
        total.reused += search.progress.reused
    summary = size_summary(request, sizes, total)
    files = [
        write_json(stage.dir / "size.json", summary),
        write_text(stage.dir / "size.html", size_page(summary)),
    ]
    run = manifest.describe_run("size", base, request.scenario, models)
    manifest.finish(stage.dir, run, files)
    warnings = [f"{s.model}: {s.why}" for s in sizes if s.why]
    return SizeResult(sizes, files, total, summary, warnings)


def size_summary(request: SizeRequest, sizes: list[ModelSize], total: Progress) -> dict[str, Any]:
    """size.json: each model's size with its figures, the runner-up's distance and every candidate."""
    found = sorted(
        (s for s in sizes if s.found and s.figures["cost_usd_per_month"] is not None),
        key=lambda s: s.figures["cost_usd_per_month"],
    )
    cheapest = found[0].model if found else None
    runner_up = None
    if len(found) > 1:
        gap = found[1].figures["cost_usd_per_month"] - found[0].figures["cost_usd_per_month"]
        runner_up = {"model": found[1].model, "usd_per_month_more": gap}
    return {
        "gpuplan_version": __version__,
        "scenario": str(request.scenario),
        "set": list(request.sets),
        "seeds": request.seeds,
        "quantile": request.quantile,
        "simulations": {"total": total.total, "run": total.run, "reused": total.reused},
        "cheapest": cheapest,
        "runner_up": runner_up,
        "models": {
            s.model: {
                "found": s.found,
                "nodes": s.nodes,
                "also_set": s.extra_sets,
                "figures": s.figures,
                "targets": s.targets,
                "one_node_fewer_misses": s.minimal,
                "simulations": s.simulations,
                "why": s.why or None,
                "candidates": [
                    {
                        "nodes": c.nodes,
                        "meets": c.meets,
                        "p95_wait_s": c.figure(s.model, "wait_s.p95"),
                        "cost_usd_per_month": c.figure(s.model, "cost.usd_per_month"),
                        **({"invalid": c.why} if c.why else {}),
                    }
                    for c in s.candidates
                ],
            }
            for s in sizes
        },
    }
