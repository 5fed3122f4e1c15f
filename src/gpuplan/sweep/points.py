"""The unit of a sweep and of a sizing: one scenario variant (its ``--set``), one model, one seed.

``evaluate`` runs every (variant, model, seed) not already stored, through an executor (this
machine's worker processes or a Ray cluster: ``sweep.executors``), stores each result as it comes
back (``PointStore``: one file per point, keyed by a hash of what it depends on, written atomically),
and folds each variant's results as ``compare`` does (``compare.gather_seeds``: one measuring window
per seed, costs, medians over the seeds with their spread). A run killed midway loses only the
points still running: the next one reads the others back.

The hybrid model runs the split it proposes (``compare``'s split search, which runs more splits when
the proposal misses a target, is not repeated for every point).

Example: ``evaluate(Path("org.yaml"), [["cluster.pools.h100.nodes=16"]], ["slurm"], 3, executor, store)``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan import __version__
from gpuplan.compare import Gathered, ModelSeedResult, gather_seeds, seeds_of
from gpuplan.cost.book import price_book
from gpuplan.inputs import Input, InputOptions, input_files, load_input
from gpuplan.results import manifest
from gpuplan.results.files import atomic_write
from gpuplan.sim.models import MODELS

POINTS_DIR = "points"


@dataclass(frozen=True)
class Task:
    """A point to run: its key, its variant's input (read here), the model and the seed."""

    key: str
    loaded: Input
    model: str
    seed: int


@dataclass(frozen=True)
class VariantOutcome:
    """One variant's results over the models and seeds, folded as ``compare`` folds them."""

    sets: tuple[str, ...]
    seeds: list[int]
    gathered: Gathered
    loaded: Input


class PointStore:
    """Each finished point's result as ``DIR/<key>.json`` (written whole or not at all)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> ModelSeedResult | None:
        """The stored result, or None (not run yet, or a file a killed run left unreadable)."""
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
            return ModelSeedResult(data["model"], int(data["seed"]), data["summary"], error=data["error"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, result: ModelSeedResult) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        record = {"model": result.name, "seed": result.seed, "summary": result.summary, "error": result.error}
        text = json.dumps(record, allow_nan=False, separators=(",", ":"))
        atomic_write(self.path(key), lambda temporary: temporary.write_text(text, encoding="utf-8"))


def point_key(loaded: Input, sets: Sequence[str], model: str, seed: int) -> str:
    """A hash of everything a point's result depends on: gpuplan's version, the content of every
    input file, the changed fields, the model and the seed."""
    hashes = sorted(manifest.input_hashes(input_files(loaded)).values())
    text = json.dumps([__version__, hashes, list(sets), model, seed])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load_variant(scenario: Path, sets: Sequence[str]) -> Input:
    """The scenario read with one variant's ``--set``."""
    return load_input(scenario, InputOptions(sets=tuple(sets)))


class Executor:
    """Runs tasks and hands each result back as it finishes (``sweep.executors``)."""

    name = "executor"
    workers = 1

    def run(self, tasks: Sequence[Task], on_result: Callable[[Task, ModelSeedResult], None]) -> None:
        raise NotImplementedError


@dataclass
class Progress:
    """Points of an evaluation: run here, read back from the store, and the total."""

    total: int = 0
    reused: int = 0
    run: int = 0


def evaluate(
    scenario: Path,
    variants: Sequence[Sequence[str]],
    models: Sequence[str],
    seeds: int,
    executor: Executor,
    store: PointStore,
    on_point: Callable[[Progress], None] | None = None,
) -> tuple[list[VariantOutcome], Progress]:
    """Every model on every seed of every variant (``--set`` lists), folded per variant; the points
    already in ``store`` are read back, the others run on ``executor`` and are stored as they finish."""
    for model in models:
        MODELS.get(model).load()  # before the workers are forked, so that none imports it again
    prepared = []
    tasks: dict[str, Task] = {}  # by key: a variant given twice runs once
    results: dict[str, ModelSeedResult] = {}
    progress = Progress()
    for sets in variants:
        loaded = load_variant(scenario, sets)
        assert loaded.scenario is not None
        variant_seeds, once = seeds_of(loaded, seeds)
        keys = {
            (model, seed): point_key(loaded, sets, model, seed) for seed in variant_seeds for model in models
        }
        prepared.append((loaded, variant_seeds, once, keys))
        for (model, seed), key in keys.items():
            if key in results or key in tasks:
                continue
            progress.total += 1
            stored = store.get(key)
            if stored is not None:
                results[key] = stored
                progress.reused += 1
            else:
                tasks[key] = Task(key, loaded, model, seed)
    if on_point:
        on_point(progress)

    def finished(task: Task, result: ModelSeedResult) -> None:
        store.put(task.key, result)
        results[task.key] = result
        progress.run += 1
        if on_point:
            on_point(progress)

    executor.run(list(tasks.values()), finished)
    outcomes = []
    for index, (loaded, variant_seeds, once, keys) in enumerate(prepared):
        assert loaded.scenario is not None
        mine = {point: results[key] for point, key in keys.items()}
        gathered = gather_seeds(
            mine,
            models,
            variant_seeds,
            float(loaded.scenario.scenario.horizon),
            once,
            price_book(loaded.scenario),
        )
        outcomes.append(VariantOutcome(tuple(variants[index]), variant_seeds, gathered, loaded))
    return outcomes, progress


def set_text(path: str, value: Any) -> str:
    """``PATH=VALUE`` of a value given as data (JSON is YAML: it reads back as the same value)."""
    return f"{path}={json.dumps(value)}"
