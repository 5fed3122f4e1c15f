"""The base of every scenario section."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError


class Section(BaseModel):
    """Base of every scenario section: frozen, and unknown keys are errors with a did-you-mean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
