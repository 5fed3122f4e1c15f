"""Load and check a scenario file. Every problem names the file, the line and the field path
(``research.yaml:23: workloads[2].duration.median: expected a duration like '6h'``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuplan.errors import InputError
from gpuplan.scenario.kubernetes import kubernetes_problems
from gpuplan.scenario.model import BatchWorkload, PoolSpec, Scenario, ServiceWorkload, TraceWorkload
from gpuplan.scenario.source import Loc, Located, load_yaml

# Tags pydantic puts in error locations for tagged unions; they are not keys of the file.
_UNION_TAGS = {"batch", "service", "trace", "lognormal", "empirical"}
MAX_ERRORS = 20


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


def field_path(loc: Iterable[str | int]) -> str:
    """``workloads[2].duration.median`` from ``("workloads", 2, "duration", "median")``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


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


def _message(error: Any) -> tuple[Loc, str]:
    loc = tuple(error["loc"])
    if error["type"] == "unknown_key":
        loc = (*loc, str(error["ctx"]["name"]))
    if error["type"] == "missing":
        return loc, "required key is missing"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return loc, message


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


def _check_references(
    scenario: Scenario, located: Located
) -> tuple[list[ResolvedPool], list[Problem], list[str]]:
    problems: list[Problem] = []
    warnings: list[str] = []

    def problem(loc: Loc, message: str) -> None:
        problems.append(Problem(located.line_of(loc), field_path(loc), message))

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
            if workload.multi_node and not any(pool.rdma for pool in candidates):
                warnings.append(
                    f"workloads[{index}] ({workload.name}): multi-node jobs on a pool without RDMA"
                )
            for b, burst in enumerate(workload.arrival.bursts):
                if burst.start >= scenario.horizon:
                    problem((*at, "arrival", "bursts", b, "start"), "the burst starts after the horizon")
        elif isinstance(workload, ServiceWorkload):
            if not any(workload.gpus_per_replica <= pool.gpus_per_node for pool in candidates):
                problem((*at, "gpus_per_replica"), "no pool has that many GPUs per node")
            if (
                workload.demand.csv is not None
                and not (path := _resolve(located, workload.demand.csv)).is_file()
            ):
                problem((*at, "demand", "csv"), f"no such file: {path}")
        else:
            spec = workload.trace
            if not (path := _resolve(located, spec.path)).is_file():
                problem((*at, "trace", "path"), f"no such file: {path}")
            if spec.team is not None:
                known((*at, "trace", "team"), spec.team, team_names, "team")
            for key, team in (spec.team_map or {}).items():
                known((*at, "trace", "team_map", key), team, team_names, "team")
    services = [w.name for w in scenario.workloads if isinstance(w, ServiceWorkload)]
    for loc, message in kubernetes_problems(scenario.models.kubernetes, team_names, pool_names, services):
        problem(loc, message)
    return resolved, problems, warnings


def _resolve(located: Located, path: Path) -> Path:
    return path if path.is_absolute() else located.path.parent / path


def load_scenario(path: Path | str, text: str | None = None) -> LoadedScenario:
    """Read, validate and cross-check a scenario file; raises ScenarioError listing every problem."""
    path = Path(path)
    located = load_yaml(path, text)
    if not isinstance(located.data, dict):
        raise ScenarioError(
            path, [Problem(1, "", "a scenario is a mapping of sections (name, cluster, ...)")]
        )
    try:
        scenario = Scenario.model_validate(located.data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc, message = _message(error)
            loc = _clean_loc(loc, located)
            problems.append(Problem(located.line_of(loc), field_path(loc), message))
        raise ScenarioError(path, problems) from None
    pools, problems, warnings = _check_references(scenario, located)
    if problems:
        raise ScenarioError(path, problems)
    return LoadedScenario(scenario=scenario, path=path, pools=pools, warnings=warnings)
