"""``gpuplan sweep SWEEP.yaml``: a grid or a list of variants of one scenario x models x seeds.

A sweep file names the scenario (relative to the sweep file), the models (default: the scenario's
``models.compare``), the seeds per variant (default 5) and the variants: a ``grid`` of field paths
(the ``--set`` syntax) to lists of values, every combination of which is a variant, and/or a list of
``variants``, each a mapping of field paths to values (with a grid too, each is crossed with it)::

    scenario: mixed-org.yaml
    models: [slurm, kubernetes]
    seeds: 3
    grid:
      cluster.pools.h100.nodes: [6, 8, 10]
      models.slurm.bf_window: [720, 1440]

Results in OUT: ``sweep.parquet`` (one row per variant, model and seed: the variant's fields as
``set:PATH`` columns, then
every figure of that seed's summary, flattened as ``wait_s.p95``, ``cost.usd_per_month``, ...),
``sweep.json`` (each variant's medians over the seeds, with the targets each model meets in every
seed), ``sweep.html`` (the frontier of cost against p95 wait, and a heatmap per model for a
two-field grid), ``points/`` (each point's result: a rerun reads them back, ``sweep.points``) and
``manifest.json``.

Example: ``run_sweep(SweepRequest(Path("examples/sweep-h100.yaml"), out=Path("sweep-out")))``
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import Field, StrictInt, ValidationError

from gpuplan import __version__
from gpuplan.advisor.evidence import lookup
from gpuplan.advisor.scoring import target_misses
from gpuplan.errors import InputError
from gpuplan.metrics.replications import MAX_SEEDS
from gpuplan.results import manifest
from gpuplan.results.files import prepare_out, write_json, write_parquet, write_text
from gpuplan.results.transaction import Stage, open_stage
from gpuplan.scenario.load import Problem, ScenarioError, validation_problems
from gpuplan.scenario.model import ModelName
from gpuplan.scenario.section import Section
from gpuplan.scenario.source import load_yaml
from gpuplan.sweep.points import (
    POINTS_DIR,
    Executor,
    PointStore,
    Progress,
    VariantOutcome,
    evaluate,
    load_variant,
    set_text,
)

MAX_POINTS = 1_000_000
# summary parts that are no figure of the run (its settings echo, timings, diagnoses as text)
_NOT_FIGURES = {"settings", "timing_s", "diagnoses", "replications", "split_search", "prices", "refused"}
# what the frontier and sweep.json show of each model
HEADLINE = {
    "p95 wait (s)": "wait_s.p95",
    "mean wait (s)": "wait_s.mean",
    "GPU utilisation": "gpu_utilization",
    "cost per month (USD)": "cost.usd_per_month",
    "work not done (GPU-hours)": "work_not_done.gpu_hours",
}


class SweepSpec(Section):
    """A sweep file: a scenario, its variants, the models and the seeds."""

    scenario: str = Field(description="the scenario file, relative to the sweep file")
    models: list[ModelName] | None = Field(
        None, min_length=1, description="default: the scenario's models.compare"
    )
    seeds: StrictInt = Field(
        5, ge=1, le=MAX_SEEDS, description="draws of the scenario's synthesis per variant"
    )
    grid: dict[str, list[Any]] = Field(
        default_factory=dict, description="field path -> values: every combination is a variant"
    )
    variants: list[dict[str, Any]] = Field(
        default_factory=list, description="each a mapping of field paths to values (crossed with the grid)"
    )


@dataclass(frozen=True)
class SweepRequest:
    sweep: Path
    out: Path = Path("gpuplan-out")
    executor: Executor | None = None  # default: this machine's worker processes


@dataclass
class SweepResult:
    files: list[Path]
    progress: Progress
    variants: list[dict[str, Any]] = field(default_factory=list)  # sweep.json's
    warnings: list[str] = field(default_factory=list)


def read_spec(path: Path) -> SweepSpec:
    """The sweep file, checked (exit 2 with its file, line and field when wrong)."""
    located = load_yaml(path)
    if not isinstance(located.data, dict):
        raise ScenarioError(path, [Problem(1, "", "a sweep is a mapping (scenario, grid or variants, ...)")])
    try:
        spec = SweepSpec.model_validate(located.data)
    except ValidationError as exc:
        raise ScenarioError(path, validation_problems(exc, located)) from None
    problems = []
    if not spec.grid and not spec.variants:
        problems.append(Problem(1, "grid", "give a grid or variants: nothing to sweep"))
    for name, values in spec.grid.items():
        if not values:
            problems.append(Problem(located.line_of(("grid", name)), f"grid.{name}", "no values"))
    if problems:
        raise ScenarioError(path, problems)
    return spec


def variants_of(spec: SweepSpec) -> list[tuple[str, ...]]:
    """Each variant's ``--set`` list: the grid's combinations, crossed with the listed variants."""
    names = list(spec.grid)
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*spec.grid.values())]
    listed = spec.variants or [{}]
    return [
        tuple(set_text(path, value) for path, value in {**variant, **combo}.items())
        for variant in listed
        for combo in combos or [{}]
    ]


def flatten(summary: Mapping[str, Any], prefix: str = "") -> dict[str, float | int | bool]:
    """Every figure (number or flag) of a summary, by its dotted path."""
    figures: dict[str, float | int | bool] = {}
    for key, value in summary.items():
        if key in _NOT_FIGURES:
            continue
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            figures |= flatten(value, f"{path}.")
        elif isinstance(value, bool | int | float) and not (isinstance(value, float) and math.isnan(value)):
            figures[path] = value
    return figures


def _meets(outcome: VariantOutcome, model: str) -> bool | None:
    """Does the model meet the scenario's targets in every seed (None: no target)?"""
    assert outcome.loaded.scenario is not None
    targets = outcome.loaded.scenario.scenario.targets.values()
    if not any(v is not None for v in targets.values()):
        return None
    seeds = [outcome.gathered.per_seed[seed].get(model) for seed in outcome.seeds]
    return all(s is not None and target_misses(s, targets) == 0 for s in seeds)


def _shown(text: str) -> str:
    """A variant's value as a cell: a string as it is, anything else as JSON."""
    value = json.loads(text)
    return value if isinstance(value, str) else json.dumps(value)


def _rows(spec_paths: list[str], outcomes: list[VariantOutcome], models: Sequence[str]) -> pa.Table:
    rows = []
    for index, outcome in enumerate(outcomes):
        fields = {path: _shown(text) for path, text in (t.split("=", 1) for t in outcome.sets)}
        for seed in outcome.seeds:
            for model in models:
                row: dict[str, Any] = {"variant": index, **{f"set:{p}": fields.get(p) for p in spec_paths}}
                row |= {"model": model, "seed": seed, "refused": outcome.gathered.refused.get(model)}
                summary = outcome.gathered.per_seed[seed].get(model)
                if summary is not None:
                    row |= flatten(summary)
                rows.append(row)
    return pa.Table.from_pylist(rows)


def _variant_record(outcome: VariantOutcome, models: Sequence[str]) -> dict[str, Any]:
    record: dict[str, Any] = {"set": list(outcome.sets), "seeds": outcome.seeds, "models": {}}
    for model in models:
        body = outcome.gathered.models.get(model)
        if body is None:
            record["models"][model] = {"refused": outcome.gathered.refused.get(model)}
            continue
        figures = {label: lookup(body, path) for label, path in HEADLINE.items()}
        record["models"][model] = {**figures, "targets_met_in_every_seed": _meets(outcome, model)}
    return record


def run_sweep(request: SweepRequest, on_point: Callable[[Progress], None] | None = None) -> SweepResult:
    """Run (or resume) the sweep; write OUT/sweep.parquet, sweep.json, sweep.html and the manifest."""
    spec = read_spec(request.sweep)
    scenario = (request.sweep.parent / spec.scenario).resolve()
    if not scenario.is_file():
        raise InputError("no such scenario file", path=scenario, field="scenario")
    variants = variants_of(spec)
    models = list(spec.models) if spec.models else None
    if models is None:
        loaded = load_variant(scenario, variants[0])
        assert loaded.scenario is not None
        models = list(loaded.scenario.scenario.models.compare)
    if len(variants) * len(models) * spec.seeds > MAX_POINTS:
        raise InputError(
            f"more than {MAX_POINTS:,} points: split the sweep", path=request.sweep, field="grid"
        )
    with open_stage(request.out) as stage:
        result = _sweep(request, spec, scenario, variants, models, on_point, stage)
    return replace(result, files=stage.final(result.files))


def _sweep(
    request: SweepRequest,
    spec: SweepSpec,
    scenario: Path,
    variants: list[tuple[str, ...]],
    models: Sequence[str],
    on_point: Callable[[Progress], None] | None,
    stage: Stage,
) -> SweepResult:
    from gpuplan.sweep.charts import sweep_page
    from gpuplan.sweep.executors import LocalExecutor

    # the point store lives in OUT itself (a rerun after a kill reuses it); the stage carries it over
    prepare_out(request.out)
    store = PointStore(request.out / POINTS_DIR)
    executor = request.executor or LocalExecutor()
    outcomes, progress = evaluate(scenario, variants, models, spec.seeds, executor, store, on_point)
    paths = list(spec.grid) + [p for v in spec.variants for p in v if p not in spec.grid]
    paths = list(dict.fromkeys(paths))
    records = [_variant_record(outcome, models) for outcome in outcomes]
    summary = {
        "gpuplan_version": __version__,
        "sweep": str(request.sweep),
        "scenario": str(scenario),
        "models": models,
        "seeds": spec.seeds,
        "fields": paths,
        "points": {"total": progress.total, "run": progress.run, "reused": progress.reused},
        "engine": {"name": executor.name, "workers": executor.workers},
        "variants": records,
    }
    files = [
        write_parquet(stage.dir / "sweep.parquet", _rows(paths, outcomes, models)),
        write_json(stage.dir / "sweep.json", summary),
        write_text(stage.dir / "sweep.html", sweep_page(summary)),
    ]
    first = outcomes[0].loaded
    run = manifest.describe_run("sweep", first, request.sweep, models)
    run = replace(run, inputs={**manifest.input_hashes([request.sweep]), **run.inputs})
    manifest.finish(stage.dir, run, files)
    warnings = []
    refused = {(m, why) for o in outcomes for m, why in o.gathered.refused.items()}
    warnings += [f"{m} refused a variant: {why}" for m, why in sorted(refused)]
    return SweepResult(files, progress, records, warnings)
