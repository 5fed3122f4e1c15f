"""Load and check a scenario file. Every problem names the file, the line and the field path
(``research.yaml:23: workloads[2].duration.median: expected a duration like '6h'``)."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuplan.errors import InputError
from gpuplan.scenario.hybrid import HybridSettings
from gpuplan.scenario.kubernetes import kubernetes_problems
from gpuplan.scenario.model import (
    Arrival,
    BatchWorkload,
    Empirical,
    JobListWorkload,
    PoolSpec,
    Scenario,
    ServiceWorkload,
    TraceWorkload,
)
from gpuplan.scenario.overrides import Override, apply_overrides
from gpuplan.scenario.source import Loc, Located, field_path, load_yaml
from gpuplan.scenario.units import format_duration, format_rate, shown_value

# Tags pydantic puts in error locations for tagged unions; they are not keys of the file.
_UNION_TAGS = {"batch", "service", "trace", "lognormal", "empirical"}
# pydantic's errors of its strict number types (StrictInt, StrictFloat: no boolean, no text), and
# what the field expects
_NUMBER_ERRORS = {"int_type": "a whole number", "float_type": "a number"}
MAX_ERRORS = 20

# Synthesised jobs: past WARN_JOBS `validate` warns (8.5 million jobs took 2.2 GB); past MAX_JOBS (some
# 26 GB) the scenario is refused, as no simulation of it could finish in memory.
WARN_JOBS = 2_000_000
MAX_JOBS = 100_000_000
YEAR_S = 365 * 86400.0


@dataclass(frozen=True)
class Problem:
    line: int | None
    field: str
    message: str


class ScenarioError(InputError):
    """One or more problems in a scenario file, each with its line and field path."""

    def __init__(self, path: Path, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0]
        super().__init__(first.message, path=path, line=first.line, field=first.field)

    def __str__(self) -> str:
        lines = [
            str(InputError(p.message, path=self.path, line=p.line, field=p.field))
            for p in self.problems[:MAX_ERRORS]
        ]
        if len(self.problems) > MAX_ERRORS:
            lines.append(f"... and {len(self.problems) - MAX_ERRORS} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class ResolvedPool:
    """A pool with the figures of its shape filled in (the scenario's own values win)."""

    name: str
    nodes: int
    gpus_per_node: int
    shape: str | None
    gpu_model: str | None
    cpus_per_node: int | None
    memory_gb: float | None
    rdma: bool
    price_per_gpu_hour: float | None

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class LoadedScenario:
    scenario: Scenario
    path: Path
    pools: list[ResolvedPool]
    warnings: list[str] = field(default_factory=list)
    source: Located | None = None  # the file's lines, for errors found after loading
    overrides: tuple[Override, ...] = ()  # the --set it was read with

    def line_of(self, loc: Loc) -> int | None:
        """The line of a field of the file (or of its nearest ancestor); None when unknown."""
        return None if self.source is None else self.source.line_of(loc)

    def resolve(self, relative: Path) -> Path:
        """A path written in the scenario, relative to the scenario file."""
        return relative if relative.is_absolute() else self.path.parent / relative

    def pool(self, name: str) -> ResolvedPool:
        return next(pool for pool in self.pools if pool.name == name)


def _clean_loc(loc: tuple[str | int, ...], located: Located) -> Loc:
    clean: list[str | int] = []
    for part in loc:
        if isinstance(part, str) and part in _UNION_TAGS and (*clean, part) not in located.lines:
            continue
        clean.append(part)
    return tuple(clean)


def error_message(error: Any) -> str:
    """A pydantic error's message for the user: without pydantic's prefixes, and for a number field
    with the value the file gave (pydantic's strict number types say only "Input should be a valid
    integer", which for ``nodes: true`` hides that YAML read a boolean)."""
    if error["type"] in _NUMBER_ERRORS:
        return f"expected {_NUMBER_ERRORS[error['type']]}, got {shown_value(error['input'])}"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message


def _message(error: Any) -> tuple[Loc, str]:
    loc = tuple(error["loc"])
    if error["type"] == "unknown_key":
        loc = (*loc, str(error["ctx"]["name"]))
    if error["type"] == "missing":
        return loc, "required key is missing"
    return loc, error_message(error)


def validation_problems(exc: ValidationError, located: Located) -> list[Problem]:
    """A pydantic validation's errors as problems at the lines of ``located`` (a scenario, or any
    YAML file checked by a Section)."""
    problems = []
    for error in exc.errors():
        loc, message = _message(error)
        loc = _clean_loc(loc, located)
        problems.append(Problem(located.line_of(loc), field_path(loc), message))
    return problems


def _resolve_pool(
    spec: PoolSpec, index: int, problems: list[Problem], located: Located
) -> ResolvedPool | None:
    from gpuplan.scenario.shapes import get_shape

    shape = None
    if spec.shape is not None:
        try:
            shape = get_shape(spec.shape)
        except InputError as exc:
            loc: Loc = ("cluster", "pools", index, "shape")
            problems.append(Problem(located.line_of(loc), field_path(loc), exc.message))
            return None
        if spec.gpus_per_node is not None and spec.gpus_per_node != shape.gpus_per_node:
            loc = ("cluster", "pools", index, "gpus_per_node")
            message = f"{spec.shape} has {shape.gpus_per_node} GPUs per node, not {spec.gpus_per_node}"
            problems.append(Problem(located.line_of(loc), field_path(loc), message))
            return None
    gpus_per_node = spec.gpus_per_node or (shape.gpus_per_node if shape else 0)
    pricing = spec.pricing
    if pricing.option == "preemptible" and shape is not None and not shape.preemptible_allowed:
        # Oracle: "Preemptible capacity does not support bare metal instances" (Compute, preemptible.htm)
        loc = ("cluster", "pools", index, "pricing", "option")
        message = (
            f"{spec.shape} is a bare-metal shape, and Oracle's preemptible capacity does not support bare "
            "metal instances: use on_demand or reserved"
        )
        problems.append(Problem(located.line_of(loc), field_path(loc), message))
        return None
    if pricing.reserved_nodes is not None and (
        pricing.option != "reserved" or pricing.reserved_nodes > spec.nodes
    ):
        loc = ("cluster", "pools", index, "pricing", "reserved_nodes")
        why = (
            "applies to option reserved"
            if pricing.option != "reserved"
            else f"more than the pool's {spec.nodes} nodes"
        )
        problems.append(Problem(located.line_of(loc), field_path(loc), why))
        return None
    return ResolvedPool(
        name=spec.name,
        nodes=spec.nodes,
        gpus_per_node=gpus_per_node,
        shape=spec.shape,
        gpu_model=spec.gpu_model or (shape.gpu_model if shape else None),
        cpus_per_node=spec.cpus_per_node or (shape.cpu_cores if shape else None),
        memory_gb=spec.memory_gb or (shape.memory_gb if shape else None),
        rdma=spec.rdma if spec.rdma is not None else bool(shape and shape.rdma_cluster_network),
        price_per_gpu_hour=(
            spec.price_per_gpu_hour
            if spec.price_per_gpu_hour is not None or shape is None
            else shape.price_per_gpu_hour_usd
        ),
    )


def expected_arrivals(arrival: Arrival, horizon_s: float) -> float:
    """The mean number of arrivals in [0, horizon): ``rate`` times the horizon, with each burst's extra
    load (the daily and weekly profiles average 1, so they leave the mean as it is)."""
    edges = sorted(
        {0.0, horizon_s}
        | {min(max(edge, 0.0), horizon_s) for b in arrival.bursts for edge in (b.start, b.start + b.duration)}
    )
    total = 0.0
    for start, end in itertools.pairwise(edges):
        factor = 1.0
        for burst in arrival.bursts:
            if burst.start <= start and end <= burst.start + burst.duration:
                factor *= burst.factor
        total += arrival.rate * factor * (end - start)
    return total


def _warning(located: Located, loc: Loc, message: str, field: str | None = None) -> str:
    """A warning's text, naming its place as an InputError does (``file:line: field: message``); the
    field is ``loc``'s unless ``field`` is given."""
    return str(
        InputError(message, path=located.path, line=located.line_of(loc), field=field or field_path(loc))
    )


def _volume(scenario: Scenario, located: Located, problems: list[Problem], warnings: list[str]) -> None:
    """Warn when the scenario would synthesise millions of jobs or span more than a year; refuse it when
    no simulation of it could hold its jobs in memory."""
    if scenario.horizon > YEAR_S:
        warnings.append(
            _warning(
                located,
                ("horizon",),
                f"{format_duration(scenario.horizon)} runs past a year: simulations will be slow "
                "and memory-hungry",
            )
        )
    batch = [
        (index, workload, expected_arrivals(workload.arrival, scenario.horizon))
        for index, workload in enumerate(scenario.workloads)
        if isinstance(workload, BatchWorkload)
    ]
    if not batch:
        return
    jobs = sum(count for _, _, count in batch)
    index, largest, _ = max(batch, key=lambda item: item[2])
    loc: Loc = ("workloads", index, "arrival", "rate")
    bursts = " with its bursts" if largest.arrival.bursts else ""
    figure = (
        f"about {jobs:,.0f} jobs would be synthesised (workloads[{index}] {largest.name}: "
        f"{format_rate(largest.arrival.rate)} over {format_duration(scenario.horizon)}{bursts})"
    )
    if jobs > MAX_JOBS:
        problems.append(
            Problem(
                located.line_of(loc),
                "workloads",
                f"{figure}: more than {MAX_JOBS:,} cannot be simulated in memory",
            )
        )
    elif jobs > WARN_JOBS:
        warnings.append(
            _warning(located, loc, f"{figure}: simulations will be slow and memory-hungry", "workloads")
        )


def _check_trace(
    located: Located, at: Loc, path: Path, format: str | None, problem: Callable[[Loc, str], None]
) -> None:
    """A trace file exists and its format is known: given (with a did-you-mean), or told from its
    name or header as ``simulate`` will tell it."""
    # the readers (NumPy, pyarrow) are imported only for a scenario that names a trace
    from gpuplan.workload.readers import READERS, detect_format

    formats = list(READERS)
    if format is not None and format not in formats:
        close = difflib.get_close_matches(format, formats, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        problem((*at, "format"), f"unknown trace format {format!r} (known: {', '.join(formats)}){hint}")
        return
    resolved = _resolve(located, path)
    if not resolved.is_file():
        problem((*at, _path_key(at)), f"no such file: {resolved}")
        return
    if format is None:
        try:
            detect_format(resolved)
        except InputError as exc:
            why = exc.message.split(";")[0]  # "cannot tell the trace format from ..."
            problem(
                (*at, _path_key(at)),
                f"{resolved.name}: {why}; give its format ({', '.join(formats)})",
            )


def _path_key(at: Loc) -> str:
    return "trace" if at[-1] == "duration" else "path"


def _check_references(
    scenario: Scenario, located: Located
) -> tuple[list[ResolvedPool], list[Problem], list[str]]:
    problems: list[Problem] = []
    warnings: list[str] = []

    def problem(loc: Loc, message: str) -> None:
        problems.append(Problem(located.line_of(loc), field_path(loc), message))

    def warning(loc: Loc, message: str) -> None:
        warnings.append(_warning(located, loc, message))

    def known(loc: Loc, name: str, names: list[str], what: str) -> bool:
        if name in names:
            return True
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(names)})"
        problem(loc, f"no {what} named {name!r}{hint}")
        return False

    slurm = scenario.models.slurm
    for section, items in (
        (("cluster", "pools"), scenario.cluster.pools),
        (("teams",), scenario.teams),
        (("workloads",), scenario.workloads),
        (("models", "slurm", "partitions"), slurm.partitions),
        (("models", "slurm", "qos"), slurm.qos),
        (("models", "slurm", "reservations"), slurm.reservations),
    ):
        seen: set[str] = set()
        for index, item in enumerate(items):
            if item.name in seen:
                problem((*section, index, "name"), f"another entry is already named {item.name!r}")
            seen.add(item.name)

    pools = [_resolve_pool(spec, i, problems, located) for i, spec in enumerate(scenario.cluster.pools)]
    resolved = [pool for pool in pools if pool is not None]
    by_name = {pool.name: pool for pool in resolved}
    team_names = [team.name for team in scenario.teams]
    qos_names = ["normal", *(qos.name for qos in slurm.qos)]
    pool_names = [spec.name for spec in scenario.cluster.pools]
    partition_pool = {partition.name: partition.pool for partition in slurm.partitions}

    for index, partition in enumerate(slurm.partitions):
        at_partition: Loc = ("models", "slurm", "partitions", index)
        known((*at_partition, "pool"), partition.pool, pool_names, "pool")
        for k, account in enumerate(partition.allow_accounts or []):
            known((*at_partition, "allow_accounts", k), account, team_names, "team")
    hybrid = scenario.models.hybrid
    for split_pool, nodes in hybrid.split.items():
        at_split: Loc = ("models", "hybrid", "split", split_pool)
        if (
            known(at_split, split_pool, pool_names, "pool")
            and split_pool in by_name
            and nodes > by_name[split_pool].nodes
        ):
            problem(at_split, f"more than the pool's {by_name[split_pool].nodes} nodes")
    workload_names = [workload.name for workload in scenario.workloads]
    for index, rule in enumerate(hybrid.routing):
        at_rule: Loc = ("models", "hybrid", "routing", index)
        if rule.team is not None:
            known((*at_rule, "team"), rule.team, team_names, "team")
        if rule.workload is not None:
            known((*at_rule, "workload"), rule.workload, workload_names, "workload")
    for index, reservation in enumerate(slurm.reservations):
        at_reservation: Loc = ("models", "slurm", "reservations", index)
        if (
            known((*at_reservation, "pool"), reservation.pool, pool_names, "pool")
            and reservation.pool in by_name
        ) and reservation.nodes > by_name[reservation.pool].nodes:
            problem(
                (*at_reservation, "nodes"),
                f"more than the pool's {by_name[reservation.pool].nodes} nodes",
            )
        for k, account in enumerate(reservation.accounts):
            known((*at_reservation, "accounts", k), account, team_names, "team")
    for index, qos in enumerate(slurm.qos):
        for k, name in enumerate(qos.preempt):
            known(("models", "slurm", "qos", index, "preempt", k), name, qos_names, "QoS")

    for index, workload in enumerate(scenario.workloads):
        at: Loc = ("workloads", index)
        if isinstance(workload, JobListWorkload):  # read (and checked) once the scenario is whole
            if not _resolve(located, workload.jobs).is_file():
                problem((*at, "jobs"), f"no such file: {_resolve(located, workload.jobs)}")
            continue
        if not isinstance(workload, TraceWorkload):
            known((*at, "team"), workload.team, team_names, "team")
        if workload.pool is not None and not known((*at, "pool"), workload.pool, pool_names, "pool"):
            continue
        pool_name = workload.pool
        if isinstance(workload, BatchWorkload) and workload.partition is not None:
            if not known((*at, "partition"), workload.partition, list(partition_pool), "partition"):
                continue
            if pool_name is not None and pool_name != partition_pool[workload.partition]:
                problem(
                    (*at, "partition"),
                    f"partition {workload.partition!r} spans pool {partition_pool[workload.partition]!r}, "
                    f"not {pool_name!r}",
                )
                continue
            pool_name = partition_pool[workload.partition]
        candidates = [by_name[pool_name]] if pool_name in by_name else resolved
        if isinstance(workload, BatchWorkload):
            known((*at, "qos"), workload.qos, qos_names, "QoS (models.slurm.qos)")
            for nodes, gpus, _ in workload.size_mix():
                if not any(nodes <= pool.nodes and gpus <= pool.gpus_per_node for pool in candidates):
                    where = f"pool {pool_name!r}" if pool_name else "any pool"
                    problem((*at, "size"), f"a {nodes}x{gpus} job does not fit {where}")
                elif pool_name in hybrid.split and pool_name in by_name:
                    message = _split_problem(hybrid, workload, nodes, by_name[pool_name])
                    if message:
                        problem(("models", "hybrid", "split", pool_name), message)
            if workload.multi_node and not any(pool.rdma for pool in candidates):
                warning((*at, "size"), f"{workload.name}: multi-node jobs on a pool without RDMA")
            for b, burst in enumerate(workload.arrival.bursts):
                if burst.start >= scenario.horizon:
                    problem((*at, "arrival", "bursts", b, "start"), "the burst starts after the horizon")
            if isinstance(workload.duration, Empirical):
                empirical = workload.duration
                _check_trace(located, (*at, "duration"), empirical.trace, empirical.format, problem)
        elif isinstance(workload, ServiceWorkload):
            if not any(workload.gpus_per_replica <= pool.gpus_per_node for pool in candidates):
                problem((*at, "gpus_per_replica"), "no pool has that many GPUs per node")
            max_nodes = {p.pool: p.maxNodes or 0 for p in scenario.models.kubernetes.nodePools}
            room = sum(
                max(pool.nodes, max_nodes.get(pool.name, 0))
                * (pool.gpus_per_node // workload.gpus_per_replica)
                for pool in candidates
            )
            replicas = scenario.models.kubernetes.hpa.maxReplicas.get(workload.name, workload.replicas.max)
            if 0 < room < replicas:
                warning(
                    (*at, "replicas", "max"),
                    f"{workload.name}: {replicas:,} replicas of {workload.gpus_per_replica} GPU(s) can never "
                    f"all run: the pools hold {room:,}; the others stay pending (and slow the simulation)",
                )
            if workload.demand.csv is not None:
                _check_demand(located, (*at, "demand", "csv"), workload.demand.csv, problem)
        else:
            spec = workload.trace
            _check_trace(located, (*at, "trace"), spec.path, spec.format, problem)
            if spec.team is not None:
                known((*at, "trace", "team"), spec.team, team_names, "team")
            for key, team in (spec.team_map or {}).items():
                known((*at, "trace", "team_map", key), team, team_names, "team")
    services = [w.name for w in scenario.workloads if isinstance(w, ServiceWorkload)]
    for loc, message in kubernetes_problems(scenario.models.kubernetes, team_names, pool_names, services):
        problem(loc, message)
    _volume(scenario, located, problems, warnings)
    return resolved, problems, warnings


def _split_problem(hybrid: HybridSettings, workload: BatchWorkload, nodes: int, pool: ResolvedPool) -> str:
    """Why the given split of ``pool`` cannot hold ``workload``'s jobs of ``nodes`` nodes ("" if it
    can): they are routed to a side whose part is smaller, by a rule, or by the defaults with the
    other side too small as well (gpuplan.sim.hybrid.model moves default-routed jobs where they fit)."""
    side, by_rule = hybrid.side_of(workload.kind, workload.team, workload.name, nodes > 1)
    part = {"slurm": hybrid.split[pool.name], "kubernetes": pool.nodes - hybrid.split[pool.name]}
    other = "kubernetes" if side == "slurm" else "slurm"
    if nodes <= part[side] or (not by_rule and nodes <= part[other]):
        return ""
    return (
        f"the split gives {side} {part[side]} node(s) of pool {pool.name!r}, but workload "
        f"{workload.name!r} routed to {side} has {nodes}-node jobs; give {side} more nodes or route the "
        "workload elsewhere (models.hybrid.routing)"
    )


def _check_demand(located: Located, loc: Loc, written: Path, problem: Callable[[Loc, str], None]) -> None:
    """A service's demand CSV exists and reads (its own file and line in the message)."""
    from gpuplan.workload.demand import read_demand_csv

    path = _resolve(located, written)
    if not path.is_file():
        problem(loc, f"no such file: {path}")
        return
    try:
        read_demand_csv(path)
    except InputError as exc:
        problem(loc, f"the demand curve is not readable: {exc}")


def _resolve(located: Located, path: Path) -> Path:
    return path if path.is_absolute() else located.path.parent / path


def load_scenario(path: Path | str, overrides: Sequence[Override] = ()) -> LoadedScenario:
    """Read, validate and cross-check a scenario file, with ``overrides`` (``--set``) applied;
    raises ScenarioError listing every problem (a changed field's named by its ``--set``)."""
    path = Path(path)
    located = load_yaml(path)
    if not isinstance(located.data, dict):
        raise ScenarioError(
            path, [Problem(1, "", "a scenario is a mapping of sections (name, cluster, ...)")]
        )
    overridden = apply_overrides(located, overrides)
    located = overridden.located

    def named(problems: list[Problem]) -> list[Problem]:
        """A problem under a ``--set`` is that option's, not a line of the file's."""
        out = []
        for problem in problems:
            option = overridden.field_of(problem.field)
            out.append(problem if option is None else Problem(None, option, problem.message))
        return out

    try:
        scenario = Scenario.model_validate(located.data)
    except ValidationError as exc:
        raise ScenarioError(path, named(validation_problems(exc, located))) from None
    pools, problems, warnings = _check_references(scenario, located)
    if problems:
        raise ScenarioError(path, named(problems))
    return LoadedScenario(
        scenario=scenario,
        path=path,
        pools=pools,
        warnings=warnings,
        source=located,
        overrides=tuple(overrides),
    )


def check_workload_lists(loaded: LoadedScenario) -> None:
    """Read each workload list the scenario names and check its jobs against the scenario (as
    simulating does): InputError naming the list's file, line and field."""
    from gpuplan.workload.kueue_jobs import read_checked_list

    for workload in loaded.scenario.workloads:
        if isinstance(workload, JobListWorkload):
            read_checked_list(loaded, workload)
