"""``gpuplan report RESULTS_DIR``: the HTML and Markdown reports from saved results."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpuplan.cli.common import QuietOption, call, console, warn
from gpuplan.cli.recommend import print_recommendation


def report(
    results: Annotated[
        Path, typer.Argument(help="Results directory: summary.json, jobs.parquet, timeline.parquet.")
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Directory for the reports [default: RESULTS].")
    ] = None,
    scenario: Annotated[
        Path | None,
        typer.Option(
            help="The scenario (or trace) simulated, when the path summary.json names does not resolve "
            "from here [default: that path]."
        ),
    ] = None,
    criteria: Annotated[
        Path | None,
        typer.Option(
            help="Decision criteria (YAML, the packaged criteria.yaml's format) to score with instead of "
            "the packaged ones; used when RESULTS has no recommendation.json."
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Build OUT/report.html (offline, charts inlined) and OUT/report.md from saved results.

    Uses RESULTS/recommendation.json when the run wrote it; otherwise computes the recommendation from
    the summary and the scenario, and saves it beside the reports. Refuses a directory whose files
    disagree with its manifest.json. Exit code 1 when no model meets the scenario's targets.
    Examples: gpuplan report gpuplan-out; gpuplan report runs/mixed --scenario examples/mixed-org.yaml
    """
    from gpuplan.report import rebuild

    result = call(lambda: rebuild(results, out=out, scenario=scenario, criteria=criteria))
    warn(result.warnings, quiet)
    if not quiet:
        print_recommendation(console(), result.recommendation, reasons=3)
        console().print("wrote " + ", ".join(str(f) for f in result.files), soft_wrap=True)
    if result.recommendation.decision == "no_model_meets_targets":
        raise typer.Exit(1)
