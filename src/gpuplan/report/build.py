"""Building OUT/report.html and OUT/report.md from a results directory.

``rebuild`` is ``gpuplan report RESULTS_DIR``: it checks the directory's manifest (every file it reads
must be one the run wrote), finds the scenario (or trace) that summary.json's ``input`` names and
checks it is the file the run read, uses recommendation.json when the run wrote it and otherwise
computes it (and saves it), then records the reports in the manifest. ``build_report`` is the same
with the input already loaded, for commands that have just simulated it (``recommend``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuplan.advisor.advise import RECOMMENDATION_FILE, advise, input_figures, write_recommendation
from gpuplan.advisor.criteria import Criteria, load_criteria
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.errors import InputError
from gpuplan.inputs import Input, InputOptions, is_scenario, load_input
from gpuplan.report import render
from gpuplan.report.context import ReportInputs, build_sections, input_shown, title_of
from gpuplan.report.results import read_results, read_summary
from gpuplan.results import manifest
from gpuplan.results.files import REPORT_INPUTS, prepare_out
from gpuplan.results.transaction import open_stage


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


def _sets(summary: dict[str, Any]) -> tuple[str, ...]:
    """The ``--set`` the run read its scenario with (summary.json ``input.set``)."""
    info = summary.get("input")
    sets = info.get("set") if isinstance(info, dict) else None
    return tuple(s for s in sets if isinstance(s, str)) if isinstance(sets, list) else ()


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
    summary: dict[str, Any],
    directory: Path,
    scenario: Path | None,
    inputs: dict[str, str] | None = None,
) -> tuple[Input | None, list[str]]:
    """The loaded input of the results: ``scenario`` when given (errors are the user's), else the file
    summary.json names (a missing or unreadable one is a warning: the report goes on without it).
    ``inputs`` (the manifest's input files and their SHA-256) tell a file changed since the run: an
    error for the file summary.json names, a warning for one given with ``--scenario``."""
    if scenario is not None:
        loaded = load_input(scenario, InputOptions(sets=_sets(summary)))
        recorded = (inputs or {}).get(str(scenario))
        if recorded is not None and manifest.sha256(scenario) != recorded:
            return loaded, [f"{scenario} is not the file the run read (it changed since): as you asked"]
        return loaded, []
    path, info = _echoed_input(summary, directory)
    if path is None:
        named = info.get("path")
        if named is None:
            return None, [
                "summary.json names no input: the report has no workload figures or scenario answers"
            ]
        return None, [f"input {named} (named in summary.json) not found: give it with --scenario FILE"]
    recorded = (inputs or {}).get(str(info["path"]))
    if recorded is not None and manifest.sha256(path) != recorded:
        raise InputError(
            "changed since the run that wrote the results (its SHA-256 differs from manifest.json's): "
            "run the command again, or give the file the run read with --scenario",
            path=path,
        )
    try:
        options = InputOptions(sets=_sets(summary)) if is_scenario(path) else _trace_options(summary, info)
        loaded = load_input(path, options)
    except InputError as exc:
        return None, [f"input named in summary.json could not be read ({exc}): the report goes on without it"]
    return loaded, []


def build_report(
    directory: Path,
    *,
    out: Path | None = None,
    loaded: Input | None = None,
    recommendation: Recommendation | None = None,
    criteria: Criteria | None = None,
    warnings: list[str] | None = None,
    saved_recommendation: bool = True,
) -> ReportResult:
    """report.html and report.md in ``out`` (default: ``directory``) from the results in ``directory``
    (and its recommendation.json when ``saved_recommendation``)."""
    began = time.perf_counter()
    results = read_results(directory, with_recommendation=saved_recommendation)
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
    # the reports' directory holds the recommendation they show
    if computed or not (out / RECOMMENDATION_FILE).is_file():
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
    # the header names the scenario and its file as given (the bundled example by name, not its
    # install path)
    files = render.write(out, title_of(inputs), input_shown(results.summary), build_sections(inputs)) + files
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
    checked = manifest.check(directory, REPORT_INPUTS)
    summary = read_summary(directory / "summary.json")
    loaded, warnings = find_input(summary, directory, scenario, checked.run.inputs)
    saved = manifest.matches(directory, checked, RECOMMENDATION_FILE)
    if not saved and (directory / RECOMMENDATION_FILE).exists():
        warnings.append(
            f"{directory / RECOMMENDATION_FILE} is not from the run that wrote the results: computed again"
        )
    if checked.run.partial:
        missing = ", ".join(checked.run.partial.get("missing_models", []))
        warnings.append(f"a partial result (the run was interrupted): no figures for {missing}")
    target = out or directory
    # the reports join the results they were built from: one transaction, the results kept by link
    keep = list(checked.files) if os.path.realpath(target) == os.path.realpath(directory) else []
    with open_stage(target, keep=keep) as stage:
        result = build_report(
            directory,
            out=stage.dir,
            loaded=loaded,
            criteria=load_criteria(criteria),
            warnings=warnings,
            saved_recommendation=saved,
        )
        manifest.finish(stage.dir, checked.run, [*(stage.dir / name for name in keep), *result.files])
    return replace(result, files=stage.final(result.files))


__all__ = ["RECOMMENDATION_FILE", "ReportResult", "build_report", "find_input", "rebuild"]
