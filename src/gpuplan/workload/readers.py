"""Trace readers by format name, and the format of a file from its name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from gpuplan.errors import InputError
from gpuplan.sim.registry import Registry
from gpuplan.workload.swf import read_swf
from gpuplan.workload.trace import Trace


class TraceReader(Protocol):
    def __call__(self, path: Path, *, gpus_per_node: int, skip_bad_lines: bool) -> Trace: ...


READERS = Registry[TraceReader]("trace format")
READERS.register("swf", read_swf)

# File name endings that name a format without asking the user.
SUFFIXES: dict[str, str] = {
    ".swf": "swf",
    ".swf.gz": "swf",
    ".alea-swf": "swf",
    ".alea-swf.gz": "swf",
}


def detect_format(path: Path) -> str:
    for suffix, name in sorted(SUFFIXES.items(), key=lambda item: -len(item[0])):
        if path.name.endswith(suffix):
            return name
    known = ", ".join(sorted(SUFFIXES))
    raise InputError(f"cannot tell the trace format from the file name (known endings: {known})", path=path)


def read_trace(
    path: Path, *, format: str | None = None, gpus_per_node: int = 1, skip_bad_lines: bool = False
) -> Trace:
    """Read ``path`` with the reader of ``format`` (default: from the file name)."""
    reader: Callable[..., Trace] = READERS.get(format or detect_format(path))
    return reader(path, gpus_per_node=gpus_per_node, skip_bad_lines=skip_bad_lines)
