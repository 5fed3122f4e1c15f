"""``gpuplan compare``: every operating model a scenario enables, on the same workload, side by side.

Each model runs in its own process when there is more than one core (the models share nothing but
the scenario file; each synthesises the same workload from the scenario's seed, so all see the same
jobs). The result files hold one entry per model: ``summary.json`` under ``models.<name>``, and
``jobs.parquet`` / ``timeline.parquet`` rows with their ``model`` column.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gpuplan import __version__
from gpuplan.errors import GpuplanError, InputError
from gpuplan.inputs import is_scenario, load_input
from gpuplan.metrics.summary import summarize
from gpuplan.results.files import jobs_table, prepare_out, timeline_table, write_summary


@dataclass(frozen=True)
class CompareRequest:
    scenario: Path
    models: tuple[str, ...] | None = None  # default: the scenario's models.compare
    out: Path = Path("gpuplan-out")
    processes: int | None = None  # default: one per model, at most one per core


@dataclass
class CompareResult:
    summary: dict[str, Any]
    files: list[Path]
    warnings: list[str] = field(default_factory=list)


@dataclass
class _ModelResult:
    name: str
    summary: dict[str, Any] | None = None
    jobs: pa.Table | None = None
    timeline: pa.Table | None = None
    error: str | None = None


def _run_model(scenario: Path, name: str) -> _ModelResult:
    """One model, start to end (in a worker process): read, simulate, summarise."""
    from gpuplan.simulate import MODELS, SimulateRequest

    try:
        began = time.perf_counter()
        loaded = load_input(scenario)
        read_s = time.perf_counter() - began
        run = MODELS.get(name)(loaded, SimulateRequest(input=scenario, model=name))
        began = time.perf_counter()
        summary = summarize(run, loaded.workload.team_shares)
        jobs, timeline = jobs_table(run), timeline_table(run)
        summary["timing_s"] = {
            "read": read_s,
            "simulate": run.simulate_s,
            "write": time.perf_counter() - began,
        }
        return _ModelResult(name, summary, jobs, timeline)
    except GpuplanError as exc:  # crosses the process boundary as text
        return _ModelResult(name, error=str(exc))


def compare(request: CompareRequest, on_done: Callable[[str], None] | None = None) -> CompareResult:
    """Run the models, write OUT/summary.json, jobs.parquet and timeline.parquet; ``on_done(name)``
    is called as each model finishes."""
    from gpuplan.simulate import MODELS

    if not is_scenario(request.scenario):
        raise InputError("compare needs a scenario file (.yaml)", path=request.scenario)
    loaded = load_input(request.scenario)  # fails early, here, on a bad scenario
    assert loaded.scenario is not None
    names: Sequence[str] = request.models or loaded.scenario.scenario.models.compare
    for name in names:
        MODELS.get(name)
    processes = request.processes or min(len(names), os.cpu_count() or 1)
    results: dict[str, _ModelResult] = {}
    if processes > 1 and len(names) > 1:
        with ProcessPoolExecutor(max_workers=processes) as pool:
            futures = {pool.submit(_run_model, request.scenario, name): name for name in names}
            for future, name in futures.items():
                results[name] = future.result()
                if on_done:
                    on_done(name)
    else:
        for name in names:
            results[name] = _run_model(request.scenario, name)
            if on_done:
                on_done(name)
    for result in results.values():
        if result.error is not None:
            raise GpuplanError(f"model {result.name}: {result.error}")

    ordered = [results[name] for name in names]
    prepare_out(request.out)
    files = [request.out / "summary.json", request.out / "jobs.parquet", request.out / "timeline.parquet"]
    summary = {
        "gpuplan_version": __version__,
        "input": loaded.info,
        "models": {r.name: r.summary for r in ordered},
    }
    write_summary(request.out, summary)
    pq.write_table(
        pa.concat_tables([r.jobs for r in ordered if r.jobs is not None], promote_options="default"), files[1]
    )
    pq.write_table(
        pa.concat_tables([r.timeline for r in ordered if r.timeline is not None], promote_options="default"),
        files[2],
    )
    return CompareResult(summary, files, list(loaded.warnings))
