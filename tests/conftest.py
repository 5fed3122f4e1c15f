"""Fixtures shared by every folder of tests/. The builders themselves are in builders.py, importable
from every folder (``pythonpath`` in pyproject.toml's ``[tool.pytest.ini_options]``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builders import SHARED_TRACES, require


@pytest.fixture
def shared_trace() -> Callable[[str], Path]:
    """The path of a real trace under ../shared/traces, by its path there
    (``"gpu/philly_jobs_adaptdl.csv.gz"``; ``"swf"``: the folder); the test is skipped when it is absent."""
    return lambda relative: require(SHARED_TRACES / relative)
