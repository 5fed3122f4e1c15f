"""Reader for Slurm accounting output: ``sacct --parsable2`` (``-P``), e.g. from

    sacct -a -D -P -S 2024-01-01 -E now --format=JobID,User,Account,Partition,QOS,Submit,Eligible,\\
        Start,End,Timelimit,NNodes,AllocTRES,ReqTRES,State

The first line names the columns, separated by ``|``; every further line is a job record or a job step,
without quoting. ``--parsable`` (``-p``, a ``|`` at the end of each line) and ``.gz`` read too. Columns
are found by name (case does not matter), in any order; others (JobName, NCPUS, ExitCode, Priority,
NodeList, ...) are ignored. Blank lines are skipped. Semantics from the sacct man page (Slurm 22.05):

- JobID: a job is ``123``, an array task ``123_4`` or a heterogeneous-job component ``123+0``. A JobID
  with a ``.`` is a job step (``123.batch``, ``123.extern``, ``123.0``, ``123_4.batch``): skipped, not
  counted. ``123_[5-100%4]`` is the record of array tasks still pending: a job that never started.
- Times are ``YYYY-MM-DDTHH:MM:SS`` in the local time of the cluster, without a zone: read as UTC, so
  differences are right (except across a daylight-saving change) and ``Trace.epoch_s`` is the local
  wall-clock time as if it were UTC. ``Unknown``, ``None`` and an empty cell mean unknown.
- Timelimit and Elapsed: ``[D-]HH:MM:SS``, ``MM:SS`` or ``MM`` (also ``D-HH`` and ``D-HH:MM``, as Slurm
  parses them); ``UNLIMITED``, ``Partition_Limit`` and ``INVALID`` mean no known limit (NaN).
- AllocTRES/ReqTRES: ``billing=1,cpu=4,gres/gpu=8,mem=500G,node=1``. GPUs are ``gres/gpu``; typed
  counts (``gres/gpu:h100=8``) are a breakdown of the same GPUs when ``gres/gpu`` is listed too, so a
  job's GPUs are the larger of ``gres/gpu`` and the sum of the typed counts.
- State: the first word, lower-cased (``CANCELLED by 1000`` -> ``cancelled``; ``TIMEOUT`` -> ``timeout``,
  the job reached its time limit).
- Figures no cluster can mean make a line malformed: times before 1970 or after 2242 and durations
  past 2^33 s (MAX_TIME_S), and node, GPU, CPU and memory counts past the bounds of
  ``workload.jobtable`` (MAX_NODES_PER_JOB, MAX_GPUS_PER_JOB, MAX_CPUS_PER_JOB, MAX_MEMORY_MIB_PER_JOB).

The fast path parses blocks of whole lines with pyarrow, a column at a time, each column's cells
checked at once; a line with a cell that does not convert (or of another number of columns) is read
again on its own, only to name the first bad line and column or, with skip_bad_lines, to skip and count
it (steps are filtered before any cell but the JobID is read, so a malformed step cell is no error).
The file streams in blocks.

User and Account hold names as scenario.names allows them (letters, digits and ``-_.``): a cell that
is not one (a space, a zero-width or right-to-left character) makes its line malformed. Each distinct
value of a block is checked, not each line.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from gpuplan.errors import InputError
from gpuplan.workload.csvcolumns import (
    MisshapenRows,
    NamedColumns,
    check_gpus_per_node,
    is_utf8,
    name_error,
    nonempty_line_numbers,
    not_names,
    read_blocks,
)
from gpuplan.workload.jobtable import (
    MAX_CPUS_PER_JOB,
    MAX_GPUS_PER_JOB,
    MAX_MEMORY_MIB_PER_JOB,
    MAX_NODES_PER_JOB,
    MAX_TIME_S,
    JobTable,
    Labels,
    out_of_range,
    range_text,
    split_gpus,
)
from gpuplan.workload.trace import SkippedLine, SkippedLines, Trace

Float64 = npt.NDArray[np.float64]
Int64 = npt.NDArray[np.int64]
Int32 = npt.NDArray[np.int32]
Bool = npt.NDArray[np.bool_]


# Job ids. A plain id keeps its number (sacct prints at most 10 digits: ids are 32-bit). An array task
# J_T becomes J * 10^10 + T and a het-job component J+K becomes J * 10^10 + 5 * 10^9 + K, above every
# plain id, so ids never collide and the JobID can be read back from the number: 123_4 -> 1230000000004,
# 123+1 -> 1235000000001. J must then be at most MAX_LEADER (922,337,203) to fit an int64: Slurm's job
# ids have 26 bits (MaxJobId at most 67,108,863 since Slurm 17.02); only a federation puts the cluster's
# number above them, and reaches MAX_LEADER from about its 13th cluster on.
ID_SCALE = 10**10
HET_OFFSET = 5 * 10**9
MAX_LEADER = (2**63 - 1 - HET_OFFSET - 10**9) // ID_SCALE
PENDING_ARRAY = -1  # the key of a pending array record (123_[5-100]), never a job
_PLAIN_ID = re.compile(r"[0-9]{1,10}")
_COMPOUND_ID = re.compile(r"([0-9]{1,10})([_+])([0-9]{1,9})")
_PENDING_ARRAY = re.compile(r"[0-9]{1,10}_\[[^\]]*\]")

_SPACE = " \t\n\v\f\r"  # what cells are stripped of (pyarrow's ascii_trim_whitespace)
_DATETIME = r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}"
_DATETIME_RE = re.compile(_DATETIME)
UNKNOWN_TIMES = ("", "Unknown", "None")
NO_LIMIT = ("", "UNLIMITED", "Partition_Limit", "INVALID", "Unknown", "None")
_DURATION = re.compile(r"(?:([0-9]{1,9})-)?([0-9]{1,9})(?::([0-9]{1,9}))?(?::([0-9]{1,9}))?")
_WHOLE = re.compile(r"[0-9]{1,9}")
_MEMORY = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,6})?)([KMGTP]?)")
_MB_PER_UNIT = {"K": 1 / 1024, "": 1.0, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}

# How a column's cells parse (each kind has one function, used by both paths):
#   id        JobID: an int64 key, None for a step
#   time      a date and time to Unix seconds, NaN when unknown
#   duration  seconds, NaN when unlimited or unknown
#   count     a whole number, 0 when empty
#   tres      (given, GPUs, CPUs, memory MB, nodes) of a TRES list
#   text      any text, stripped; User and Account a name (scenario.names) or empty
Kind = Literal["id", "time", "duration", "count", "tres", "text"]
TRES_PARTS = ("given", "gpus", "cpus", "mem", "nodes")


def job_key(text: str) -> int | None:
    """The int64 id of a job's JobID (see ID_SCALE), PENDING_ARRAY for pending array tasks, None for a
    step; ValueError if it is no JobID."""
    cell = text.strip(_SPACE)
    if "." in cell:
        return None
    if _PLAIN_ID.fullmatch(cell):
        return int(cell)
    compound = _COMPOUND_ID.fullmatch(cell)
    if compound:
        leader, kind, sub = int(compound[1]), compound[2], int(compound[3])
        if 1 <= leader <= MAX_LEADER:
            return leader * ID_SCALE + (HET_OFFSET if kind == "+" else 0) + sub
        raise ValueError(f"expected an array or het job id from 1 to {MAX_LEADER}, got {text!r}")
    if _PENDING_ARRAY.fullmatch(cell):
        return PENDING_ARRAY
    raise ValueError(
        f"expected a Slurm job id (123, 123_4, 123+0, or a step such as 123.batch), got {text!r}"
    )


def parse_time(text: str) -> float:
    """Unix seconds of ``YYYY-MM-DDTHH:MM:SS`` read as UTC; NaN for Unknown, None or empty."""
    cell = text.strip(_SPACE)
    if cell in UNKNOWN_TIMES:
        return math.nan
    if _DATETIME_RE.fullmatch(cell):
        try:
            seconds = datetime.fromisoformat(cell).replace(tzinfo=UTC).timestamp()
        except ValueError:
            pass
        else:
            if not out_of_range(seconds, 0.0, MAX_TIME_S):
                return seconds
            raise ValueError(f"expected a date and time from 1970 to 2242, got {text!r}")
    raise ValueError(f"expected a date and time (YYYY-MM-DDTHH:MM:SS), Unknown or None, got {text!r}")


def parse_duration(text: str) -> float:
    """Seconds of a Slurm duration; NaN for UNLIMITED, Partition_Limit, INVALID, Unknown or empty."""
    cell = text.strip(_SPACE)
    if cell in NO_LIMIT:
        return math.nan
    match = _DURATION.fullmatch(cell)
    if not match:
        raise ValueError(f"expected a duration ([D-]HH:MM:SS, MM:SS or MM) or UNLIMITED, got {text!r}")
    days, *rest = match.groups()
    parts = [int(part) for part in rest if part is not None]
    if days is None and len(parts) < 3:  # MM or MM:SS
        parts = [0, *parts]
    hours, minutes, seconds = [*parts, 0, 0][:3]  # HH:MM:SS; with days also D-HH and D-HH:MM
    total = float(((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds)
    if total > MAX_TIME_S:
        raise ValueError(f"expected a duration of at most {MAX_TIME_S:,.0f} s (272 years), got {text!r}")
    return total


def parse_count(text: str) -> float:
    """A whole number (NNodes); 0 when empty."""
    cell = text.strip(_SPACE)
    if not cell:
        return 0.0
    if not _WHOLE.fullmatch(cell):
        raise ValueError(f"expected a whole number, got {text!r}")
    if int(cell) > MAX_NODES_PER_JOB:
        raise ValueError(f"expected a whole number {range_text(0, MAX_NODES_PER_JOB)}, got {text!r}")
    return float(cell)


def parse_tres(text: str) -> tuple[float, float, float, float, float]:
    """(given, GPUs, CPUs, memory in MB, nodes) of a TRES list such as
    ``cpu=4,gres/gpu=8,gres/gpu:h100=8,mem=500G,node=1``: given is 0 for an empty cell; GPUs the larger
    of ``gres/gpu`` and the sum of the typed ``gres/gpu:TYPE`` counts; CPUs and nodes 0 and memory NaN
    when not listed. Other entries are not read."""
    cell = text.strip(_SPACE)
    if not cell:
        return 0.0, 0.0, 0.0, math.nan, 0.0
    untyped, typed, cpus, mem, nodes = 0, 0, 0, math.nan, 0
    for entry in cell.split(","):
        name, equals, value = entry.partition("=")
        name, value = name.strip(_SPACE), value.strip(_SPACE)
        if not equals or not name:
            raise ValueError(f"expected TRES as name=count pairs (cpu=4,gres/gpu=8,...), got {text!r}")
        if name == "mem":
            memory = _MEMORY.fullmatch(value)
            if not memory:
                raise ValueError(f"expected an amount of memory such as mem=500G, got {text!r}")
            mem = float(memory[1]) * _MB_PER_UNIT[memory[2]]
        elif name in ("gres/gpu", "cpu", "node") or name.startswith("gres/gpu:"):
            if not _WHOLE.fullmatch(value):
                raise ValueError(f"expected a whole number for {name}, got {text!r}")
            count = int(value)
            if name == "gres/gpu":
                untyped = count
            elif name == "cpu":
                cpus = count
            elif name == "node":
                nodes = count
            else:
                typed += count
    gpus = max(untyped, typed)
    limits: tuple[tuple[str, float, int], ...] = (
        ("GPUs", gpus, MAX_GPUS_PER_JOB),
        ("CPUs", cpus, MAX_CPUS_PER_JOB),
        ("nodes", nodes, MAX_NODES_PER_JOB),
        ("MB of memory", mem, MAX_MEMORY_MIB_PER_JOB),
    )
    for what, amount, most in limits:
        if amount > most:  # NaN (no mem=) compares False
            raise ValueError(f"expected {what} {range_text(0, most)}, got {text!r}")
    return 1.0, float(gpus), float(cpus), mem, float(nodes)


def state_name(text: str) -> str:
    """``COMPLETED`` -> ``completed``; ``CANCELLED by 1000`` -> ``cancelled``; empty -> ``unknown``."""
    words = text.split()
    return words[0].lower() if words else "unknown"


# -- columns ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    team_or_user: bool = False  # a text column naming a team or user: its cells are names


COLUMNS = (
    Column("JobID", "id"),
    Column("Submit", "time"),
    Column("Eligible", "time"),
    Column("Start", "time"),
    Column("End", "time"),
    Column("Elapsed", "duration"),
    Column("Timelimit", "duration"),
    Column("NNodes", "count"),
    Column("AllocTRES", "tres"),
    Column("ReqTRES", "tres"),
    Column("User", "text", team_or_user=True),
    Column("Account", "text", team_or_user=True),
    Column("Partition", "text"),
    Column("QOS", "text"),
    Column("State", "text"),
)
_CONVERT: dict[Kind, Callable[[str], Any]] = {
    "time": parse_time,
    "duration": parse_duration,
    "count": parse_count,
    "tres": parse_tres,
    "text": lambda text: text.strip(_SPACE),
}


def _missing(path: Path, header: tuple[str, ...], name: str, why: str = "") -> InputError:
    has = ", ".join(header) if header else "no columns"
    return InputError(f"missing column{why} (the header has: {has})", path=path, line=1, field=name)


def _wanted(path: Path, header: tuple[str, ...]) -> list[tuple[int, Column]]:
    """The columns to read, by header position; InputError when a required one is missing."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name.lower(), i)
    present = {column.name: index[column.name.lower()] for column in COLUMNS if column.name.lower() in index}
    for name in ("JobID", "Submit"):
        if name not in present:
            raise _missing(path, header, name)
    if not {"Start", "End"} <= set(present):
        if "Elapsed" not in present:
            name = "Start" if "Start" not in present else "End"
            raise _missing(path, header, name, ": a run time needs Start and End, or Elapsed")
        present.pop("Start", None)
        present.pop("End", None)
    else:
        present.pop("Elapsed", None)  # End - Start is the run time
    if "AllocTRES" not in present and "ReqTRES" not in present:
        raise _missing(path, header, "AllocTRES", ": GPUs need AllocTRES or ReqTRES")
    wanted = [(present[column.name], column) for column in COLUMNS if column.name in present]
    return sorted(wanted, key=lambda item: item[0])


# -- reading the lines ------------------------------------------------------------------------------------


@dataclass
class _Chunk:
    line: Int64  # line of each job record (1-based; the header is line 1)
    key: Int64  # job_key of each record
    values: dict[str, Any]  # per column: Float64, or Int32 codes for text, or a dict of TRES parts


def _rows(value: Any, rows: Any) -> Any:
    """A chunk's column (an array, or a TRES column's dict of arrays) at ``rows``."""
    if isinstance(value, dict):
        return {part: array[rows] for part, array in value.items()}
    return value[rows]


def _joined(first: Any, second: Any) -> Any:
    if isinstance(first, dict):
        return {part: np.concatenate([array, second[part]]) for part, array in first.items()}
    return np.concatenate([first, second])


def _merged(a: _Chunk, b: _Chunk) -> _Chunk:
    """The records of both chunks in the order of their lines (a block's lines read by the fast path
    and those read again on their own)."""
    order = np.argsort(np.concatenate([a.line, b.line]), kind="stable")
    values = {name: _rows(_joined(value, b.values[name]), order) for name, value in a.values.items()}
    return _Chunk(np.concatenate([a.line, b.line])[order], np.concatenate([a.key, b.key])[order], values)


def _each_distinct(distinct: list[str], parse: Callable[[str], Any], failed: Any) -> tuple[list[Any], Bool]:
    """``parse`` of each distinct cell of a column (``failed`` where it raises ValueError), and which
    parsed: a line with a cell that did not is read again on its own, to name what is wrong."""
    parsed, ok = [], []
    for text in distinct:
        try:
            parsed.append(parse(text))
            ok.append(True)
        except ValueError:
            parsed.append(failed)
            ok.append(False)
    return parsed, np.array(ok, dtype=np.bool_)


@dataclass(frozen=True)
class Records(NamedColumns):
    """The job records (steps dropped) of a sacct file, one entry per good line."""

    header: tuple[str, ...]
    line: Int64
    key: Int64
    bad_lines: int
    skipped_lines: tuple[SkippedLine, ...]  # the first of the bad_lines (trace.SKIPPED_LINES_LISTED)
    # Float64 per time, duration and count column, Labels per text column, and per TRES column
    # "<name>:<part>" Float64 for each of TRES_PARTS
    values: dict[str, Any] = field(repr=False)


def read_records(path: Path, *, skip_bad_lines: bool = False) -> Records:
    """The job records of a sacct file (or ``.gz``): InputError at line 1 for a missing column, and
    naming the line and column of a malformed line unless ``skip_bad_lines`` (then skipped and
    counted)."""
    return read_blocks(path, _SacctReader(path, skip_bad_lines).read)


class _SacctReader:
    def __init__(self, path: Path, skip_bad_lines: bool) -> None:
        self.path = path
        self.header: tuple[str, ...] = ()
        self.columns: list[tuple[int, Column]] = []
        self.id_index = 0
        self.labels: dict[str, dict[str, int]] = {}  # text column -> label -> code, for the whole file
        self.chunks: list[_Chunk] = []
        self.skipped = SkippedLines() if skip_bad_lines else None

    def read(self, blocks: Iterator[bytes]) -> Records:
        first = next(blocks, b"")
        end = first.find(b"\n") + 1 or len(first)
        self._set_header(first[:end])
        line = 2
        for block in itertools.chain([first[end:]], blocks):
            self.chunks.append(self._fast(block, line) or self._slow(block, line))
            line += block.count(b"\n")
        return self._result()

    def _set_header(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r\n")
        self.header = tuple(name.strip(_SPACE) for name in text.split("|")) if text.strip(_SPACE) else ()
        self.columns = _wanted(self.path, self.header)
        self.id_index = next(i for i, column in self.columns if column.kind == "id")
        self.labels = {column.name: {} for _, column in self.columns if column.kind == "text"}

    # -- fast path: pyarrow over a block ----------------------------------------------------------------

    def _fast(self, block: bytes, first_line: int) -> _Chunk | None:
        """The job records of a block, read by pyarrow a column at a time; None when the block cannot be
        read so (the slow path reads it all). A line pyarrow cannot split into the header's columns, or
        with a cell that does not convert, is read again on its own by the slow path, which names what
        is wrong, or skips it."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv

        lines = nonempty_line_numbers(block, first_line)
        if lines is None or not is_utf8(block):
            return None
        if not len(lines):
            return self._chunk(lines, np.zeros(0, np.int64), {})
        names = [f"f{i}" for i in range(len(self.header))]
        wanted = [names[i] for i, _ in self.columns]
        skip_misshapen = MisshapenRows()
        misshapen = skip_misshapen.rows

        try:
            table = pacsv.read_csv(
                pa.py_buffer(block),
                read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
                parse_options=pacsv.ParseOptions(
                    delimiter="|",
                    quote_char=False,
                    newlines_in_values=False,
                    invalid_row_handler=skip_misshapen,
                ),
                convert_options=pacsv.ConvertOptions(
                    include_columns=wanted, column_types={name: pa.string() for name in wanted}
                ),
            )
            parsed = np.delete(np.arange(len(lines)), misshapen)
            if table.num_rows != len(parsed):
                return None
            ids = pc.ascii_trim_whitespace(table.column(names[self.id_index]).combine_chunks())
            jobs = pc.invert(pc.match_substring(ids, "."))
            table, ids = table.filter(jobs), ids.filter(jobs)
            parsed = parsed[jobs.to_numpy(zero_copy_only=False)]
            keys, good = self._keys(ids)
            values = {}
            for i, column in self.columns:
                if column.kind != "id":
                    values[column.name], converted = self._convert(
                        table.column(names[i]).combine_chunks(), column
                    )
                    good &= converted
        except (pa.ArrowException, ValueError):  # a block pyarrow cannot read: the slow path reads it
            return None
        chunk = self._chunk(lines[parsed[good]], keys[good], {k: _rows(v, good) for k, v in values.items()})
        again = sorted([*parsed[~good].tolist(), *misshapen])
        if not again:
            return chunk
        texts = block.decode("utf-8", errors="replace").split("\n")
        return _merged(chunk, self._slow_lines((int(lines[k]), texts[lines[k] - first_line]) for k in again))

    def _keys(self, ids: Any) -> tuple[Int64, Bool]:
        """The job_key of each JobID, and which are JobIDs."""
        import pyarrow.compute as pc

        plain = pc.match_substring_regex(ids, f"^{_PLAIN_ID.pattern}$").to_numpy(zero_copy_only=False)
        keys = np.zeros(len(ids), dtype=np.int64)
        ok = np.ones(len(ids), dtype=np.bool_)
        if plain.any():
            keys[plain] = pc.cast(ids.filter(plain), "int64").to_numpy()
        if not plain.all():  # arrays and het jobs: by distinct id
            others = ids.filter(~plain).dictionary_encode()
            distinct, known = _each_distinct(others.dictionary.to_pylist(), job_key, 0)
            at = others.indices.to_numpy()
            keys[~plain] = np.array(distinct, dtype=np.int64)[at]
            ok[~plain] = known[at]
        return keys, ok

    def _convert(self, array: Any, column: Column) -> tuple[Any, Bool]:
        """A column's cells converted at once, and which of them converted: a line with a cell that
        does not is read again on its own by the slow path."""
        import pyarrow as pa
        import pyarrow.compute as pc

        array = pc.ascii_trim_whitespace(array)
        if column.kind == "time":
            unknown = pc.is_in(array, value_set=pa.array(UNKNOWN_TIMES))
            given = pc.and_(pc.invert(unknown), pc.match_substring_regex(array, f"^{_DATETIME}$"))
            try:
                stamps = pc.cast(pc.if_else(given, array, pa.scalar(None, pa.string())), pa.timestamp("s"))
            except pa.ArrowInvalid:  # a time the pattern takes that is none (2024-13-45): cell by cell below
                pass
            else:
                seconds = pc.cast(pc.cast(stamps, pa.int64()), pa.float64()).to_numpy(zero_copy_only=False)
                in_range = (seconds >= 0.0) & (seconds <= MAX_TIME_S)  # False for NaN
                converted = unknown.to_numpy(zero_copy_only=False) | in_range
                return seconds, converted
        encoded = array.dictionary_encode()
        distinct = encoded.dictionary.to_pylist()
        at = encoded.indices.to_numpy()
        if column.kind == "text":
            names_ok = ~not_names(distinct) if column.team_or_user else np.ones(len(distinct), dtype=np.bool_)
            return self._codes(column.name, distinct)[at], names_ok[at]
        if column.kind == "tres":
            parsed, ok = _each_distinct(distinct, parse_tres, (math.nan,) * len(TRES_PARTS))
            parts = np.array(parsed, dtype=np.float64).reshape(-1, len(TRES_PARTS))[at]
            return {part: parts[:, i] for i, part in enumerate(TRES_PARTS)}, ok[at]
        parsed, ok = _each_distinct(distinct, _CONVERT[column.kind], math.nan)
        return np.array(parsed, dtype=np.float64)[at], ok[at]

    # -- slow path: line by line ----------------------------------------------------------------------------

    def _slow(self, block: bytes, first_line: int) -> _Chunk:
        texts = block.decode("utf-8", errors="replace").split("\n")
        return self._slow_lines(enumerate(texts, start=first_line))

    def _slow_lines(self, numbered: Iterable[tuple[int, str]]) -> _Chunk:
        """The job records of the (line number, text) ``numbered``, read one by one."""
        cells: dict[str, list[Any]] = {column.name: [] for _, column in self.columns if column.kind != "id"}
        lines: list[int] = []
        keys: list[int] = []
        for number, line in numbered:
            text = line.removesuffix("\r")
            if not text.strip(_SPACE):
                continue
            try:
                parsed = self._parse(number, text)
            except InputError as error:
                if self.skipped is None:
                    raise
                self.skipped.add(error)
                continue
            if parsed is None:  # a step
                continue
            key, values = parsed
            for name, value in values.items():
                cells[name].append(value)
            lines.append(number)
            keys.append(key)
        values_of: dict[str, Any] = {}
        for _, column in self.columns:
            if column.kind == "id":
                continue
            got = cells[column.name]
            if column.kind == "text":
                values_of[column.name] = self._codes(column.name, got)
            elif column.kind == "tres":
                parts = np.array(got, dtype=np.float64).reshape(-1, 5)
                values_of[column.name] = {part: parts[:, i] for i, part in enumerate(TRES_PARTS)}
            else:
                values_of[column.name] = np.array(got, dtype=np.float64)
        return self._chunk(np.array(lines, dtype=np.int64), np.array(keys, dtype=np.int64), values_of)

    def _parse(self, line: int, text: str) -> tuple[int, dict[str, Any]] | None:
        """(job key, cells) of a job line, None for a step; InputError naming the line and column."""
        fields = text.split("|")
        if len(fields) != len(self.header):
            where = self.header[len(fields)] if len(fields) < len(self.header) else f"column {len(fields)}"
            message = f"expected {len(self.header)} columns as in the header, found {len(fields)}"
            raise InputError(message, path=self.path, line=line, field=where)
        index = self.id_index
        try:
            key = job_key(fields[index])  # JobID first: a step's other cells are not read
            if key is None:
                return None
            values: dict[str, Any] = {}
            for index, column in self.columns:
                if column.kind != "id":
                    values[column.name] = _CONVERT[column.kind](fields[index])
                    wrong = name_error(values[column.name]) if column.team_or_user else None
                    if wrong is not None:
                        raise ValueError(wrong)
        except ValueError as exc:
            raise InputError(str(exc), path=self.path, line=line, field=self.header[index]) from None
        return key, values

    # -- results --------------------------------------------------------------------------------------------

    def _codes(self, name: str, labels: list[str]) -> Int32:
        index = self.labels[name]
        return np.array([index.setdefault(label, len(index)) for label in labels], dtype=np.int32)

    def _chunk(self, lines: Int64, keys: Int64, values: dict[str, Any]) -> _Chunk:
        if not values:
            values = {column.name: self._empty(column) for _, column in self.columns if column.kind != "id"}
        return _Chunk(lines, keys, values)

    @staticmethod
    def _empty(column: Column) -> Any:
        if column.kind == "text":
            return np.zeros(0, dtype=np.int32)
        if column.kind == "tres":
            return {part: np.zeros(0) for part in TRES_PARTS}
        return np.zeros(0)

    def _result(self) -> Records:
        chunks = self.chunks
        values: dict[str, Any] = {}
        for _, column in self.columns:
            if column.kind == "id":
                continue
            parts = [chunk.values[column.name] for chunk in chunks]
            if column.kind == "text":
                codes = np.concatenate(parts or [np.zeros(0, np.int32)]).astype(np.int32)
                values[column.name] = Labels(codes, tuple(self.labels[column.name]))
            elif column.kind == "tres":
                for part in TRES_PARTS:
                    values[f"{column.name}:{part}"] = np.concatenate(
                        [p[part] for p in parts] or [np.zeros(0)]
                    )
            else:
                values[column.name] = np.concatenate(parts or [np.zeros(0)]).astype(np.float64)
        line = np.concatenate([c.line for c in chunks] or [np.zeros(0, np.int64)]).astype(np.int64)
        key = np.concatenate([c.key for c in chunks] or [np.zeros(0, np.int64)]).astype(np.int64)
        skipped = self.skipped or SkippedLines()
        return Records(self.header, line, key, skipped.count, tuple(skipped.first), values)


# -- the job table ------------------------------------------------------------------------------------------

# States in which a record has not run to an end (only needed when the file has Elapsed but no Start/End).
NOT_RUN = frozenset(
    {"pending", "running", "suspended", "configuring", "requeue_hold", "requeue_fed", "resv_del_hold"}
)
JOB_IDS_NOTE = "J -> J; array task J_T -> J*10^10+T; het component J+K -> J*10^10+5*10^9+K"


def read_sacct(path: Path | str, *, gpus_per_node: int = 8, skip_bad_lines: bool = False) -> Trace:
    """Read ``sacct --parsable2`` output (or ``.gz``) into a job table; see the module docstring for
    the columns.

    Mapping: one job per JobID; steps are skipped. Job id = the JobID, array tasks and het components
    numbered as ID_SCALE says (the text id is not kept: it reads back from the number; the rule is in
    ``Trace.header["job_ids"]``). Submit = the later of Submit and Eligible, so a job submitted with
    ``--begin`` (or held back until its dependencies were met) arrives when it could first have run,
    and its simulated wait counts from there, as sacct's Planned (formerly Reserved) field, Start -
    Eligible, does (such a job is ``submitted_early``: Slurm's main scheduler notices it at its next
    pass); in seconds from the earliest Submit of the jobs read, which is ``Trace.epoch_s``
    (the cluster's local time read as UTC). Run time = End - Start; a file without Start or End uses
    Elapsed (a record in a state that has not run to an end, or cancelled with Elapsed 0, has none).
    Time limit = Timelimit (NaN when unlimited or unknown). User = User; team = Account, else the
    User; partition = Partition; qos = QOS; kind "batch"; state = State's first word, lower-cased.

    GPUs, CPUs and memory come from AllocTRES when the job has one (it ran), else ReqTRES. A job that
    ran without ``mem=`` in AllocTRES held no memory (memory is not a consumable resource, as under
    SelectTypeParameters=CR_Core: job_mgr.c:job_set_alloc_tres leaves out a zero): its memory is
    unknown (NaN), not ReqTRES's, which then shows the node's RealMemory for a job that asked none
    (job_mgr.c:job_get_tres_mem). Nodes = NNodes, else the TRES ``node=`` count; each node gets
    ceil(GPUs / nodes) GPUs (so 1 GPU on 2 nodes simulates as 2 x 1), CPUs and memory are divided
    evenly. A job whose ReqTRES asks the CPUs it held, more than one per node, asked them per task
    (``cpus_per_task``: ``-c``, one task per node). The job keeps its own node count:
    ``gpus_per_node`` only groups the GPUs of a job whose node count the file does not give
    (ceil(GPUs / gpus_per_node) nodes, as the other GPU traces); a job
    asking more GPUs per node than the simulated nodes have is the simulator's to reject.

    Requeued jobs (``sacct -D`` lists every attempt of a JobID; the later ones have Submit reset to the
    requeue): the attempts of a JobID are ordered by Submit, then line. The job arrives at its first
    attempt's Submit (or Eligible); its run time, GPUs, nodes, limit, user, account, partition and
    qos are those of the last attempt that has a run time (normally the final one, which ran to the
    end; earlier attempts' runs were lost to preemption, node failure or requeue, and are not
    replayed); its state is the final attempt's. ``Trace.header`` counts ``requeued_jobs`` (JobIDs with
    more than one record) and ``earlier_attempts`` (records folded into a later one). A JobID reused
    after Slurm's ids wrap around is taken for a requeue, too.

    Skipped and counted in ``skipped_invalid``: jobs that never started (no Start: pending, or
    cancelled before starting) or have not ended (no End: running), jobs without GPUs (gpuplan models
    GPU jobs; a CPU-only job would need no GPU scheduling) and jobs with a negative run time or no
    Submit.

    Raises InputError at line 1 naming a missing column (JobID and Submit; Start and End, or Elapsed;
    AllocTRES or ReqTRES), and naming the file, line and column of the first malformed line (a wrong
    number of columns, a bad JobID, time, duration, count or TRES list), unless ``skip_bad_lines``,
    which skips and counts malformed lines instead.
    """
    path = Path(path)
    check_gpus_per_node(gpus_per_node)
    records = read_records(path, skip_bad_lines=skip_bad_lines)
    count = len(records.line)
    unknown = np.full(count, np.nan)
    submit = records.number("Submit")
    eligible = records.number("Eligible") if "Eligible" in records else unknown
    state = _states(records.text("State")) if "State" in records else Labels.constant("unknown", count)
    if "Start" in records:  # and End: _wanted reads both or neither
        run = records.number("End") - records.number("Start")
    else:
        elapsed = records.number("Elapsed")
        labels = np.array(state.labels, dtype=object)
        not_run = np.isin(labels, list(NOT_RUN))[state.codes] | (
            (labels == "cancelled")[state.codes] & (elapsed == 0)
        )
        run = np.where(not_run, np.nan, elapsed)
    gpus, cpus, mem, tres_nodes, asked_cpus = _resources(records)
    limit = records.number("Timelimit") if "Timelimit" in records else unknown

    # One job per JobID: its records ordered by Submit (unknown last), then line.
    keys = records.key
    rows = np.flatnonzero(keys != PENDING_ARRAY)
    order = rows[np.lexsort((records.line[rows], np.nan_to_num(submit[rows], nan=np.inf), keys[rows]))]
    ordered = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))[: len(order)]
    lasts = np.append(starts[1:], len(order))[: len(starts)].astype(np.int64) - 1
    first, final = order[starts], order[lasts]
    if len(order):
        ran_at = np.where(np.isnan(run[order]), -1, np.arange(len(order)))
        last_ran = np.maximum.reduceat(ran_at, starts)
        first_line = np.minimum.reduceat(records.line[order], starts)
    else:
        last_ran = first_line = np.zeros(0, dtype=np.int64)
    has_run = last_ran >= starts
    used = order[np.where(has_run, last_ran, lasts)]  # the attempt whose run is replayed
    duration = run[used]
    valid = has_run & (duration >= 0) & (gpus[used] > 0) & ~np.isnan(submit[first])
    jobs_by_line = np.argsort(first_line, kind="stable")
    keep = jobs_by_line[valid[jobs_by_line]]  # jobs read, in the order of their first line
    first, final, used = first[keep], final[keep], used[keep]

    epoch_s = float(submit[first].min()) if len(keep) else None
    arrival = np.fmax(submit[first], eligible[first]) - (epoch_s or 0.0)
    given_nodes = records.number("NNodes")[used] if "NNodes" in records else np.zeros(len(keep))
    given_nodes = np.where(given_nodes > 0, given_nodes, tres_nodes[used])
    job_gpus = gpus[used].astype(np.int64)
    grouped, _ = split_gpus(job_gpus, gpus_per_node)
    nodes = np.where(given_nodes > 0, given_nodes, grouped).astype(np.int64)
    job_cpus = cpus[used].astype(np.int64)
    cpus_per_node = -(-job_cpus // nodes)
    # --cpus-per-task c: ReqTRES cpu is its min_cpus, nodes x c, the CPUs it held; --cpus-per-gpu
    # asks min_cpus = nodes and holds more (job_mgr.c:_job_create; cpu-memory-spec R6.2)
    per_task = np.where((asked_cpus[used] == job_cpus) & (cpus_per_node > 1), cpus_per_node, 0)
    jobs = JobTable(
        job_id=ordered[starts][keep],
        user=_pick(records, "User", used, "unknown"),
        team=_team(records, used),
        submit_s=arrival,
        duration_s=run[used],
        time_limit_s=limit[used],
        nodes=nodes.astype(np.int32),
        gpus_per_node=(-(-job_gpus // nodes)).astype(np.int32),
        cpus_per_node=cpus_per_node.astype(np.int32),
        mem_per_node=mem[used] / nodes,
        partition=_pick(records, "Partition", used, ""),
        qos=_pick(records, "QOS", used, ""),
        kind=Labels.constant("batch", len(keep)),
        state=Labels.from_keys(state.codes[final], lambda code: state.labels[code]),
        source_line=records.line[used],
        # eligible after its submission (--begin, a dependency): arrives at Eligible, asking no pass
        submitted_early=eligible[first] > submit[first],
        cpus_per_task=per_task.astype(np.int32),
        submitted_s=submit[first] - (epoch_s or 0.0),
    )
    sizes = np.diff(np.append(starts, len(order)))
    return Trace(
        path=path,
        format="sacct",
        jobs=jobs,
        skipped_invalid=len(starts) - len(keep) + int((keys == PENDING_ARRAY).sum()),
        bad_lines=records.bad_lines,
        skipped_lines=records.skipped_lines,
        epoch_s=epoch_s,
        header={
            "columns": ",".join(records.header),
            "requeued_jobs": str(int((sizes > 1).sum())),
            "earlier_attempts": str(len(order) - len(starts)),
            "job_ids": JOB_IDS_NOTE,
            "times": "local time of the cluster, read as UTC",
        },
    )


def _states(raw: Labels) -> Labels:
    return Labels.from_keys(raw.codes, lambda code: state_name(raw.labels[code]))


def _resources(records: Records) -> tuple[Float64, Float64, Float64, Float64, Float64]:
    """GPUs, CPUs, memory (MB) and nodes of each record: from AllocTRES where given, else ReqTRES;
    and the CPUs ReqTRES asks (0 where not given)."""
    count = len(records.line)

    def part(column: str, name: str) -> Float64:
        key = f"{column}:{name}"
        if key in records:
            return records.number(key)
        return np.full(count, np.nan) if name == "mem" else np.zeros(count)

    allocated = part("AllocTRES", "given") > 0
    gpus, cpus, mem, nodes = (
        np.where(allocated, part("AllocTRES", name), part("ReqTRES", name))
        for name in ("gpus", "cpus", "mem", "nodes")
    )
    return gpus, cpus, mem, nodes, part("ReqTRES", "cpus")


def _pick(records: Records, name: str, rows: Int64, default: str) -> Labels:
    """Column ``name`` at ``rows``; ``default`` where empty or without the column."""
    if name not in records:
        return Labels.constant(default, len(rows))
    labels = records.text(name)
    return Labels.from_keys(labels.codes[rows], lambda code: labels.labels[code] or default)


def _team(records: Records, rows: Int64) -> Labels:
    """Account where given, else User, else "unknown"."""
    if "Account" not in records:
        return _pick(records, "User", rows, "unknown")
    account = records.text("Account")
    if "User" not in records:
        return _pick(records, "Account", rows, "unknown")
    user = records.text("User")
    codes = account.codes[rows].astype(np.int64)
    blank = np.array([not label for label in account.labels], dtype=np.bool_)
    keys = np.where(blank[codes], -1 - user.codes[rows].astype(np.int64), codes) if len(rows) else codes

    def name_of(key: int) -> str:
        return account.labels[key] if key >= 0 else (user.labels[-1 - key] or "unknown")

    return Labels.from_keys(keys, name_of)
