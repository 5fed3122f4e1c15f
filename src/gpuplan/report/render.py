"""Rendering the report sections to ``report.html`` (Jinja2 with autoescape, Plotly inlined) and
``report.md`` (the same sections as Markdown tables)."""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import Path

import jinja2
from markupsafe import Markup

from gpuplan import __version__
from gpuplan.report.context import Section, Table
from gpuplan.results.files import write_text

HTML_TEMPLATE = "report.html.j2"
MD_TEMPLATE = "report.md.j2"


@cache
def plotly_js() -> str:
    """Plotly's bundled JavaScript, to inline: the report opens with no network."""
    # imported by name: plotly ships no type information, and only this one function is used
    offline = importlib.import_module("plotly.offline")
    # a literal "</script" inside the code would end the element early
    return str(offline.get_plotlyjs()).replace("</script", "<\\/script")


def _md(text: object) -> str:
    """Plain text as Markdown: characters Markdown or HTML would interpret are backslash-escaped."""
    return re.sub(r"([\\`*_{}\[\]<>#|!~])", r"\\\1", " ".join(str(text).split()))


def _code(text: object) -> str:
    return str(text).replace("`", "'")


def md_table(table: Table) -> str:
    lines = ["| " + " | ".join(_md(c) for c in table.columns) + " |"]
    lines.append("|" + " --- |" * len(table.columns))
    lines += ["| " + " | ".join(_md(c) or " " for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


@cache
def _environments() -> tuple[jinja2.Environment, jinja2.Environment]:
    loader = jinja2.PackageLoader("gpuplan.report", "templates")
    html = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
    markdown = jinja2.Environment(
        loader=loader,
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    markdown.filters.update(md=_md, code=_code, md_table=md_table)
    return html, markdown


def render(title: str, input_path: str | None, sections: list[Section]) -> tuple[str, str]:
    """report.html and report.md for ``sections``."""
    html, markdown = _environments()
    context = {"title": title, "input_path": input_path, "sections": sections, "version": __version__}
    page = html.get_template(HTML_TEMPLATE).render(plotly_js=Markup(plotly_js()), **context)
    text = markdown.get_template(MD_TEMPLATE).render(**context)
    return page, re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def write(out: Path, title: str, input_path: str | None, sections: list[Section]) -> list[Path]:
    page, text = render(title, input_path, sections)
    return [write_text(out / "report.html", page), write_text(out / "report.md", text)]
