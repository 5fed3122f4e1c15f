"""One entry for every command's INPUT: a scenario file (.yaml) or a trace, as jobs, services and
the pools they run on."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplan.errors import InputError
from gpuplan.sim.cluster import UNKNOWN, Pool
from gpuplan.workload.pods import NodeList, PodRequests, PodTrace, node_list_beside
from gpuplan.workload.readers import default_gpus_per_node, detect_format, read_trace
from gpuplan.workload.trace import Trace, bad_lines_sentence, invalid_jobs_sentence, no_jobs
from gpuplan.workload.workload import Workload

# The scenario's modules (its pydantic models, synthesis) and the node list's reader are imported
# where they are used: a trace needs none of them (start-up time).
if TYPE_CHECKING:
    from gpuplan.scenario.load import LoadedScenario

SCENARIO_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class InputOptions:
    """How to read a trace, or the fields of a scenario changed for the run (``sets``: ``--set
    PATH=VALUE``, gpuplan.scenario.overrides)."""

    format: str | None = None  # default: told from the file
    nodes: int | None = None  # cluster size (default: the trace header's, else the largest job)
    gpus_per_node: int | None = None  # default: 1 for SWF processors, 8 for GPU traces
    skip_bad_lines: bool = False
    node_list: Path | None = None  # nodes of a pod trace's cluster (default: the node list beside it)
    sets: tuple[str, ...] = ()  # a scenario's --set PATH=VALUE


@dataclass(frozen=True)
class Input:
    workload: Workload
    pools: list[Pool]
    info: dict[str, Any]  # the "input" section of summary.json
    trace: Trace | None = None
    scenario: LoadedScenario | None = None
    warnings: list[str] = field(default_factory=list)
    node_list: NodeList | None = None  # the traced cluster's nodes, one by one (Kubernetes pod traces)


def input_files(loaded: Input) -> list[Path]:
    """Every file the input was read from: the scenario and the traces and demand curves it names, or
    the trace and its node list."""
    if loaded.scenario is None:
        assert loaded.trace is not None
        node_list = loaded.info.get("node_list")
        return [Path(loaded.trace.path), *([Path(node_list)] if node_list else [])]
    from gpuplan.scenario.model import (
        BatchWorkload,
        Empirical,
        JobListWorkload,
        ServiceWorkload,
        TraceWorkload,
    )

    scenario = loaded.scenario
    files = [scenario.path]
    if scenario.scenario.cluster.price_list is not None:
        files.append(scenario.resolve(scenario.scenario.cluster.price_list))
    for workload in scenario.scenario.workloads:
        if isinstance(workload, TraceWorkload):
            files.append(scenario.resolve(workload.trace.path))
        elif isinstance(workload, JobListWorkload):
            files.append(scenario.resolve(workload.jobs))
        elif isinstance(workload, BatchWorkload) and isinstance(workload.duration, Empirical):
            files.append(scenario.resolve(workload.duration.trace))
        elif isinstance(workload, ServiceWorkload) and workload.demand.csv is not None:
            files.append(scenario.resolve(workload.demand.csv))
    return files


def is_scenario(path: Path) -> bool:
    return path.suffix.lower() in SCENARIO_SUFFIXES


MIB_PER_GB = 1024

# More nodes than any machine has (an SWF processor counts as a node: Fugaku has 158,976 nodes and
# 7.6 M cores, and the largest SWF logs a few hundred thousand processors): a typo, not a cluster.
MAX_POOL_NODES = 2**20


def cluster_nodes(trace: Trace, nodes: int | None, gpus_per_node: int) -> tuple[int, str]:
    """Nodes of the simulated pool and where the figure came from: ``nodes`` when given, else the
    traced cluster's size (SWF: MaxProcs, else MaxNodes) / ``gpus_per_node``, else the largest job."""
    if nodes is not None:
        if not 1 <= nodes <= MAX_POOL_NODES:
            raise InputError(f"must be from 1 to {MAX_POOL_NODES:,}", field="--nodes")
        return nodes, "--nodes"
    if trace.capacity_gpus is not None:
        if trace.capacity_gpus < gpus_per_node:
            raise InputError(
                f"the traced cluster ({trace.capacity_source}: {trace.capacity_gpus}) is smaller "
                f"than one node of {gpus_per_node} GPUs",
                path=trace.path,
                field="--gpus-per-node",
            )
        count, source = trace.capacity_gpus // gpus_per_node, trace.capacity_source
    elif len(trace.jobs) == 0:  # read_trace refuses such a trace; a reader called directly may not
        raise no_jobs(trace)
    else:
        count, source = int(trace.jobs.nodes.max()), "largest job"
    if count > MAX_POOL_NODES:
        # the line stating the figure: the header's (SWF MaxProcs) or the largest job's
        if trace.capacity_gpus is not None:
            line, field = trace.capacity_line, trace.capacity_field or "--nodes"
        else:
            line, field = int(trace.jobs.source_line[trace.jobs.nodes.argmax()]) or None, "--nodes"
        raise InputError(
            f"the traced cluster would have {count:,} nodes ({source}), more than any machine "
            f"({MAX_POOL_NODES:,}): give --nodes (and --gpus-per-node)",
            path=trace.path,
            line=line,
            field=field,
        )
    return count, source


def scenario_pools(loaded: LoadedScenario) -> list[Pool]:
    """A scenario's pools, with the CPU and memory per node its pools or their shapes give."""
    return [
        Pool(
            pool.name,
            pool.nodes,
            pool.gpus_per_node,
            node_prefix=pool.name,
            cpu_milli=pool.cpus_per_node * 1000 if pool.cpus_per_node else UNKNOWN,
            memory_mib=int(pool.memory_gb * MIB_PER_GB) if pool.memory_gb else UNKNOWN,
        )
        for pool in loaded.pools
    ]


def load_input(path: Path, options: InputOptions | None = None) -> Input:
    """Read a scenario (synthesising its workload) or a trace."""
    options = options or InputOptions()
    nodes, gpus_per_node = options.nodes, options.gpus_per_node
    if is_scenario(path):
        if nodes is not None or gpus_per_node is not None or options.node_list is not None:
            raise InputError(
                "a scenario sizes its own pools (cluster.pools)", field="--nodes/--gpus-per-node/--node-list"
            )
        from gpuplan.scenario.load import load_scenario
        from gpuplan.scenario.overrides import parse_overrides
        from gpuplan.workload.synthesis import synthesize

        loaded = load_scenario(path, parse_overrides(options.sets))
        workload = synthesize(loaded)
        pools = scenario_pools(loaded)
        info = {
            "path": str(path),
            "format": "scenario",
            "scenario": loaded.scenario.name,
            "seed": loaded.scenario.seed,
            "jobs": len(workload.jobs),
            "services": len(workload.services),
        }
        if options.sets:
            info["set"] = list(options.sets)  # read back with the scenario (report, the manifest)
        return Input(workload, pools, info, scenario=loaded, warnings=list(loaded.warnings))
    if options.sets:
        raise InputError("--set changes a scenario's fields: a trace has none", path=path, field="--set")
    format = options.format or detect_format(path)
    if gpus_per_node is None:
        gpus_per_node = default_gpus_per_node(format)
    trace = read_trace(
        path, format=format, gpus_per_node=gpus_per_node, skip_bad_lines=options.skip_bad_lines
    )
    node_count, capacity_source = cluster_nodes(trace, nodes, gpus_per_node)
    pools = [Pool("batch", node_count, gpus_per_node)]
    requests = None
    if isinstance(trace, PodTrace):
        requests = PodRequests(trace.gpu_milli, trace.cpu_milli, trace.memory_mib)
    workload = Workload(
        jobs=trace.jobs,
        epoch_s=trace.epoch_s,
        capacity_gpus=node_count * gpus_per_node,
        pod_requests=requests,
    )
    info = {
        "path": str(path),
        "format": trace.format,
        "jobs_read": len(trace.jobs),
        "skipped_invalid_jobs": trace.skipped_invalid,
        "skipped_bad_lines": trace.bad_lines,
        "skipped_lines": skipped_lines(trace),
        "capacity_source": capacity_source,
    }
    node_list_path = options.node_list or node_list_beside(path)
    node_list = None
    if node_list_path is not None:
        if not node_list_path.is_file():
            raise InputError("no such file", path=node_list_path, field="--node-list")
        from gpuplan.workload.k8s_pods import read_node_list

        node_list = read_node_list(node_list_path)
        info["node_list"] = str(node_list_path)
    warnings = []
    if trace.skipped_invalid:
        warnings.append(invalid_jobs_sentence(trace))
    if trace.bad_lines:
        warnings.append(skipped_lines_warning(trace))
    return Input(workload, pools, info, trace=trace, warnings=warnings, node_list=node_list)


def skipped_lines(trace: Trace) -> dict[str, Any]:
    """The lines --skip-bad-lines skipped, for summary.json: how many, and the first ones (the
    reader keeps SKIPPED_LINES_LISTED of them) with their field and what is wrong."""
    return {
        "count": trace.bad_lines,
        "first": [{"line": s.line, "field": s.field, "why": s.why} for s in trace.skipped_lines],
    }


def skipped_lines_warning(trace: Trace) -> str:
    """``2,000 malformed line(s) were skipped (--skip-bad-lines); the first 20:`` and then one line
    each, ``FILE:LINE: FIELD: why`` as an error names a bad line."""
    listed = trace.skipped_lines
    which = "" if len(listed) == trace.bad_lines else f"; the first {len(listed)}"
    lines = [str(InputError(s.why, path=trace.path, line=s.line, field=s.field)) for s in listed]
    return f"{bad_lines_sentence(trace)}{which}:" + "".join(f"\n  {line}" for line in lines)


def draws_at_random(loaded: Input) -> bool:
    """Whether the input's jobs or demand depend on its seed: a scenario's batch workloads (their
    arrivals, sizes and run times are drawn) or services with demand noise. A trace, and a scenario
    of traces, job lists and noiseless demand, are the same under every seed."""
    if loaded.scenario is None:
        return False
    from gpuplan.scenario.model import BatchWorkload, ServiceWorkload

    return any(
        isinstance(w, BatchWorkload) or (isinstance(w, ServiceWorkload) and w.demand.noise > 0)
        for w in loaded.scenario.scenario.workloads
    )


def with_seed(loaded: Input, seed: int) -> Input:
    """The scenario input synthesised again from another seed (the same file, pools and settings).

    Example: ``with_seed(load_input(Path("org.yaml")), 7).workload``"""
    scenario = loaded.scenario
    if scenario is None or seed == scenario.scenario.seed:
        return loaded
    from gpuplan.workload.synthesis import synthesize

    reseeded = replace(scenario, scenario=scenario.scenario.model_copy(update={"seed": seed}))
    workload = synthesize(reseeded)
    info = {**loaded.info, "seed": seed, "jobs": len(workload.jobs), "services": len(workload.services)}
    return replace(loaded, workload=workload, scenario=reseeded, info=info)
