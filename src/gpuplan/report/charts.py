"""Plotly figures for the HTML report, each as HTML-safe JSON that the template hands to Plotly.newPlot.

Figures are plain ``{"data": [...], "layout": {...}}`` mappings in Plotly.js's own schema: building
them through plotly.graph_objects validated and deep-copied its template per figure, which cost more
than the rest of the report together.

User-supplied text (scenario, team, service and model names) is HTML-escaped before it goes into a
figure: Plotly renders a small HTML subset in labels, and escaped text shows literally. The JSON is
then made safe inside a <script> element (``<``, ``>``, ``&`` and ``'`` as \\u escapes)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuplan.report.series import Series, WaitCdf

# Plotly's default qualitative palette, fixed here so a model keeps its colour in every chart
PALETTE = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff")
HOUR = 3600.0


@dataclass(frozen=True)
class Chart:
    id: str  # the element id in report.html (stable: same inputs, same file)
    title: str
    caption: str
    figure_json: str  # safe to place inside <script>


def text(value: object) -> str:
    return html.escape(str(value), quote=True)


class Figure:
    """A Plotly.js figure under construction: traces and a layout, as plain data."""

    def __init__(self, layout: dict[str, Any]) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout = layout

    def add_bar(self, **trace: Any) -> None:
        self.data.append({"type": "bar", **trace})

    def add_scatter(self, **trace: Any) -> None:
        self.data.append({"type": "scatter", **trace})

    def axis(self, name: str, **settings: Any) -> None:
        self.layout[name] = {**self.layout.get(name, {}), **settings}


def _safe_json(figure: Figure) -> str:
    plain = {"data": figure.data, "layout": figure.layout}
    dumped = json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return (
        dumped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")
    )


def _rounded(values: Sequence[float | None] | Any, digits: int = 4) -> list[float | None]:
    return [None if v is None or v != v else round(float(v), digits) for v in values]  # NaN: a gap


GRID = {"gridcolor": "#e5e8ee", "zerolinecolor": "#c9ced8", "automargin": True}


def _figure(title: str, x_title: str, y_title: str, **layout: Any) -> Figure:
    """A figure with the report's look: white plot, light grid, legend below."""
    return Figure(
        {
            "title": {"text": text(title)},
            "xaxis": {"title": {"text": x_title}, **GRID},
            "yaxis": {"title": {"text": y_title}, **GRID},
            "paper_bgcolor": "#ffffff",
            "plot_bgcolor": "#ffffff",
            "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
            "height": 360,
            "legend": {"orientation": "h", "y": -0.2},
            **layout,
        }
    )


def chart(chart_id: str, figure: Figure, caption: str = "") -> Chart:
    title = str(figure.layout["title"]["text"])
    return Chart(id=chart_id, title=html.unescape(title), caption=caption, figure_json=_safe_json(figure))


def colours(names: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def contributions(
    models: Sequence[str], dimensions: dict[str, str], by_model: dict[str, dict[str, float]]
) -> Chart:
    """Stacked contributions per assessment dimension: where each model's score comes from."""
    figure = _figure(
        "Score by assessment dimension", "model", "contribution to the score", barmode="relative"
    )
    palette = colours(list(dimensions))
    for key, title in dimensions.items():
        values = [by_model[m].get(key, 0.0) for m in models]
        if any(abs(v) > 1e-12 for v in values):
            figure.add_bar(
                name=text(title),
                x=[text(m) for m in models],
                y=_rounded(values),
                marker={"color": palette[key]},
            )
    return chart("chart-scores", figure, "Negative parts are penalties (two stacks, compliance, operations).")


def workload_hours(by_kind: dict[str, float], by_team: dict[str, float]) -> Chart:
    figure = _figure("GPU-hours by kind and by team", "", "GPU-hours", barmode="group")
    figure.add_bar(name="by kind", x=[text(k) for k in by_kind], y=_rounded(list(by_kind.values()), 1))
    figure.add_bar(name="by team", x=[text(t) for t in by_team], y=_rounded(list(by_team.values()), 1))
    return chart("chart-workload", figure)


def utilisation(series: Sequence[Series], models: Sequence[str], bin_width: str) -> Chart:
    figure = _panels(
        "GPU utilisation over time, one panel per model", series, models, lambda s: s.utilization,
        "busy / up", {"range": [0, 1.05], "tickformat": ".0%"},
    )  # fmt: skip
    return chart(
        "chart-utilisation",
        figure,
        f"Busy GPUs over GPUs up, one line per pool: time-weighted means over {bin_width} bins. "
        "The panels share both axes.",
    )


def busy_gpus(series: Sequence[Series], models: Sequence[str], bin_width: str) -> Chart:
    figure = _panels("Busy GPUs over time, one panel per model", series, models, lambda s: s.busy_gpus,
                     "busy GPUs", {"rangemode": "tozero"})  # fmt: skip
    return chart(
        "chart-busy",
        figure,
        f"GPUs per node unknown for some pools: busy GPUs instead of the share, means over {bin_width} bins.",
    )


def queue_length(series: Sequence[Series], models: Sequence[str], bin_width: str) -> Chart:
    figure = _panels("Queued jobs over time, one panel per model", series, models, lambda s: s.queued_jobs,
                     "queued jobs", {"rangemode": "tozero"})  # fmt: skip
    return chart(
        "chart-queue",
        figure,
        f"One line per pool: time-weighted means over {bin_width} bins. The panels share both axes.",
    )


PANEL_PX = 170  # plot height of one model's panel
PANEL_GAP_PX = 34  # room between panels for the next one's name


def _side_dash(pool: str) -> str:
    """The hybrid model's Kubernetes part of a pool (``POOL/kubernetes``) dashed, the rest solid."""
    return "dash" if pool.endswith("/kubernetes") else "solid"


def _panels(
    title: str,
    series: Sequence[Series],
    models: Sequence[str],
    values: Callable[[Series], Any],
    y_title: str,
    y_axis: dict[str, Any],
) -> Figure:
    """One panel per model, stacked, sharing the time axis and the value axis, one line per pool: six
    series overlaid on one plot cannot be told apart. A pool keeps its colour in every panel (the
    hybrid model's parts of a pool share it: Slurm's solid, Kubernetes' dashed)."""
    shown = [m for m in models if any(s.model == m for s in series)]
    shown += [m for m in dict.fromkeys(s.model for s in series) if m not in shown]
    top_px, bottom_px = 50, 80
    plot_px = PANEL_PX * len(shown) + PANEL_GAP_PX * (len(shown) - 1)
    figure = _figure(
        title,
        "",
        "",
        height=plot_px + top_px + bottom_px,
        margin={"l": 70, "r": 20, "t": top_px, "b": bottom_px},
        legend={"orientation": "h", "x": 0, "y": -50 / plot_px, "yanchor": "top"},
        annotations=[],
    )
    bases = list(dict.fromkeys(s.pool.split("/")[0] for s in series))
    palette = colours(bases)
    legend_seen: set[str] = set()
    for index, model in enumerate(shown):
        top = 1 - index * (PANEL_PX + PANEL_GAP_PX) / plot_px
        bottom = max(top - PANEL_PX / plot_px, 0.0)
        suffix = "" if index == 0 else str(index + 1)
        last = index == len(shown) - 1
        x_axis: dict[str, Any] = {"anchor": f"y{suffix}", "showticklabels": last, **GRID}
        y_settings: dict[str, Any] = {
            "anchor": f"x{suffix}",
            "domain": [round(bottom, 4), round(top, 4)],
            "title": {"text": y_title},
            **GRID,
            **y_axis,
        }
        if index:  # every panel follows the first one's zoom and range
            x_axis["matches"] = "x"
            y_settings["matches"] = "y"
        if last:
            x_axis["title"] = {"text": "days"}
        figure.layout[f"xaxis{suffix}"] = x_axis
        figure.layout[f"yaxis{suffix}"] = y_settings
        figure.layout["annotations"].append(
            {
                "text": f"<b>{text(model)}</b>",
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": round(top, 4),
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
            }
        )
        for s in series:
            y = values(s) if s.model == model else None
            if y is None:
                continue
            figure.add_scatter(
                name=text(s.pool),
                legendgroup=text(s.pool),
                showlegend=s.pool not in legend_seen,
                x=_rounded(s.time_s / 86400.0),
                y=_rounded(y),
                mode="lines",
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
                line={"color": palette[s.pool.split("/")[0]], "dash": _side_dash(s.pool), "width": 1.5},
            )
            legend_seen.add(s.pool)
    return figure


def wait_cdf(
    model: str, cdfs: Sequence[WaitCdf], teams: Sequence[str], index: int, longest_s: float
) -> Chart:
    """``longest_s``: the longest wait of every model and team, so that all panels share one x range."""
    figure = _figure(f"Wait-time CDF per team: {model}", "wait (hours)", "share of the team's jobs")
    figure.axis("yaxis", range=[0, 1.02], tickformat=".0%")
    figure.axis("xaxis", range=[0, round(max(longest_s / HOUR, 1 / 60) * 1.02, 4)])
    palette = colours(list(teams))
    for cdf in cdfs:
        figure.add_scatter(
            name=text(f"{cdf.team} ({cdf.jobs} jobs)"),
            x=_rounded(cdf.wait_s / HOUR),
            y=_rounded(cdf.probability),
            mode="lines",
            line={"color": palette[cdf.team], "shape": "hv"},
        )
    return chart(f"chart-waits-{index}", figure)


def slo(
    models: Sequence[str], services: Sequence[str], attainment: dict[tuple[str, str], float | None]
) -> Chart:
    figure = _figure(
        "SLO attainment per service", "service", "share of time demand was served", barmode="group"
    )
    figure.axis("yaxis", range=[0, 1.05], tickformat=".0%")
    palette = colours(list(models))
    for model in models:
        figure.add_bar(
            name=text(model),
            x=[text(s) for s in services],
            y=_rounded([attainment.get((model, s)) for s in services]),
            marker={"color": palette[model]},
        )
    return chart("chart-slo", figure)


def replicas(
    service: str,
    index: int,
    time_s: Any,
    needed: Any,
    mean_replicas: dict[str, float | None],
    models: Sequence[str],
) -> Chart:
    figure = _figure(f"Replicas vs demand: {service}", "days", "replicas")
    figure.add_scatter(
        name="replicas the demand needs",
        x=_rounded(time_s / 86400.0),
        y=_rounded(needed),
        mode="lines",
        line={"color": "#888888", "shape": "hv"},
    )
    palette = colours(list(models))
    end = float(time_s[-1]) / 86400.0 if len(time_s) else 1.0
    for model in models:
        mean = mean_replicas.get(model)
        if mean is not None:
            figure.add_scatter(
                name=text(f"{model}: mean replicas"),
                x=[0.0, round(end, 4)],
                y=[round(mean, 4), round(mean, 4)],
                mode="lines",
                line={"color": palette[model], "dash": "dash"},
            )
    return chart(
        f"chart-replicas-{index}", figure, "Replicas needed = demand / per-replica throughput, within bounds."
    )


def cost(
    models: Sequence[str], pools: Sequence[str], by_pool: dict[tuple[str, str], float], caption: str = ""
) -> Chart:
    figure = _figure("Cost by model and pool", "model", "USD over the makespan", barmode="stack")
    palette = colours(list(pools))
    for pool in pools:
        figure.add_bar(
            name=text(pool),
            x=[text(m) for m in models],
            y=_rounded([by_pool.get((m, pool)) for m in models], 2),
            marker={"color": palette[pool]},
        )
    return chart("chart-cost", figure, caption)


def frontier(
    points: dict[str, list[tuple[float | None, float | None, str]]], title: str, caption: str = ""
) -> Chart:
    """Cost per month against p95 wait, one marker per variant (its label on hover) and a colour per
    model: the sizes to the lower left are the efficient ones."""
    figure = _figure(title, "cost per month (USD)", "p95 wait (hours)")
    palette = colours(list(points))
    for model, rows in points.items():
        shown = [(c, w, label) for c, w, label in rows if c is not None and w is not None]
        figure.add_scatter(
            name=text(model),
            mode="markers",
            x=_rounded([c for c, _, _ in shown], 2),
            y=_rounded([w / HOUR for _, w, _ in shown if w is not None]),
            text=[text(label) for _, _, label in shown],
            hovertemplate="%{text}<br>%{x:$,.0f} a month, p95 wait %{y:.2f} h<extra></extra>",
            marker={"color": palette[model], "size": 9},
        )
    return chart("chart-frontier", figure, caption)


def heatmap(
    chart_id: str,
    title: str,
    x: tuple[str, Sequence[str]],
    y: tuple[str, Sequence[str]],
    values: Sequence[Sequence[float | None]],
    unit: str,
    caption: str = "",
) -> Chart:
    """A figure over a two-field grid (rows ``y``, columns ``x``: each a field and its values)."""
    figure = _figure(title, text(x[0]), text(y[0]))
    figure.data.append(
        {
            "type": "heatmap",
            "x": [text(v) for v in x[1]],
            "y": [text(v) for v in y[1]],
            "z": [_rounded(row, 3) for row in values],
            "colorscale": "Viridis",
            "colorbar": {"title": {"text": text(unit)}},
            "hovertemplate": "%{x}, %{y}: %{z}<extra></extra>",
        }
    )
    figure.axis("xaxis", type="category")
    figure.axis("yaxis", type="category")
    return chart(chart_id, figure, caption)
