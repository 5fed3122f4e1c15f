"""``gpuplan compare``: every operating model a scenario enables, on the same workload, side by side.

Replications: a scenario's jobs are drawn at random from its seed, and a decision read off one draw
can flip with the next. Each model runs on ``seeds`` draws (the scenario's seed, seed + 1, ...; once
when the scenario draws nothing at random), every (model, seed) in a worker process of its own when
there is more than one core; every model sees the same jobs in a given seed. ``models.<name>`` of
summary.json holds the median of each figure over the seeds and, under ``replications``, the spread
of the headline figures (``gpuplan.metrics.replications``); ``per_seed`` holds each seed's own
summaries. ``jobs.parquet`` / ``timeline.parquet`` / ``events.parquet`` hold the scenario's own seed,
one set of rows per model (their ``model`` column).

One measuring window: in each seed, every model is measured from t = 0 to the scenario's horizon or
the last end in any model, whichever is later (``metrics.summary.remeasure``), so the same jobs give
the same busy GPU-hours over the same capacity whatever the model.

Each model's run is diagnosed (``metrics.diagnose``: a deadlock, quota beyond the nodes, fragmentation,
a starved hybrid side, a queue that never drains), with the seeds each pathology shows in.

A model that refuses the scenario (an input it cannot model, a split its jobs cannot fit) is reported
as refused with its reason (summary.json ``refused``); the other models' results stand.

Interruption: the workers never outlive this process (``gpuplan.workers``). On Ctrl-C the models
that had finished every seed are written as a partial result (summary.json ``partial``, the manifest
says so) and ``gpuplan.errors.Interrupted`` is raised; a run stopped in any other way (before any
model finished, while its files are written, SIGKILL, a full disk) leaves OUT as it was: the
result replaces it as one transaction (``gpuplan.results.transaction``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from gpuplan import __version__
from gpuplan.cost.book import PriceBook, price_book
from gpuplan.cost.costs import apply_costs
from gpuplan.errors import GpuplanError, InputError, Interrupted
from gpuplan.inputs import Input, InputOptions, draws_at_random, is_scenario, load_input, with_seed
from gpuplan.metrics.diagnose import diagnose, diagnosis_sentence, over_seeds
from gpuplan.metrics.replications import MAX_SEEDS, fold, replication_seeds
from gpuplan.metrics.summary import remeasure, summarize
from gpuplan.progress import Clocks
from gpuplan.results import manifest
from gpuplan.results.files import run_tables, write_summary, write_tables
from gpuplan.results.transaction import Stage, checkpoint, open_stage
from gpuplan.sim.engine._batchcore import progress_clock
from gpuplan.sim.models import MODELS, run_input, run_model
from gpuplan.simulate import assumption_sentences
from gpuplan.workers import run_all

DEFAULT_SEEDS = 5


@dataclass(frozen=True)
class CompareRequest:
    scenario: Path
    models: tuple[str, ...] | None = None  # default: the scenario's models.compare
    out: Path = Path("gpuplan-out")
    processes: int | None = None  # default: one per core, at most one per (model, seed)
    command: str = "compare"  # the command the manifest records (recommend runs a comparison)
    seeds: int = DEFAULT_SEEDS  # draws of the scenario's synthesis (one when it draws nothing)
    sets: tuple[str, ...] = ()  # --set PATH=VALUE: the scenario's fields changed for the run
    # a model's own changes on top of them (recommend --size: each model at its least-cost size)
    model_sets: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class CompareResult:
    summary: dict[str, Any]
    files: list[Path]
    loaded: Input
    run: manifest.Run  # what the manifest records of the run
    warnings: list[str] = field(default_factory=list)


@dataclass
class ModelSeedResult:
    name: str
    seed: int
    summary: dict[str, Any] | None = None
    tables: dict[str, pa.Table] | None = None  # results.files.run_tables (the first seed's only)
    error: str | None = None
    split: dict[str, int] | None = None  # the hybrid's split given in memory (a split search's)


def run_model_seed(
    loaded: Input,
    read_s: float,
    name: str,
    seed: int,
    keep_tables: bool,
    split: dict[str, int] | None = None,
    clock: memoryview | None = None,
) -> ModelSeedResult:
    """One model on one seed, start to end (in a worker process, forked with the input already
    read): synthesise the seed's workload, simulate (the hybrid with ``split`` when given; the
    engine writing its simulated time to ``clock``), summarise."""
    try:
        seeded = with_seed(loaded, seed)
        progress_clock(clock)
        try:
            if split is None:
                run = run_input(name, seeded)
            else:
                from gpuplan.sim.hybrid.settings import with_split

                setup = MODELS.get(name).setup(seeded)
                run = run_model(name, seeded.workload, setup.pools, with_split(setup.settings, split))
        finally:
            progress_clock(None)
        began = time.perf_counter()
        summary = summarize(run, seeded.workload.team_shares)
        tables = run_tables(run) if keep_tables else None
        summary["timing_s"] = {
            "read": read_s,
            "simulate": run.simulate_s,
            "write": time.perf_counter() - began,
        }
        return ModelSeedResult(name, seed, summary, tables, split=split)
    except GpuplanError as exc:  # crosses the process boundary as text
        return ModelSeedResult(name, seed, error=str(exc), split=split)


def seeds_of(loaded: Input, count: int) -> tuple[list[int], str | None]:
    """The seeds to run and, when the scenario draws nothing at random, why it runs once."""
    if not 1 <= count <= MAX_SEEDS:
        raise InputError(f"must be from 1 to {MAX_SEEDS}", field="--seeds")
    assert loaded.scenario is not None
    seed = loaded.scenario.scenario.seed
    if not draws_at_random(loaded):
        note = "the scenario draws nothing at random (traces, job lists, demand without noise): run once"
        return [seed], note if count > 1 else None
    return replication_seeds(seed, count), None


def _window_end(horizon_s: float, summaries: Iterable[dict[str, Any] | None]) -> float:
    """The end of a seed's one measuring window: the horizon, or the last end in any of its runs."""
    return max([horizon_s, *(float(s["last_end_s"]) for s in summaries if s is not None)])


def compare(
    request: CompareRequest,
    on_done: Callable[[str], None] | None = None,
    on_start: Callable[[Clocks], None] | None = None,
    stage: Stage | None = None,
) -> CompareResult:
    """Run the models on every seed, write OUT/summary.json, jobs.parquet, timeline.parquet and
    manifest.json; ``on_done(what)`` is called as each (model, seed) finishes, ``on_start(clocks)``
    once the runs are known (their simulated time, for progress: ``gpuplan.progress``). The files
    replace OUT's as one transaction (``results.transaction``), or go into ``stage``, a caller's
    (``recommend`` adds its own files to the same result).

    Example: ``compare(CompareRequest(Path("examples/mixed-org.yaml"), seeds=3)).summary["models"]``"""
    if stage is not None:
        return _compare(request, on_done, on_start, stage)
    with open_stage(request.out) as own:
        result = _compare(request, on_done, on_start, own)
    return replace(result, files=own.final(result.files))


def _compare(
    request: CompareRequest,
    on_done: Callable[[str], None] | None,
    on_start: Callable[[Clocks], None] | None,
    stage: Stage,
) -> CompareResult:
    if not is_scenario(request.scenario):
        raise InputError(
            "compare and recommend need a scenario file (.yaml): a trace has no teams, answers or "
            "split to weigh. Replay the trace from a scenario (workloads[].trace, as in the bundled "
            "mixed-org.yaml; gpuplan init writes a scenario to start from), or run one model on it "
            "with gpuplan simulate TRACE --model slurm|kubernetes",
            path=request.scenario,
        )
    began = time.perf_counter()
    loaded = load_input(request.scenario, InputOptions(sets=request.sets))  # once: forked with it
    read_s = time.perf_counter() - began
    assert loaded.scenario is not None
    names: Sequence[str] = request.models or loaded.scenario.scenario.models.compare
    for name in names:
        MODELS.get(name).load()  # before the workers are forked, so that none imports it again
    seeds, once = seeds_of(loaded, request.seeds)
    book = price_book(loaded.scenario)
    model_input = {  # a model with changes of its own reads the scenario with them (same jobs)
        name: load_input(request.scenario, InputOptions(sets=request.sets + request.model_sets[name]))
        for name in names
        if request.model_sets.get(name)
    }
    horizon_s = float(loaded.scenario.scenario.horizon)
    runs = [(name, seed) for seed in seeds for name in names]
    clocks = Clocks(runs, horizon_s)
    calls = [
        (model_input.get(name, loaded), read_s, name, seed, seed == seeds[0], None, clocks.slot(k))
        for k, (name, seed) in enumerate(runs)
    ]
    processes = min(request.processes or os.cpu_count() or 1, len(calls))
    results: dict[tuple[str, int], ModelSeedResult] = {}
    if on_start:
        on_start(clocks)

    def finished(result: ModelSeedResult) -> None:
        results[result.name, result.seed] = result
        clocks.finished(runs.index((result.name, result.seed)))
        if on_done:
            on_done(result.name if len(seeds) == 1 else f"{result.name}, seed {result.seed}")
        checkpoint("models")

    run = manifest.describe_run(request.command, loaded, request.scenario, names)
    search = None
    try:
        run_all(run_model_seed, calls, processes, finished)
        if "hybrid" in names:
            hybrid = model_input.get("hybrid", loaded)
            search = _search_split(hybrid, read_s, results, names, seeds, processes, on_done, book)
    except KeyboardInterrupt:  # (during the split search: the proposal's runs stand)
        done = [name for name in names if all((name, seed) in results for seed in seeds)]
        missing = [name for name in names if name not in done]
        if not done:
            raise Interrupted(
                f"interrupted before any model finished: nothing was written ({request.out} is as it was)"
            ) from None
        partial = {"missing_models": missing, "why": "interrupted"}
        _write(stage.dir, loaded, gather_seeds(results, done, seeds, horizon_s, once, book), run, partial)
        raise Interrupted(
            f"interrupted: wrote {', '.join(done)} to {request.out} as a partial result "
            f"(not run: {', '.join(missing)})",
            kept=True,
        ) from None
    gathered = gather_seeds(results, names, seeds, horizon_s, once, book)
    if search is not None and "hybrid" in gathered.models:  # (not when refused on another seed)
        for body in [gathered.models["hybrid"], *(m["hybrid"] for m in gathered.per_seed.values())]:
            body["split_search"] = search
    if not gathered.models:
        raise GpuplanError(
            "every model refused the scenario: "
            + "; ".join(f"{name}: {why}" for name, why in gathered.refused.items())
        )
    for name, sets in request.model_sets.items():
        if name in gathered.models:
            gathered.models[name]["set"] = list(sets)
    summary, files = _write(stage.dir, loaded, gathered, run)
    warnings = list(loaded.warnings)
    warnings += [f"{name} refused the scenario: {why}" for name, why in gathered.refused.items()]
    if once:
        warnings.append(once)
    for name, body in gathered.models.items():
        warnings += assumption_sentences(name, body)
        warnings += [diagnosis_sentence(name, d) for d in body["diagnoses"]]
    return CompareResult(summary, files, loaded, run, warnings)


def _search_split(
    loaded: Input,
    read_s: float,
    results: dict[tuple[str, int], ModelSeedResult],
    names: Sequence[str],
    seeds: list[int],
    processes: int,
    on_done: Callable[[str], None] | None,
    book: PriceBook,
) -> dict[str, Any] | None:
    """A hybrid split sized by simulation, not rounded: where the scenario leaves a pool's split to
    gpuplan and the proposed one misses a target in some seed, other splits run on the same seeds
    and the one missing the fewest (target, seed) pairs replaces it (on a tie, the one tried first).
    The splits tried: the proposal's neighbours (``sim.hybrid.model.candidate_splits``); while
    every one still misses, splits spread over the whole feasible range (``spread_splits``), then
    the neighbours of the best of those. ``results`` then holds the chosen split's runs; returns
    what was judged (None when nothing was searched)."""
    from gpuplan.advisor.scoring import target_misses
    from gpuplan.sim.hybrid.model import candidate_splits, spread_splits

    assert loaded.scenario is not None
    first = results["hybrid", seeds[0]].summary
    if first is None or all(v == "scenario" for v in first["settings"].get("split_source", {}).values()):
        return None  # refused, or the user's own split
    scenario = loaded.scenario.scenario
    targets = scenario.targets.values()
    if not any(v is not None for v in targets.values()):
        return None  # no target to size against

    def misses(runs: dict[int, ModelSeedResult]) -> int:
        for seed, result in runs.items():
            if result.summary is None:
                return len(targets) * len(seeds) + 1  # refused: worse than any miss
            others = (results[n, seed].summary for n in names)
            end_s = _window_end(float(scenario.horizon), [result.summary, *others])
            apply_costs(remeasure(result.summary, 0.0, end_s), book)
        return sum(target_misses(r.summary, targets) for r in runs.values() if r.summary is not None)

    proposal = {seed: results["hybrid", seed] for seed in seeds}
    missed = [misses(proposal)]
    if missed[0] == 0:
        return None
    setup = MODELS.get("hybrid").setup(loaded)
    tried = candidate_splits(loaded.workload, setup.pools, setup.settings)[:1]  # the proposal
    trials: dict[tuple[int, int], ModelSeedResult] = {(0, seed): run for seed, run in proposal.items()}

    def judge(splits: list[dict[str, int]]) -> None:
        """Run the splits not yet tried on every seed, and count their misses."""
        fresh = [split for split in splits if split not in tried]
        first_new = len(tried)
        tried.extend(fresh)

        def finished(result: ModelSeedResult) -> None:
            k = tried.index(result.split or {})
            trials[k, result.seed] = result
            if on_done:
                nodes = ", ".join(f"{pool} {n}" for pool, n in (result.split or {}).items())
                on_done(f"hybrid split {k + 1} (Slurm nodes: {nodes}), seed {result.seed}")

        calls = [
            (loaded, read_s, "hybrid", seed, seed == seeds[0], split) for split in fresh for seed in seeds
        ]
        run_all(run_model_seed, calls, processes, finished)
        missed.extend(misses({seed: trials[k, seed] for seed in seeds}) for k in range(first_new, len(tried)))

    def best() -> int:
        return min(range(len(tried)), key=lambda k: (missed[k], k))

    judge(candidate_splits(loaded.workload, setup.pools, setup.settings))
    if missed[best()] > 0:
        judge(spread_splits(loaded.workload, setup.pools, setup.settings))
        if missed[best()] > 0 and best() > 0:
            judge(candidate_splits(loaded.workload, setup.pools, setup.settings, 3, around=tried[best()]))
    chosen = best()
    if chosen:
        for seed in seeds:
            results["hybrid", seed] = trials[chosen, seed]
    return {
        "chosen": tried[chosen],
        "candidates": [{"split": split, "target_misses": n} for split, n in zip(tried, missed, strict=True)],
        "judged_on_seeds": seeds,
        "why": "the proposed split missed a target in some seed: the split missing the fewest "
        "(target, seed) pairs is run",
    }


@dataclass
class Gathered:
    """Every model's figures over the seeds, ready to write."""

    models: dict[str, dict[str, Any]]  # folded over the seeds
    per_seed: dict[int, dict[str, dict[str, Any]]]  # seed -> model -> its own summary
    tables: list[dict[str, pa.Table]]  # the first seed's, one per model
    refused: dict[str, str]  # model -> why
    replications: dict[str, Any]


def gather_seeds(
    results: dict[tuple[str, int], ModelSeedResult],
    names: Sequence[str],
    seeds: list[int],
    horizon_s: float,
    once: str | None,
    book: PriceBook,
) -> Gathered:
    """Refusals apart, each seed's summaries over one window, then folded over the seeds."""
    refused: dict[str, str] = {}
    for name in names:
        errors = [(seed, results[name, seed].error) for seed in seeds if results[name, seed].error]
        if errors:
            seed, why = errors[0]
            refused[name] = str(why) if len(seeds) == 1 else f"seed {seed}: {why}"
    ran = [name for name in names if name not in refused]
    per_seed: dict[int, dict[str, dict[str, Any]]] = {}
    windows = []
    for seed in seeds:
        summaries = {name: results[name, seed].summary for name in ran}
        end_s = _window_end(horizon_s, summaries.values())  # one window for every model of the seed
        windows.append(end_s)
        per_seed[seed] = {
            name: apply_costs(remeasure(s, 0.0, end_s), book)
            for name, s in summaries.items()
            if s is not None
        }
        for name, s in per_seed[seed].items():
            s["diagnoses"] = diagnose(name, s, horizon_s)
    models = {name: fold([per_seed[seed][name] for seed in seeds], seeds) for name in ran}
    for name, body in models.items():  # a pathology of any seed, with the seeds it shows in
        body["diagnoses"] = over_seeds({seed: per_seed[seed][name]["diagnoses"] for seed in seeds})
    tables = [t for name in ran if (t := results[name, seeds[0]].tables) is not None]
    replications = {
        "seeds": seeds,
        "draws_at_random": once is None,
        "window_end_s": dict(zip((str(s) for s in seeds), windows, strict=True)),
        **({"note": once} if once else {}),
    }
    return Gathered(models, per_seed, tables, refused, replications)


def _write(
    out: Path,
    loaded: Input,
    gathered: Gathered,
    run: manifest.Run,
    partial: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """summary.json, jobs.parquet, timeline.parquet, events.parquet, then the manifest, in ``out`` (a
    stage); returns the summary and the four files."""
    summary: dict[str, Any] = {
        "gpuplan_version": __version__,
        "input": loaded.info,
        **({"partial": partial} if partial else {}),
        "replications": gathered.replications,
        "models": gathered.models,
        **({"refused": gathered.refused} if gathered.refused else {}),
    }
    if len(gathered.per_seed) > 1:
        summary["per_seed"] = {str(seed): models for seed, models in gathered.per_seed.items()}
    files = [write_summary(out, summary)]
    checkpoint("write")
    files += write_tables(out, gathered.tables)
    if partial or gathered.refused:
        run = replace(run, models=list(gathered.models), partial=partial)
    manifest.finish(out, run, files)
    return summary, files
