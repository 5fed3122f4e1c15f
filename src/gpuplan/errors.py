"""Errors that reach the user: bad input names the file, the line and the field."""

from __future__ import annotations

from pathlib import Path


class GpuplanError(Exception):
    """Base class of the errors gpuplan reports to the user without a traceback."""


class InputError(GpuplanError):
    """Bad input: the message names the file, the line (1-based) and the field when they are known."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or ""
        if self.line is not None:
            where += f":{self.line}" if where else f"line {self.line}"
        parts = [p for p in (where, self.field, self.message) if p]
        return ": ".join(parts)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a command; the message says what was written before it stopped.
    ``kept``: a partial result (marked as such) was staged and replaces the previous one."""

    def __init__(self, message: str, *, kept: bool = False) -> None:
        self.message = message
        self.kept = kept
        super().__init__(message)
