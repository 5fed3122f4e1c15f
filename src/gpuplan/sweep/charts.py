"""``sweep.html``: a sweep's figures as the report draws them (``report.render``, Plotly inlined):
the frontier of cost against p95 wait, a heatmap of the p95 wait per model for a two-field grid,
and a table of every variant's medians."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.advisor.format import value
from gpuplan.report import charts
from gpuplan.report.context import Section, Table
from gpuplan.report.render import render

HOUR = 3600.0


def _label(record: Mapping[str, Any]) -> str:
    return ", ".join(str(s) for s in record.get("set") or []) or "as written"


def _field_values(records: list[dict[str, Any]], path: str) -> list[str]:
    """The values a field takes over the variants, in their first order."""
    found = []
    for record in records:
        for text in record.get("set") or []:
            name, _, shown = str(text).partition("=")
            if name == path and shown not in found:
                found.append(shown)
    return found


def sweep_page(summary: Mapping[str, Any]) -> str:
    """sweep.html for sweep.json's ``summary``."""
    records: list[dict[str, Any]] = list(summary["variants"])
    models: list[str] = list(summary["models"])
    section = Section("sweep", "Sweep")
    points = summary["points"]
    section.paragraph(
        f"{len(records)} variants of {summary['scenario']} x {len(models)} models x "
        f"{summary['seeds']} seeds: "
        f"{points['total']} points ({points['run']} run, {points['reused']} read back from points/). "
        "Each figure is the median over the seeds; a model meets the targets only where it meets them in "
        "every seed."
    )
    section.chart(
        charts.frontier(
            {
                m: [
                    (
                        r["models"][m].get("cost per month (USD)"),
                        r["models"][m].get("p95 wait (s)"),
                        _label(r),
                    )
                    for r in records
                ]
                for m in models
            },
            "Cost against p95 wait",
            "One marker per variant and model; the lower left is cheaper and faster.",
        )
    )
    fields: list[str] = list(summary["fields"])
    if len(fields) == 2:
        xs, ys = _field_values(records, fields[0]), _field_values(records, fields[1])
        for model in models:
            grid: list[list[float | None]] = [[None] * len(xs) for _ in ys]
            for record in records:
                shown = dict(str(s).partition("=")[::2] for s in record.get("set") or [])
                wait = record["models"][model].get("p95 wait (s)")
                if fields[0] in shown and fields[1] in shown and wait is not None:
                    grid[ys.index(shown[fields[1]])][xs.index(shown[fields[0]])] = wait / HOUR
            section.chart(
                charts.heatmap(
                    f"chart-heatmap-{model}",
                    f"{model}: p95 wait (hours)",
                    (fields[0], xs),
                    (fields[1], ys),
                    grid,
                    "h",
                )
            )
    rows = []
    for record in records:
        for model in models:
            figures = record["models"][model]
            if "refused" in figures:
                rows.append([_label(record), model, "refused", "", "", "", str(figures["refused"])])
                continue
            met = figures.get("targets_met_in_every_seed")
            rows.append(
                [
                    _label(record),
                    model,
                    value(figures.get("p95 wait (s)"), "seconds"),
                    value(figures.get("GPU utilisation"), "share"),
                    value(figures.get("cost per month (USD)"), "usd"),
                    value(figures.get("work not done (GPU-hours)"), "count"),
                    "-" if met is None else ("yes" if met else "no"),
                ]
            )
    columns = ["variant", "model", "p95 wait", "GPU utilisation", "cost per month", "GPU-hours not done"]
    section.table(Table([*columns, "targets met"], rows, "Every variant (medians over the seeds)"))
    page, _ = render(f"gpuplan sweep: {summary['sweep']}", str(summary["scenario"]), [section])
    return page
