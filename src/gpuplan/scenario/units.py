"""Human units in scenario files: durations (``90s``, ``30m``, ``6h``, ``14d``, ``2w``), rates
(``20/day``, ``3/h``) and job sizes (``2x8`` = 2 nodes x 8 GPUs per node).

A duration or a rate must say its unit: a bare number is ambiguous (``rate: 7`` once meant 7 a second,
8.5 million jobs in a fortnight), so only a bare ``0`` is accepted, where 0 is allowed. Settings that
Slurm or Kubernetes define as a plain count of seconds or minutes (``bf_interval``, ``bf_window``,
``backoffBaseSeconds``...) are not durations: they stay numbers, their names and descriptions say the
unit. Every figure must be finite.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError

SECONDS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_DURATION = re.compile(rf"^\s*{_NUMBER}\s*(s|m|min|h|d|w)\s*$")
_RATE = re.compile(rf"^\s*{_NUMBER}\s*/\s*(s|m|min|h|d|w|sec|hour|day|week)\s*$")
_SIZE = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\d+)\s*$")
_RATE_UNITS = {"sec": "s", "hour": "h", "day": "d", "week": "w"}
DURATION_PATTERN = _DURATION.pattern
RATE_PATTERN = _RATE.pattern

# Longer than any simulation (the horizon is at most this): a longer duration is surely a typo.
MAX_DURATION_S = 3650 * 86400.0
# The largest node count and GPUs per node of a size: beyond any machine (pools say so too).
MAX_SIZE_NODES = 100_000
MAX_SIZE_GPUS_PER_NODE = 1024
# Size-mix weights are relative; this bound keeps their sum finite.
MAX_WEIGHT = 1e9


def format_number(value: float) -> str:
    """``value`` written out without an exponent, exactly (the shortest text that reads back as it)."""
    text = format(Decimal(repr(float(value))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def shown_value(value: Any) -> str:
    """``value`` for a message: its repr, cut short (a file may hold a thousand-digit number); a
    boolean as YAML writes it (``true``, where Python's ``True`` would not point at the file's text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"  # Python prints at most 4300 digits
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _bare_number(number: int | float, what: str) -> str | None:
    """Why a bare number is not a ``what`` ('duration', 'rate'), or None for a bare 0."""
    try:
        value = float(number)
    except OverflowError:  # an integer beyond any float
        value = math.inf if number > 0 else -math.inf
    if not math.isfinite(value):
        return f"a {what} must be a finite number, got {shown_value(number)}"
    if value == 0:
        return None
    if value < 0:
        return f"a {what} cannot be negative, got {shown_value(number)}"
    shown = format_number(value)
    if what == "rate":
        return f"a rate needs a unit: '{shown}/h', '{shown}/day' or '{shown}/s'"
    return f"a duration needs a unit: '{shown}s', '{shown}m', '{shown}h' or '{shown}d'"


def parse_duration(value: Any) -> float:
    """Seconds from ``"6h"``; a bare number is refused (its unit is ambiguous) except 0."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PydanticCustomError(
            "duration", "expected a duration like '6h', got {value}", {"value": shown_value(value)}
        )
    if isinstance(value, int | float):
        problem = _bare_number(value, "duration")
        if problem is not None:
            raise PydanticCustomError("duration", problem, {})
        return 0.0
    match = _DURATION.match(value)
    if not match and value.strip().startswith("-"):
        raise PydanticCustomError(
            "duration", "a duration cannot be negative, got {value}", {"value": shown_value(value)}
        )
    if not match:
        raise PydanticCustomError(
            "duration",
            "expected a duration like '90s', '30m', '6h' or '14d', got {value}",
            {"value": shown_value(value)},
        )
    seconds = float(match.group(1)) * SECONDS[match.group(2)]
    if not seconds <= MAX_DURATION_S:  # also catches inf from a thousand-digit number
        raise PydanticCustomError(
            "duration",
            "a duration of at most 3650d (10 years) is expected, got {value}",
            {"value": shown_value(value)},
        )
    return seconds


def parse_rate(value: Any) -> float:
    """Events per second from ``"20/day"``; a bare number is refused (its unit is ambiguous) except 0."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        problem = _bare_number(value, "rate")
        if problem is not None:
            raise PydanticCustomError("rate", problem, {})
        return 0.0
    match = _RATE.match(value) if isinstance(value, str) else None
    if not match and isinstance(value, str) and value.strip().startswith("-"):
        raise PydanticCustomError(
            "rate", "a rate cannot be negative, got {value}", {"value": shown_value(value)}
        )
    if not match:
        raise PydanticCustomError(
            "rate",
            "expected a rate like '20/day', '3/h' or '0.5/s', got {value}",
            {"value": shown_value(value)},
        )
    unit = _RATE_UNITS.get(match.group(2), match.group(2))
    rate = float(match.group(1)) / SECONDS[unit]
    if not math.isfinite(rate):
        raise PydanticCustomError("rate", "a rate must be finite, got {value}", {"value": shown_value(value)})
    return rate


def parse_size(value: Any) -> tuple[int, int]:
    """``(nodes, gpus_per_node)`` from ``"2x8"`` or ``{nodes: 2, gpus_per_node: 8}``."""
    if isinstance(value, dict) and set(value) == {"nodes", "gpus_per_node"}:
        nodes, gpus = value["nodes"], value["gpus_per_node"]
    else:
        match = _SIZE.match(str(value)) if isinstance(value, str) else None
        if not match:
            raise PydanticCustomError(
                "size",
                "expected a size like '2x8' (nodes x GPUs per node), got {value}",
                {"value": shown_value(value)},
            )
        nodes, gpus = int(match.group(1)), int(match.group(2))
    if (
        not (isinstance(nodes, int) and isinstance(gpus, int))
        or isinstance(nodes, bool)
        or isinstance(gpus, bool)
        or nodes < 1
        or gpus < 1
    ):
        raise PydanticCustomError(
            "size", "a size needs at least 1 node and 1 GPU, got {value}", {"value": shown_value(value)}
        )
    if nodes > MAX_SIZE_NODES or gpus > MAX_SIZE_GPUS_PER_NODE:
        raise PydanticCustomError(
            "size",
            "a size of at most {nodes} nodes x {gpus} GPUs per node is expected, got {value}",
            {"nodes": f"{MAX_SIZE_NODES:,}", "gpus": MAX_SIZE_GPUS_PER_NODE, "value": shown_value(value)},
        )
    return nodes, gpus


def parse_size_mix(value: Any) -> dict[str, float]:
    """A size mix ``{"1x8": 70, "4x8": 30}`` (weights), or one size ``"1x8"``; keys checked."""
    if isinstance(value, str):
        parse_size(value)
        return {value: 1.0}
    if not isinstance(value, dict) or not value:
        raise PydanticCustomError(
            "size",
            "expected a size like '1x8' or a mix like {{'1x8': 70, '4x8': 30}}, got {value}",
            {"value": shown_value(value)},
        )
    mix = {}
    for key, weight in value.items():
        parse_size(key)
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not 0 < weight <= MAX_WEIGHT  # False for NaN
        ):
            raise PydanticCustomError(
                "size",
                "the weight of {key} must be a number > 0 and at most {most}, got {weight}",
                {"key": shown_value(key), "most": f"{MAX_WEIGHT:g}", "weight": shown_value(weight)},
            )
        mix[str(key)] = float(weight)
    return mix


def format_duration(seconds: float) -> str:
    """``"6h"`` for 21600 seconds: the largest unit that divides it, read back exactly by parse_duration."""
    for unit in ("w", "d", "h", "m"):
        if seconds >= SECONDS[unit] and seconds % SECONDS[unit] == 0:
            return f"{format_number(seconds / SECONDS[unit])}{unit}"
    return f"{format_number(seconds)}s"


def format_rate(per_second: float) -> str:
    """``"20/day"`` for 20 a day: per day, hour or second, whichever reads back exactly and shortest."""
    candidates = []
    for unit, name in (("d", "day"), ("h", "h"), ("s", "s")):
        for digits in (12, 17):  # 12: "10/day" for 10/86400 despite rounding; 17 reads back any float
            text = f"{format_number(float(f'{per_second * SECONDS[unit]:.{digits}g}'))}/{name}"
            if parse_rate(text) == per_second:
                candidates.append(text)
                break
    return min(candidates, key=len) if candidates else f"{format_number(per_second)}/s"


DURATION_TEXT = (
    "a duration with its unit: '90s', '30m', '6h', '14d' or '2w' (s, m or min, h, d, w); "
    "a bare number is refused as ambiguous, except 0"
)
RATE_TEXT = (
    "a rate with its unit: '20/day', '3/h' or '0.5/s' (per s, m, h, d or day, w or week); "
    "a bare number is refused as ambiguous, except 0"
)

Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": _DURATION.pattern}, {"const": 0}],
         "description": DURATION_TEXT}
    ),
]  # fmt: skip
Rate = Annotated[
    float,
    BeforeValidator(parse_rate),
    PlainSerializer(format_rate, return_type=str),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": _RATE.pattern}, {"const": 0}], "description": RATE_TEXT}
    ),
]  # fmt: skip
SizeMix = Annotated[
    dict[str, float],
    BeforeValidator(parse_size_mix),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": _SIZE.pattern},
                   {"type": "object", "additionalProperties":
                        {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WEIGHT}}],
         "description": "a size '1x8' (nodes x GPUs per node) or a mix of weights {'1x8': 70, '4x8': 30}"}
    ),
]  # fmt: skip
Size = Annotated[
    tuple[int, int],
    BeforeValidator(parse_size),
    PlainSerializer(lambda size: f"{size[0]}x{size[1]}", return_type=str),
    WithJsonSchema(
        {"type": "string", "pattern": _SIZE.pattern, "description": "nodes x GPUs per node, e.g. '2x8'"}
    ),
]
