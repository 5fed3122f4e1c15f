"""CSV reading shared by the GPU-trace readers (philly.py, helios.py).

The first line is the header; a reader asks for columns by name, so their order and any other columns
do not matter. Blank lines are skipped. Fast path: blocks of whole lines parsed by pyarrow and converted
a column at a time. A block that does not convert is read again row by row with Python's csv module,
only to name the first bad line and column or, with skip_bad_lines, to skip and count bad rows. From the
first block with a double quote on (a quoted field may hold a line break), the rest of the file is read
row by row. The file streams: only one block of text is held at a time, besides the columns read so far.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from gpuplan.errors import InputError
from gpuplan.workload.jobtable import MAX_TIME_S, JobTable, Labels, out_of_range, range_text
from gpuplan.workload.textfile import open_source
from gpuplan.workload.trace import Trace

T = TypeVar("T")

Float64 = npt.NDArray[np.float64]
Int64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

# How a column's cells parse:
#   whole     a whole number ("8" or "8.0") from the column's least to its most
#   number    a number from the column's least to its most (so never NaN or infinite)
#   flag      0 or 1
#   datetime  ISO 8601 "YYYY-MM-DD HH:MM:SS", to Unix seconds; a time without a zone offset is UTC;
#             from 1970 (Unix time 0) to MAX_TIME_S (2242)
#   time      datetime or number (seconds, bounded as a number), as the first data row's cell of the
#             first time column is
#   text      any text, stripped
#   id        any text; read as int64 when every id in the file is a plain unsigned integer
# A cell out of its column's range is a malformed cell: InputError naming line and column, or with
# skip_bad_lines a skipped and counted row, as any other.
Kind = Literal["whole", "number", "flag", "datetime", "time", "text", "id"]

BLOCK_BYTES = 1 << 20  # text parsed at a time by the fast path
SLOW_ROWS = 8192  # rows converted at a time by the slow path
WHOLE_LIMIT = 2**31

_EXPECTED = {
    "whole": "a whole number",
    "number": "a number",
    "flag": "0 or 1",
    "datetime": "a date and time (YYYY-MM-DD HH:MM:SS)",
}
# What the fast path parses with pyarrow (years from 1000: pyarrow takes year 0, Python does not);
# anything else goes to the slow path, which takes what datetime.fromisoformat takes.
_ZONE = r"(Z|[+-][0-9]{2}:[0-9]{2})$"
_DATETIME = (
    r"^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?" + _ZONE[:-1] + "?$"
)
_ID = re.compile(r"[0-9]{1,18}")
_SPACE = " \t\n\v\f\r"  # what cells are stripped of (pyarrow's ascii_trim_whitespace)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Column:
    """A CSV column a reader uses, by its header name."""

    name: str
    kind: Kind
    required: bool = True  # must be in the header
    blank_ok: bool = False  # an empty cell reads as NaN instead of being an error (text is "" anyway)
    # the range of a whole, number or time column's values (workload.jobtable's MAX_* bounds);
    # datetimes are always from Unix time 0 to MAX_TIME_S
    least: float = 0.0
    most: float = float(WHOLE_LIMIT - 1)

    def bounds(self, kind: Kind) -> tuple[float, float]:
        """The range of the column's values when read as ``kind``."""
        return (0.0, MAX_TIME_S) if kind == "datetime" else (self.least, self.most)


class NamedColumns:
    """Columns read from a file, by name: numbers as Float64, text as Labels."""

    values: dict[str, Any]

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def number(self, name: str) -> Float64:
        value: Float64 = self.values[name]
        return value

    def text(self, name: str) -> Labels:
        value: Labels = self.values[name]
        return value


@dataclass(frozen=True)
class CsvColumns(NamedColumns):
    """The columns read from a CSV file, one entry per good row."""

    header: tuple[str, ...]
    line: Int64  # line of each row (1-based; the header is line 1)
    row: Int64  # 1-based data row number, counting bad rows too (blank lines do not count)
    bad_lines: int
    time_kind: Literal["datetime", "number"] | None  # what "time" columns held; None if none were read
    values: dict[str, Any] = field(repr=False)

    def ids(self, name: str) -> Int64 | None:
        """Integer ids, or None when some id in the file is not a plain unsigned integer."""
        value: Int64 | None = self.values[name]
        return value


class _Reject(Exception):
    """The fast path cannot convert a block; the slow path reads it row by row."""


@dataclass
class _Chunk:
    line: Int64
    row: Int64
    values: dict[str, Any]


def missing_column(path: Path, header: Sequence[str], name: str) -> InputError:
    has = ", ".join(header) if header else "no columns"
    return InputError(f"missing column (the header has: {has})", path=path, line=1, field=name)


def read_csv_columns(
    path: Path,
    columns: Sequence[Column],
    *,
    skip_bad_lines: bool = False,
    check_header: Callable[[tuple[str, ...]], None] | None = None,
) -> CsvColumns:
    """Read ``columns`` of a CSV (or ``.csv.gz``) file.

    A missing required column raises InputError at line 1; a malformed row raises InputError naming
    the line and column, unless ``skip_bad_lines``, which skips and counts it. ``check_header`` may
    raise further header errors (e.g. "one of these columns")."""
    return read_blocks(path, _CsvReader(path, columns, skip_bad_lines, check_header).read)


def read_blocks(path: Path, consume: Callable[[Iterator[bytes]], T]) -> T:
    """``consume(blocks)`` over the file (``.gz`` decompressed) in blocks of whole lines; a missing or
    unreadable file, or a corrupt gzip stream, is an InputError naming the line (textfile.open_source)."""
    with open_source(path) as source:
        return consume(_blocks(source.read))


def _blocks(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The file in blocks of whole lines: each ends with a line break, except perhaps the last."""
    rest = b""
    while data := read(BLOCK_BYTES):
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield data[:cut]
    if rest:
        yield rest


def _text_lines(blocks: Iterable[bytes]) -> Iterator[str]:
    """Lines (with their "\\n") of blocks of whole lines; odd bytes become U+FFFD."""
    for block in blocks:
        parts = block.decode("utf-8", errors="replace").split("\n")
        last = parts.pop()
        yield from (part + "\n" for part in parts)
        if last:
            yield last


def _records(lines: Iterable[str], first_line: int) -> Iterator[tuple[int, list[str] | str]]:
    """(first line, fields) of each CSV record that is not blank; fields is a message if malformed."""
    reader = csv.reader(lines)
    start = first_line
    while True:
        try:
            fields: list[str] | str = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            fields = f"not valid CSV: {exc}"
        if isinstance(fields, str) or len(fields) > 1 or (fields and fields[0].strip()):
            yield start, fields
        start = first_line + reader.line_num


def _all(mask: Any) -> bool:
    import pyarrow.compute as pc

    return pc.all(mask).as_py() is not False  # None when empty or all null


def nonempty_line_numbers(block: bytes, first_line: int) -> Int64 | None:
    """File line numbers of the non-empty lines of ``block`` (whose first line is ``first_line``), as
    pyarrow's CSV reader sees them; None when a lone "\r" would make pyarrow and Python's csv split
    lines differently (the caller then reads the block line by line)."""
    if block.count(b"\r") != block.count(b"\r\n"):
        return None
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [len(block)]))
    if starts[-1] == len(block):
        starts, stops = starts[:-1], stops[:-1]
    length = stops - starts
    length -= (length > 0) & (data[np.maximum(stops - 1, 0)] == 13)  # "\r\n"
    lines = first_line + np.flatnonzero(length > 0).astype(np.int64)
    return lines


class _CsvReader:
    def __init__(
        self,
        path: Path,
        columns: Sequence[Column],
        skip_bad_lines: bool,
        check_header: Callable[[tuple[str, ...]], None] | None,
    ) -> None:
        self.path = path
        self.wanted = columns
        self.skip_bad_lines = skip_bad_lines
        self.check_header = check_header
        self.header: tuple[str, ...] = ()
        self.columns: list[tuple[int, Column]] = []  # present columns, in header order
        self.time_kind: Literal["datetime", "number"] | None = None
        self.first_time: int | None = None  # header index of the column that decides time_kind
        self.labels: dict[str, dict[str, int]] = {}
        self.chunks: list[_Chunk] = []
        self.rows = 0  # data rows seen (good or bad)
        self.bad = 0

    # -- driving -------------------------------------------------------------------------------------

    def read(self, blocks: Iterator[bytes]) -> CsvColumns:
        first = next(blocks, b"")
        end = first.find(b"\n") + 1 or len(first)
        self._set_header(first[:end])
        rest = itertools.chain([first[end:]], blocks)
        line = 2
        for block in rest:
            if b'"' in block:  # quoted fields may span lines: Python's csv module from here on
                self._read_slowly(_text_lines(itertools.chain([block], rest)), line)
                break
            chunk = self._fast(block, line)
            if chunk is None:
                self._read_slowly(_text_lines([block]), line)
            else:
                self.chunks.append(chunk)
            line += block.count(b"\n")
        return self._result()

    def _set_header(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")
        try:
            names = next(csv.reader([text.rstrip("\r\n")]), []) if text.strip() else []
        except csv.Error as exc:
            raise InputError(f"not valid CSV: {exc}", path=self.path, line=1) from None
        self.header = tuple(name.strip() for name in names)
        index: dict[str, int] = {}
        for i, name in enumerate(self.header):
            index.setdefault(name, i)
        for column in self.wanted:
            if column.name in index:
                self.columns.append((index[column.name], column))
                if column.kind == "text":
                    self.labels[column.name] = {}
                if column.kind == "time" and self.first_time is None:
                    self.first_time = index[column.name]
            elif column.required:
                raise missing_column(self.path, self.header, column.name)
        self.columns.sort(key=lambda item: item[0])
        if self.check_header is not None:
            self.check_header(self.header)

    def _decide_time(self, cell: str) -> None:
        if self.time_kind is None and self.first_time is not None:
            try:
                float(cell)
                self.time_kind = "number"
            except ValueError:
                self.time_kind = "datetime"

    def _kind(self, column: Column) -> Kind:
        return (self.time_kind or "datetime") if column.kind == "time" else column.kind

    # -- fast path: pyarrow over a block without quotes -------------------------------------------------

    def _fast(self, block: bytes, first_line: int) -> _Chunk | None:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        lines = nonempty_line_numbers(block, first_line)
        if lines is None:
            return None
        values: dict[str, Any] = {}
        if len(lines):
            names = [f"f{i}" for i in range(len(self.header))]
            try:
                table = pacsv.read_csv(
                    pa.py_buffer(block),
                    read_options=pacsv.ReadOptions(column_names=names),
                    parse_options=pacsv.ParseOptions(newlines_in_values=False),
                    convert_options=pacsv.ConvertOptions(
                        include_columns=[names[i] for i, _ in self.columns],
                        column_types={names[i]: pa.string() for i, _ in self.columns},
                    ),
                )
                if table.num_rows != len(lines):
                    return None
                if self.first_time is not None and self.time_kind is None:
                    self._decide_time(table.column(names[self.first_time])[0].as_py())
                for i, column in self.columns:
                    values[column.name] = self._convert(table.column(names[i]).combine_chunks(), column)
            except (pa.ArrowException, _Reject):
                return None
        else:
            values = {column.name: self._empty(column) for _, column in self.columns}
        rows = self.rows + 1 + np.arange(len(lines), dtype=np.int64)
        self.rows += len(lines)
        return _Chunk(lines, rows, values)

    def _convert(self, array: Any, column: Column) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        array = pc.ascii_trim_whitespace(array)
        kind = self._kind(column)
        if kind == "text":
            encoded = array.dictionary_encode()
            return self._codes(column.name, encoded.dictionary.to_pylist(), encoded.indices.to_numpy())
        if kind == "id":
            if not _all(pc.match_substring_regex(array, "^[0-9]{1,18}$")):
                return None
            return pc.cast(array, pa.int64()).to_numpy()
        if column.blank_ok:
            array = pc.if_else(pc.equal(array, ""), pa.scalar(None, pa.string()), array)
        known = ~array.is_null().to_numpy(zero_copy_only=False)
        if kind == "datetime":
            if not _all(pc.match_substring_regex(array, _DATETIME)):
                raise _Reject
            zoned = int(pc.sum(pc.match_substring_regex(array, _ZONE)).as_py() or 0)
            if zoned not in (0, int(known.sum())):
                raise _Reject
            stamps = pc.cast(array, pa.timestamp("us", tz="UTC" if zoned else None))
            micros = pc.cast(pc.cast(stamps, pa.int64()), pa.float64()).to_numpy(zero_copy_only=False)
            seconds = micros / 1e6
            if not _numbers_ok(seconds[known], kind, *column.bounds(kind)):
                raise _Reject
            return seconds
        values = pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False)
        if not _numbers_ok(values[known], kind, *column.bounds(kind)):
            raise _Reject
        return values

    # -- slow path: Python's csv module, row by row -------------------------------------------------------

    def _read_slowly(self, lines: Iterable[str], first_line: int) -> None:
        records = _records(lines, first_line)
        while batch := list(itertools.islice(records, SLOW_ROWS)):
            self.chunks.append(self._slow(batch))

    def _slow(self, records: list[tuple[int, list[str] | str]]) -> _Chunk:
        cells: dict[str, list[Any]] = {column.name: [] for _, column in self.columns}
        lines: list[int] = []
        rows: list[int] = []
        for line, fields in records:
            self.rows += 1
            try:
                values = self._parse(line, fields)
            except InputError:
                if not self.skip_bad_lines:
                    raise
                self.bad += 1
                continue
            for (_, column), value in zip(self.columns, values, strict=True):
                cells[column.name].append(value)
            lines.append(line)
            rows.append(self.rows)
        values_of: dict[str, Any] = {}
        for _, column in self.columns:
            got = cells[column.name]
            kind = self._kind(column)
            if kind == "text":
                values_of[column.name] = self._codes(column.name, got, None)
            elif kind == "id":
                values_of[column.name] = None if None in got else np.array(got, dtype=np.int64)
            else:
                values_of[column.name] = np.array(got, dtype=np.float64)
        return _Chunk(np.array(lines, dtype=np.int64), np.array(rows, dtype=np.int64), values_of)

    def _parse(self, line: int, fields: list[str] | str) -> list[Any]:
        try:
            return self._parse_fields(line, fields)
        except InputError as exc:
            cells = [fields] if isinstance(fields, str) else fields
            if not any("\ufffd" in cell for cell in cells):
                raise
            # bytes that are not UTF-8 (read as U+FFFD) are why the row is bad, most likely: say so
            note = " (the line holds bytes that are not UTF-8, read as U+FFFD)"
            raise InputError(exc.message + note, path=exc.path, line=exc.line, field=exc.field) from None

    def _parse_fields(self, line: int, fields: list[str] | str) -> list[Any]:
        if isinstance(fields, str):
            raise InputError(fields, path=self.path, line=line)
        if self.first_time is not None and self.time_kind is None:
            self._decide_time(fields[self.first_time] if self.first_time < len(fields) else "")
        if len(fields) != len(self.header):
            where = self.header[len(fields)] if len(fields) < len(self.header) else f"column {len(fields)}"
            message = f"expected {len(self.header)} columns as in the header, found {len(fields)}"
            raise InputError(message, path=self.path, line=line, field=where)
        values = []
        for index, column in self.columns:
            try:
                values.append(self._cell(fields[index], column))
            except ValueError as exc:
                raise InputError(str(exc), path=self.path, line=line, field=column.name) from None
        return values

    def _cell(self, text: str, column: Column) -> Any:
        """One cell the way the fast path reads it; ValueError with the message if it is bad."""
        kind = self._kind(column)
        cell = text.strip(_SPACE)
        if kind == "text":
            return cell
        if kind == "id":
            return int(cell) if _ID.fullmatch(cell) else None
        if column.blank_ok and not cell:
            return math.nan
        least, most = column.bounds(kind)
        if kind == "datetime":
            try:
                stamp = datetime.fromisoformat(cell)
                if stamp.tzinfo is None:
                    stamp = stamp.replace(tzinfo=UTC)
                seconds = ((stamp - _EPOCH) // _MICROSECOND) / 1e6
            except (ValueError, OverflowError):
                raise ValueError(f"expected {_EXPECTED[kind]}, got {text!r}") from None
            if out_of_range(seconds, least, most):
                raise ValueError(f"expected {_EXPECTED[kind]} from 1970 to 2242, got {text!r}")
            return seconds
        what = "a number of seconds" if column.kind == "time" else _EXPECTED[kind]
        try:
            value = float(cell)
        except ValueError:
            raise ValueError(f"expected {what}, got {text!r}") from None
        if kind == "flag" and value not in (0.0, 1.0):
            raise ValueError(f"expected {what}, got {text!r}")
        if kind == "whole" and math.isfinite(value) and value != math.floor(value):
            raise ValueError(f"expected {what}, got {text!r}")
        if kind != "flag" and out_of_range(value, least, most):
            raise ValueError(f"expected {what} {range_text(least, most)}, got {text!r}")
        return value

    # -- results ----------------------------------------------------------------------------------------

    def _codes(self, name: str, labels: list[str], at: npt.NDArray[Any] | None) -> npt.NDArray[np.int32]:
        """Codes of ``labels`` (or of ``labels[at]``) in column ``name``'s dictionary for the whole file."""
        index = self.labels[name]
        codes = np.array([index.setdefault(label, len(index)) for label in labels], dtype=np.int32)
        return codes if at is None else codes[at]

    def _empty(self, column: Column) -> Any:
        kind = self._kind(column)
        if kind == "text":
            return np.zeros(0, dtype=np.int32)
        return np.zeros(0, dtype=np.int64 if kind == "id" else np.float64)

    def _result(self) -> CsvColumns:
        chunks = self.chunks
        values: dict[str, Any] = {}
        for _, column in self.columns:
            parts = [chunk.values[column.name] for chunk in chunks] or [self._empty(column)]
            if self._kind(column) == "text":
                codes = np.concatenate(parts).astype(np.int32)
                values[column.name] = Labels(codes, tuple(self.labels[column.name]))
            elif self._kind(column) == "id" and any(part is None for part in parts):
                values[column.name] = None
            else:
                values[column.name] = np.concatenate(parts)
        line = np.concatenate([c.line for c in chunks]) if chunks else np.zeros(0, dtype=np.int64)
        row = np.concatenate([c.row for c in chunks]) if chunks else np.zeros(0, dtype=np.int64)
        time_kind = self.time_kind if self.first_time is not None else None
        return CsvColumns(self.header, line, row, self.bad, time_kind, values)


def _numbers_ok(values: Float64, kind: Kind, least: float, most: float) -> bool:
    """Whether every value reads as ``kind`` within [least, most] (so is finite): the fast path's
    check of a block; a block that fails is read by the slow path, which names the cell."""
    if kind == "flag":
        return bool(((values == 0) | (values == 1)).all())
    ok = (values >= least) & (values <= most)  # False for NaN
    if kind == "whole":
        ok &= values == np.floor(values)
    return bool(ok.all())


# -- building a trace from the columns (shared with helios.py) ---------------------------------------------


def check_gpus_per_node(gpus_per_node: int) -> None:
    if gpus_per_node < 1:
        raise InputError("must be at least 1", field="--gpus-per-node")


def since_earliest(unix_s: Float64, valid: Bool) -> tuple[Float64, float | None]:
    """Unix times as seconds from the earliest valid one, and that one (None when no row is valid)."""
    if not valid.any():
        return unix_s - np.nanmin(unix_s, initial=0.0), None
    epoch = float(unix_s[valid].min())
    return unix_s - epoch, epoch


def job_ids(table: CsvColumns, name: str) -> Int64:
    """The ``name`` column when it holds whole-number ids, else the 1-based data row numbers."""
    ids = table.ids(name) if name in table else None
    return table.row if ids is None else ids


def gpu_trace(
    path: Path,
    format: str,
    table: CsvColumns,
    valid: Bool,
    *,
    job_id: Int64,
    user: Labels,
    team: Labels,
    submit_s: Float64,
    duration_s: Float64,
    nodes: npt.NDArray[np.int32],
    gpus_per_node: npt.NDArray[np.int32],
    epoch_s: float | None,
    cpus_per_node: npt.NDArray[np.int32] | None = None,
    qos: Labels | None = None,
    state: Labels | None = None,
) -> Trace:
    """The trace of the ``valid`` rows; the others count as skipped_invalid. Text columns name an
    empty value "unknown"."""
    keep = np.flatnonzero(valid)

    def text(labels: Labels | None, default: str) -> Labels:
        if labels is None:
            return Labels.constant(default, len(keep))
        return Labels.from_keys(labels.codes[keep], lambda code: labels.labels[code] or default)

    rows = len(keep)
    jobs = JobTable(
        job_id=job_id[keep],
        user=text(user, "unknown"),
        team=text(team, "unknown"),
        submit_s=submit_s[keep],
        duration_s=duration_s[keep],
        time_limit_s=np.full(rows, np.nan),
        nodes=nodes[keep],
        gpus_per_node=gpus_per_node[keep],
        cpus_per_node=np.zeros(rows, np.int32) if cpus_per_node is None else cpus_per_node[keep],
        mem_per_node=np.full(rows, np.nan),
        partition=Labels.constant("", rows),
        qos=Labels.constant("", rows) if qos is None else text(qos, ""),
        kind=Labels.constant("batch", rows),
        state=text(state, "unknown"),
        source_line=table.line[keep],
    )
    return Trace(
        path=path,
        format=format,
        jobs=jobs,
        skipped_invalid=len(valid) - rows,
        bad_lines=table.bad_lines,
        epoch_s=epoch_s,
        header={"columns": ",".join(table.header)},
    )
