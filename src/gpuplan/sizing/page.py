"""``size.html``: what size meets the targets, per model, drawn as the report draws (``report.render``):
every size the search judged on the frontier of cost against p95 wait, and a table of the sizes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.advisor.format import value
from gpuplan.report import charts
from gpuplan.report.context import Section, Table
from gpuplan.report.render import render


def _nodes(nodes: Mapping[str, int]) -> str:
    return ", ".join(f"{pool} {count}" for pool, count in nodes.items())


def size_section(summary: Mapping[str, Any]) -> Section:
    """The section "What size meets the targets" of size.json's ``summary``."""
    section = Section("size", "What size meets the targets")
    models: dict[str, Any] = dict(summary["models"])
    sims = summary["simulations"]
    quantile = float(summary.get("quantile", 1.0))
    where = (
        f"every one of {summary['seeds']}"
        if quantile >= 1
        else f"at least {quantile:.0%} of {summary['seeds']}"
    )
    section.paragraph(
        f"Per model, the least-cost node counts whose runs meet the scenario's targets in {where} "
        "seeds, found by bisection per pool and coordinate descent over the pools: "
        f"{sims['total']} simulations ({sims['run']} run, {sims['reused']} read back). One node fewer in "
        "any pool misses a target on some seed."
    )
    if summary.get("cheapest"):
        line = f"The cheapest that meets the targets: {summary['cheapest']}"
        runner = summary.get("runner_up")
        if runner:
            more = value(runner["usd_per_month_more"], "usd")
            line += f"; {runner['model']} costs {more} more a month at its size"
        section.paragraph(line + ".")
    section.chart(
        charts.frontier(
            {
                model: [
                    (
                        c["cost_usd_per_month"],
                        c["p95_wait_s"],
                        _nodes(c["nodes"]) + (" (meets)" if c["meets"] else ""),
                    )
                    for c in body["candidates"]
                ]
                for model, body in models.items()
            },
            "Sizes judged: cost against p95 wait",
            "Every size the search ran, median over the seeds; those marked (meets) meet the wait and SLO "
            "targets in every seed.",
        )
    )
    rows = []
    for model, body in models.items():
        figures = body["figures"]
        minimal = body["one_node_fewer_misses"]
        rows.append(
            [
                model,
                _nodes(body["nodes"]) + (f" ({'; '.join(body['also_set'])})" if body["also_set"] else ""),
                "yes" if body["found"] else f"no: {body['why']}",
                value(figures["gpus"], "count"),
                value(figures["p95_wait_s"], "seconds"),
                value(figures["gpu_utilization"], "share"),
                value(figures["cost_usd_per_month"], "usd"),
                "yes" if minimal and all(minimal.values()) else ("-" if not minimal else "no"),
                value(body["simulations"], "count"),
            ]
        )
    columns = ["model", "nodes", "meets the targets", "GPUs", "p95 wait", "GPU utilisation", "cost per month"]
    section.table(Table([*columns, "one fewer misses", "simulations"], rows, "Least-cost size per model"))
    return section


def size_page(summary: Mapping[str, Any]) -> str:
    page, _ = render(
        f"gpuplan size: {summary['scenario']}", str(summary["scenario"]), [size_section(summary)]
    )
    return page
