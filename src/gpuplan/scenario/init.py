"""``gpuplan init``: a questionnaire (the decision guide's organisation questions and a rough workload
mix) and the commented scenario file it writes.

The questions are data (``QUESTIONS``): the command asks them one by one, or reads the answers from a
file; ``Answers`` checks them; ``scenario_text`` writes YAML that ``gpuplan.scenario.load`` accepts,
with a comment on every section so the file teaches its own format.
"""

from __future__ import annotations

import difflib
import json
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError, field_validator

from gpuplan.atomic import atomic_write, remove_stale_temporaries
from gpuplan.errors import InputError
from gpuplan.scenario.load import LoadedScenario, error_message, load_scenario
from gpuplan.scenario.shapes import get_shape, load_catalogue
from gpuplan.scenario.source import Located, load_yaml
from gpuplan.scenario.units import format_number, parse_duration

LEVELS = ("unknown", "none", "low", "medium", "high")
SHAPE_KEYS = ("training_shape", "inference_shape")  # answers naming an OCI shape of the catalogue
DURATION_KEYS = ("horizon", "p95_wait")  # answers written as a duration ("14d")
# Jobs a day of one kind: 100,000 a day is over a million a fortnight, far past any GPU cluster's.
MAX_JOBS_PER_DAY = 100_000.0


class Answers(BaseModel):
    """The questionnaire's answers; every field has a default, so an answers file may give only some."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field("gpu-platform", min_length=1, max_length=200)
    horizon: str = "14d"
    training_shape: str = "BM.GPU.H100.8"
    training_nodes: StrictInt = Field(8, ge=1, le=10_000)
    price_per_gpu_hour: StrictFloat = Field(0.0, ge=0, le=1000)  # 0: the catalogue's list price by shape
    research_teams: StrictInt = Field(2, ge=0, le=50)
    training_jobs_per_day: StrictFloat = Field(6.0, ge=0, le=MAX_JOBS_PER_DAY)
    multi_node_percent: StrictFloat = Field(30.0, ge=0, le=100)
    training_hours: StrictFloat = Field(6.0, ge=0.01, le=8760)  # 36 seconds (written as 1m) to a year
    small_jobs_per_day: StrictFloat = Field(30.0, ge=0, le=MAX_JOBS_PER_DAY)
    notebooks_per_day: StrictFloat = Field(0.0, ge=0, le=MAX_JOBS_PER_DAY)
    pipelines_per_day: StrictFloat = Field(0.0, ge=0, le=MAX_JOBS_PER_DAY)
    services: StrictInt = Field(0, ge=0, le=50)
    inference_shape: str = "BM.GPU.A10.4"
    inference_nodes: StrictInt = Field(4, ge=1, le=10_000)
    peak_requests_per_s: StrictFloat = Field(100.0, gt=0, le=1e6)
    throughput_per_replica: StrictFloat = Field(10.0, ge=0.01, le=1e6)
    kubernetes_skills: Literal["unknown", "none", "low", "medium", "high"] = "unknown"
    containerised: Literal["unknown", "none", "some", "most", "all"] = "unknown"
    existing_slurm_scripts: Literal["unknown", "none", "low", "medium", "high"] = "unknown"
    cicd_gitops: Literal["unknown", "none", "low", "medium", "high"] = "unknown"
    self_service: Literal["unknown", "none", "low", "medium", "high"] = "unknown"
    security_compliance: Literal["unknown", "standard", "regulated", "strict"] = "unknown"
    operational_maturity: Literal["unknown", "none", "low", "medium", "high"] = "unknown"
    platform_today: Literal["unknown", "none", "slurm", "kubernetes", "both"] = "unknown"
    p95_wait: str = "none"
    slo_attainment: StrictFloat = Field(0.99, gt=0, le=1)

    @field_validator(*SHAPE_KEYS)
    @classmethod
    def _shape(cls, value: str) -> str:
        try:
            get_shape(value)
        except InputError as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator(*DURATION_KEYS)
    @classmethod
    def _duration(cls, value: str) -> str:
        if value == "none":
            return value
        try:
            parse_duration(value)
        except ValueError as exc:  # pydantic's custom errors are ValueErrors
            raise ValueError(str(exc)) from None
        return value


WEEKLY_DEMAND = "weekly: {weekend_factor: 0.5}"

ORGANISATION = (
    "kubernetes_skills",
    "containerised",
    "existing_slurm_scripts",
    "cicd_gitops",
    "self_service",
    "security_compliance",
    "operational_maturity",
    "platform_today",
)


@dataclass(frozen=True)
class Question:
    key: str  # the field of Answers
    text: str
    choices: tuple[str, ...] = ()
    when: Callable[[Mapping[str, Any]], bool] | None = None  # asked only if this holds for earlier answers

    def default(self) -> Any:
        return Answers.model_fields[self.key].default

    def kind(self) -> type[int] | type[float] | type[str]:
        """What the prompt reads: a whole number, a number, or text (a choice or a duration)."""
        annotation = Answers.model_fields[self.key].annotation
        if annotation is int:
            return int
        return float if annotation is float else str


def _with_services(answers: Mapping[str, Any]) -> bool:
    return int(answers.get("services", 0)) > 0


def _with_research(answers: Mapping[str, Any]) -> bool:
    return int(answers.get("research_teams", 0)) > 0


def _shape_choices() -> tuple[str, ...]:
    return tuple(sorted(load_catalogue()))


QUESTIONS: tuple[Question, ...] = (
    Question("name", "Name of the platform (the scenario's name)"),
    Question("horizon", "How long to simulate (e.g. 14d, 30d)"),
    Question("training_shape", "OCI shape of the training / batch pool", _shape_choices()),
    Question("training_nodes", "Nodes in the training pool"),
    Question("price_per_gpu_hour", "Your negotiated price per GPU-hour in USD (0 = OCI's list price)"),
    Question("research_teams", "Research teams submitting batch jobs (0 = none)"),
    Question(
        "training_jobs_per_day", "Training jobs per day, all research teams together", when=_with_research
    ),
    Question(
        "multi_node_percent", "Percent of training jobs that span several nodes (MPI)", when=_with_research
    ),
    Question("training_hours", "Typical (median) training run, hours", when=_with_research),
    Question("small_jobs_per_day", "Small one-GPU jobs per day (evaluation, sweeps)", when=_with_research),
    Question("notebooks_per_day", "Interactive notebook sessions per day", when=_with_research),
    Question("pipelines_per_day", "MLOps pipeline runs per day (an ML-engineering team; 0 = none)"),
    Question("services", "Inference services (a product team; 0 = none)"),
    Question("inference_shape", "OCI shape of the inference pool", _shape_choices(), _with_services),
    Question("inference_nodes", "Nodes in the inference pool", when=_with_services),
    Question("peak_requests_per_s", "Peak requests per second, per service", when=_with_services),
    Question("throughput_per_replica", "Requests per second one GPU replica serves", when=_with_services),
    Question("kubernetes_skills", "Do your teams already run Kubernetes?", LEVELS),
    Question(
        "containerised", "How much of the work is containerised?", ("unknown", "none", "some", "most", "all")
    ),
    Question("existing_slurm_scripts", "How much Slurm job tooling (scripts, workflows) exists?", LEVELS),
    Question("cicd_gitops", "How much do you deploy with CI/CD and GitOps?", LEVELS),
    Question("self_service", "How much do teams need self-service?", LEVELS),
    Question(
        "security_compliance",
        "Security and compliance regime",
        ("unknown", "standard", "regulated", "strict"),
    ),
    Question("operational_maturity", "Operational maturity of the platform team", LEVELS),
    Question(
        "platform_today",
        "What do the teams run their GPU work on today?",
        ("unknown", "none", "slurm", "kubernetes", "both"),
    ),
    Question("p95_wait", "Target: p95 wait of batch jobs (e.g. 4h; none)"),
    Question("slo_attainment", "Target: share of time services meet demand (e.g. 0.99)", when=_with_services),
)


ANSWERS_DOC = "docs/init-answers.md"
_CONDITIONS: dict[Callable[[Mapping[str, Any]], bool], str] = {
    _with_services: "services > 0",
    _with_research: "research_teams > 0",
}


def _allowed(key: str) -> str:
    """The answers a question accepts, from its field in Answers."""
    info = Answers.model_fields[key]
    if key in SHAPE_KEYS:
        return "an OCI GPU shape of the catalogue (src/gpuplan/scenario/data/oci_shapes.yaml)"
    if key in DURATION_KEYS:
        extra = " or `none`" if key == "p95_wait" else ""
        return f"a duration with its unit: `90s`, `30m`, `6h`, `14d`, `2w`{extra}"
    choices = typing.get_args(info.annotation)
    if choices:
        return ", ".join(f"`{choice}`" for choice in choices)
    bounds = []
    for constraint in info.metadata:
        for attribute, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(constraint, attribute, None)
            if value is not None:
                bounds.append(f"{sign} {value:g}")
        if getattr(constraint, "max_length", None) is not None:
            least = next((c.min_length for c in info.metadata if getattr(c, "min_length", None)), 0)
            bounds.append(f"{least} to {constraint.max_length} characters")
    return ", ".join(bounds) or "any"


def _kind(key: str) -> str:
    annotation = Answers.model_fields[key].annotation
    if key in DURATION_KEYS:
        return "duration"
    if key in SHAPE_KEYS:
        return "OCI shape"
    if typing.get_args(annotation):
        return "choice"
    if annotation is int:
        return "whole number"
    return "number" if annotation is float else "text"


def answers_reference() -> str:
    """The Markdown reference of every answer key (``docs/init-answers.md`` is this text; a test keeps
    them equal). Regenerate with ``python -m gpuplan.scenario.init > docs/init-answers.md``."""
    lines = [
        "# `gpuplan init --answers`: the answer keys",
        "",
        "<!-- generated from gpuplan.scenario.init.Answers and QUESTIONS by",
        "     `python -m gpuplan.scenario.init > docs/init-answers.md`;",
        "     tests/scenario/test_init.py checks it -->",
        "",
        "`gpuplan init --answers FILE` reads a YAML or JSON mapping of question key to answer and asks",
        "nothing; a key left out takes its default, an unknown key is an error that lists these keys.",
        "Questions marked *only when* are asked interactively only then (their answers are still read",
        "from a file). Example:",
        "",
        "```yaml",
        "name: vision-lab",
        "horizon: 30d",
        "training_nodes: 16",
        "research_teams: 3",
        "services: 1",
        "kubernetes_skills: medium",
        "```",
        "",
        "| key | type | default | allowed | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for question in QUESTIONS:
        default = question.default()
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        meaning = question.text
        if question.when is not None:
            meaning += f" (only when {_CONDITIONS[question.when]})"
        if question.key in ORGANISATION:
            meaning += "; `unknown`: not answered, the advisor's criteria on it count nothing"
        lines.append(
            f"| `{question.key}` | {_kind(question.key)} | `{shown}` | {_allowed(question.key)} | {meaning} |"
        )
    return "\n".join(lines) + "\n"


def check_answers(raw: Mapping[str, Any], source: str = "answers", located: Located | None = None) -> Answers:
    """Answers from a mapping; an unknown key or a bad value names the key (and the file, and the line
    when ``located`` says where the answers were read)."""
    known = list(Answers.model_fields)

    def line(key: str) -> int | None:
        return None if located is None else located.line_of((key,))

    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise InputError(
                f"unknown question {str(key)!r}{hint} The questions are: {', '.join(known)} "
                f"(each is described in {ANSWERS_DOC})",
                path=source,
                line=line(str(key)),
                field=str(key),
            )
    try:
        return Answers.model_validate(dict(raw))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        key = str(error["loc"][0]) if error["loc"] else ""
        raise InputError(error_message(error), path=source, line=line(key), field=field or None) from None


def answer_problem(key: str, value: Any) -> str | None:
    """Why ``value`` is not an answer to question ``key`` (None when it is), to ask again at once."""
    try:
        check_answers({key: value})
    except InputError as exc:
        return exc.message
    return None


def read_answers(path: Path) -> Answers:
    """Answers from a YAML or JSON file (JSON is YAML), read by the scenario files' bounded loader."""
    located = load_yaml(path)  # errors name the file and line ("YAML syntax: ...")
    if not isinstance(located.data, dict):
        raise InputError("answers are a mapping of question: answer", path=path, line=1)
    return check_answers(located.data, str(path), located)


# ---- writing ---------------------------------------------------------------------------------


def _q(text: str) -> str:
    """A YAML scalar for any string (a JSON string is a valid YAML double-quoted scalar)."""
    return json.dumps(text, ensure_ascii=False)


def _rate(per_day: float) -> str:
    return f"{format_number(float(f'{per_day:.4g}'))}/day"


def _hours(hours: float) -> str:
    if hours < 1:
        return f"{max(1, round(hours * 60))}m"
    return f"{format_number(float(f'{hours:.4g}'))}h"


def _training_sizes(percent: float, nodes: int, gpus: int) -> dict[str, float]:
    """Single-node jobs, and the multi-node share split 2:1 between 2 and 4 nodes (as the pool allows)."""
    multi = [size for size in (2, 4) if size <= nodes]
    single = 100.0 - (percent if multi else 0.0)
    sizes = {f"1x{gpus}": single}
    if multi and percent > 0:
        parts = {2: 2.0, 4: 1.0}
        total = sum(parts[s] for s in multi)
        sizes.update({f"{s}x{gpus}": percent * parts[s] / total for s in multi})
    return {key: round(weight, 2) for key, weight in sizes.items() if weight > 0}


def _mix(sizes: Mapping[str, float]) -> str:
    return "{" + ", ".join(f'"{key}": {value:g}' for key, value in sizes.items()) + "}"


def _choices(key: str) -> tuple[str, ...]:
    return typing.get_args(Answers.model_fields[key].annotation)


def _organisation_lines(answers: Answers) -> list[str]:
    answered = [key for key in ORGANISATION if getattr(answers, key) != "unknown"]
    lines = [
        "organisation:"
        + ("" if answered else " {}")
        + "          # the decision guide's questions: the advisor weighs these answers"
    ]
    for key in ORGANISATION:
        value = getattr(answers, key)
        if value == "unknown":
            answers_allowed = " | ".join(a for a in _choices(key) if a != "unknown")
            lines.append(f"  # {key}: {answers_allowed}   (not answered: its criteria count nothing)")
        else:
            lines.append(f"  {key}: {value}")
    return lines


def scenario_text(answers: Answers) -> str:
    """The commented scenario YAML for ``answers``."""
    training = get_shape(answers.training_shape)
    gpn = training.gpus_per_node
    research = [f"research-{i}" for i in range(1, answers.research_teams + 1)]
    jobs_per_day = answers.training_jobs_per_day + answers.small_jobs_per_day + answers.notebooks_per_day
    batch = bool(research) and jobs_per_day > 0
    if not batch and answers.pipelines_per_day <= 0 and answers.services <= 0:
        raise InputError("the workload mix is empty: give research teams with jobs, pipelines or services")

    out = [
        f"# {answers.name}: written by `gpuplan init`. Check it with `gpuplan validate FILE`,",
        "# simulate it with `gpuplan simulate FILE --model slurm`. Every key is checked on loading.",
        '# Durations: 90s, 30m, 6h, 14d. Rates: 20/day, 3/h. Sizes: NODESxGPUS_PER_NODE ("2x8").',
        "",
        f"name: {_q(answers.name)}",
        f"description: {_q('Written by gpuplan init from a questionnaire; refine the workloads.')}",
        "seed: 1               # same seed, same synthesised jobs",
        f"horizon: {answers.horizon}          # jobs arrive over this span",
        "",
        "cluster:",
        "  pools:               # an OCI shape from the built-in catalogue and a node count",
        "    - name: train",
        f"      shape: {answers.training_shape}   # {gpn} x {training.gpu_model} per node",
        f"      nodes: {answers.training_nodes}",
    ]
    if answers.price_per_gpu_hour > 0:
        out.append(
            f"      price_per_gpu_hour: {answers.price_per_gpu_hour:g}   # USD, instead of OCI's list price"
        )
    inference = get_shape(answers.inference_shape)
    if answers.services > 0:
        out += [
            "    - name: serve",
            f"      shape: {answers.inference_shape}   # {inference.gpus_per_node} x {inference.gpu_model}",
            f"      nodes: {answers.inference_nodes}",
        ]
        if answers.price_per_gpu_hour > 0:
            out.append(f"      price_per_gpu_hour: {answers.price_per_gpu_hour:g}")

    out += [
        "",
        "teams:                # share = fair-share weight (Slurm Fairshare, Kueue fair-sharing weight)",
    ]
    for team in research if batch else []:
        out += [f"  - name: {team}", "    persona: researcher", "    share: 1", "    users: 4"]
    if answers.pipelines_per_day > 0:
        out += ["  - name: mlops", "    persona: ml-engineer", "    share: 1", "    users: 2"]
    if answers.services > 0:
        out += ["  - name: product", "    persona: app-developer", "    share: 1", "    users: 2"]

    out += ["", "workloads:"]
    if batch:
        out += _research_workloads(answers, research, gpn)
    if answers.pipelines_per_day > 0:
        out += [
            "  # MLOps pipelines: retraining and batch inference steps, one node each.",
            "  - name: pipelines",
            "    kind: pipeline",
            "    team: mlops",
            "    pool: train",
            f"    arrival: {{rate: {_rate(answers.pipelines_per_day)}, diurnal: {{peak_hour: 2}}}}",
            f'    size: "1x{gpn}"',
            "    duration: {median: 2h, sigma: 0.5}",
            "    time_limit: {over_request: 1.5, round_to: 1h}",
        ]
    peak = answers.peak_requests_per_s
    replicas_max = max(1, math.ceil(peak / answers.throughput_per_replica))
    for index in range(1, answers.services + 1):
        out += [
            "  # An inference service: replicas follow a daily demand curve (requests/s).",
            f"  - name: service-{index}",
            "    kind: service",
            "    team: product",
            "    pool: serve",
            "    gpus_per_replica: 1",
            f"    throughput_per_replica: {answers.throughput_per_replica:g}   # requests/s per replica",
            f"    replicas: {{min: 1, max: {replicas_max}}}",
            f"    demand: {{peak: {peak:g}, trough: {peak / 10:g}, peak_hour: 14, {WEEKLY_DEMAND}}}",
            f"    slo_target: {answers.slo_attainment:g}",
        ]

    out += ["", *_organisation_lines(answers), ""]
    targets = []
    if answers.p95_wait != "none":
        targets.append(f"  p95_wait: {answers.p95_wait}")
    if answers.services > 0:
        targets.append(f"  slo_attainment: {answers.slo_attainment:g}")
    if targets:
        out += [
            "targets:               # hard constraints: a model that misses one is not recommended",
            *targets,
        ]
    else:
        out.append(
            "targets: {}            # none: p95_wait, slo_attainment, gpu_utilization, budget_usd_per_month"
        )
    return "\n".join(out) + "\n"


def _research_workloads(answers: Answers, teams: list[str], gpn: int) -> list[str]:
    per_team = len(teams)
    lines: list[str] = []
    sizes = _training_sizes(answers.multi_node_percent, answers.training_nodes, gpn)
    for team in teams:
        if answers.training_jobs_per_day > 0:
            lines += [
                "  # Training runs: long, some over several nodes (MPI over the RDMA network).",
                f"  - name: {team}-training",
                "    kind: batch",
                f"    team: {team}",
                "    pool: train",
                f"    arrival: {{rate: {_rate(answers.training_jobs_per_day / per_team)}, "
                "diurnal: {peak_hour: 16}, weekly: {weekend_factor: 0.3}}",
                f"    size: {_mix(sizes)}",
                f"    duration: {{median: {_hours(answers.training_hours)}, sigma: 1.0, max: 3d}}",
                "    time_limit: {over_request: 2.5, round_to: 1h, max: 3d}   # users ask ~2.5x their use",
            ]
        if answers.small_jobs_per_day > 0:
            lines += [
                "  # Evaluation and sweeps: many short one-GPU jobs.",
                f"  - name: {team}-small",
                "    kind: batch",
                f"    team: {team}",
                "    pool: train",
                f"    arrival: {{rate: {_rate(answers.small_jobs_per_day / per_team)}}}",
                '    size: "1x1"',
                "    duration: {median: 40m, sigma: 0.8}",
                "    time_limit: {over_request: 3, round_to: 30m}",
            ]
        if answers.notebooks_per_day > 0:
            lines += [
                "  # Notebooks: interactive sessions holding a GPU while someone works.",
                f"  - name: {team}-notebooks",
                "    kind: interactive",
                f"    team: {team}",
                "    pool: train",
                f"    arrival: {{rate: {_rate(answers.notebooks_per_day / per_team)}, "
                "diurnal: {peak_hour: 10, peak_to_trough: 8}}",
                '    size: "1x1"',
                "    duration: {median: 2h, sigma: 0.5, max: 8h}",
                "    time_limit: {over_request: 2, round_to: 1h, max: 8h}",
            ]
    return lines


def write_scenario(answers: Answers, path: Path, *, overwrite: bool = False) -> LoadedScenario:
    """Write the scenario for ``answers`` to ``path`` and load it back (it must validate).

    The file is written whole or not at all (``atomic_write``): a full disk or a killed run leaves no
    empty file that a retry would refuse as existing, and with ``overwrite`` the old file stays as
    it was until the new text is complete on disk."""
    try:
        exists, directory = path.exists(), path.parent.is_dir()
    except OSError as exc:  # a directory on the way that may not be searched
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    if exists and not overwrite:
        raise InputError("exists already (give --force to replace it)", path=path)
    if not directory:
        # a mistyped directory must not be created silently
        raise InputError(f"the directory {path.parent} does not exist (create it first)", path=path)
    text = scenario_text(answers)
    atomic_write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))
    remove_stale_temporaries(path)  # what runs killed while writing this file left
    return load_scenario(path)


if __name__ == "__main__":
    print(answers_reference(), end="")
