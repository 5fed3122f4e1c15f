"""Building OUT/report.html and OUT/report.md from a results directory.

``rebuild`` is ``gpuplan report RESULTS_DIR``: it reads the saved files, finds the scenario (or trace)
that summary.json's ``input`` names, uses recommendation.json when present and otherwise computes it
(and saves it). ``build_report`` is the same with the input already loaded, for commands that have just
simulated it (``recommend``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.advisor.advise import RECOMMENDATION_FILE, advise, input_figures, write_recommendation
from gpuplan.advisor.criteria import Criteria, load_criteria
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.errors import InputError
from gpuplan.inputs import Input, InputOptions, is_scenario, load_input
from gpuplan.report import render
from gpuplan.report.context import ReportInputs, build_sections, title_of
from gpuplan.report.results import read_results, read_summary
from gpuplan.results.files import prepare_out


@dataclass
class ReportResult:
    files: list[Path]
    recommendation: Recommendation
    computed: bool  # the recommendation was computed here (there was no recommendation.json)
    warnings: list[str] = field(default_factory=list)
    build_s: float = 0.0


def _echoed_input(summary: dict[str, Any], directory: Path) -> tuple[Path | None, dict[str, Any]]:
    """The input file summary.json names, as written or relative to the results directory."""
    info = summary.get("input")
    if not isinstance(info, dict) or not isinstance(info.get("path"), str):
        return None, {}
    written = Path(info["path"])
    for candidate in (written, directory / written):
        if candidate.is_file():
            return candidate, info
    return None, info


def _trace_options(summary: dict[str, Any], info: dict[str, Any]) -> InputOptions:
    """How the trace was read, from the cluster the first model simulated (one pool for a trace)."""
    first = next(iter(summary["models"].values()))
    pools = first.get("cluster", {}).get("pools", {}) if isinstance(first.get("cluster"), dict) else {}
    if len(pools) != 1:
        return InputOptions(format=info.get("format"))
    (pool,) = pools.values()
    return InputOptions(
        format=info.get("format"), nodes=pool.get("nodes"), gpus_per_node=pool.get("gpus_per_node")
    )


def find_input(
    summary: dict[str, Any], directory: Path, scenario: Path | None
) -> tuple[Input | None, list[str]]:
    """The loaded input of the results: ``scenario`` when given (errors are the user's), else the file
    summary.json names (a missing or unreadable one is a warning: the report goes on without it)."""
    if scenario is not None:
        return load_input(scenario), []
    path, info = _echoed_input(summary, directory)
    if path is None:
        named = info.get("path")
        if named is None:
            return None, [
                "summary.json names no input: the report has no workload figures or scenario answers"
            ]
        return None, [f"input {named} (named in summary.json) not found: give it with --scenario FILE"]
    try:
        options = InputOptions() if is_scenario(path) else _trace_options(summary, info)
        loaded = load_input(path, options)
    except InputError as exc:
        return None, [f"input named in summary.json could not be read ({exc}): the report goes on without it"]
    warnings = []
    echoed_name = info.get("scenario")
    if (
        loaded.scenario is not None
        and echoed_name is not None
        and loaded.scenario.scenario.name != echoed_name
    ):
        warnings.append(
            f"{path} is now scenario {loaded.scenario.scenario.name!r}, the results are of {echoed_name!r}"
        )
    return loaded, warnings


def build_report(
    directory: Path,
    *,
    out: Path | None = None,
    loaded: Input | None = None,
    recommendation: Recommendation | None = None,
    criteria: Criteria | None = None,
    warnings: list[str] | None = None,
) -> ReportResult:
    """report.html and report.md in ``out`` (default: ``directory``) from the results in ``directory``."""
    began = time.perf_counter()
    results = read_results(directory)
    out = out or directory
    prepare_out(out)
    criteria = criteria or load_criteria()
    figures = input_figures(loaded) if loaded is not None else None
    files: list[Path] = []
    computed = False
    recommendation = recommendation or results.recommendation
    if recommendation is None:
        recommendation = advise(
            results.summary,
            loaded,
            figures=figures,
            criteria=criteria,
            source=str(directory / "summary.json"),
        )
        computed = True
    if computed or out != directory:  # the reports' directory holds the recommendation they show
        files.append(write_recommendation(out, recommendation))
    inputs = ReportInputs(
        summary=results.summary,
        jobs=results.jobs,
        timeline=results.timeline,
        recommendation=recommendation,
        criteria=criteria,
        workload=figures,
        scenario=loaded.scenario if loaded is not None else None,
        services=loaded.workload.services if loaded is not None else (),
    )
    info = results.summary.get("input")
    input_path = str(info["path"]) if isinstance(info, dict) and "path" in info else None
    files = render.write(out, title_of(inputs), input_path, build_sections(inputs)) + files
    return ReportResult(
        files=files,
        recommendation=recommendation,
        computed=computed,
        warnings=list(warnings or []),
        build_s=time.perf_counter() - began,
    )


def rebuild(
    directory: Path, *, out: Path | None = None, scenario: Path | None = None, criteria: Path | None = None
) -> ReportResult:
    """``gpuplan report RESULTS_DIR``: the reports from saved results (``criteria``: a criteria file in
    place of the packaged one, for an organisation that weighs things its own way)."""
    if not directory.is_dir():
        raise InputError("not a results directory", path=directory)
    summary = read_summary(directory / "summary.json")
    loaded, warnings = find_input(summary, directory, scenario)
    return build_report(
        directory, out=out, loaded=loaded, criteria=load_criteria(criteria), warnings=warnings
    )


__all__ = ["RECOMMENDATION_FILE", "ReportResult", "build_report", "find_input", "rebuild"]
