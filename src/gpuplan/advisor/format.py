"""Figures as a reader expects them: hours for waits, percentages for shares, dollars for cost.

Shared by the advisor's reasons and both reports, so the same figure reads the same everywhere."""

from __future__ import annotations

import math


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def value(figure: float | str | None, unit: str | None) -> str:
    """``figure`` in ``unit`` (share, seconds, usd, count, ratio); an answer string as it is."""
    if figure is None:
        return "-"
    if isinstance(figure, str):
        return figure
    if isinstance(figure, float) and not math.isfinite(figure):
        return str(figure)
    if unit == "share":
        return f"{figure:.1%}"
    if unit == "seconds":
        return duration(figure)
    if unit == "usd":
        return f"${figure:,.0f}"
    if unit == "count":
        return f"{figure:,.0f}"
    return f"{figure:,.2f}"
