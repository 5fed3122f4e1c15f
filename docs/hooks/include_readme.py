"""MkDocs hook: a page whose Markdown is only ``<!-- include: PATH -->`` shows the repository file PATH
(e.g. ``bench/fidelity_slurm/README.md``), which stays where it is and is read at each build.

Those files are written for GitHub's Markdown, whose tables read ``\\|`` as a pipe even inside a code
span (``setup.sh [--config a\\|b]``). Python-Markdown keeps the backslash there, and needs no escape:
it never splits a table row inside a code span. So in table rows the escape is dropped within code.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

INCLUDE = re.compile(r"^\s*<!-- include: (?P<path>\S+) -->\s*$")
CODE_SPAN = re.compile(r"`[^`\n]*`")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The included file's text in place of the page's include line."""
    match = INCLUDE.match(markdown)
    if match is None:
        return markdown
    root = Path(config.config_file_path).parent
    path = root / match["path"]
    if not path.is_file():
        raise PluginError(f"{page.file.src_path}: includes {match['path']}, which is not a file")
    return "\n".join(_unescape_code_pipes(line) for line in path.read_text(encoding="utf-8").split("\n"))


def _unescape_code_pipes(line: str) -> str:
    if not line.lstrip().startswith("|"):
        return line
    return CODE_SPAN.sub(lambda span: span[0].replace("\\|", "|"), line)
