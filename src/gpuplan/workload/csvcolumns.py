"""CSV reading shared by the GPU-trace readers (philly.py, helios.py).

The first line is the header; a reader asks for columns by name, so their order and any other columns
do not matter. Blank lines are skipped. Fast path: blocks of whole lines parsed by pyarrow and converted
a column at a time, each column's cells checked at once. A row with a cell that does not convert (or of
another number of columns) is read again on its own with Python's csv module, only to name the first bad
line and column or, with skip_bad_lines, to skip and count it, so bad rows cost what they are and not a
slower reading of their block. From the first block with a double quote on (a quoted field may hold a
line break), the rest of the file is read row by row. The file streams: only one block of text is held at
a time, besides the columns read so far.

A team or user column (``Column.team_or_user``) holds names as scenario.names allows them (letters,
digits and ``-_.``); a cell that is not one is a malformed cell like any other. Each distinct value
of a block is checked, not each row.
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
from gpuplan.scenario.names import name_problem
from gpuplan.workload.jobtable import MAX_TIME_S, JobTable, Labels, out_of_range, range_text
from gpuplan.workload.textfile import open_source
from gpuplan.workload.trace import SkippedLine, SkippedLines, Trace

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
#   text      any text, stripped; in a team or user column a name (scenario.names) or empty (unknown)
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
# What the fast path casts as a number (as float() reads it too); any other cell is read by the slow path
_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_SPACE = " \t\n\v\f\r"  # what cells are stripped of (pyarrow's ascii_trim_whitespace)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class MisshapenRows:
    """pyarrow's ``invalid_row_handler`` for a block read in one thread: notes each row of another
    number of columns (``rows``: 0-based among the block's non-empty lines) and skips it, so that
    only those rows are read again one by one."""

    def __init__(self) -> None:
        self.rows: list[int] = []

    def __call__(self, row: Any) -> str:
        if row.number is None:  # known when pyarrow reads in one thread
            return "error"
        self.rows.append(row.number - 1)
        return "skip"


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
    # a text column naming a team or user (an account, a virtual cluster): its cells are names
    team_or_user: bool = False

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
    skipped_lines: tuple[SkippedLine, ...]  # the first of the bad_lines (trace.SKIPPED_LINES_LISTED)
    time_kind: Literal["datetime", "number"] | None  # what "time" columns held; None if none were read
    values: dict[str, Any] = field(repr=False)

    def ids(self, name: str) -> Int64 | None:
        """Integer ids, or None when some id in the file is not a plain unsigned integer."""
        value: Int64 | None = self.values[name]
        return value


class _Reject(Exception):
    """The cells of a column cannot be cast at once (times with and without a zone): each distinct
    cell is read as the slow path reads it."""


@dataclass
class _Chunk:
    line: Int64
    row: Int64
    values: dict[str, Any]


def _merged(a: _Chunk, b: _Chunk) -> _Chunk:
    """The rows of both chunks in the order of their lines (a block's rows read by the fast path and
    those read again on their own)."""
    order = np.argsort(np.concatenate([a.line, b.line]), kind="stable")
    values = {
        name: None
        if first is None or b.values[name] is None
        else np.concatenate([first, b.values[name]])[order]
        for name, first in a.values.items()
    }
    return _Chunk(np.concatenate([a.line, b.line])[order], np.concatenate([a.row, b.row])[order], values)


def is_utf8(block: bytes) -> bool:
    """Whether ``block`` is UTF-8 text. The fast paths read only such blocks: pyarrow would refuse
    another anyway, and first decode the text of a row of another number of columns for the
    invalid-row handler, which fails there and is printed to the terminal as an ignored exception."""
    if block.isascii():
        return True
    try:
        block.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _blank_among(block: bytes, at: Int64) -> bool:
    """Whether a line of ``block`` at one of the 0-based indices ``at`` holds blanks only: such a line
    is no row to Python's csv module, so the slow path reads that block, to count rows as it does."""
    if not len(at):
        return False
    texts = block.split(b"\n")
    return any(not texts[i].strip() for i in at.tolist())


def name_error(cell: str) -> str | None:
    """Why the (stripped) cell of a team or user column names none (scenario.names); None when it
    does, or is empty (not recorded: the readers call it "unknown")."""
    problem = name_problem(cell) if cell else None
    return None if problem is None else f"expected a team or user name, got {cell!r}: it {problem}"


def not_names(labels: Sequence[str]) -> Bool:
    """Which of the distinct ``labels`` of a team or user column are not names: each distinct value
    is checked once, however many rows hold it."""
    return np.array([name_error(label) is not None for label in labels], dtype=np.bool_)


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
        self.check_header = check_header
        self.header: tuple[str, ...] = ()
        self.columns: list[tuple[int, Column]] = []  # present columns, in header order
        self.time_kind: Literal["datetime", "number"] | None = None
        self.first_time: int | None = None  # header index of the column that decides time_kind
        self.labels: dict[str, dict[str, int]] = {}
        self.chunks: list[_Chunk] = []
        self.rows = 0  # data rows seen (good or bad)
        self.skipped = SkippedLines() if skip_bad_lines else None

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
        """The rows of a block without quotes, read by pyarrow a column at a time; None when the block
        cannot be read so (the slow path reads it all). A row pyarrow cannot split into the header's
        columns, or with a cell that does not convert, is read again on its own by the slow path, which
        names what is wrong, or skips it."""
        import pyarrow as pa
        import pyarrow.csv as pacsv

        lines = nonempty_line_numbers(block, first_line)
        if lines is None or not is_utf8(block):
            return None
        if not len(lines):
            empty = {column.name: self._empty(column) for _, column in self.columns}
            return _Chunk(lines, np.zeros(0, dtype=np.int64), empty)
        names = [f"f{i}" for i in range(len(self.header))]
        skip_misshapen = MisshapenRows()
        misshapen = skip_misshapen.rows

        values: dict[str, Any] = {}
        try:
            table = pacsv.read_csv(
                pa.py_buffer(block),
                read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
                parse_options=pacsv.ParseOptions(
                    newlines_in_values=False, invalid_row_handler=skip_misshapen
                ),
                convert_options=pacsv.ConvertOptions(
                    include_columns=[names[i] for i, _ in self.columns],
                    column_types={names[i]: pa.string() for i, _ in self.columns},
                ),
            )
            parsed = np.delete(np.arange(len(lines)), misshapen)
            if table.num_rows != len(parsed) or _blank_among(block, lines[misshapen] - first_line):
                return None
            if self.first_time is not None and self.time_kind is None:
                if not len(parsed) or parsed[0] != 0:
                    return None  # the file's first row decides; the slow path reads it as it is
                self._decide_time(table.column(names[self.first_time])[0].as_py())
            good = np.ones(len(parsed), dtype=np.bool_)
            for i, column in self.columns:
                if self._kind(column) != "id":
                    values[column.name], converted = self._convert(
                        table.column(names[i]).combine_chunks(), column
                    )
                    good &= converted
            values = {name: value[good] for name, value in values.items()}
            for i, column in self.columns:  # a bad row's id is none of the file's: the good rows' only
                if self._kind(column) == "id":
                    values[column.name] = self._ids(table.column(names[i]).combine_chunks().filter(good))
        except pa.ArrowException:  # a block pyarrow cannot read: the slow path reads it
            return None
        rows = self.rows + 1 + np.arange(len(lines), dtype=np.int64)
        self.rows += len(lines)
        at = parsed[good]
        chunk = _Chunk(lines[at], rows[at], values)
        again = np.sort(np.concatenate([parsed[~good], np.array(misshapen, dtype=np.int64)]))
        if not len(again):
            return chunk
        texts = block.decode("utf-8", errors="replace").split("\n")
        records: list[tuple[int, list[str] | str]] = []
        numbers: list[int] = []
        for k in again.tolist():
            for record in _records([texts[lines[k] - first_line] + "\n"], int(lines[k])):
                records.append(record)
                numbers.append(int(rows[k]))
        return _merged(chunk, self._slow(records, numbers))

    @staticmethod
    def _ids(array: Any) -> Int64 | None:
        """An id column's cells as int64, or None when some id is not a plain unsigned integer."""
        import pyarrow as pa
        import pyarrow.compute as pc

        array = pc.ascii_trim_whitespace(array)
        if not _all(pc.match_substring_regex(array, "^[0-9]{1,18}$")):
            return None
        ids: Int64 = pc.cast(array, pa.int64()).to_numpy()
        return ids

    def _convert(self, array: Any, column: Column) -> tuple[Any, Bool]:
        """A column's cells converted at once, and which of them converted: a cell that does not (a
        number out of the column's range, text that is no number, a team or user that is no name) is
        left to the slow path, which reads its row again."""
        import pyarrow as pa
        import pyarrow.compute as pc

        array = pc.ascii_trim_whitespace(array)
        kind = self._kind(column)
        every = np.ones(len(array), dtype=np.bool_)
        if kind == "text":
            encoded = array.dictionary_encode()
            distinct = encoded.dictionary.to_pylist()
            at = encoded.indices.to_numpy()
            converted = ~not_names(distinct)[at] if column.team_or_user and len(distinct) else every
            return self._codes(column.name, distinct, at), converted
        try:
            return self._cast(array, column, kind)
        except (pa.ArrowInvalid, _Reject):  # a cell the pattern takes that pyarrow does not (2017-02-30)
            return self._cell_by_cell(array, column)

    def _cast(self, array: Any, column: Column, kind: Kind) -> tuple[Float64, Bool]:
        """The numbers or times of a (trimmed) column, cast by pyarrow, and which cells converted."""
        import pyarrow as pa
        import pyarrow.compute as pc

        null = pa.scalar(None, pa.string())
        if column.blank_ok:
            array = pc.if_else(pc.equal(array, ""), null, array)
        known = ~array.is_null().to_numpy(zero_copy_only=False)
        pattern = _DATETIME if kind == "datetime" else _NUMBER
        readable = pc.fill_null(pc.match_substring_regex(array, pattern), True)
        cells = pc.if_else(readable, array, null)  # the others are read again, row by row
        if kind == "datetime":
            zoned = int(pc.sum(pc.match_substring_regex(cells, _ZONE)).as_py() or 0)
            if zoned not in (0, int(pc.sum(pc.is_valid(cells)).as_py() or 0)):
                raise _Reject
            stamps = pc.cast(cells, pa.timestamp("us", tz="UTC" if zoned else None))
            micros = pc.cast(pc.cast(stamps, pa.int64()), pa.float64()).to_numpy(zero_copy_only=False)
            values: Float64 = micros / 1e6
        else:
            values = pc.cast(cells, pa.float64()).to_numpy(zero_copy_only=False)
        in_range = _numbers_mask(values, kind, *column.bounds(kind))
        converted = readable.to_numpy(zero_copy_only=False) & (~known | in_range)
        return values, converted

    def _cell_by_cell(self, array: Any, column: Column) -> tuple[Float64, Bool]:
        """The numbers or times of a (trimmed) column, each distinct cell read as the slow path reads
        it, and which cells converted: for a column pyarrow cannot cast at once."""
        encoded = array.dictionary_encode()
        values: list[float] = []
        ok: list[bool] = []
        for text in encoded.dictionary.to_pylist():
            try:
                values.append(self._cell(text, column))
                ok.append(True)
            except ValueError:
                values.append(math.nan)
                ok.append(False)
        at = encoded.indices.to_numpy()
        return np.array(values, dtype=np.float64)[at], np.array(ok, dtype=np.bool_)[at]

    # -- slow path: Python's csv module, row by row -------------------------------------------------------

    def _read_slowly(self, lines: Iterable[str], first_line: int) -> None:
        records = _records(lines, first_line)
        while batch := list(itertools.islice(records, SLOW_ROWS)):
            self.chunks.append(self._slow(batch))

    def _slow(self, records: list[tuple[int, list[str] | str]], numbers: list[int] | None = None) -> _Chunk:
        """The ``records`` read one by one; ``numbers`` are their data row numbers when the fast path
        has counted them already (rows it read again), else they are counted here."""
        cells: dict[str, list[Any]] = {column.name: [] for _, column in self.columns}
        lines: list[int] = []
        rows: list[int] = []
        for k, (line, fields) in enumerate(records):
            if numbers is None:
                self.rows += 1
            try:
                values = self._parse(line, fields)
            except InputError as error:
                if self.skipped is None:
                    raise
                self.skipped.add(error)
                continue
            for (_, column), value in zip(self.columns, values, strict=True):
                cells[column.name].append(value)
            lines.append(line)
            rows.append(self.rows if numbers is None else numbers[k])
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
            wrong = name_error(cell) if column.team_or_user else None
            if wrong is not None:
                raise ValueError(wrong)
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
        skipped = self.skipped or SkippedLines()
        return CsvColumns(self.header, line, row, skipped.count, tuple(skipped.first), time_kind, values)


def _numbers_mask(values: Float64, kind: Kind, least: float, most: float) -> Bool:
    """Which values read as ``kind`` within [least, most] (so are finite): the fast path's check of a
    column; a row that fails is read again by the slow path, which names the cell."""
    if kind == "flag":
        ok: Bool = (values == 0) | (values == 1)
        return ok
    ok = (values >= least) & (values <= most)  # False for NaN
    if kind == "whole":
        ok &= values == np.floor(values)
    return ok


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
        skipped_lines=table.skipped_lines,
        epoch_s=epoch_s,
        header={"columns": ",".join(table.header)},
    )
