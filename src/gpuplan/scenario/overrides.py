"""``--set PATH=VALUE``: one field of a scenario changed for one run, as Helm's ``--set`` changes a
chart's values, and validated as the file is.

A path is the scenario's keys joined by dots; an item of a list is named by its ``name`` (or, for
items that have none, such as ``models.kubernetes.nodePools``, its ``pool``) or by its index:
``cluster.pools.h100.nodes=32``, ``models.slurm.bf_window=720``,
``workloads.train.arrival.rate=20/day``, ``workloads[0].size=1x8``. The value is read as YAML
(``32`` a number, ``true`` a boolean, ``{min: 1, max: 4}`` a mapping, ``null`` or nothing: unset).
Keys the file lacks are added (``models.slurm`` in a scenario without one); the scenario's schema then
judges them, and a problem with a changed field names its ``--set`` (with a did-you-mean for a
misspelt key or list item) rather than a line of the file.

Example: ``apply_overrides(located, parse_overrides(["cluster.pools.h100.nodes=32"]))``
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from gpuplan.errors import InputError
from gpuplan.scenario.source import Loc, Located, field_path

MAX_VALUE_CHARS = 10_000
# a list item's own name, by the key that holds it
ITEM_KEYS = ("name", "pool")
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class Override:
    """One ``--set``: the path as written, its parts, the value read and the text given."""

    path: str
    parts: tuple[str | int, ...]
    value: Any
    text: str


def _parts(path: str, text: str) -> tuple[str | int, ...]:
    """``("workloads", 0, "size")`` from ``workloads[0].size`` (a bare number is an index too)."""
    parts: list[str | int] = []
    at = 0
    for match in _SEGMENT.finditer(path):
        between = path[at : match.start()]
        if between not in ("", ".") or (between == "." and not parts):
            break
        name, index = match.groups()
        parts.append(int(index) if index is not None else int(name) if name.isdigit() else name)
        at = match.end()
    if not parts or at != len(path):
        raise InputError(
            f"{path!r} is not a field path (keys joined by dots, list items by name or [index]: "
            "cluster.pools.h100.nodes)",
            field="--set",
        )
    return tuple(parts)


def parse_override(text: str) -> Override:
    """One ``PATH=VALUE``; InputError naming ``--set`` when it is not one."""
    path, equals, raw = text.partition("=")
    path = path.strip()
    if not equals or not path:
        raise InputError(f"{text!r}: expected PATH=VALUE, as cluster.pools.h100.nodes=32", field="--set")
    if len(raw) > MAX_VALUE_CHARS:
        raise InputError(f"a value of at most {MAX_VALUE_CHARS} characters", field=f"--set {path}")
    try:
        value = YAML(typ="safe", pure=True).load(raw) if raw.strip() else None
    except YAMLError as exc:
        problem = str(exc).splitlines()[0]
        raise InputError(f"{raw!r} is not a YAML value ({problem})", field=f"--set {path}") from None
    return Override(path, _parts(path, text), value, text)


def parse_overrides(texts: Iterable[str]) -> tuple[Override, ...]:
    """Every ``--set`` given, in order (a later one wins over an earlier one on the same field)."""
    return tuple(parse_override(text) for text in texts)


def _item_name(item: Any) -> str | None:
    if isinstance(item, dict):
        for key in ITEM_KEYS:
            if isinstance(item.get(key), str):
                return str(item[key])
    return None


def _index(items: list[Any], part: str | int, override: Override, at: Loc) -> int:
    """The index of the item ``part`` names in ``items`` (at ``at``)."""
    where = field_path(at)
    if isinstance(part, int):
        if 0 <= part < len(items):
            return part
        raise InputError(f"{where} has {len(items)} item(s): no index {part}", field=f"--set {override.path}")
    names = [_item_name(item) for item in items]
    if part in names:
        return names.index(part)
    known = [name for name in names if name is not None]
    close = difflib.get_close_matches(part, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f" (items: {', '.join(known) or 'none named'})"
    raise InputError(f"{where} has no item named {part!r}{hint}", field=f"--set {override.path}")


def _set(data: dict[str, Any], override: Override) -> Loc:
    """Set ``override`` in ``data``; returns the location the run's problems with it are under: the
    field set, or the first key it added."""
    node: Any = data
    at: Loc = ()
    added: Loc | None = None
    for k, part in enumerate(override.parts):
        last = k == len(override.parts) - 1
        if isinstance(node, dict):
            key = str(part)
            if last:
                node[key] = override.value
            elif not isinstance(node.get(key), dict | list):
                if key in node and node[key] is not None:
                    raise InputError(
                        f"{field_path((*at, key))} is {node[key]!r}, not a mapping: nothing under it to set",
                        field=f"--set {override.path}",
                    )
                node[key] = {}
                added = added or (*at, key)
            at = (*at, key)
            node = node[key]
        elif isinstance(node, list):
            index = _index(node, part, override, at)
            if last:
                node[index] = override.value
            at = (*at, index)
            node = node[index]
        else:
            raise InputError(
                f"{field_path(at)} is {node!r}, not a mapping or a list: nothing under it to set",
                field=f"--set {override.path}",
            )
    return added or at


@dataclass(frozen=True)
class Overridden:
    """A scenario's YAML with its ``--set`` applied, and where each one landed."""

    located: Located
    landed: dict[Loc, Override]

    def field_of(self, field: str) -> str | None:
        """``field`` (a problem's field path) as the ``--set`` it falls under; None when it is the
        file's own."""
        for loc, override in self.landed.items():
            mine = field_path(loc)
            if field == mine or field.startswith((f"{mine}.", f"{mine}[")):
                return f"--set {override.path}{field[len(mine) :]}"
        return None


def apply_overrides(located: Located, overrides: Sequence[Override]) -> Overridden:
    """The scenario's data (a mapping) with every override set, in a copy, and its lines without
    the fields they replaced (a problem there is the ``--set``'s, not the file's)."""
    if not overrides:
        return Overridden(located, {})
    data = copy.deepcopy(located.data)
    landed: dict[Loc, Override] = {}
    for override in overrides:
        try:
            landed[_set(data, override)] = override
        except InputError as exc:  # (the file's path, for the message)
            raise InputError(exc.message, path=located.path, field=exc.field) from None
    lines = {loc: n for loc, n in located.lines.items() if not any(loc[: len(r)] == r for r in landed)}
    return Overridden(Located(data, lines, located.path), landed)
