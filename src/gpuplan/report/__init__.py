"""The architecture-review report: OUT/report.html (one offline file, Plotly inlined) and OUT/report.md
(the same content as Markdown tables), from saved results and the advisor's recommendation."""

from __future__ import annotations

from gpuplan.report.build import ReportResult, build_report, rebuild

__all__ = ["ReportResult", "build_report", "rebuild"]
