"""The base of every scenario section."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from gpuplan.scenario.units import (
    DURATION_PATTERN,
    DURATION_TEXT,
    RATE_PATTERN,
    RATE_TEXT,
    format_duration,
    format_rate,
)


def _patterns(schema: dict[str, Any]) -> set[str]:
    found = {schema["pattern"]} if isinstance(schema.get("pattern"), str) else set()
    for option in schema.get("anyOf", []):
        if isinstance(option, dict):
            found |= _patterns(option)
    return found


def _without_raw_bounds(schema: dict[str, Any], positive: bool) -> None:
    """pydantic leaves the gt/ge/le of an optional field beside a WithJsonSchema type as keys JSON
    Schema does not know (and drops them on a required one): remove them, and the bare 0 that a
    positive duration does not accept."""
    for option in schema.get("anyOf", []):
        if isinstance(option, dict):
            _without_raw_bounds(option, positive)
    for key in ("gt", "ge", "le"):
        schema.pop(key, None)
    if positive and "anyOf" in schema:
        schema["anyOf"] = [option for option in schema["anyOf"] if option != {"const": 0}]


def _positive(field: FieldInfo) -> bool:
    return any(
        getattr(bound, "gt", None) is not None or (getattr(bound, "ge", None) or 0) > 0
        for bound in field.metadata
    )


def _describe_units(schema: dict[str, Any], model: type) -> None:
    """In the JSON Schema, a field of a duration or a rate says so even where the field has its own
    description, and its default is written as the file must write it ('7d', not 604800.0)."""
    fields: dict[str, FieldInfo] = getattr(model, "model_fields", {})
    for name, prop in schema.get("properties", {}).items():
        patterns = _patterns(prop)
        if patterns & {DURATION_PATTERN, RATE_PATTERN}:
            _without_raw_bounds(prop, name in fields and _positive(fields[name]))
        for pattern, text, formatted in (
            (DURATION_PATTERN, DURATION_TEXT, format_duration),
            (RATE_PATTERN, RATE_TEXT, format_rate),
        ):
            if pattern not in patterns:
                continue
            description = prop.get("description")
            if description and description != text:
                prop["description"] = f"{description}; {text}"
            if isinstance(prop.get("default"), int | float) and not isinstance(prop["default"], bool):
                prop["default"] = formatted(float(prop["default"]))


class Section(BaseModel):
    """Base of every scenario section: frozen, unknown keys are errors with a did-you-mean, and every
    number is finite (``.nan``, ``.inf`` and ``-.inf`` are refused wherever a number is read)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, json_schema_extra=_describe_units
    )

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = set(cls.model_fields)
            for key in data:
                if key not in known:
                    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
                    hint = (
                        f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(known))})"
                    )
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key {key}{hint}",
                        {"key": repr(key), "name": key, "hint": hint},
                    )
        return data
