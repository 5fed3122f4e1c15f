"""``gpuplan simulate``: one operating model on a trace, with result files and a summary."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import __version__
from gpuplan.errors import InputError
from gpuplan.metrics.summary import summarize
from gpuplan.results.files import write_summary, write_tables
from gpuplan.sim.cluster import Pool
from gpuplan.sim.outcome import ModelRun
from gpuplan.sim.registry import Registry
from gpuplan.sim.slurm import SlurmSettings, simulate_slurm
from gpuplan.workload.readers import read_trace
from gpuplan.workload.swf import field_name
from gpuplan.workload.trace import Trace

MODELS = Registry[str]("--model")
MODELS.register("slurm", "Slurm (OCI HPC Stack)")  # kubernetes and hybrid come with their issues


@dataclass(frozen=True)
class SimulateRequest:
    input: Path
    model: str = "slurm"
    backfill: str = "easy"
    nodes: int | None = None  # overrides the trace header
    gpus_per_node: int = 1
    skip_bad_lines: bool = False
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


def cluster_nodes(trace: Trace, nodes: int | None, gpus_per_node: int) -> tuple[int, str]:
    """Nodes of the simulated pool and where the figure came from: ``nodes`` when given, else the
    traced cluster's size (SWF: MaxProcs, else MaxNodes) / ``gpus_per_node``, else the largest job."""
    if nodes is not None:
        if nodes < 1:
            raise InputError("must be at least 1", field="--nodes")
        return nodes, "--nodes"
    if trace.capacity_gpus is not None:
        if trace.capacity_gpus < gpus_per_node:
            raise InputError(
                f"the traced cluster ({trace.capacity_source}: {trace.capacity_gpus}) is smaller "
                f"than one node of {gpus_per_node} GPUs",
                path=trace.path,
                field="--gpus-per-node",
            )
        return trace.capacity_gpus // gpus_per_node, trace.capacity_source
    if len(trace.jobs) == 0:
        raise InputError("no jobs and no cluster size in the trace: give --nodes", path=trace.path)
    return int(trace.jobs.nodes.max()), "largest job"


def _rejection_warning(trace: Trace, run: ModelRun) -> str:
    rejected = np.flatnonzero(run.schedule.rejected)
    first = rejected[np.argmin(run.jobs.source_line[rejected])]
    where = f"{trace.path}:{run.jobs.source_line[first]}"
    return (
        f"{len(rejected)} job(s) ask more than the cluster's {run.pool.nodes} nodes x "
        f"{run.pool.gpus_per_node} GPUs and were rejected; first: {where}: "
        f"{field_name(7)} (or field 5 when unset): {run.jobs.gpus[first]} processors"
    )


def simulate(request: SimulateRequest) -> SimulateResult:
    """Read the trace, simulate the model, write OUT/summary.json, jobs.parquet and timeline.parquet."""
    MODELS.get(request.model)
    began = time.perf_counter()
    trace = read_trace(
        request.input, gpus_per_node=request.gpus_per_node, skip_bad_lines=request.skip_bad_lines
    )
    nodes, capacity_source = cluster_nodes(trace, request.nodes, request.gpus_per_node)
    pool = Pool("batch", nodes, request.gpus_per_node)
    read_s = time.perf_counter() - began

    run = simulate_slurm(trace.jobs, pool, SlurmSettings(backfill=request.backfill))

    began = time.perf_counter()
    model_summary = summarize(run)
    files = write_tables(request.out, [run])
    model_summary["timing_s"] = {
        "read": read_s,
        "simulate": run.simulate_s,
        "write": time.perf_counter() - began,
    }
    summary = {
        "gpuplan_version": __version__,
        "input": {
            "path": str(request.input),
            "format": trace.format,
            "jobs_read": len(trace.jobs),
            "skipped_invalid_jobs": trace.skipped_invalid,
            "skipped_bad_lines": trace.bad_lines,
            "capacity_source": capacity_source,
        },
        "models": {run.model: model_summary},
    }
    files.insert(0, write_summary(request.out, summary))
    warnings = []
    if run.schedule.rejected.any():
        warnings.append(_rejection_warning(trace, run))
    if trace.skipped_invalid:
        warnings.append(f"{trace.skipped_invalid} job(s) with run time < 0 or no processors were skipped")
    if trace.bad_lines:
        warnings.append(f"{trace.bad_lines} malformed line(s) were skipped (--skip-bad-lines)")
    return SimulateResult(summary=summary, files=files, warnings=warnings)
