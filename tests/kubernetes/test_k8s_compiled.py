"""The Kubernetes model's modules are compiled by mypyc when gpuplan is installed (setup.py), and the
tests that patch or subclass them run on their source (``pure_python``, tests/conftest.py)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

import gpuplan
import gpuplan.sim.kubernetes.model

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(gpuplan.__file__).parent


def compiled_sources() -> list[Path]:
    """The modules setup.py compiles (pyproject.toml's [tool.gpuplan] mypyc), in the installed package."""
    paths = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["gpuplan"]["mypyc"]
    return [PACKAGE / path for path in paths]


@pytest.mark.skipif(os.environ.get("GPUPLAN_MYPYC") == "0", reason="built with GPUPLAN_MYPYC=0: not compiled")
def test_the_installed_kubernetes_model_is_compiled() -> None:
    sources = compiled_sources()
    assert PACKAGE / "sim" / "kubernetes" / "model.py" in sources
    for source in sources:
        assert source.exists(), f"{source} is listed but not there"
        assert list(source.parent.glob(f"{source.stem}.*.so")), f"{source} is not compiled"


@pytest.mark.skipif(PACKAGE.parent.name != "src", reason="an installed copy: built from its own source")
def test_the_compiled_modules_are_built_from_the_source_beside_them() -> None:
    # an editable install (pip install -e .) compiles in place: a module edited since runs its old
    # build until `pip install --no-deps -e .` builds it again
    stale = [
        built.name
        for source in compiled_sources()
        for built in source.parent.glob(f"{source.stem}.*.so")
        if built.stat().st_mtime < source.stat().st_mtime
    ]
    assert not stale, f"rebuild (pip install --no-deps -e .): {stale} older than their source"


@pytest.mark.pure_python
def test_a_pure_python_test_runs_on_the_source() -> None:
    assert gpuplan.sim.kubernetes.model.__file__.endswith("model.py")


@pytest.mark.parametrize("model", ["kubernetes", "hybrid"])
def test_an_outcome_survives_pickling(model: str) -> None:
    # compare and sweeps run models in worker processes: what a run returns crosses by pickle, and
    # a class compiled by mypyc has no __dict__ for pickle's default to restore
    import pickle

    from gpuplan.inputs import load_input
    from gpuplan.results.files import jobs_table
    from gpuplan.sim.models import run_input

    from builders import EXAMPLES

    run = run_input(model, load_input(EXAMPLES / "k8s-kueue-jobs.yaml"))
    copy = pickle.loads(pickle.dumps(run))
    assert jobs_table(copy).equals(jobs_table(run))  # node lists included: placements and pools
    assert [schedule.pool for schedule in copy.pools] == [schedule.pool for schedule in run.pools]
