"""Fuzzing the ``gpuplan`` command line: hostile values, hypothesis strategies that mutate each input
syntax, a runner that isolates every run in a forked child bounded in time and memory, and the checks
every run must pass (used by ``test_fuzz.py``).

Why a forked child rather than ``CliRunner`` in the test process: a runaway input (an alias bomb, a
horizon of 1e308 seconds) cannot be stopped in-process, and one that allocates without bound would take
the test run down with it. The child inherits the warm imports (a fork costs milliseconds, a new
interpreter 0.7 s), runs the command with typer's ``CliRunner`` and sends back what a user would have
seen; the parent watches its resident memory and kills its process group once the time or the memory
bound has passed.

``python tests/fuzzing.py SURVEY.jsonl`` summarises a survey campaign (``GPUPLAN_FUZZ_SURVEY``): one
entry per failure class, with the smallest input that shows it.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import pickle
import re
import resource
import select
import signal
import sys
import time
import traceback
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# ---- hostile values ------------------------------------------------------------------------------

LONG = "x" * 5000

# Cell and field values for the text formats (CSV, sacct, SWF, JSON strings): numbers no machine
# has, numbers that are not numbers, Rich markup and emoji codes (printed back in messages), text a
# terminal or an encoder may choke on, times and dates out of range.
HOSTILE_TEXT: tuple[str, ...] = (
    "",
    " ",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "1e308",
    "-1e308",
    "1e309",
    "100000000000000000000",
    "9223372036854775808",
    "-9223372036854775809",
    "4294967296",
    "2147483648",
    "-1",
    "-0",
    "0",
    "-99999999999",
    "1e-320",
    "0.5",
    "12abc",
    "abc",
    "0x1F",
    "1_000",
    "1,000",
    "１２",
    "[/x]",
    "[red]",
    "[bold red]x[/]",
    ":100:",
    ":smile:",
    "名前",
    "e\u0301",
    "\u202eevil",
    "\x00",
    "\x1b[31m",
    "\t",
    '"',
    "'",
    "\\",
    "line\nbreak",
    "%s%n",
    "None",
    "null",
    "true",
    "UNLIMITED",
    "INVALID",
    "1970-01-01T00:00:00",
    "9999-12-31T23:59:59",
    "0001-01-01 00:00:00",
    "2024-02-30T25:61:61",
    "1-25:61:61",
    "-1:00:00",
    "99999999:00:00",
    LONG,
)

# Raw YAML put where a scalar was: YAML's own NaN and infinities, numbers past int64, bare numbers
# where a unit is expected, units on nonsense, tags the safe loader refuses, flow collections, aliases
# to nothing, Rich markup (quoted, so it is a string) and a lone surrogate (valid YAML escape, not
# encodable as UTF-8).
HOSTILE_YAML: tuple[str, ...] = (
    "",
    "~",
    ".nan",
    ".inf",
    "-.inf",
    "-1",
    "0",
    "-0.0",
    "1e308",
    "-1e308",
    "1.0e+309",
    "100000000000000000000",
    "9223372036854775808",
    "-99999999999",
    "0x7fffffffffffffff",
    "1_000",
    "true",
    "'NaN'",
    "'inf'",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "[/x]",
    "'[/x]'",
    "'[red]'",
    "'[bold]x[/]'",
    "':100:'",
    "'名前'",
    '"\\u202eevil"',
    '"\\0"',
    '"\\e[31m"',
    '"\\ud800"',
    "!!binary aGVsbG8=",
    "!!python/object/apply:os.getcwd []",
    "!!set {a, b}",
    "2026-01-05",
    "2026-13-45T99:00:00",
    "7",
    "0.5",
    "-6h",
    "1e308h",
    "nanh",
    "0s",
    "0/day",
    "1e308/day",
    "-3/h",
    "7/fortnight",
    "2x8",
    "0x8",
    "1000000x1000000",
    "'1x8'",
    "*undefined_alias",
    "'%s%n'",
    "'" + LONG + "'",
)

# JSON values for kubectl dumps: the same ideas as typed JSON (NaN and Infinity are what Python's
# json module writes for floats it cannot represent, and reads back).
HOSTILE_JSON: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    10**20,
    2**64,
    1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    [],
    {},
    [None],
    {"": None},
    "1e308",
    "NaN",
    "-1",
    "1Ei",
    "99999999999999999999Ki",
    "0.0001m",
    "12Gi",
    "1e",
    "-5Gi",
)

_ROW_COUNTS = (2, 98, 99, 100, 1233, 1234)  # lines 100 and 1234 are the numeric emoji codes


def hostile_text(extra: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """A hostile cell value: from the lists above (first, so failures shrink to them), a number of
    any size, or any short text."""
    return st.one_of(
        st.sampled_from((*HOSTILE_TEXT, *extra)),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=12),
    )


# ---- byte-level mutations (every kind) ------------------------------------------------------------


def mutate_bytes(data: st.DataObject, content: bytes) -> bytes:
    """One byte-level mutation, for coverage of what no structure-aware mutation produces."""
    op = data.draw(
        st.sampled_from(
            (
                "truncate",
                "delete_range",
                "insert_bytes",
                "flip_byte",
                "invalid_utf8",
                "replace_all",
                "utf16",
                "bom",
                "crlf",
                "cr_only",
                "no_final_newline",
                "long_line",
                "empty",
            )
        ),
        label="byte mutation",
    )
    size = len(content)
    position = data.draw(st.integers(0, size), label="at byte") if size else 0
    if op == "truncate":
        return content[:position]
    if op == "delete_range":
        length = data.draw(st.integers(1, 64), label="bytes deleted")
        return content[:position] + content[position + length :]
    if op == "insert_bytes":
        return content[:position] + data.draw(st.binary(min_size=1, max_size=64)) + content[position:]
    if op == "flip_byte":
        if not size:
            return b"\xff"
        index = min(position, size - 1)
        bit = data.draw(st.integers(0, 7), label="bit")
        return content[:index] + bytes([content[index] ^ (1 << bit)]) + content[index + 1 :]
    if op == "invalid_utf8":
        junk = data.draw(st.sampled_from((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf")))
        return content[:position] + junk + content[position:]
    if op == "replace_all":
        return data.draw(st.binary(max_size=512), label="whole file")
    if op == "utf16":
        return content.decode("utf-8", errors="replace").encode("utf-16")
    if op == "bom":
        return b"\xef\xbb\xbf" + content
    if op == "crlf":
        return content.replace(b"\n", b"\r\n")
    if op == "cr_only":
        return content.replace(b"\n", b"\r")
    if op == "no_final_newline":
        return content.rstrip(b"\n")
    if op == "long_line":
        return content[:position] + b"7" * 200_000 + content[position:]
    return b""


def mutate_gzip(data: st.DataObject, compressed: bytes) -> bytes:
    """A corruption of the compressed stream itself (the content was mutated before compressing)."""
    op = data.draw(
        st.sampled_from(("keep", "truncate", "flip_byte", "trailing_garbage", "second_member", "not_gzip")),
        label="gzip mutation",
    )
    if op == "truncate":
        return compressed[: data.draw(st.integers(0, len(compressed) - 1), label="compressed bytes kept")]
    if op == "flip_byte":
        index = data.draw(st.integers(0, len(compressed) - 1), label="compressed byte")
        return compressed[:index] + bytes([compressed[index] ^ 0x40]) + compressed[index + 1 :]
    if op == "trailing_garbage":
        return compressed + data.draw(st.binary(min_size=1, max_size=32), label="after the stream")
    if op == "second_member":
        return compressed + gzip.compress(data.draw(st.binary(max_size=64), label="second member"))
    if op == "not_gzip":
        return gzip.decompress(compressed)
    return compressed


# ---- delimited text: CSV, sacct --parsable2, SWF --------------------------------------------------


@dataclass(frozen=True)
class Table:
    """How to cut a line of a delimited format into cells and put it back together."""

    split: Callable[[str], list[str]]
    join: Callable[[list[str]], str]
    is_record: Callable[[str], bool]  # a data line (SWF's ";" header comments are not)
    has_header: bool  # the first line names the columns
    extra_values: tuple[str, ...] = ()


def _csv_split(line: str) -> list[str]:
    try:
        return next(csv.reader([line]), [])
    except csv.Error:  # a cell past the csv module's size limit, or a NUL: cut at the commas
        return line.split(",")


def _csv_join(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    return out.getvalue()


CSV = Table(_csv_split, _csv_join, lambda line: True, has_header=True)
SACCT = Table(
    lambda line: line.split("|"),
    "|".join,
    lambda line: True,
    has_header=True,
    extra_values=(
        "gres/gpu=-1",
        "gres/gpu=1e308",
        "gres/gpu=nan",
        "billing=1,gres/gpu:h100=99999999999999999999",
        "cpu=,=",
        "gres/gpu",
        "node=0",
        "mem=-5G",
        "1e308M",
        "0:0",
        "Partition_Limit",
        "CANCELLED by 0",
        "2024-03-01T10:00:00|extra",
    ),
)
SWF = Table(
    str.split,
    " ".join,
    lambda line: bool(line.strip()) and not line.lstrip().startswith(";"),
    has_header=False,
)
SWF_HEADER_KEYS = ("MaxProcs", "MaxNodes", "UnixStartTime", "MaxJobs", "MaxRuntime", "Version")


def mutate_table(data: st.DataObject, text: str, table: Table) -> str:
    """One structure-aware mutation of a delimited file: a cell, a row, a column or the header."""
    lines = text.splitlines()
    if not lines:
        return data.draw(hostile_text(table.extra_values), label="only line")
    ops = [
        "cell",
        "cell_raw",
        "delete_line",
        "duplicate_line",
        "swap_lines",
        "blank_line",
        "short_row",
        "long_row",
        "delete_column",
        "duplicate_column",
        "pad_to_line",
    ]
    if table.has_header:
        ops += ["rename_header", "swap_header", "header_only"]
    else:
        ops += ["swf_header"]
    op = data.draw(st.sampled_from(ops), label="table mutation")
    records = [i for i, line in enumerate(lines) if table.is_record(line)] or [0]
    data_rows = [i for i in records if not (table.has_header and i == 0)] or records
    index = data.draw(st.sampled_from(data_rows), label="line index")
    if op in ("cell", "cell_raw", "short_row", "long_row"):
        cells = table.split(lines[index])
        if op == "short_row":
            cells = cells[: data.draw(st.integers(0, max(len(cells) - 1, 0)), label="cells kept")]
        elif op == "long_row":
            cells += data.draw(st.lists(hostile_text(table.extra_values), min_size=1, max_size=3))
        elif cells:
            column = data.draw(st.integers(0, len(cells) - 1), label="column")
            cells[column] = data.draw(hostile_text(table.extra_values), label="value")
        # "cell_raw" joins without quoting: a value with the delimiter or a quote shifts the columns
        lines[index] = (",".join if op == "cell_raw" and table is CSV else table.join)(cells)
    elif op == "delete_line":
        del lines[index]
    elif op == "duplicate_line":
        lines.insert(index, lines[index])
    elif op == "swap_lines":
        other = data.draw(st.sampled_from(records), label="swapped with")
        lines[index], lines[other] = lines[other], lines[index]
    elif op == "blank_line":
        lines.insert(index, data.draw(st.sampled_from(("", " ", "\t", ";", "#"))))
    elif op in ("delete_column", "duplicate_column"):
        width = len(table.split(lines[records[0]]))
        column = data.draw(st.integers(0, max(width - 1, 0)), label="column")
        for i in records:
            cells = table.split(lines[i])
            if column < len(cells):
                if op == "delete_column":
                    del cells[column]
                else:
                    cells.insert(column, cells[column])
                lines[i] = table.join(cells)
    elif op == "pad_to_line":
        # copies of the first data row before ``index`` so that row lands on line 100 or 1234
        # (Rich once printed "file.csv:100:" as an emoji)
        target = data.draw(st.sampled_from(_ROW_COUNTS), label="target line")
        copies = max(target - 1 - index, 0)
        lines[index:index] = [lines[data_rows[0]]] * copies
    elif op in ("rename_header", "swap_header", "header_only"):
        header = table.split(lines[0])
        if op == "header_only":
            lines = lines[:1]
        elif op == "rename_header" and header:
            column = data.draw(st.integers(0, len(header) - 1), label="header column")
            header[column] = data.draw(
                st.one_of(st.sampled_from(header), hostile_text()), label="column name"
            )
            lines[0] = table.join(header)
        elif len(header) > 1:
            a = data.draw(st.integers(0, len(header) - 1), label="header column")
            b = data.draw(st.integers(0, len(header) - 1), label="swapped with")
            header[a], header[b] = header[b], header[a]
            lines[0] = table.join(header)
    else:  # swf_header
        key = data.draw(st.sampled_from(SWF_HEADER_KEYS), label="header key")
        value = data.draw(hostile_text(), label="header value")
        lines = [line for line in lines if not re.match(rf"\s*;\s*{key}\s*:", line)]
        lines.insert(0, f"; {key}: {value}")
    return "\n".join(lines) + "\n"


# ---- JSON (kubectl get pods -o json) --------------------------------------------------------------


def _paths(tree: Any) -> list[tuple[Any, ...]]:
    """Paths into ``tree`` (keys of mappings, indices of lists), parents before children. A container
    met again (YAML aliases share them: an alias bomb is 9**9 paths) is not entered twice."""
    found: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    pending: list[tuple[Any, tuple[Any, ...]]] = [(tree, ())]
    while pending and len(found) < MAX_PATHS:
        node, path = pending.pop(0)
        found.append(path)
        if isinstance(node, dict | list) and id(node) not in seen:
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            pending.extend((value, (*path, key)) for key, value in items)
    return found


MAX_PATHS = 5000


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        tree = tree[step]
    return tree


def mutate_tree(data: st.DataObject, tree: Any, values: st.SearchStrategy[Any]) -> Any:
    """One mutation of a parsed JSON or YAML document: a value replaced, a key deleted or renamed, a
    list item duplicated (two entries of one name) or deleted. Returns the new root."""
    paths = _paths(tree)
    path = data.draw(st.sampled_from(paths), label="path")
    op = data.draw(
        st.sampled_from(("replace", "delete", "duplicate_item", "rename_key", "wrap_in_list")),
        label="tree mutation",
    )
    if not path:
        return data.draw(values, label="new root") if op == "replace" else [tree]
    parent, last = _parent(tree, path), path[-1]
    if op == "replace":
        parent[last] = data.draw(values, label="value")
    elif op == "delete":
        del parent[last]
    elif op == "duplicate_item" and isinstance(parent, list):
        parent.insert(last, parent[last])
    elif op == "rename_key" and isinstance(parent, dict):
        new = data.draw(
            st.one_of(st.just(str(last)[:-1]), st.just(str(last).upper()), hostile_text()), label="new key"
        )
        parent[new] = parent.pop(last)
    else:
        parent[last] = [parent[last]]
    return tree


def mutate_json(data: st.DataObject, text: str) -> str:
    tree = json.loads(text)
    tree = mutate_tree(data, tree, st.one_of(st.sampled_from(HOSTILE_JSON), hostile_text()))
    return json.dumps(tree, indent=data.draw(st.sampled_from((2, None)), label="indent"))


# ---- YAML scenarios ------------------------------------------------------------------------------

_SENTINEL = "FUZZ_RAW_VALUE"


def alias_bomb(depth: int) -> str:
    """The billion laughs: each level a list of nine aliases of the one before (9**depth strings)."""
    lines = ['bomb0: &bomb0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, depth + 1):
        lines.append(f"bomb{level}: &bomb{level} [" + ", ".join([f"*bomb{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def mutate_yaml(data: st.DataObject, text: str) -> str:
    """One mutation of a scenario: structure-aware (a value replaced by raw hostile YAML, keys
    deleted, renamed or duplicated, list entries duplicated), or YAML-specific text (an alias bomb,
    duplicate keys, deep nesting, merge keys, several documents, tabs)."""
    import yaml

    op = data.draw(
        st.sampled_from(
            (
                "tree",
                "raw_value",
                "alias_bomb",
                "duplicate_key_line",
                "deep_nesting",
                "merge_key",
                "two_documents",
                "tab_indent",
                "pad_comments",
            )
        ),
        label="yaml mutation",
    )
    if op in ("tree", "raw_value"):
        tree = yaml.safe_load(text)
        if op == "tree":
            tree = mutate_tree(data, tree, st.sampled_from((None, -1, 0, 1e308, 10**20, "", [], {}, LONG)))
            return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, width=10**6)
        paths = [p for p in _paths(tree) if p]
        raw = data.draw(st.sampled_from(HOSTILE_YAML), label="raw value")
        if not paths:
            return raw + "\n"
        path = data.draw(st.sampled_from(paths), label="path")
        _parent(tree, path)[path[-1]] = _SENTINEL
        dumped = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, width=10**6)
        return dumped.replace(_SENTINEL, raw, 1)
    lines = text.splitlines() or [""]
    if op == "alias_bomb":
        depth = data.draw(st.integers(1, 9), label="bomb depth")
        keys = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_]\w*:\s*\S", line)] or [0]
        at = data.draw(st.sampled_from(keys), label="line replaced by the bomb")
        lines[at] = re.sub(r":\s*\S.*$", f": *bomb{depth}", lines[at], count=1)
        # the anchors go under an unknown top-level key, before the rest: the document is well formed
        return (
            "x-fuzz:\n" + "".join(f"  {row}\n" for row in alias_bomb(depth).splitlines()) + "\n".join(lines)
        )
    if op == "duplicate_key_line":
        keys = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_]\w*:", line)] or [0]
        at = data.draw(st.sampled_from(keys), label="duplicated line")
        lines.insert(at + 1, lines[at])
    elif op == "deep_nesting":
        depth = data.draw(st.sampled_from((10, 100, 1000, 5000)), label="nesting depth")
        lines.append("description: " + "[" * depth + "]" * depth)
    elif op == "merge_key":
        lines.insert(0, "x-defaults: &defaults {nodes: 1, shape: BM.GPU.H100.8}")
        keys = [i for i, line in enumerate(lines) if re.match(r"^\s*- name:", line)] or [1]
        at = data.draw(st.sampled_from(keys), label="merged into")
        indent = re.match(r"^(\s*)", lines[at]).group(1)
        lines.insert(at + 1, f"{indent}  <<: *defaults")
    elif op == "two_documents":
        lines += ["---", *lines]
    elif op == "tab_indent":
        at = data.draw(st.integers(0, len(lines) - 1), label="line indented with a tab") if lines else 0
        if lines:
            lines[at] = "\t" + lines[at].lstrip(" ")
    else:  # pad_comments: move a later error onto line 100 or 1234
        lines[0:0] = ["# padding"] * data.draw(st.sampled_from((1, 60, 90, 99, 1200)), label="comment lines")
    return "\n".join(lines) + "\n"


# ---- the isolated runner -------------------------------------------------------------------------

# Warning categories Python's default filters hide from a user; every other warning reaches the terminal.
_HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


# The child's address space may grow this much past the warm process's, as a backstop: an input that
# asks for a trillion-element array fails at once instead of the machine's memory being committed.
# It is not the memory bound: allocators reserve address space they never touch (Arrow's mimalloc
# reserves 1 GiB arenas), so the bound is on resident memory, which the parent watches.
ADDRESS_SPACE_BACKSTOP = 8 * 2**30
POLL_SECONDS = 0.05


@dataclass
class Run:
    """What one command showed its user, and how it ended."""

    args: list[str]
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    fd_output: str = ""  # written to file descriptors 1 and 2 directly (C code, faulthandler)
    exception: str | None = None  # formatted traceback of an exception that escaped the command
    exception_type: str | None = None
    exception_origin: str | None = None  # innermost gpuplan frame: "gpuplan/x.py:function"
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False
    over_memory: bool = False  # killed: its resident memory grew past the bound
    peak_growth_mb: float = 0.0  # most resident memory seen above the warm process's
    signal: int | None = None  # the child died of this signal


def _origin(tb: Any) -> str:
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if "/gpuplan/" in f.filename.replace(os.sep, "/")]
    frame = (ours or frames)[-1] if frames else None
    if frame is None:
        return "?"
    name = frame.filename.replace(os.sep, "/")
    name = name[name.rindex("/gpuplan/") + 1 :] if "/gpuplan/" in name else Path(name).name
    return f"{name}:{frame.name}"


def _status_kb(pid: int | str, key: str) -> int | None:
    """A figure of /proc/PID/status in kB (None once the process is gone or a zombie)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            match = re.search(rf"^{key}:\s+(\d+) kB", status.read(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _child(args: list[str], cwd: Path, write_end: int, app: Any) -> None:
    """In the forked child: run the command, send back what it showed. Never returns."""
    status = 0
    try:
        # hypothesis traces lines while it explains a failure; a child that kept the tracer would run
        # several times slower and time out for the harness's sake, not the command's
        sys.settrace(None)
        sys.setprofile(None)
        os.setpgid(0, 0)  # its own process group, so the parent can kill anything it starts
        os.chdir(cwd)
        captured = os.open(cwd / ".fd-output", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(captured, 1)
        os.dup2(captured, 2)
        limit = (_status_kb("self", "VmSize") or 0) * 1024 + ADDRESS_SPACE_BACKSTOP
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        from typer.testing import CliRunner

        if app is None:
            from gpuplan.cli import app

        payload: dict[str, Any] = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = CliRunner().invoke(app, args, catch_exceptions=True)
        payload["exit_code"] = result.exit_code
        payload["stdout"] = result.stdout
        payload["stderr"] = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            assert result.exc_info is not None
            payload["exception"] = "".join(traceback.format_exception(*result.exc_info))
            payload["exception_type"] = type(result.exception).__name__
            payload["exception_origin"] = _origin(result.exc_info[2])
        payload["warnings"] = sorted(
            {
                f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
                for w in caught
                if not issubclass(w.category, _HIDDEN_WARNINGS)
            }
        )
        blob = pickle.dumps(payload)
    except BaseException:  # the harness itself failed: report it as the run's exception
        blob = pickle.dumps({"exception": traceback.format_exc(), "exception_type": "HarnessError"})
        status = 1
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(write_end, view) :]
    finally:
        os._exit(status)


def run_isolated(args: list[str], cwd: Path, *, seconds: float, memory_bytes: int, app: Any = None) -> Run:
    """Run ``gpuplan ARGS`` (or another typer ``app``'s) in a forked child in ``cwd``; kill it (and its
    process group) after ``seconds``, or once its resident memory is ``memory_bytes`` above the warm
    process's."""
    read_end, write_end = os.pipe()
    baseline_kb = _status_kb("self", "VmRSS") or 0
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(args, cwd, write_end, app)
    os.close(write_end)
    chunks: list[bytes] = []
    run = Run(args=list(args))
    deadline = start + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                run.timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], min(left, POLL_SECONDS))
            resident_kb = _status_kb(pid, "VmRSS")
            if resident_kb is not None:
                run.peak_growth_mb = max(run.peak_growth_mb, (resident_kb - baseline_kb) / 1024)
                if (resident_kb - baseline_kb) * 1024 > memory_bytes:
                    run.over_memory = True
                    break
            if ready:
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
        if run.timed_out or run.over_memory:
            for target in (-pid, pid):  # the child's group, then the child (if setpgid had not run)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(target, signal.SIGKILL)
        _, wait_status = os.waitpid(pid, 0)
    run.seconds = time.monotonic() - start
    if os.WIFSIGNALED(wait_status) and not (run.timed_out or run.over_memory):
        run.signal = os.WTERMSIG(wait_status)
    with contextlib.suppress(OSError):
        run.fd_output = (cwd / ".fd-output").read_text(errors="replace")
    if chunks and not (run.timed_out or run.over_memory):
        payload = pickle.loads(b"".join(chunks))
        for key, value in payload.items():
            setattr(run, key, value)
    return run


# ---- the checks ----------------------------------------------------------------------------------

_SWF_FIELD = re.compile(r"^field \d+ \(.+\)$")
_ERROR_LINE = re.compile(r"^error:\s?(.*)$")


@dataclass(frozen=True)
class Failure:
    """One broken promise of a run. ``key`` names its class (the same defect gives the same key)."""

    key: str
    detail: str


def _names_a_field(candidate: str, inputs: dict[str, str]) -> bool:
    """Whether ``candidate`` (what stands between the file (and line) and the message) is a field: a
    command-line option, a field path (no spaces: ``workloads[2].duration``, ``num_gpu``), an SWF
    field (``field 4 (run time)``), or a name the input files hold (a fuzzed column name)."""
    candidate = candidate.strip()
    if not candidate:
        return False
    if candidate.startswith("--") or _SWF_FIELD.match(candidate) or not re.search(r"\s", candidate):
        return True
    return any(candidate in text for text in inputs.values())


def locate_problem(message: str, inputs: dict[str, str]) -> str | None:
    """None when an exit-2 message names one of the input files and a line (``file:12``) or a field
    (``file: field: message``); else what it lacks. ``inputs`` maps each input file's path to its text."""
    names = sorted({n for path in inputs for n in (path, Path(path).name)}, key=len, reverse=True)
    found = [(message.find(name), name) for name in names if name in message]
    if not found:
        return "names no input file"
    for _, name in sorted(found):
        at = message.find(name)
        rest = message[at + len(name) :]
        if re.match(r"^:\d+\b", rest) or re.match(r"^:? line \d+\b", rest):
            return None
        located = re.match(r"^(?::\d+)?: (.+?): ", rest)
        if located and _names_a_field(located.group(1), inputs):
            return None
    return "names the file but no line or field"


def check_run(run: Run, inputs: dict[str, str], *, seconds: float, memory_mb: float) -> list[Failure]:
    """Every promise the issue makes of a run: exit 0, 1 or 2; never a traceback; no warning on the
    user's terminal; an exit-2 message names the file and a line or field; ``--json`` prints JSON;
    the run ends within its bounds of time and memory."""
    failures: list[Failure] = []
    shown = "\n".join((run.stdout, run.stderr, run.fd_output))
    if run.timed_out:
        failures.append(Failure(f"ran longer than {seconds:g} s", f"killed after {run.seconds:.1f} s"))
        return failures  # what it printed so far says nothing more
    if run.over_memory:
        failures.append(
            Failure(
                f"used more than {memory_mb:g} MB of memory",
                f"killed after {run.seconds:.1f} s at {run.peak_growth_mb:.0f} MB above the warm process",
            )
        )
        return failures
    if run.signal is not None:
        name = signal.Signals(run.signal).name
        failures.append(Failure(f"died of {name}", run.fd_output[-3000:]))
    if run.exception is not None:
        key = f"traceback: {run.exception_type} in {run.exception_origin}"
        if run.exception_type in ("MemoryError", "ArrowMemoryError"):
            key += f" (over {ADDRESS_SPACE_BACKSTOP >> 30} GiB of address space)"
        failures.append(Failure(key, run.exception[-6000:]))
    elif "Traceback (most recent call last)" in shown:
        failures.append(Failure("traceback printed", shown[-6000:]))
    if run.exit_code not in (0, 1, 2) and run.signal is None and run.exception is None:
        failures.append(Failure(f"exit code {run.exit_code}", run.stderr[-3000:]))
    printed = re.search(r"^.*\b[A-Z]\w*Warning: .*$", shown, re.MULTILINE)
    if printed and not run.warnings:  # printed by something the child's warning filter did not see
        failures.append(Failure("a Python warning is printed", printed.group(0)[:3000]))
    for warning in run.warnings:
        # the key names the class: quoted text (paths of the run's files, values) is left out of it
        message = re.sub(r"\"[^\"]*\"|'[^']*'", "…", re.sub(r"\(.*\)$", "", warning)).strip()
        where = re.search(r"\(([^()]*)\)$", warning)
        origin = where.group(1).rsplit("/", 2)[-2:] if where else ["?"]
        failures.append(Failure(f"warning reaches the user: {message} at {'/'.join(origin)}", warning))
    if run.exit_code == 2 and run.exception is None:
        errors = [m.group(1) for m in map(_ERROR_LINE.match, run.stderr.splitlines()) if m]
        if not errors:
            failures.append(Failure("exit 2 without an 'error:' line", run.stderr[-3000:]))
        for message in errors:
            lack = locate_problem(message, inputs)
            if lack is not None:
                failures.append(Failure(f"exit-2 message {lack}", message[:3000]))
    if run.exit_code == 0 and "--json" in run.args:
        try:
            json.loads(run.stdout, parse_constant=_reject_constant)
        except ValueError as exc:
            failures.append(Failure("--json prints invalid JSON", f"{exc}: {run.stdout[:2000]}"))
    return failures


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def describe(run: Run, inputs: dict[str, bytes], failures: list[Failure]) -> str:
    """A reproduction for the engineer who fixes it: the files, the command, what it printed."""
    parts = [f"$ gpuplan {' '.join(run.args)}   (exit {run.exit_code}, {run.seconds:.2f} s)"]
    for failure in failures:
        parts.append(f"FAILED: {failure.key}\n{failure.detail}")
    for path, content in inputs.items():
        if path.endswith(".gz"):
            try:
                content = gzip.decompress(content)
                path += " decompressed"
            except (OSError, EOFError, zlib.error):
                path += " (not a readable gzip stream)"
        shown = content.decode("utf-8", errors="backslashreplace")
        if len(shown) > 4000:
            shown = shown[:2000] + f"\n[... {len(shown) - 4000} characters ...]\n" + shown[-2000:]
        parts.append(f"--- {path} ({len(content)} bytes)\n{shown}")
    parts.append(f"--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-3000:]}")
    return "\n".join(parts)


# ---- survey summaries ----------------------------------------------------------------------------


def _message_class(message: str) -> str:
    """An exit-2 message without what varies from run to run: the file, quoted values, figures."""
    first = message.splitlines()[0] if message else ""
    first = re.sub(r"^.*?\.(?:ya?ml|csv|txt|json|swf)(?:\.gz)?(?::\d+)?", "FILE", first, count=1)
    first = re.sub(r"\"[^\"]*\"|'[^']*'|\(b'.*?'\)", "…", first)
    return re.sub(r"0x[0-9a-f]+|\d+", "N", first)[:160]


def summarise_survey(path: Path) -> str:
    """One entry per failure class of a survey log (exit-2 messages told apart by their wording), with
    the smallest reproduction of each."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    counts: dict[tuple[str, str], int] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        for key, detail in entry.get("details", [[key, ""] for key in entry["keys"]]):
            group = (entry["kind"], f"{key}: {_message_class(detail)}" if key.startswith("exit-2") else key)
            counts[group] = counts.get(group, 0) + 1
            if group not in best or entry["size"] < best[group]["size"]:
                best[group] = entry
    out = []
    for group in sorted(best):
        out.append(f"=== [{group[0]}] {group[1]}  ({counts[group]} runs)\n{best[group]['report']}\n")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(summarise_survey(Path(sys.argv[1])))
