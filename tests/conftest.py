"""Fixtures shared by every folder of tests/. The builders themselves are in builders.py, importable
from every folder (``pythonpath`` in pyproject.toml's ``[tool.pytest.ini_options]``)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

PURE_PYTHON = "GPUPLAN_TEST_PURE_PYTHON"  # set: gpuplan's mypyc-compiled modules run from their source


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Imports a gpuplan module compiled by mypyc (setup.py) from its ``.py`` source beside it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith("gpuplan."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or not spec.origin.endswith(".so"):
            return None
        source = Path(spec.origin).with_name(fullname.rpartition(".")[2] + ".py")
        return importlib.util.spec_from_file_location(fullname, source) if source.exists() else None


if os.environ.get(PURE_PYTHON):
    sys.meta_path.insert(0, _SourceFirst())

from builders import SHARED_TRACES, require  # noqa: E402  (imports gpuplan: after the finder)


def _compiled() -> bool:
    import gpuplan.sim.kubernetes.model

    return not (gpuplan.sim.kubernetes.model.__file__ or "").endswith(".py")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "pure_python: patches or subclasses classes of the Kubernetes model, which compiled by mypyc "
        "allow neither; run in a child pytest on the modules' source where they are compiled",
    )


def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if pyfuncitem.get_closest_marker("pure_python") is None or os.environ.get(PURE_PYTHON) or not _compiled():
        return None  # run here
    env = {**os.environ, PURE_PYTHON: "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", pyfuncitem.nodeid]
    child = subprocess.run(command, cwd=pyfuncitem.config.rootpath, env=env, capture_output=True, text=True)
    assert child.returncode == 0, f"in pure Python:\n{child.stdout}{child.stderr}"
    assert " passed" in child.stdout, child.stdout  # ran, not skipped or deselected
    return True


@pytest.fixture
def shared_trace() -> Callable[[str], Path]:
    """The path of a real trace under ../shared/traces, by its path there
    (``"gpu/philly_jobs_adaptdl.csv.gz"``; ``"swf"``: the folder); the test is skipped when it is absent."""
    return lambda relative: require(SHARED_TRACES / relative)
