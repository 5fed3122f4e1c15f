"""The hybrid model's settings and their one translation from a scenario (``prepare``): its
``models.hybrid`` (routing, split, lending) with each side's own settings."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpuplan.errors import InputError
from gpuplan.scenario.hybrid import HybridSettings
from gpuplan.sim.kubernetes import settings as kubernetes
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings
from gpuplan.sim.slurm import settings as slurm
from gpuplan.sim.slurm.settings import SlurmSettings

if TYPE_CHECKING:
    from gpuplan.inputs import Input
    from gpuplan.sim.models import ModelSetup


@dataclass(frozen=True)
class HybridModelSettings:
    """``models.hybrid`` and the settings each side runs with; ``split_lines`` (per pool, the line
    of ``models.hybrid.split.POOL`` in ``path``) place an error in a split that cannot hold a job."""

    hybrid: HybridSettings = field(default_factory=HybridSettings)
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    kubernetes: KubernetesModelSettings = field(default_factory=KubernetesModelSettings)
    path: Path | None = None
    split_lines: dict[str, int | None] = field(default_factory=dict)


def prepare(loaded: Input) -> ModelSetup[HybridModelSettings]:
    """A scenario's ``models.hybrid``, ``models.slurm`` and ``models.kubernetes`` on its pools."""
    if loaded.scenario is None:
        raise InputError(
            "the hybrid model needs a scenario (its models.hybrid routes and splits)", field="--model"
        )
    from gpuplan.sim.models import ModelSetup

    scenario = loaded.scenario
    section = scenario.scenario.models.hybrid
    settings = HybridModelSettings(
        hybrid=section,
        slurm=slurm.prepare(loaded).settings,
        kubernetes=kubernetes.prepare(loaded).settings,
        path=scenario.path,
        split_lines={name: scenario.line_of(("models", "hybrid", "split", name)) for name in section.split},
    )
    return ModelSetup(loaded.pools, settings)


def with_backfill(settings: HybridModelSettings, backfill: str) -> HybridModelSettings:
    """``gpuplan simulate --backfill`` for the Slurm side."""
    return replace(settings, slurm=slurm.with_backfill(settings.slurm, backfill))
