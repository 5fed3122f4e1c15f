"""Names that become configuration keys: teams (Slurm accounts, Kubernetes namespaces), users,
pools, partitions, QoS and queues.

A name is letters, digits and ``-``, ``_``, ``.`` (ASCII), as both Slurm (account, user and
partition names in slurm.conf and sacctmgr) and Kubernetes (object names, RFC 1123, plus ``_``
that Slurm allows) accept them. Anything else is refused where it is read, with the file, line and
field: a control, zero-width or bidirectional character would let two names that read the same
("nlp" and "nl\u200bp") reach a report or a rendered configuration as two.

    >>> name_problem("nlp")
    >>> name_problem("nl\u200bp")
    'contains U+200B ZERO WIDTH SPACE: a name is letters, digits and - _ . (as Slurm and Kubernetes \
accept them)'

``Name`` is the scenario fields' type for such a name (``name: Name``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from gpuplan.scenario.units import shown_value

NAME = re.compile(r"[A-Za-z0-9._-]+")
RULE = "a name is letters, digits and - _ . (as Slurm and Kubernetes accept them)"


# what a character without a Unicode name is, by its general category (control characters such as
# TAB and ESC have none)
_NAMELESS = {"Cc": "a control character", "Co": "a private-use character", "Cn": "an unassigned code point"}


def character(c: str) -> str:
    """``c`` as U+XXXX and its Unicode name: safe to print whatever it is."""
    name = unicodedata.name(c, "") or _NAMELESS.get(unicodedata.category(c), "a character without a name")
    return f"U+{ord(c):04X} {name}"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a team, user, pool, partition, QoS or queue; None when it can."""
    if NAME.fullmatch(name):
        return None
    if not name:
        return f"is empty: {RULE}"
    bad = next(c for c in name if not NAME.fullmatch(c))
    return f"contains {character(bad)}: {RULE}"


def _checked_by(problem_of: Callable[[str], str | None]) -> BeforeValidator:
    """A field validator refusing text ``problem_of`` finds a problem in (anything but text goes
    on to the ``str`` check, which says so). It runs before pydantic's own constraints, as a field's
    ``pattern`` message would name no character."""

    def check(value: Any) -> Any:
        if isinstance(value, str) and (problem := problem_of(value)) is not None:
            # the name as an escaped repr (``'nl\\u200bp'``): the character itself must not reach the
            # terminal, where it would be invisible or turn the line around
            raise PydanticCustomError(
                "name", "{name} {problem}", {"name": shown_value(value), "problem": problem}
            )
        return value

    return BeforeValidator(check)


# Unicode categories no name shown to a reader may hold: control (Cc), format (Cf: the zero-width and
# bidirectional controls), line and paragraph separators (Zl, Zp)
INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def display_problem(text: str) -> str | None:
    """Why ``text`` cannot be a name shown, never a key (a workload's or the scenario's name: any
    printable text, HTML included, as the report escapes it); None when it can."""
    for c in text:
        if unicodedata.category(c) in INVISIBLE:
            return f"contains {character(c)}: two names that read the same would show as two"
    return None


Name = Annotated[str, _checked_by(name_problem)]
DisplayName = Annotated[str, _checked_by(display_problem)]

__all__ = ["INVISIBLE", "NAME", "RULE", "DisplayName", "Name", "character", "display_problem", "name_problem"]
