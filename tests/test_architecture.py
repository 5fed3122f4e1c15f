"""The seams issue 14 drew: the model contract below the commands, no import circle, one registry.

The import graph is read from the source (``ast``): every import, in functions too (a lazy import
that closes a circle still ties the two modules together), except those under ``TYPE_CHECKING``
(they never run)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from gpuplan.scenario.model import ModelName
from gpuplan.sim.models import MODELS

from builders import EXAMPLES

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "gpuplan"
COMMANDS = ("gpuplan.simulate", "gpuplan.compare", "gpuplan.recommend", "gpuplan.inspect", "gpuplan.cli")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The gpuplan modules ``path`` imports (and the names it imports from them)."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import):
                names.update(alias.name for alias in inner.names)
            elif isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                names.add(inner.module)
                names.update(f"{inner.module}.{alias.name}" for alias in inner.names)
    return {name for name in names if name.startswith("gpuplan")}


GRAPH = {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}
MODULES = set(GRAPH)


def test_nothing_in_sim_imports_a_command_module() -> None:
    for path in (PACKAGE / "sim").rglob("*.py"):
        text = path.read_text()
        for command in COMMANDS:
            assert f"import {command}" not in text and f"from {command} import" not in text, (
                f"{path.relative_to(SRC)} imports the command module {command}"
            )


def test_the_package_has_no_import_circle() -> None:
    edges = {
        module: {name for name in names if name in MODULES and name != module}
        for module, names in GRAPH.items()
    }
    # a package's __init__ imported by its own submodules is Python's normal import order, not a circle
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges[module]):
            if module.startswith(target + "."):
                continue
            if state.get(target) == 1:
                circle = [*stack[stack.index(target) :], target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)


def test_the_registry_lists_every_model_the_scenario_schema_names() -> None:
    assert list(MODELS) == list(get_args(ModelName))


def test_the_cli_offers_the_registry_s_models() -> None:
    from gpuplan.cli.simulate import Model

    assert [model.value for model in Model] == list(MODELS)


def test_listing_the_models_imports_no_model() -> None:
    """``gpuplan --help`` lists the models without loading any model's code."""
    import subprocess
    import sys

    script = "import sys, gpuplan.sim.models; print(sorted(m for m in sys.modules if 'gpuplan.sim.' in m))"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "gpuplan.sim.slurm" not in loaded and "gpuplan.sim.kubernetes" not in loaded, loaded


# what a trace's simulation never needs: a scenario's pydantic models and synthesis, the Kubernetes
# readers and model, pyarrow.compute
NOT_FOR_A_TRACE = (
    "gpuplan.scenario.model",
    "gpuplan.scenario.load",
    "gpuplan.scenario.kubernetes",
    "gpuplan.workload.synthesis",
    "gpuplan.workload.kueue_jobs",
    "gpuplan.workload.k8s_pods",
    "gpuplan.sim.kubernetes",
    "pyarrow.compute",
)


def test_simulating_a_trace_imports_no_scenario_module(tmp_path: Path) -> None:
    """Start-up time (issue 17): ``gpuplan simulate TRACE`` loads only what a trace needs."""
    import json
    import subprocess
    import sys

    trace = EXAMPLES / "lublin_256_first2000.swf.gz"
    script = (
        "import json, runpy, sys\n"
        f"sys.argv = ['gpuplan', 'simulate', {str(trace)!r}, '--quiet', '--out', {str(tmp_path)!r}]\n"
        "try:\n"
        "    runpy.run_module('gpuplan', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print('modules:', json.dumps(sorted(sys.modules)))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(json.loads(run.stdout.split("modules:")[-1]))
    assert (tmp_path / "summary.json").is_file()
    assert "gpuplan.sim.slurm.model" in loaded  # the simulation did run
    assert loaded.isdisjoint(NOT_FOR_A_TRACE), sorted(loaded.intersection(NOT_FOR_A_TRACE))


def test_the_scenario_offers_the_registered_scoring_strategies() -> None:
    """kube-scheduler's NodeResourcesFit ``scoringStrategy.type``: each name the scenario accepts is
    a registered piece, and each piece can be chosen."""
    from gpuplan.scenario.kubernetes import Scheduler
    from gpuplan.sim.kubernetes.scheduler import SCORING_STRATEGIES

    assert set(get_args(Scheduler.model_fields["scoringStrategy"].annotation)) == set(SCORING_STRATEGIES)
