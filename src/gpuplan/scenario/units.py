"""Human units in scenario files: durations (``90s``, ``30m``, ``6h``, ``14d``, ``2w``), rates
(``20/day``, ``3/h``) and job sizes (``2x8`` = 2 nodes x 8 GPUs per node)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError

SECONDS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|m|min|h|d|w)\s*$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*/\s*(s|m|min|h|d|w|sec|hour|day|week)\s*$")
_SIZE = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\d+)\s*$")
_RATE_UNITS = {"sec": "s", "hour": "h", "day": "d", "week": "w"}


def parse_duration(value: Any) -> float:
    """Seconds from ``"6h"`` (or a plain number of seconds)."""
    if isinstance(value, bool):
        raise PydanticCustomError(
            "duration", "expected a duration like '6h', got {value}", {"value": repr(value)}
        )
    if isinstance(value, int | float):
        if value < 0:
            raise PydanticCustomError(
                "duration", "a duration cannot be negative, got {value}", {"value": repr(value)}
            )
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise PydanticCustomError(
            "duration",
            "expected a duration like '90s', '30m', '6h' or '14d', got {value}",
            {"value": repr(value)},
        )
    return float(match.group(1)) * SECONDS[match.group(2)]


def parse_rate(value: Any) -> float:
    """Events per second from ``"20/day"`` (or a plain number per second)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _RATE.match(str(value))
    if not match:
        raise PydanticCustomError(
            "rate", "expected a rate like '20/day', '3/h' or '0.5/s', got {value}", {"value": repr(value)}
        )
    unit = _RATE_UNITS.get(match.group(2), match.group(2))
    return float(match.group(1)) / SECONDS[unit]


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
                {"value": repr(value)},
            )
        nodes, gpus = int(match.group(1)), int(match.group(2))
    if not (isinstance(nodes, int) and isinstance(gpus, int)) or nodes < 1 or gpus < 1:
        raise PydanticCustomError(
            "size", "a size needs at least 1 node and 1 GPU, got {value}", {"value": repr(value)}
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
            {"value": repr(value)},
        )
    mix = {}
    for key, weight in value.items():
        parse_size(key)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
            raise PydanticCustomError("size", "the weight of {key} must be a number > 0", {"key": repr(key)})
        mix[str(key)] = float(weight)
    return mix


def format_duration(seconds: float) -> str:
    for unit in ("w", "d", "h", "m"):
        if seconds >= SECONDS[unit] and seconds % SECONDS[unit] == 0:
            return f"{seconds / SECONDS[unit]:g}{unit}"
    return f"{seconds:g}s"


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": _DURATION.pattern}, {"type": "number", "minimum": 0}],
         "description": "a duration: '90s', '30m', '6h', '14d', '2w', or seconds"}
    ),
]  # fmt: skip
Rate = Annotated[
    float,
    BeforeValidator(parse_rate),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": _RATE.pattern}, {"type": "number", "minimum": 0}],
         "description": "a rate: '20/day', '3/h', '0.5/s', or events per second"}
    ),
]  # fmt: skip
SizeMix = Annotated[
    dict[str, float],
    BeforeValidator(parse_size_mix),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": _SIZE.pattern},
                   {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}}],
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
