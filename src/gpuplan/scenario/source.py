"""YAML with positions: the data, plus the line of every mapping key and sequence item, so an error
found later (by pydantic) can name the line it comes from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuplan.errors import InputError

Loc = tuple[str | int, ...]


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


def _convert(node: yaml.Node, loc: Loc, lines: dict[Loc, int], loader: yaml.SafeLoader, path: Path) -> Any:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves "<<" merge keys
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                raise InputError(
                    "a mapping key must be a plain value", path=path, line=key_node.start_mark.line + 1
                )
            if key in result:
                raise InputError(f"duplicate key {key!r}", path=path, line=key_node.start_mark.line + 1)
            child: Loc = (*loc, str(key))
            lines[child] = key_node.start_mark.line + 1
            result[key] = _convert(value_node, child, lines, loader, path)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*loc, index), lines, loader, path) for index, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_yaml(path: Path, text: str | None = None) -> Located:
    """Parse one YAML document, keeping line numbers. Syntax errors become InputError with the line."""
    try:
        text = path.read_text(encoding="utf-8") if text is None else text
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None
    Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = Loader(text)
    lines: dict[Loc, int] = {}
    try:
        node = loader.get_single_node()
        data = {} if node is None else _convert(node, (), lines, loader, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else mark.line + 1
        raise InputError(f"YAML syntax: {exc.problem or exc.context}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"YAML: {exc}", path=path) from None
    finally:
        loader.dispose()
    return Located(data=data, lines=lines, path=path)
