"""``gpuplan simulate``: one operating model on a scenario or a trace, with result files."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import __version__
from gpuplan.inputs import Input, InputOptions, load_input
from gpuplan.metrics.summary import summarize, work_by_workload
from gpuplan.results import manifest
from gpuplan.results.files import RESULT_FILES, jobs_table, timeline_table, write_summary, write_tables
from gpuplan.scenario.model import SlurmSettings as ScenarioSlurm
from gpuplan.sim.hybrid.model import run_hybrid
from gpuplan.sim.kubernetes.runner import run_kubernetes
from gpuplan.sim.outcome import REJECTED, ModelRun
from gpuplan.sim.registry import Registry
from gpuplan.sim.slurm.model import SlurmSettings, simulate_slurm
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.priority import MultifactorSettings
from gpuplan.sim.slurm.qos import Qos
from gpuplan.sim.slurm.reservations import Reservation
from gpuplan.sim.slurm.topology import Topology


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


def slurm_settings(spec: ScenarioSlurm) -> SlurmSettings:
    """The Slurm model's settings from a scenario's ``models.slurm``."""
    return SlurmSettings(
        backfill=spec.backfill,
        bf_interval=spec.bf_interval,
        bf_window=spec.bf_window,
        bf_resolution=spec.bf_resolution,
        bf_max_job_test=spec.bf_max_job_test,
        bf_max_job_user=spec.bf_max_job_user,
        sched_interval=spec.sched_interval,
        batch_sched_delay=spec.batch_sched_delay,
        default_queue_depth=spec.default_queue_depth,
        priority_type=spec.priority_type,
        multifactor=MultifactorSettings(
            weight_age=spec.priority_weight_age,
            weight_fairshare=spec.priority_weight_fairshare,
            weight_job_size=spec.priority_weight_job_size,
            max_age_s=spec.priority_max_age,
            decay_half_life_s=spec.priority_decay_half_life,
            calc_period_s=spec.priority_calc_period,
            usage_reset_period=spec.priority_usage_reset_period,
            fairshare=spec.fairshare,
            weight_qos=spec.priority_weight_qos,
            weight_partition=spec.priority_weight_partition,
        ),
        qos=tuple(
            Qos(
                q.name,
                q.priority,
                q.max_gpus_per_user,
                q.max_jobs_per_user,
                q.grp_gpus,
                q.max_wall,
                tuple(q.preempt),
                q.preempt_mode,
                q.grace_time,
                q.usage_factor,
            )
            for q in spec.qos
        ),
        partitions=tuple(
            Partition(
                p.name,
                p.pool,
                p.priority_tier,
                p.priority_job_factor,
                p.max_time,
                p.default_time,
                None if p.allow_accounts is None else tuple(p.allow_accounts),
                p.preempt_mode,
                p.grace_time,
                p.exclusive,
            )
            for p in spec.partitions
        ),
        select_type=spec.select_type,
        over_time_limit=spec.over_time_limit,
        controller_start_s=spec.controller_start,
        accounting_storage_enforce=tuple(spec.accounting_storage_enforce),
        topology=None
        if spec.topology is None
        else Topology(spec.topology.plugin, spec.topology.nodes_per_block, spec.topology.require),
        reservations=tuple(
            Reservation(r.name, r.pool, r.nodes, r.start, r.duration, tuple(r.accounts), r.repeat)
            for r in spec.reservations
        ),
        preempt_type=spec.preempt_type,
        preempt_mode=spec.preempt_mode,
        requeue_delay_s=spec.requeue_delay,
    )


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


def unchecked_requests_warnings(model: str, summary: dict[str, Any]) -> list[str]:
    """The Kubernetes model (alone or as hybrid's side) on nodes whose CPU or memory is unknown: the
    pods' requests of those resources were not checked (``settings.node_resources`` says per pool)."""
    figures = summary.get("kubernetes", {})
    if model == "hybrid":  # the sides' own figures are under their names
        figures = figures.get("kubernetes", {})
    jobs = figures.get("requests_not_checked_jobs", 0)
    if not jobs:
        return []
    return [
        f"{model}: the nodes' CPU or memory is unknown (no node list, shape, cpus_per_node or "
        f"memory_gb): the CPU and memory requests of {jobs:,} job(s) were not checked against "
        "nodes; give --node-list, or the pools' shape or cpus_per_node and memory_gb"
    ]


def run_slurm(loaded: Input, request: SimulateRequest) -> ModelRun:
    """The Slurm model with the scenario's ``models.slurm`` (Slurm's defaults for a trace)."""
    settings = SlurmSettings()
    if loaded.scenario is not None:
        settings = slurm_settings(loaded.scenario.scenario.models.slurm)
    if request.backfill is not None:
        settings = replace(settings, backfill=request.backfill)
    workload = loaded.workload
    return simulate_slurm(
        workload.jobs,
        loaded.pools,
        settings,
        workload.services,
        workload.team_shares,
        epoch_s=workload.epoch_s,
    )


ModelRunner = Callable[[Input, SimulateRequest], ModelRun]
MODELS = Registry[ModelRunner]("--model")
MODELS.register("slurm", run_slurm)
MODELS.register("kubernetes", run_kubernetes)


def run_hybrid_model(loaded: Input, request: SimulateRequest) -> ModelRun:
    """Slurm and Kubernetes side by side (``gpuplan.sim.hybrid.model``)."""
    return run_hybrid(loaded, request, {"slurm": run_slurm, "kubernetes": run_kubernetes})


MODELS.register("hybrid", run_hybrid_model)


def simulate(request: SimulateRequest) -> SimulateResult:
    """Read the input, simulate the model, write OUT/summary.json, jobs.parquet, timeline.parquet and
    manifest.json."""
    runner = MODELS.get(request.model)
    began = time.perf_counter()
    loaded = load_input(request.input, request.options)
    read_s = time.perf_counter() - began
    run = runner(loaded, request)
    workload = loaded.workload

    began = time.perf_counter()
    model_summary = summarize(run, workload.team_shares)
    manifest.start(request.out, keep=RESULT_FILES)
    files = write_tables(request.out, [jobs_table(run)], [timeline_table(run)])
    model_summary["timing_s"] = {
        "read": read_s,
        "simulate": run.simulate_s,
        "write": time.perf_counter() - began,
    }
    summary = {"gpuplan_version": __version__, "input": loaded.info, "models": {run.model: model_summary}}
    files.insert(0, write_summary(request.out, summary))
    manifest.finish(request.out, manifest.describe_run("simulate", loaded, request.input, [run.model]), files)
    warnings = list(loaded.warnings)
    if (undone := work_not_done_warning(loaded, run, model_summary)) is not None:
        warnings.append(undone)
    warnings += unchecked_requests_warnings(run.model, model_summary)
    return SimulateResult(summary=summary, files=files, warnings=warnings)
