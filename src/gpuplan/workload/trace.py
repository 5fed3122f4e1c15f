"""What every trace reader returns: the normalised jobs and what was learnt and dropped on the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpuplan.workload.jobtable import JobTable


@dataclass(frozen=True)
class Trace:
    """A read trace file.

    ``capacity_gpus`` is the size of the traced cluster in GPUs (SWF processors) when the file states
    it (``capacity_source`` says where, e.g. "header MaxProcs"; ``capacity_line`` and ``capacity_field``
    name the line and field of the file that states it, for errors); None when it does not."""

    path: Path
    format: str
    jobs: JobTable
    skipped_invalid: int = 0  # rows that parse but describe no runnable job
    bad_lines: int = 0  # malformed lines skipped with skip_bad_lines
    capacity_gpus: int | None = None
    capacity_source: str = ""
    capacity_line: int | None = None
    capacity_field: str = ""
    epoch_s: float | None = None  # Unix time of t = 0 (submit_s is relative to it), when known
    header: dict[str, str] = field(default_factory=dict)
