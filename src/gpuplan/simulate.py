"""``gpuplan simulate``: one operating model on a scenario or a trace, with result files."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import __version__
from gpuplan.cost.book import price_book
from gpuplan.cost.costs import apply_costs
from gpuplan.inputs import Input, InputOptions, load_input
from gpuplan.metrics.diagnose import diagnose, diagnosis_sentence
from gpuplan.metrics.summary import remeasure, summarize, work_by_workload
from gpuplan.results import manifest
from gpuplan.results.files import run_tables, write_summary, write_tables
from gpuplan.results.transaction import open_stage
from gpuplan.sim.models import MODELS, run_input
from gpuplan.sim.outcome import REJECTED, ModelRun


@dataclass(frozen=True)
class SimulateRequest:
    input: Path
    model: str = "slurm"
    backfill: str | None = None  # none | easy | slurm (default: the scenario's models.slurm, else slurm)
    options: InputOptions = field(default_factory=InputOptions)
    out: Path = Path("gpuplan-out")


@dataclass
class SimulateResult:
    summary: dict[str, Any]  # the whole summary.json
    files: list[Path]
    warnings: list[str] = field(default_factory=list)

    @property
    def model_summary(self) -> dict[str, Any]:
        """The ``models.<name>`` object plus ``"model": name``, as ``simulate --json`` prints it."""
        (name, body), *_ = self.summary["models"].items()
        return {"model": name, **body}


def work_not_done_warning(loaded: Input, run: ModelRun, summary: dict[str, Any]) -> str | None:
    """A sentence on the jobs a model rejected or left unfinished, by workload (by team for a trace)
    and reason, with the first rejected job's line in a trace."""
    work = summary["work_not_done"]
    if not work["jobs"]:
        return None
    sentence = (
        f"{run.model} leaves {work['jobs']:,} job(s) ({work['gpu_hours']:,.0f} GPU-hours) undone: "
        f"{work['rejected']['jobs']:,} rejected (they can never run on its cluster), "
        f"{work['unfinished']['jobs']:,} unfinished; by {'workload' if run.jobs.workload else 'team'}: "
        + work_by_workload(work)
    )
    rejected = np.flatnonzero(run.state == REJECTED)
    if loaded.trace is not None and len(rejected):
        first = rejected[np.argmin(run.jobs.source_line[rejected])]
        if run.jobs.source_line[first] > 0:
            sentence += (
                f"; first rejected: job {run.jobs.job_id[first]} "
                f"({run.jobs.nodes[first]}x{run.jobs.gpus_per_node[first]}) "
                f"at {loaded.trace.path}:{run.jobs.source_line[first]}"
            )
    return sentence


def assumption_sentences(model: str, summary: dict[str, Any]) -> list[str]:
    """What gpuplan configured where the scenario did not (``settings.assumptions``), one line each."""
    settings = summary.get("settings")
    assumptions = settings.get("assumptions") if isinstance(settings, dict) else None
    return [f"{model}: assumed, as documented: {a}" for a in assumptions or []]


def kubernetes_warnings(model: str, summary: dict[str, Any]) -> list[str]:
    """What the Kubernetes model (alone or as hybrid's side) did not model exactly: requests of CPU
    or memory on nodes whose figure is unknown were not checked (``settings.node_resources`` says
    per pool), and workloads of several pod sets asking GPUs got one flavor for all their GPU pods."""
    figures = summary.get("kubernetes", {})
    if model == "hybrid":  # the sides' own figures are under their names
        figures = figures.get("kubernetes", {})
    warnings = []
    unchecked = figures.get("requests_not_checked_jobs", 0)
    if unchecked:
        warnings.append(
            f"{model}: the nodes' CPU or memory is unknown (no node list, shape, cpus_per_node or "
            f"memory_gb): the CPU and memory requests of {unchecked:,} job(s) were not checked against "
            "nodes; give --node-list, or the pools' shape or cpus_per_node and memory_gb"
        )
    merged = figures.get("merged_pod_sets_jobs", 0)
    if merged:
        warnings.append(
            f"{model}: {merged:,} workload(s) of several pod sets asking GPUs may use more than one "
            "flavor (or a Topology): Kueue gives each pod set its own, the model one for all their "
            "GPU pods, so their admission may differ; give their ClusterQueue one flavor to make it exact"
        )
    return warnings


def simulate(request: SimulateRequest) -> SimulateResult:
    """Read the input, simulate the model, write OUT/summary.json, jobs.parquet, timeline.parquet and
    manifest.json."""
    MODELS.get(request.model).check_backfill(request.backfill)  # before the input is read
    with open_stage(request.out) as stage:
        result = _simulate(request, stage.dir)
    return replace(result, files=stage.final(result.files))


def _simulate(request: SimulateRequest, out: Path) -> SimulateResult:
    began = time.perf_counter()
    loaded = load_input(request.input, request.options)
    read_s = time.perf_counter() - began
    run = run_input(request.model, loaded, request.backfill)
    workload = loaded.workload

    began = time.perf_counter()
    model_summary = summarize(run, workload.team_shares)
    horizon_s = float(loaded.scenario.scenario.horizon) if loaded.scenario is not None else None
    if horizon_s is not None:  # the window compare measures a scenario over (compare.py)
        remeasure(model_summary, 0.0, max(horizon_s, model_summary["last_end_s"]))
    apply_costs(model_summary, price_book(loaded.scenario) if loaded.scenario is not None else None)
    model_summary["diagnoses"] = diagnose(run.model, model_summary, horizon_s)
    files = write_tables(out, [run_tables(run)])
    model_summary["timing_s"] = {
        "read": read_s,
        "simulate": run.simulate_s,
        "write": time.perf_counter() - began,
    }
    summary = {"gpuplan_version": __version__, "input": loaded.info, "models": {run.model: model_summary}}
    files.insert(0, write_summary(out, summary))
    manifest.finish(out, manifest.describe_run("simulate", loaded, request.input, [run.model]), files)
    warnings = list(loaded.warnings)
    if (undone := work_not_done_warning(loaded, run, model_summary)) is not None:
        warnings.append(undone)
    warnings += kubernetes_warnings(run.model, model_summary)
    warnings += assumption_sentences(run.model, model_summary)
    warnings += [diagnosis_sentence(run.model, d) for d in model_summary["diagnoses"]]
    return SimulateResult(summary=summary, files=files, warnings=warnings)
