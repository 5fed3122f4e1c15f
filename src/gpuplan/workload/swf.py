"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

Format: https://www.cs.huji.ac.il/labs/parallel/workload/swf.html. Each data line has 18
whitespace-separated fields (``-1`` = unknown); header lines start with ``;`` (``; MaxProcs: 256``).
Fields after the 18th are ignored, so extended variants such as Alea's (node lists, queue names)
read too. ``.swf.gz`` is decompressed on the fly.

Mapping to the job table (each processor is one GPU; ``gpus_per_node`` groups them into nodes):
processors = field 8 (requested processors) if > 0, else field 5 (allocated processors); a job of
P processors asks ceil(P / G) whole nodes with ceil(P / nodes) GPUs each. Run time is field 4,
the time limit field 9 (requested time) when > 0. A job with run time < 0 or processors <= 0 is
skipped and counted. Team is the group (field 13) when known, else the user (field 12).

Figures no log can mean make a line malformed (``FIELD_RANGES``): NaN or an infinity in any field, a
negative submit time, a value below -1 (-1 is SWF's "unknown") where the format allows no other
negative value, and sizes and times past the bounds of ``workload.jobtable``. A negative run time
is read as unknown, as -1 is: the archive's own logs have such records (MetaCentrum-wagap-2013 line
4186: run time -1359980917, a job without a recorded end).

The header's machine size (``MaxProcs``, else ``MaxNodes``, read as processors) is a whole number up to
MAX_GPUS_PER_JOB (a figure not above 0, as -1, is unknown), and ``UnixStartTime`` at most MAX_TIME_S;
a header line past these is malformed too (InputError naming its line and field; ``skip_bad_lines``
skips data lines only).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gpuplan.errors import InputError
from gpuplan.workload.jobtable import (
    MAX_GPUS_PER_JOB,
    MAX_MEMORY_MIB_PER_NODE,
    MAX_TIME_S,
    JobTable,
    Labels,
    out_of_range,
    range_text,
    split_gpus,
)
from gpuplan.workload.textfile import read_bytes
from gpuplan.workload.trace import SkippedLines, Trace

SWF_FIELDS = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
)
N_FIELDS = len(SWF_FIELDS)
(JOB, SUBMIT, _WAIT, RUN, ALLOC_PROCS, _CPU, _USED_MEM, REQ_PROCS, REQ_TIME, REQ_MEM, STATUS, USER, GROUP) = (
    range(13)
)
QUEUE, PARTITION = 14, 15

# The range of each field read (0-based index): -1 is "unknown" in every field but the submit time;
# ids (numbers of users, groups, queues, ...) stay exact in float64 up to 2^53. Requested memory is
# in KB per processor, so at most a node's. Fields not listed need only be finite numbers.
_ID_MOST = float(2**53)
FIELD_RANGES: dict[int, tuple[float, float]] = {
    JOB: (-1.0, _ID_MOST),
    SUBMIT: (0.0, MAX_TIME_S),
    RUN: (-MAX_TIME_S, MAX_TIME_S),  # negative: unknown (see the module docstring)
    ALLOC_PROCS: (-1.0, float(MAX_GPUS_PER_JOB)),
    REQ_PROCS: (-1.0, float(MAX_GPUS_PER_JOB)),
    REQ_TIME: (-1.0, MAX_TIME_S),
    REQ_MEM: (-1.0, float(MAX_MEMORY_MIB_PER_NODE) * 1024.0),
    STATUS: (-1.0, _ID_MOST),
    USER: (-1.0, _ID_MOST),
    GROUP: (-1.0, _ID_MOST),
    QUEUE: (-1.0, _ID_MOST),
    PARTITION: (-1.0, _ID_MOST),
}

# SWF status codes (field 11).
_STATUS = {0: "failed", 1: "completed", 2: "partial", 3: "partial", 4: "partial", 5: "cancelled"}
_HEADER = re.compile(r"^\s*;\s*(\w+)\s*:\s*(.*?)\s*$")


def field_name(index: int) -> str:
    """``field 4 (run time)`` for a 0-based field index."""
    return f"field {index + 1} ({SWF_FIELDS[index]})"


def _open_text(path: Path) -> list[str]:
    # SWF is ASCII; latin-1 never fails, so odd bytes surface as bad numbers on their own line.
    return read_bytes(path).decode("latin-1").splitlines()


def _header_size(header: dict[str, str], lines: dict[str, int], key: str, path: Path) -> int | None:
    """The machine size a header line states (``; MaxProcs: 256``), None when absent or not above 0
    (-1: unknown). A size is a whole number of processors up to MAX_GPUS_PER_JOB (a machine is at most
    as large as the largest job the readers take); anything else is a bad header line."""
    if key not in header:
        return None
    text = header[key]
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}", path=path, line=lines[key], field=key) from None
    if math.isfinite(value) and value <= 0:
        return None
    if out_of_range(value, 1.0, float(MAX_GPUS_PER_JOB)) or value != math.floor(value):
        raise InputError(
            f"expected a whole number of processors {range_text(1, MAX_GPUS_PER_JOB)} "
            f"(-1: unknown), got {text!r}",
            path=path,
            line=lines[key],
            field=key,
        )
    return int(value)


def _header_epoch(header: dict[str, str], lines: dict[str, int], path: Path) -> float | None:
    """UnixStartTime (the Unix time of submit time 0) when it is a whole number; one past MAX_TIME_S
    (year 2242) is a bad header line."""
    text = header.get("UnixStartTime", "")
    if not text.isdigit():
        return None
    value = float(text)
    if value > MAX_TIME_S:
        raise InputError(
            f"expected a Unix time {range_text(0.0, MAX_TIME_S)} (1970 to 2242), got {text!r}",
            path=path,
            line=lines["UnixStartTime"],
            field="UnixStartTime",
        )
    return value


def _is_data(line: str) -> bool:
    stripped = line.lstrip()
    return bool(stripped) and not stripped.startswith(";")


def _rows_in_range(table: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Which rows of ``table`` (rows of 18 fields) have every value finite and within FIELD_RANGES."""
    ok: npt.NDArray[np.bool_] = np.asarray(np.isfinite(table).all(axis=1))
    for index, (least, most) in FIELD_RANGES.items():
        ok &= (table[:, index] >= least) & (table[:, index] <= most)
    return ok


def _range_error(values: list[float], tokens: list[str]) -> tuple[int, str] | None:
    """(field index, message) of the first value of a line out of its range, or None."""
    for index, value in enumerate(values):
        least, most = FIELD_RANGES.get(index, (-math.inf, math.inf))
        if not math.isfinite(value):
            return index, f"expected a finite number, got {tokens[index]!r}"
        if out_of_range(value, least, most):
            if index == RUN:
                allowed = f"a number of seconds up to {most:,.0f} (negative: unknown)"
            elif least == -1.0:
                allowed = f"-1 (unknown) or a number {range_text(0.0, most)}"
            else:
                allowed = f"a number {range_text(least, most)}"
            return index, f"expected {allowed}, got {tokens[index]!r}"
    return None


def _parse_line(line: str, number: int, path: Path) -> list[float]:
    """The 18 fields of data line ``number``; InputError naming its first bad field."""
    tokens = line.split(";", 1)[0].split()
    values = []
    for index, token in enumerate(tokens[:N_FIELDS]):
        try:
            values.append(float(token))
        except ValueError:
            raise InputError(
                f"expected a number, got {token!r}", path=path, line=number, field=field_name(index)
            ) from None
    if len(tokens) < N_FIELDS:
        raise InputError(
            f"expected {N_FIELDS} fields, found {len(tokens)}",
            path=path,
            line=number,
            field=field_name(len(tokens)),
        )
    wrong = _range_error(values, tokens)
    if wrong is not None:
        raise InputError(wrong[1], path=path, line=number, field=field_name(wrong[0]))
    return values


# A data line np.loadtxt reads as float() does: 18 numbers (then anything, then perhaps a comment).
# Only lines of a file np.loadtxt cannot read whole are matched against it, so that the lines that
# look right are read in one go and only the others one by one.
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_PLAIN_LINE = rf"^[ \t]*(?:{_NUMBER}[ \t]+){{{N_FIELDS - 1}}}{_NUMBER}(?:[ \t][^;]*)?(?:;.*)?$"
# Lines matched at a time: pyarrow's copy of the text of all lines at once took 40 MB more at 200,000 lines.
MATCH_LINES = 1 << 14


def _load(lines: list[str]) -> npt.NDArray[np.float64]:
    return np.loadtxt(lines, comments=";", usecols=range(N_FIELDS), ndmin=2, dtype=np.float64)


def _load_plain_lines(lines: list[str]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], list[int]]:
    """The rows of the lines that match _PLAIN_LINE, read in one go, with their line numbers; and
    the numbers of the other data lines, for the caller to read one by one.

    The lines are matched by pyarrow's regular expressions (RE2, MATCH_LINES at a time: 0.04 s for
    200,000 lines, where Python's ``re`` takes 0.5 s), imported here only: a clean trace never gets
    this far."""
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = np.concatenate(
        [
            pc.match_substring_regex(pa.array(lines[i : i + MATCH_LINES], pa.string()), _PLAIN_LINE).to_numpy(
                zero_copy_only=False
            )
            for i in range(0, len(lines), MATCH_LINES)
        ]
    )
    at = np.flatnonzero(plain)
    others = [i + 1 for i in np.flatnonzero(~plain).tolist() if _is_data(lines[i])]
    if not len(at):
        return np.zeros((0, N_FIELDS)), np.zeros(0, np.int64), others
    try:
        table = _load([lines[i] for i in at.tolist()])
    except ValueError:  # a line the pattern takes and np.loadtxt does not: every data line one by one
        return np.zeros((0, N_FIELDS)), np.zeros(0, np.int64), sorted([*(at + 1).tolist(), *others])
    return table, (at + 1).astype(np.int64), others


def _read_table(
    lines: list[str], first_data: int, path: Path, skipped: SkippedLines | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """The 18 fields of each good data line, and its line number.

    The whole file is read by np.loadtxt in one go; should a line stop it, the lines that look like
    18 numbers are (``_load_plain_lines``). Only the others, and the rows out of their fields'
    ranges, are read line by line, in the order of the file: the first bad one is the InputError,
    or with ``skipped`` every bad one is skipped and counted. So bad lines cost what they are, not a
    slower reading of the whole file (which, as lists of Python floats, also took 2.7 times the
    memory)."""
    if first_data == len(lines):
        return np.zeros((0, N_FIELDS)), np.zeros(0, np.int64)
    others: list[int] = []  # data lines not read yet
    try:
        table = _load(lines)
        if len(lines) - first_data == len(table):  # all non-data lines at the top: the common case
            line_of = np.arange(first_data + 1, len(lines) + 1, dtype=np.int64)
        else:
            line_of = np.array([i for i, line in enumerate(lines, 1) if _is_data(line)], dtype=np.int64)
    except ValueError:
        table, line_of, others = _load_plain_lines(lines)
    in_range = _rows_in_range(table)
    suspects = sorted([*line_of[~in_range].tolist(), *others])
    if not suspects:
        return table, line_of
    rows: list[list[float]] = []
    numbers: list[int] = []
    for number in suspects:
        try:
            rows.append(_parse_line(lines[number - 1], number, path))
        except InputError as error:
            if skipped is None:
                raise
            skipped.add(error)
            continue
        numbers.append(number)
    if not in_range.all():  # a copy of the table: made only when some row is out of range
        table, line_of = table[in_range], line_of[in_range]
    if numbers:  # lines read one by one that were good after all: back in the order of the file
        table = np.concatenate([table, np.array(rows, dtype=np.float64)])
        line_of = np.concatenate([line_of, np.array(numbers, dtype=np.int64)])
        order = np.argsort(line_of, kind="stable")
        table, line_of = table[order], line_of[order]
    return table, line_of


def read_swf(path: Path | str, *, gpus_per_node: int = 1, skip_bad_lines: bool = False) -> Trace:
    """Read an SWF (or ``.swf.gz``) file into a job table.

    Raises InputError naming the file, line and field of the first malformed line, unless
    ``skip_bad_lines``, which skips and counts malformed lines instead.
    """
    path = Path(path)
    if gpus_per_node < 1:
        raise InputError("must be at least 1", field="--gpus-per-node")
    lines = _open_text(path)
    first_data = next((i for i, line in enumerate(lines) if _is_data(line)), len(lines))
    header: dict[str, str] = {}
    header_lines: dict[str, int] = {}  # the line of each header field, for its errors
    for number, line in enumerate(lines[:first_data], start=1):
        match = _HEADER.match(line)
        if match:
            header[match.group(1)] = match.group(2)
            header_lines[match.group(1)] = number
    capacity, capacity_field = None, ""
    for key in ("MaxProcs", "MaxNodes"):  # the size of the traced machine in processors
        capacity = _header_size(header, header_lines, key, path)
        if capacity is not None:
            capacity_field = key
            break
    epoch_s = _header_epoch(header, header_lines, path)

    skipped = SkippedLines() if skip_bad_lines else None
    table, line_of = _read_table(lines, first_data, path, skipped)

    processors = np.where(table[:, REQ_PROCS] > 0, table[:, REQ_PROCS], table[:, ALLOC_PROCS])
    valid = (table[:, RUN] >= 0) & (processors > 0)
    table, processors, line_of = table[valid], processors[valid], line_of[valid]

    nodes, per_node = split_gpus(processors, gpus_per_node)
    requested_mem_kb = table[:, REQ_MEM]  # per processor
    users = table[:, USER].astype(np.int64)
    groups = table[:, GROUP].astype(np.int64)
    # team: "g<group>" when the group is known, else "u<user>", else "unknown"
    team_keys = np.where(groups >= 0, groups, np.where(users >= 0, -2 - users, -1))

    def team_name(key: int) -> str:
        return f"g{key}" if key >= 0 else ("unknown" if key == -1 else f"u{-2 - key}")

    jobs = JobTable(
        job_id=table[:, JOB].astype(np.int64),
        user=Labels.from_keys(users, lambda u: f"u{u}" if u >= 0 else "unknown"),
        team=Labels.from_keys(team_keys, team_name),
        submit_s=table[:, SUBMIT].copy(),
        duration_s=table[:, RUN].copy(),
        time_limit_s=np.where(table[:, REQ_TIME] > 0, table[:, REQ_TIME], np.nan),
        nodes=nodes,
        gpus_per_node=per_node,
        cpus_per_node=np.zeros(len(table), dtype=np.int32),
        mem_per_node=np.where(requested_mem_kb > 0, requested_mem_kb * per_node / 1024.0, np.nan),
        partition=Labels.from_keys(table[:, PARTITION].astype(np.int64), lambda p: str(p) if p >= 0 else ""),
        qos=Labels.from_keys(table[:, QUEUE].astype(np.int64), lambda q: str(q) if q >= 0 else ""),
        kind=Labels.constant("batch", len(table)),
        state=Labels.from_keys(table[:, STATUS].astype(np.int64), lambda s: _STATUS.get(s, "unknown")),
        source_line=line_of,
    )
    return Trace(
        path=path,
        format="swf",
        jobs=jobs,
        skipped_invalid=int((~valid).sum()),
        bad_lines=skipped.count if skipped else 0,
        skipped_lines=tuple(skipped.first) if skipped else (),
        capacity_gpus=capacity,
        capacity_source=f"header {capacity_field}" if capacity_field else "",
        capacity_line=header_lines.get(capacity_field),
        capacity_field=capacity_field,
        epoch_s=epoch_s,
        header=header,
    )
