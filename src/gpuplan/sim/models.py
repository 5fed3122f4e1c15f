"""The model contract: every operating model by name, run on a workload, pools and its own settings.

``MODELS`` holds the models (``gpuplan simulate --model`` and ``compare`` take their names from it).
Each has one settings type and one translation into it (``prepare``: from a scenario's
``models.<name>``, or the defaults for a trace, with the pools the model sees), and one entry
point, ``run(workload, pools, settings) -> ModelRun``, that knows nothing of commands, inputs or
files. The settings object ``prepare`` returns is the one the model runs on and echoes in
summary.json; rendering and sizing start from it and change it in memory.

Every model returns the same outcome (``gpuplan.sim.outcome.ModelRun``): one row per job with its
state and, for a job that did not run or waited, the scheduler's own reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from gpuplan.errors import InputError
from gpuplan.sim.registry import Registry

if TYPE_CHECKING:
    from gpuplan.inputs import Input
    from gpuplan.sim.cluster import Pool
    from gpuplan.sim.outcome import ModelRun
    from gpuplan.workload.workload import Workload

SettingsT = TypeVar("SettingsT")


@dataclass(frozen=True)
class ModelSetup(Generic[SettingsT]):
    """What a model runs on besides its workload: the pools it sees and its settings."""

    pools: list[Pool]
    settings: SettingsT


@dataclass(frozen=True)
class _Entry:
    """``module:function``, imported on first call: the registry's names cost no import (the CLI
    lists them), a model's code is loaded when it runs (or by ``load``)."""

    path: str

    def __call__(self, *args: Any) -> Any:
        module, name = self.path.split(":")
        return getattr(importlib.import_module(module), name)(*args)

    def load(self) -> None:
        importlib.import_module(self.path.split(":")[0])


def _entry(path: str) -> Callable[..., Any]:
    return _Entry(path)


@dataclass(frozen=True)
class OperatingModel(Generic[SettingsT]):
    """One operating model: its translation from the input, its entry point, and how
    ``simulate --backfill`` changes its settings (None: the option does not apply)."""

    name: str
    prepare: Callable[[Input], ModelSetup[SettingsT]]
    run: Callable[[Workload, list[Pool], SettingsT], ModelRun]
    with_backfill: Callable[[SettingsT, str], SettingsT] | None = None

    def setup(self, loaded: Input, backfill: str | None = None) -> ModelSetup[SettingsT]:
        """``prepare`` and, when given, the ``--backfill`` mode."""
        self.check_backfill(backfill)
        setup = self.prepare(loaded)
        if backfill is None or self.with_backfill is None:
            return setup
        return ModelSetup(setup.pools, self.with_backfill(setup.settings, backfill))

    def load(self) -> None:
        """Import the model's code now: worker processes forked after this start with it loaded,
        instead of each importing it again (0.3 s for the hybrid's, uncompiled)."""
        for entry in (self.prepare, self.run, self.with_backfill):
            if isinstance(entry, _Entry):
                entry.load()

    def check_backfill(self, backfill: str | None) -> None:
        """``--backfill`` given to a model it does not apply to is an input error (before any
        input is read)."""
        if backfill is not None and self.with_backfill is None:
            takes = " and ".join(name for name in MODELS if MODELS.get(name).with_backfill is not None)
            raise InputError(f"applies to the {takes} models, not {self.name}", field="--backfill")


MODELS = Registry[OperatingModel[Any]]("--model")
for _model in (
    OperatingModel(
        "slurm",
        _entry("gpuplan.sim.slurm.settings:prepare"),
        _entry("gpuplan.sim.slurm.model:run_slurm"),
        _entry("gpuplan.sim.slurm.settings:with_backfill"),
    ),
    OperatingModel(
        "kubernetes",
        _entry("gpuplan.sim.kubernetes.settings:prepare"),
        _entry("gpuplan.sim.kubernetes.model:run_kubernetes"),
    ),
    OperatingModel(
        "hybrid",
        _entry("gpuplan.sim.hybrid.settings:prepare"),
        _entry("gpuplan.sim.hybrid.model:run_hybrid"),
        _entry("gpuplan.sim.hybrid.settings:with_backfill"),
    ),
):
    MODELS.register(_model.name, _model)


def run_model(name: str, workload: Workload, pools: list[Pool], settings: Any) -> ModelRun:
    """Run the model ``name`` (an InputError names the known ones)."""
    model: OperatingModel[Any] = MODELS.get(name)
    return model.run(workload, pools, settings)


def run_input(name: str, loaded: Input, backfill: str | None = None) -> ModelRun:
    """The model ``name`` on an input, with the settings its translation gives."""
    model: OperatingModel[Any] = MODELS.get(name)
    setup = model.setup(loaded, backfill)
    return model.run(loaded.workload, setup.pools, setup.settings)
