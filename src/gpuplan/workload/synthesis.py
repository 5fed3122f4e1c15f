"""Workloads synthesised from a scenario, deterministic per seed.

Each workload draws from its own random stream, seeded by the scenario seed and the workload's
name, so adding or editing one workload leaves the others' jobs unchanged. Everything is vectorised:
a 30-day, thousand-GPU scenario synthesises in well under a second (``bench/bench_synthesis.py``).

- Arrivals: a non-homogeneous Poisson process drawn by thinning (Lewis and Shedler 1979): candidate
  times at the peak rate, each kept with probability rate(t) / peak rate. rate(t) is the mean rate
  times a daily cosine and a weekday/weekend factor (each averaging 1, so ``rate`` stays the mean),
  times any burst factors.
- Sizes from the weighted mix; run times lognormal (median, sigma) or resampled from a trace; time
  limits = run time x a lognormal over-request ratio, rounded up and capped.
- Services: demand sampled every 5 minutes from a daily cosine between trough and peak, with a
  weekend factor and multiplicative noise, or from a CSV repeated to fill the horizon.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.errors import InputError
from gpuplan.scenario.load import LoadedScenario, ResolvedPool
from gpuplan.scenario.model import (
    Arrival,
    BatchWorkload,
    Demand,
    Empirical,
    JobListWorkload,
    LogNormal,
    ServiceWorkload,
    TimeLimit,
    TraceWorkload,
)
from gpuplan.workload.demand import read_demand_csv
from gpuplan.workload.jobtable import Float64, JobTable, Labels
from gpuplan.workload.kueue_jobs import listed_table, read_checked_list
from gpuplan.workload.pods import PodRequests
from gpuplan.workload.readers import read_trace
from gpuplan.workload.services import DEMAND_STEP_S, Service
from gpuplan.workload.trace import Trace

# Workload lives in gpuplan.workload.workload (a trace needs none of this module); named here too for
# the modules that import it from here (the compiled Kubernetes model's type hints)
from gpuplan.workload.workload import Workload as Workload

DAY_S = 86400.0
WEEK_S = 7 * DAY_S


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _seconds_into_week(start: datetime) -> float:
    """Seconds from Monday 00:00 to ``start``: the phase of the daily and weekly profiles."""
    return start.weekday() * DAY_S + start.hour * 3600.0 + start.minute * 60.0 + start.second


def _weekend(wall_s: Float64) -> npt.NDArray[np.bool_]:
    return (wall_s // DAY_S) % 7 >= 5


def _daily_cosine(wall_s: Float64, peak_hour: float) -> Float64:
    """1 at the peak hour, -1 twelve hours later."""
    hour = (wall_s % DAY_S) / 3600.0
    return np.cos(2 * np.pi * (hour - peak_hour) / 24.0)


def arrival_rate(t_s: Float64, arrival: Arrival, week_phase_s: float) -> Float64:
    """Arrivals per second at times ``t_s`` (seconds from the scenario start)."""
    wall = t_s + week_phase_s
    rate = np.full(len(t_s), arrival.rate)
    if arrival.diurnal is not None:
        ratio = arrival.diurnal.peak_to_trough
        rate *= 1 + (ratio - 1) / (ratio + 1) * _daily_cosine(wall, arrival.diurnal.peak_hour)
    if arrival.weekly is not None:
        weekday = 7 / (5 + 2 * arrival.weekly.weekend_factor)  # so the week averages 1
        rate *= np.where(_weekend(wall), arrival.weekly.weekend_factor * weekday, weekday)
    for burst in arrival.bursts:
        rate *= np.where((t_s >= burst.start) & (t_s < burst.start + burst.duration), burst.factor, 1.0)
    return rate


def _peak_rate(arrival: Arrival) -> float:
    peak = arrival.rate
    if arrival.diurnal is not None:
        ratio = arrival.diurnal.peak_to_trough
        peak *= 1 + (ratio - 1) / (ratio + 1)
    if arrival.weekly is not None:
        peak *= 7 / (5 + 2 * arrival.weekly.weekend_factor) * max(1.0, arrival.weekly.weekend_factor)
    for burst in arrival.bursts:
        peak *= max(1.0, burst.factor)
    return peak


def arrivals(rng: np.random.Generator, arrival: Arrival, horizon_s: float, week_phase_s: float) -> Float64:
    """Sorted arrival times in [0, horizon) by thinning a Poisson process at the peak rate."""
    peak = _peak_rate(arrival)
    candidates = np.sort(rng.uniform(0.0, horizon_s, rng.poisson(peak * horizon_s)))
    keep = rng.uniform(0.0, peak, len(candidates)) < arrival_rate(candidates, arrival, week_phase_s)
    return np.floor(candidates[keep])  # whole seconds, as schedulers log them


class _Durations:
    """Run-time samplers; a trace behind an empirical distribution is read once."""

    def __init__(self, loaded: LoadedScenario) -> None:
        self.loaded = loaded
        self.traces: dict[tuple[Path, str | None], Float64] = {}

    def sample(self, rng: np.random.Generator, spec: LogNormal | Empirical, count: int) -> Float64:
        if isinstance(spec, LogNormal):
            runs = spec.median * np.exp(spec.sigma * rng.standard_normal(count))
            runs = np.maximum(np.round(runs), 1.0)
            return np.minimum(runs, spec.max) if spec.max is not None else runs
        key = (self.loaded.resolve(spec.trace), spec.format)
        if key not in self.traces:
            durations = read_trace(key[0], format=spec.format).jobs.duration_s
            self.traces[key] = durations[durations > 0]
            if len(self.traces[key]) == 0:
                raise InputError(
                    "the trace has no job with a run time > 0", path=key[0], field="duration.trace"
                )
        return np.round(rng.choice(self.traces[key], count) * spec.scale)


def time_limits(rng: np.random.Generator, spec: TimeLimit, runs: Float64) -> Float64:
    limits = runs * spec.over_request * np.exp(spec.sigma * rng.standard_normal(len(runs)))
    if spec.round_to:
        limits = np.ceil(limits / spec.round_to) * spec.round_to
    limits = np.maximum(np.ceil(limits), 60.0)  # Slurm limits are whole minutes
    return np.minimum(limits, spec.max) if spec.max is not None else limits


def _first_fit(pools: list[ResolvedPool], nodes: int, gpus: int, wanted: str | None) -> str:
    for pool in pools:
        if (wanted is None or pool.name == wanted) and nodes <= pool.nodes and gpus <= pool.gpus_per_node:
            return pool.name
    return wanted or pools[0].name  # does not fit: the simulation rejects it and says so


def _batch_jobs(
    loaded: LoadedScenario, workload: BatchWorkload, durations: _Durations, rng: np.random.Generator
) -> JobTable:
    scenario = loaded.scenario
    submit = arrivals(rng, workload.arrival, scenario.horizon, _seconds_into_week(scenario.start))
    count = len(submit)
    mix = workload.size_mix()
    choice = rng.choice(len(mix), size=count, p=[p for _, _, p in mix])
    nodes = np.array([n for n, _, _ in mix], dtype=np.int32)[choice]
    gpus = np.array([g for _, g, _ in mix], dtype=np.int32)[choice]
    pools = [_first_fit(loaded.pools, n, g, workload.pool) for n, g, _ in mix]
    runs = durations.sample(rng, workload.duration, count)
    limits = time_limits(rng, workload.time_limit, runs)
    team = next(team for team in scenario.teams if team.name == workload.team)
    user_index = rng.integers(0, team.users, count)
    checkpoint = workload.checkpoint_interval
    return JobTable(
        job_id=np.zeros(count, dtype=np.int64),
        user=Labels(user_index.astype(np.int32), tuple(f"{team.name}-{k + 1}" for k in range(team.users))),
        team=Labels.constant(team.name, count),
        submit_s=submit,
        duration_s=runs,
        time_limit_s=limits,
        nodes=nodes,
        gpus_per_node=gpus,
        cpus_per_node=gpus * (workload.cpus_per_gpu or 0),
        mem_per_node=(gpus * (workload.mem_per_gpu_gb or np.nan) * 1024.0).astype(np.float64),
        partition=(
            Labels.constant(workload.partition, count)
            if workload.partition is not None
            else Labels(choice.astype(np.int32), tuple(pools))
            if count
            else Labels.constant("", 0)
        ),
        qos=Labels.constant(workload.qos, count),
        kind=Labels.constant(workload.kind, count),
        state=Labels.constant("completed", count),
        source_line=np.zeros(count, dtype=np.int64),
        workload=Labels.constant(workload.name, count),
        checkpoint_s=np.full(count, np.nan if checkpoint is None else checkpoint),
    )


def _trace_jobs(loaded: LoadedScenario, workload: TraceWorkload) -> JobTable:
    spec = workload.trace
    pool = loaded.pool(workload.pool) if workload.pool else loaded.pools[0]
    path = loaded.resolve(spec.path)
    trace: Trace = read_trace(
        path, format=spec.format, gpus_per_node=spec.gpus_per_node or pool.gpus_per_node
    )
    jobs = trace.jobs
    submit = jobs.submit_s - (jobs.submit_s.min() if len(jobs) else 0.0)
    end = np.inf if spec.window.end is None else spec.window.end
    jobs = jobs.take(np.flatnonzero((submit >= spec.window.start) & (submit < end)))
    origin = (jobs.submit_s.min() + spec.window.start) if len(jobs) else 0.0
    submit = np.floor(np.maximum(jobs.submit_s - origin, 0.0) / spec.load_scale)
    # when sbatch ran (before the job was eligible, with --begin), on the same clock
    submitted = None if jobs.submitted_s is None else np.floor((jobs.submitted_s - origin) / spec.load_scale)

    if spec.team is not None:
        team = Labels.constant(spec.team, len(jobs))
    else:
        mapping = spec.team_map or {}
        missing = [label for label in jobs.team.labels if label not in mapping and "*" not in mapping]
        if missing:
            raise InputError(
                f"trace teams {', '.join(missing[:5])} are not in team_map (add them, or '*' for the rest)",
                path=loaded.path,
                field=f"workloads.{workload.name}.trace.team_map",
            )
        mapped = [mapping.get(label, mapping.get("*", "")) for label in jobs.team.labels]
        team = Labels.from_keys(jobs.team.codes, lambda code: mapped[code])
    count = len(jobs)
    # a traced partition that the scenario defines on this pool is kept (sacct's Partition column)
    own = {p.name for p in loaded.scenario.models.slurm.partitions if p.pool == pool.name}
    partition = Labels.from_keys(
        jobs.partition.codes,
        lambda code: label if (label := jobs.partition.labels[code]) in own else pool.name,
    )
    return replace(
        jobs,
        submit_s=submit,
        team=team,
        partition=partition if count else Labels.constant(pool.name, 0),
        kind=Labels.constant(workload.kind, count),
        workload=Labels.constant(workload.name, count),
        submitted_early=np.ones(count, dtype=bool) if spec.submitted_early else jobs.submitted_early,
        submitted_s=submitted,
    )


def _listed_jobs(loaded: LoadedScenario, workload: JobListWorkload) -> tuple[JobTable, PodRequests]:
    """The jobs of a workload list, checked against the scenario (InputError at its line)."""
    listed = read_checked_list(loaded, workload)
    return listed_table(listed, loaded.scenario.start, workload.kind, workload.name)


def demand_curve(
    rng: np.random.Generator, demand: Demand, horizon_s: float, week_phase_s: float, resolve: Any
) -> Float64:
    """Requests/s every 5 minutes over the horizon. A CSV curve (read_demand_csv) is interpolated
    linearly and repeats with a period of its last time plus the step between its last two rows (so
    rows every hour from 0 to 23 h repeat daily)."""
    t = np.arange(math.ceil(horizon_s / DEMAND_STEP_S), dtype=np.float64) * DEMAND_STEP_S
    wall = t + week_phase_s
    if demand.csv is not None:
        times, rates = read_demand_csv(resolve(demand.csv))
        period = times[-1] + (times[-1] - times[-2])
        rps = np.interp(t, times, rates, period=period)
    else:
        assert demand.peak is not None and demand.trough is not None
        rps = demand.trough + (demand.peak - demand.trough) * (1 + _daily_cosine(wall, demand.peak_hour)) / 2
    if demand.weekly is not None:
        rps = rps * np.where(_weekend(wall), demand.weekly.weekend_factor, 1.0)
    if demand.noise > 0:
        rps = rps * np.maximum(0.0, 1 + demand.noise * rng.standard_normal(len(t)))
    return np.asarray(np.maximum(rps, 0.0), dtype=np.float64)


def _service(loaded: LoadedScenario, workload: ServiceWorkload, rng: np.random.Generator) -> Service:
    scenario = loaded.scenario
    pool = _first_fit(loaded.pools, 1, workload.gpus_per_replica, workload.pool)
    return Service(
        name=workload.name,
        team=workload.team,
        pool=pool,
        gpus_per_replica=workload.gpus_per_replica,
        throughput_per_replica=workload.throughput_per_replica,
        min_replicas=workload.replicas.min,
        max_replicas=workload.replicas.max,
        slo_target=workload.slo_target,
        demand_rps=demand_curve(
            rng, workload.demand, scenario.horizon, _seconds_into_week(scenario.start), loaded.resolve
        ),
    )


def synthesize(loaded: LoadedScenario) -> Workload:
    """The scenario's jobs (job ids 1.. in submit order) and services."""
    scenario = loaded.scenario
    durations = _Durations(loaded)
    tables: list[JobTable] = []
    requests: list[PodRequests | None] = []  # per table: its pods' own requests (listed jobs)
    services: list[Service] = []
    for workload in scenario.workloads:
        rng = _rng(scenario.seed, workload.name)
        if isinstance(workload, BatchWorkload):
            tables.append(_batch_jobs(loaded, workload, durations, rng))
            requests.append(None)
        elif isinstance(workload, TraceWorkload):
            tables.append(_trace_jobs(loaded, workload))
            requests.append(None)
        elif isinstance(workload, JobListWorkload):
            table, listed_requests = _listed_jobs(loaded, workload)
            tables.append(table)
            requests.append(listed_requests)
        else:
            services.append(_service(loaded, workload, rng))
    pod_requests = None
    if tables:
        jobs = JobTable.concat(tables)
        order = np.argsort(jobs.submit_s, kind="stable")
        jobs = jobs.take(order)
        jobs = replace(jobs, job_id=np.arange(1, len(jobs) + 1, dtype=np.int64))
        if any(r is not None for r in requests):
            pod_requests = _aligned_requests(tables, requests).take(order)
    else:
        # no batch work (services only): an empty table with the columns synthesised jobs have
        jobs = replace(
            JobTable.build(job_id=[], submit_s=[], duration_s=[], nodes=[]), workload=Labels.constant("", 0)
        )
    return Workload(
        jobs=jobs,
        services=services,
        epoch_s=(scenario.start if scenario.start.tzinfo else scenario.start.replace(tzinfo=UTC)).timestamp(),
        horizon_s=scenario.horizon,
        capacity_gpus=sum(pool.gpus for pool in loaded.pools),
        team_shares={team.name: team.share for team in scenario.teams},
        team_users={team.name: team.users for team in scenario.teams},
        pod_requests=pod_requests,
    )


def _aligned_requests(tables: list[JobTable], requests: list[PodRequests | None]) -> PodRequests:
    """One PodRequests for the concatenated ``tables``: each listed job's own CPU and memory, -1
    (the node's share for its GPUs, as for generated jobs) for the others."""

    def column(name: str) -> npt.NDArray[np.int64]:
        parts = [
            np.full(len(t), -1, np.int64) if r is None or getattr(r, name) is None else getattr(r, name)
            for t, r in zip(tables, requests, strict=True)
        ]
        return np.concatenate(parts).astype(np.int64)

    return PodRequests(cpu_milli=column("cpu_milli"), memory_mib=column("memory_mib"))
