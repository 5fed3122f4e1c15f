"""``gpuplan compare``: every operating model a scenario enables, on the same workload, side by side.

Each model runs in its own process when there is more than one core (the models share nothing but
the scenario file; each synthesises the same workload from the scenario's seed, so all see the same
jobs). The result files hold one entry per model: ``summary.json`` under ``models.<name>``, and
``jobs.parquet`` / ``timeline.parquet`` rows with their ``model`` column.

Interruption: the workers never outlive this process (``gpuplan.workers``). On Ctrl-C the models
that had finished are written as a partial result (summary.json ``partial``, the manifest says so)
and ``gpuplan.errors.Interrupted`` is raised; a run killed outright leaves no manifest, so
``report`` refuses the directory until the command is run again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from gpuplan import __version__
from gpuplan.errors import GpuplanError, InputError, Interrupted
from gpuplan.inputs import Input, is_scenario, load_input
from gpuplan.metrics.summary import summarize
from gpuplan.results import manifest
from gpuplan.results.files import RESULT_FILES, run_tables, write_summary, write_tables
from gpuplan.sim.models import MODELS, run_input
from gpuplan.workers import run_all


@dataclass(frozen=True)
class CompareRequest:
    scenario: Path
    models: tuple[str, ...] | None = None  # default: the scenario's models.compare
    out: Path = Path("gpuplan-out")
    processes: int | None = None  # default: one per model, at most one per core
    command: str = "compare"  # the command the manifest records (recommend runs a comparison)


@dataclass
class CompareResult:
    summary: dict[str, Any]
    files: list[Path]
    loaded: Input
    run: manifest.Run  # what the manifest records of the run
    warnings: list[str] = field(default_factory=list)


@dataclass
class _ModelResult:
    name: str
    summary: dict[str, Any] | None = None
    tables: dict[str, pa.Table] | None = None  # results.files.run_tables
    error: str | None = None


def _run_model(loaded: Input, read_s: float, name: str) -> _ModelResult:
    """One model, start to end (in a worker process, forked with the input already read):
    simulate, summarise."""
    try:
        run = run_input(name, loaded)
        began = time.perf_counter()
        summary = summarize(run, loaded.workload.team_shares)
        tables = run_tables(run)
        summary["timing_s"] = {
            "read": read_s,
            "simulate": run.simulate_s,
            "write": time.perf_counter() - began,
        }
        return _ModelResult(name, summary, tables)
    except GpuplanError as exc:  # crosses the process boundary as text
        return _ModelResult(name, error=str(exc))


def compare(request: CompareRequest, on_done: Callable[[str], None] | None = None) -> CompareResult:
    """Run the models, write OUT/summary.json, jobs.parquet, timeline.parquet and manifest.json;
    ``on_done(name)`` is called as each model finishes."""
    if not is_scenario(request.scenario):
        raise InputError(
            "compare and recommend need a scenario file (.yaml): a trace has no teams, answers or "
            "split to weigh. Replay the trace from a scenario (workloads[].trace, as in the bundled "
            "mixed-org.yaml; gpuplan init writes a scenario to start from), or run one model on it "
            "with gpuplan simulate TRACE --model slurm|kubernetes",
            path=request.scenario,
        )
    began = time.perf_counter()
    loaded = load_input(request.scenario)  # once: the workers are forked with it
    read_s = time.perf_counter() - began
    assert loaded.scenario is not None
    names: Sequence[str] = request.models or loaded.scenario.scenario.models.compare
    for name in names:
        MODELS.get(name)
    processes = min(request.processes or os.cpu_count() or 1, len(names))
    results: dict[str, _ModelResult] = {}

    def finished(result: _ModelResult) -> None:
        results[result.name] = result
        if on_done:
            on_done(result.name)

    run = manifest.describe_run(request.command, loaded, request.scenario, names)
    try:
        run_all(_run_model, [(loaded, read_s, name) for name in names], processes, finished)
    except KeyboardInterrupt:
        done = [name for name in names if name in results and results[name].error is None]
        missing = [name for name in names if name not in done]
        if not done:
            raise Interrupted("interrupted before any model finished: nothing was written") from None
        partial = {"missing_models": missing, "why": "interrupted"}
        _write(request.out, loaded, [results[n] for n in done], run, partial)
        raise Interrupted(
            f"interrupted: wrote {', '.join(done)} to {request.out} as a partial result "
            f"(not run: {', '.join(missing)})"
        ) from None
    for result in results.values():
        if result.error is not None:
            raise GpuplanError(f"model {result.name}: {result.error}")
    summary, files = _write(request.out, loaded, [results[name] for name in names], run)
    return CompareResult(summary, files, loaded, run, list(loaded.warnings))


def _write(
    out: Path,
    loaded: Input,
    results: list[_ModelResult],
    run: manifest.Run,
    partial: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """summary.json, jobs.parquet, timeline.parquet, events.parquet, then the manifest; returns the
    summary and the four files."""
    manifest.start(out, keep=RESULT_FILES)
    summary: dict[str, Any] = {
        "gpuplan_version": __version__,
        "input": loaded.info,
        **({"partial": partial} if partial else {}),
        "models": {r.name: r.summary for r in results},
    }
    files = [write_summary(out, summary)]
    files += write_tables(out, [r.tables for r in results if r.tables is not None])
    if partial:
        run = replace(run, models=[r.name for r in results], partial=partial)
    manifest.finish(out, run, files)
    return summary, files
