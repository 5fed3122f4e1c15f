"""User YAML (scenario and answers files) read safely and with positions: the data, plus the line of
every mapping key and sequence item, so an error found later (by pydantic) can name its line.

The reading is ruamel.yaml's round-trip loader (YAML 1.2, the line and column of every key and item
kept in ``.lc``), bounded so that a hostile or mistaken file cannot exhaust memory or time:

- at most ``MAX_BYTES`` of text;
- at most ``MAX_DEPTH`` levels of nested mappings and sequences;
- at most ``MAX_VALUES`` values once every alias is expanded. ruamel (like PyYAML) shares an anchored
  value between its aliases, but anything that walks the data (the conversion below, pydantic) visits
  it once per alias, so nine lines of nested aliases ("billion laughs") stand for 10^9 values. The
  count is kept as the parser hands each event to the composer, so the file is refused before any
  value is built, at the line of the alias that passes the bound;
- no duplicate key (both lines are named), no anchor defined twice, no alias to the value that
  contains it, and no tag outside YAML's core schema (``!!python/...``, ``!!binary``, ``!custom``).

Merge keys (``<<: *defaults``) work; a merged key's line is the line where its value is written.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    Event,
    NodeEvent,
    ScalarEvent,
)
from ruamel.yaml.parser import RoundTripParser
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scalarbool import ScalarBoolean

from gpuplan.errors import InputError
from gpuplan.workload.textfile import decode_utf8

Loc = tuple[str | int, ...]

# A scenario is a few kilobytes (the bundled examples are 3-15 KB); the pure-Python parser reads about
# 100 KB a second on a slow core, so this bound also keeps `validate` within a few seconds.
MAX_BYTES = 256 * 1024
# The deepest scenario path (models.kubernetes.kueue.clusterQueues[0].flavors[0].name) is 7 levels.
MAX_DEPTH = 50
# Values (scalars, mappings and sequences) once aliases are expanded: a scenario holds a few thousand.
MAX_VALUES = 100_000
_SURROGATE = re.compile("[\ud800-\udfff]")
# No figure of a scenario needs a larger integer (seeds are 64-bit).
MAX_INT_BITS = 64

# Explicit tags a scenario may use: YAML 1.2's core schema. ("!", the non-specific tag, is refused:
# ruamel resolves "! 2" to an integer where the YAML spec makes it a string.)
_STR_TAG = "tag:yaml.org,2002:str"
_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
)


def field_path(loc: Iterable[str | int]) -> str:
    """``workloads[2].duration.median`` from ``("workloads", 2, "duration", "median")``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@dataclass(frozen=True)
class Located:
    """YAML data and the 1-based line of each path in it (``("workloads", 2, "duration")``)."""

    data: Any
    lines: dict[Loc, int]
    path: Path

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor that has one."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return None


class _Refused(Exception):
    """A bound or rule of this module broken at a line: becomes an InputError naming the file."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _BoundedParser(RoundTripParser):
    """ruamel's round-trip parser, checking each event as it is produced (before the composer sees
    it): nesting depth, the expanded size of aliases, anchors and tags."""

    max_values = MAX_VALUES

    def reset_parser(self) -> None:
        super().reset_parser()
        self._depth = 0
        self._values = 0  # values so far, each alias counting the values of its anchor
        self._anchor_lines: dict[str, int] = {}
        self._anchor_values: dict[str, int] = {}  # anchors whose value is complete -> its size
        self._open: list[tuple[str | None, int]] = []  # open collections: (anchor, values at start)

    def _produce(self) -> None:
        # every event comes out of self.state() exactly once, into current_event
        if self.current_event is None and self.state:
            self.current_event = self.state()
            if self.current_event is not None:
                self._check(self.current_event)

    def check_event(self, *choices: Any) -> bool:
        self._produce()
        return bool(super().check_event(*choices))

    def peek_event(self) -> Any:
        self._produce()
        return super().peek_event()

    def get_event(self) -> Any:
        self._produce()
        return super().get_event()

    def _check(self, event: Event) -> None:
        line = event.start_mark.line + 1
        if isinstance(event, DocumentStartEvent) and event.version not in (None, (1, 2)):
            version = ".".join(map(str, event.version))
            raise _Refused(line, f"YAML {version} is not read: remove the %YAML directive (YAML 1.2 is)")
        if isinstance(event, DocumentStartEvent):  # anchors belong to one document of a `---` stream
            self._anchor_lines.clear()
            self._anchor_values.clear()
        if isinstance(event, AliasEvent):
            anchor = str(event.anchor)
            if anchor not in self._anchor_values:
                if anchor in self._anchor_lines:
                    raise _Refused(line, f"alias *{anchor} is inside the value it refers to")
                return  # an undefined alias: the composer says so, with its line
            size = self._anchor_values[anchor]
            self._count(size, line, f" (alias *{anchor} expands to {size:,} values)")
            return
        if isinstance(event, NodeEvent) and event.anchor is not None:
            anchor = str(event.anchor)
            if anchor in self._anchor_lines:
                raise _Refused(
                    line, f"anchor &{anchor} is defined twice (lines {self._anchor_lines[anchor]} and {line})"
                )
            self._anchor_lines[anchor] = line
        tag = getattr(event, "tag", None)
        if (
            isinstance(event, ScalarEvent | CollectionStartEvent)
            and tag is not None
            and str(tag) not in _CORE_TAGS
        ):
            raise _Refused(line, f"the YAML tag {str(tag)!r} is not supported (plain values only)")
        if isinstance(event, ScalarEvent):
            if _SURROGATE.search(event.value):
                # an escape such as "\ud800" decodes to half a UTF-16 pair: no text, and nothing
                # can print or write it as UTF-8
                raise _Refused(
                    line, "an escape that is no character (a lone UTF-16 surrogate such as \\ud800)"
                )
            self._count(1, line, "")
            if event.anchor is not None:
                self._anchor_values[str(event.anchor)] = 1
        elif isinstance(event, CollectionStartEvent):
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _Refused(line, f"nested more than {MAX_DEPTH} levels deep")
            self._count(1, line, "")
            self._open.append((None if event.anchor is None else str(event.anchor), self._values - 1))
        elif isinstance(event, CollectionEndEvent):
            self._depth -= 1
            opened, start = self._open.pop()
            if opened is not None:
                self._anchor_values[opened] = self._values - start

    def _count(self, values: int, line: int, why: str) -> None:
        self._values += values
        if self._values > self.max_values:
            raise _Refused(line, f"more than {self.max_values:,} values once aliases are expanded{why}")


class _Constructor(RoundTripConstructor):
    """The round-trip constructor, naming both lines of a duplicate key and the line of a value that
    cannot be built (``2026-13-45``, an integer of more than Python's 4300 digits)."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            text = str(node.value) if isinstance(node.value, str) else node.id
            shown = repr(text if len(text) <= 40 else text[:37] + "...")
            raise _Refused(node.start_mark.line + 1, f"cannot read the value {shown}: {exc}") from None

    def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
        if key in mapping:
            first = mapping.lc.key(key)[0] + 1
            second = key_node.start_mark.line + 1
            raise _Refused(second, f"duplicate key {key!r} (first at line {first}, again at line {second})")
        return True


def _reader(max_values: int = MAX_VALUES) -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.Parser = type("_Parser", (_BoundedParser,), {"max_values": max_values})
    yaml.Constructor = _Constructor
    yaml.allow_duplicate_keys = False
    return yaml


def read_text(path: Path, max_bytes: int = MAX_BYTES, usual: str = "a scenario is a few kilobytes") -> str:
    """The text of a user YAML file, at most ``max_bytes`` (the file is not read beyond)."""
    try:
        with path.open("rb") as file:
            raw = file.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if len(raw) > max_bytes:
        line = raw[:max_bytes].count(b"\n") + 1
        raise InputError(f"the file is larger than {max_bytes:,} bytes ({usual})", path=path, line=line)
    return decode_utf8(raw, path)


def load_yaml(path: Path) -> Located:
    """Parse one YAML document, keeping line numbers. Syntax errors and broken bounds become
    InputError with the file and line."""
    text = read_text(path)
    data = _parsed(path, text, lambda: _reader().load(text))
    lines: dict[Loc, int] = {}
    plain = {} if data is None else _plain(data, (), 1, lines, path)
    return Located(data=plain, lines=lines, path=path)


def load_yaml_documents(path: Path, *, max_bytes: int, max_values: int, usual: str) -> list[Located]:
    """Every document of a ``---``-separated YAML file (Kubernetes manifests), each with its lines,
    under the same rules as ``load_yaml`` but the size bounds given; empty documents are left out."""
    text = read_text(path, max_bytes, usual)
    documents = _parsed(path, text, lambda: list(_reader(max_values).load_all(text)))
    result = []
    for data in documents:
        if data is None:
            continue
        lines: dict[Loc, int] = {}
        start = int(getattr(getattr(data, "lc", None), "line", 0) or 0) + 1  # the document's first line
        result.append(Located(data=_plain(data, (), start, lines, path), lines=lines, path=path))
    return result


def _parsed(path: Path, text: str, parse: Callable[[], Any]) -> Any:
    """``parse()``, its errors as InputError naming the file and line."""
    try:
        return parse()
    except _Refused as exc:
        raise InputError(exc.message, path=path, line=exc.line) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else mark.line + 1
        raise InputError(f"YAML syntax: {exc.problem or exc.context}", path=path, line=line) from None
    except ReaderError as exc:
        line = text[: exc.position].count("\n") + 1 if isinstance(exc.position, int) else None
        raise InputError(f"YAML: {exc.reason} (character {exc.character!r})", path=path, line=line) from None
    except YAMLError as exc:
        raise InputError(f"YAML: {exc}", path=path) from None


def _key_line(mapping: CommentedMap, key: Any) -> int:
    """The line of ``key`` in ``mapping`` or, for a key merged in with ``<<``, in the mapping it is from."""
    data = mapping.lc.data
    if data is not None and key in data:
        return int(data[key][0]) + 1
    for source in mapping.merge:
        if isinstance(source, CommentedMap) and key in source:
            return _key_line(source, key)
    return int(mapping.lc.line or 0) + 1


def _plain(value: Any, loc: Loc, line: int, lines: dict[Loc, int], path: Path) -> Any:
    """``value`` as plain Python data (dict, list, str, int, float, bool, None, date, datetime),
    recording the line of ``loc`` and of everything under it."""
    lines.setdefault(loc, line)
    if isinstance(value, CommentedMap):
        result: dict[Any, Any] = {}
        for key, item in value.items():  # with the keys merged in
            key_line = _key_line(value, key)
            if not isinstance(key, str | int | float):  # a mapping, a sequence, null, a date
                raise InputError("a mapping key must be a plain value", path=path, line=key_line)
            key = _scalar(key, key_line, path)
            child: Loc = (*loc, str(key))
            lines[child] = key_line
            result[key] = _plain(item, child, key_line, lines, path)
        return result
    if isinstance(value, CommentedSeq):
        items = []
        for index, item in enumerate(value):
            position = value.lc.data.get(index) if value.lc.data else None
            item_line = line if position is None else int(position[0]) + 1
            items.append(_plain(item, (*loc, index), item_line, lines, path))
        return items
    return _scalar(value, line, path)


def _scalar(value: Any, line: int, path: Path) -> Any:
    # ruamel keeps style and anchors in subclasses (ScalarFloat, ScalarInt, ScalarBoolean - an int -,
    # LiteralScalarString, TimeStamp...): the rest of gpuplan sees the plain types.
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        # hexadecimal or octal can write integers that Python cannot even print in decimal
        raise InputError(f"an integer of more than {MAX_INT_BITS} bits", path=path, line=line)
    if value is None or type(value) in (str, int, float, bool, dt.date):
        return value
    if isinstance(value, ScalarBoolean):
        return bool(value)
    if isinstance(value, TaggedScalar) and str(value.tag) == _STR_TAG:  # "!!str 12"
        return str(value.value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dt.datetime):
        return dt.datetime(
            value.year, value.month, value.day, value.hour, value.minute, value.second,
            value.microsecond, tzinfo=value.tzinfo,
        )  # fmt: skip
    if isinstance(value, dt.date):
        return dt.date(value.year, value.month, value.day)
    raise InputError(f"unsupported YAML value {value!r}", path=path, line=line)
