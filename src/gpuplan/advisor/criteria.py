"""The decision criteria file (``criteria.yaml`` beside this module): its schema and loader.

The file is data, not code: a criterion names what it weighs, which assessment dimension it belongs
to, where its evidence comes from (an ``organisation`` answer, a workload figure, a simulated
outcome), how that evidence maps to a strength between 0 and 1, and which operating-model family it
speaks for. The loader refuses a file that names an unknown dimension, family, organisation question
or target, so a typo fails when the file is read rather than silently scoring zero.
"""

from __future__ import annotations

import fnmatch
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator

from gpuplan.errors import InputError
from gpuplan.scenario.model import Organisation, Targets
from gpuplan.scenario.source import Located, load_yaml

Unit = Literal["share", "seconds", "usd", "count", "ratio"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Ramp(_Strict):
    """A workload figure that scales a criterion's strength: 0 at ``ramp[0]``, 1 at ``ramp[1]``."""

    field: str
    ramp: tuple[float, float]


class OrganisationEvidence(_Strict):
    """An answer under the scenario's ``organisation:``, mapped to a strength by ``scale``."""

    source: Literal["organisation"]
    field: str
    scale: dict[str, float]
    relevance: Ramp | None = None

    @model_validator(mode="after")
    def _known_question(self) -> OrganisationEvidence:
        if self.field not in Organisation.model_fields:
            raise ValueError(f"unknown organisation question {self.field!r}")
        return self


class WorkloadEvidence(_Strict):
    """A workload figure (``gpuplan inspect --json``, or ``advisor.*`` derived from the scenario)."""

    source: Literal["workload"]
    field: str
    ramp: tuple[float, float]
    unit: Unit = "share"
    relevance: Ramp | None = None
    reads: str | None = None  # the figure in words ("the share of GPU-hours in pipelines")


class OutcomeEvidence(_Strict):
    """A simulated figure of each model (``summary.json`` ``models.<name>``; ``*`` spans a mapping)."""

    source: Literal["outcome"]
    field: str
    better: Literal["lower", "higher"]
    target: str | None = None
    aggregate: Literal["min", "max", "mean"] | None = None
    unit: Unit = "share"
    relevance: Ramp | None = None
    reads: str | None = None  # the figure in words ("the p95 wait")

    @model_validator(mode="after")
    def _known_target(self) -> OutcomeEvidence:
        if self.target is not None and self.target not in Targets.model_fields:
            raise ValueError(f"unknown target {self.target!r}")
        if ("*" in self.field) != (self.aggregate is not None):
            raise ValueError("a field with '*' needs an aggregate (min, max, mean), and only such a field")
        return self


def _source(data: Any) -> str:
    if isinstance(data, BaseModel):
        return str(getattr(data, "source", ""))
    return str(data.get("source", "")) if isinstance(data, dict) else ""


Evidence = Annotated[
    Annotated[OrganisationEvidence, Tag("organisation")]
    | Annotated[WorkloadEvidence, Tag("workload")]
    | Annotated[OutcomeEvidence, Tag("outcome")],
    Discriminator(_source),
]


class Criterion(_Strict):
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    group: Literal["kubernetes", "slurm", "hybrid", "assessment", "outcome"]
    title: str
    dimension: str
    weight: float = Field(gt=0)
    evidence: Evidence
    favours: dict[str, float]
    why: str

    @model_validator(mode="after")
    def _affinities(self) -> Criterion:
        for family, affinity in self.favours.items():
            if not -1 <= affinity <= 1:
                raise ValueError(f"favours.{family} = {affinity} is outside -1..1")
        return self


class Family(_Strict):
    title: str
    names: list[str] = Field(min_length=1)


class TargetRule(_Strict):
    """A scenario target checked as a hard constraint on every model."""

    target: str
    title: str
    figure: str
    must_be: Literal["at_most", "at_least"]
    aggregate: Literal["min", "max", "mean"] | None = None
    unit: Unit = "share"

    @model_validator(mode="after")
    def _known_target(self) -> TargetRule:
        if self.target not in Targets.model_fields:
            raise ValueError(f"unknown target {self.target!r}")
        return self


class Decision(_Strict):
    close_call: float = Field(gt=0, lt=1)


class Criteria(_Strict):
    version: int
    families: dict[str, Family]
    dimensions: dict[str, str]
    decision: Decision
    targets: list[TargetRule]
    criteria: list[Criterion] = Field(min_length=1)

    @model_validator(mode="after")
    def _cross_references(self) -> Criteria:
        seen: set[str] = set()
        for criterion in self.criteria:
            if criterion.id in seen:
                raise ValueError(f"criterion {criterion.id!r} appears twice")
            seen.add(criterion.id)
            if criterion.dimension not in self.dimensions:
                raise ValueError(f"criterion {criterion.id!r}: unknown dimension {criterion.dimension!r}")
            unknown = set(criterion.favours) - set(self.families)
            if unknown:
                raise ValueError(f"criterion {criterion.id!r}: unknown families {sorted(unknown)}")
        return self

    def family_of(self, model: str, declared: object = None) -> str | None:
        """The family of a ``models`` entry: its own ``family`` field, else the first name pattern that
        matches (``slurm-easy`` is a Slurm variant); None when nothing matches."""
        if isinstance(declared, str) and declared in self.families:
            return declared
        for family, spec in self.families.items():
            if any(fnmatch.fnmatchcase(model.lower(), pattern) for pattern in spec.names):
                return family
        return None

    def organisation_questions(self) -> dict[str, list[str]]:
        """Each organisation question the criteria read, with the answers their scales know."""
        questions: dict[str, list[str]] = {}
        for criterion in self.criteria:
            if isinstance(criterion.evidence, OrganisationEvidence):
                answers = questions.setdefault(criterion.evidence.field, [])
                answers.extend(a for a in criterion.evidence.scale if a not in answers)
        return questions


DEFAULT_CRITERIA = "criteria.yaml"
# libyaml's loader when PyYAML was built with it: the pure-Python one takes ~0.3 s for this file
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_criteria(raw: Any, source: str, located: Located | None = None) -> Criteria:
    """Criteria from parsed YAML; an error names the field (and its line, with ``located``)."""
    try:
        return Criteria.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        line = None if located is None else located.line_of(tuple(error["loc"]))
        raise InputError(error["msg"], path=source, line=line, field=where or None) from None


def load_criteria(path: Path | None = None) -> Criteria:
    """The criteria file at ``path`` (a user's file: read with the scenario loader's bounds and line
    numbers), or the packaged one."""
    if path is None:
        return _packaged_criteria()
    located = load_yaml(path)
    return parse_criteria(located.data, str(path), located)


@cache
def _packaged_criteria() -> Criteria:
    text = resources.files("gpuplan.advisor").joinpath(DEFAULT_CRITERIA).read_text()
    return parse_criteria(yaml.load(text, Loader=_Loader), f"gpuplan/advisor/{DEFAULT_CRITERIA}")
