"""Registries of pluggable pieces, by the names users know (like kube-scheduler's plugin registry)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Generic, TypeVar

from gpuplan.errors import InputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> piece. Registering a name twice is an error; an unknown name is an InputError that
    names the option (``what``) and suggests the closest known name."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.what}: {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(self._entries)
            raise InputError(f"unknown {name!r} (known: {known}){hint}", field=self.what) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
