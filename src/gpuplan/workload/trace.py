"""What every trace reader returns: the normalised jobs and what was learnt and dropped on the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from gpuplan.errors import InputError
from gpuplan.workload.jobtable import JobTable
from gpuplan.workload.textfile import STEP_BYTES, open_source

# Lines skipped by --skip-bad-lines that are named one by one (in the warning and in summary.json);
# the others are counted only, so that a trace's memory does not grow with its bad lines.
SKIPPED_LINES_LISTED = 20


class SkippedLine(NamedTuple):
    """A malformed line skipped with skip_bad_lines: where it is, and why it is malformed."""

    line: int | None
    field: str | None
    why: str


class SkippedLines:
    """The lines a reader skips with skip_bad_lines: how many, and the first ``listed`` of them.

    Only the line, field and message of those first ones are kept, never the errors themselves (an
    exception holds its traceback, and so every frame and local it went through), so a trace of
    millions of bad lines costs a counter beyond them."""

    def __init__(self, listed: int = SKIPPED_LINES_LISTED) -> None:
        self.count = 0
        self.listed = listed
        self.first: list[SkippedLine] = []

    def add(self, error: InputError) -> None:
        self.count += 1
        if len(self.first) < self.listed:
            self.first.append(SkippedLine(error.line, error.field, error.message))


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
    # the first SKIPPED_LINES_LISTED of the ``bad_lines``, in the order of the file
    skipped_lines: tuple[SkippedLine, ...] = ()


def bad_lines_sentence(trace: Trace) -> str:
    """What --skip-bad-lines dropped, as the warning and the refusal of a trace left empty say it."""
    return f"{trace.bad_lines:,} malformed line(s) were skipped (--skip-bad-lines)"


def invalid_jobs_sentence(trace: Trace) -> str:
    """The jobs dropped as unrunnable, as the warning and the refusal of a trace left empty say it."""
    return f"{trace.skipped_invalid:,} job(s) with no run time or no GPUs were skipped"


def no_jobs(trace: Trace) -> InputError:
    """The refusal of a trace without a job to simulate, saying what was dropped: a file of header
    or comment lines only reads as an empty one does, and so does a file whose every line was skipped.

    It names the line where the text ends (the lines read + 1, as textfile names the line where
    reading stopped): where a job line was looked for last. The file is read again to count its
    lines, which only a refused trace costs."""
    dropped = []
    if trace.bad_lines:
        dropped.append(bad_lines_sentence(trace))
    if trace.skipped_invalid:
        dropped.append(invalid_jobs_sentence(trace))
    why = "; ".join(dropped) or "it has no job lines"
    with open_source(trace.path) as source:
        while source.read(STEP_BYTES):
            pass
    return InputError(f"no jobs in the file up to its end: {why}", path=trace.path, line=source.newlines + 1)
