"""The report's words: figures as a person writes them (no scientific notation, rates in the unit that
reads best, durations with units) and the scenario's workloads as phrases, shared by every section."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gpuplan.advisor import format as fmt
from gpuplan.scenario.model import (
    Arrival,
    BatchWorkload,
    Empirical,
    LogNormal,
    ServiceWorkload,
    TimeLimit,
    TraceWorkload,
)


def number(value: float) -> str:
    """A number as a person writes it: no scientific notation, three significant digits below 100."""
    if not math.isfinite(value):
        return "-"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return np.format_float_positional(float(value), precision=3, unique=True, fractional=False, trim="-")


def percent(share: float) -> str:
    """0.7 as "70 %" (the scenario's weights and factors; measured shares use fmt.value)."""
    return f"{number(share * 100)} %"


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def humanise(key: str) -> str:
    """A settings or scenario key as words: ``split_source`` -> "split source"."""
    return key.replace("_", " ")


def rate(per_second: float, what: str = "jobs") -> str:
    """An arrival rate in the unit that reads best: per day, per hour when busier, per week when rarer."""
    per_day = per_second * 86400.0
    if per_day >= 100:
        return f"{number(per_second * 3600.0)} {what} per hour"
    if per_day >= 1 or per_day == 0:
        return f"{number(per_day)} {what} per day"
    return f"{number(per_day * 7)} {what} per week"


def clock(hour: float) -> str:
    minutes = round(hour * 60) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def join_words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def setting_value(key: str, value: Any) -> str:
    """A scalar setting (or a list or mapping of scalars) in words; seconds (``*_s``) as durations."""
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return fmt.duration(value) if key.endswith("_s") else number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "; ".join(f"{humanise(str(k))} {setting_value(str(k), v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(setting_value(key, v) for v in value) or "none"
    return str(value)


def sizes(workload: BatchWorkload) -> str:
    mix = workload.size_mix()
    if len(mix) == 1:
        nodes, gpus, _ = mix[0]
        return f"{nodes}x{gpus}"
    return ", ".join(f"{nodes}x{gpus} ({percent(p)})" for nodes, gpus, p in mix)


def arrivals(arrival: Arrival) -> str:
    parts = [rate(arrival.rate)]
    if arrival.diurnal is not None:
        parts.append(
            f"peaking at {clock(arrival.diurnal.peak_hour)} at {number(arrival.diurnal.peak_to_trough)}x "
            "the trough"
        )
    if arrival.weekly is not None:
        parts.append(f"weekends at {percent(arrival.weekly.weekend_factor)} of the weekday rate")
    for burst in arrival.bursts:
        parts.append(
            f"burst {burst.name}: x{number(burst.factor)} for {fmt.duration(burst.duration)} "
            f"from {fmt.duration(burst.start)} after the start"
        )
    return ", ".join(parts)


def run_time(duration: LogNormal | Empirical) -> str:
    if isinstance(duration, Empirical):
        scale = f", scaled x{number(duration.scale)}" if duration.scale != 1 else ""
        return f"resampled from {duration.trace}{scale}"
    text = f"median {fmt.duration(duration.median)} (lognormal, sigma {number(duration.sigma)})"
    return text + (f", at most {fmt.duration(duration.max)}" if duration.max is not None else "")


def time_limit(limit: TimeLimit) -> str:
    text = f"median {number(limit.over_request)}x the run time (sigma {number(limit.sigma)})"
    if limit.round_to is not None:
        text += f", rounded up to {fmt.duration(limit.round_to)}"
    if limit.max is not None:
        text += f", at most {fmt.duration(limit.max)}"
    return text


def batch_other(workload: BatchWorkload) -> str:
    parts = []
    if workload.multi_node:
        parts.append("MPI over RDMA")
    if workload.checkpoint_interval is not None:
        parts.append(f"checkpoints every {fmt.duration(workload.checkpoint_interval)}")
    parts.append(f"QoS {workload.qos}")
    if workload.partition is not None:
        parts.append(f"partition {workload.partition}")
    return "; ".join(parts)


def demand(service: ServiceWorkload) -> str:
    demand = service.demand
    if demand.csv is not None:
        return f"from {demand.csv} (requests/s over time, repeated)"
    text = (
        f"{number(demand.trough or 0.0)} to {number(demand.peak or 0.0)} requests/s, "
        f"peak at {clock(demand.peak_hour)}"
    )
    if demand.weekly is not None:
        text += f", weekends at {percent(demand.weekly.weekend_factor)}"
    if demand.noise:
        text += f", noise {percent(demand.noise)}"
    return text


def trace_window(workload: TraceWorkload) -> str:
    window = workload.trace.window
    if window.start == 0 and window.end is None:
        return "the whole trace"
    end = "its end" if window.end is None else fmt.duration(window.end)
    return f"from {fmt.duration(window.start)} to {end}"


def trace_teams(workload: TraceWorkload) -> str:
    trace = workload.trace
    if trace.team is not None:
        return f"all to team {trace.team}"
    return ", ".join(f"{source} to {team}" for source, team in (trace.team_map or {}).items())
