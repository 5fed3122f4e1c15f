"""Scheduling passes of the batch engine, registered by the names of the Slurm model's options.

``--backfill none`` is strict FIFO (a blocked head blocks everyone); ``--backfill easy`` is EASY
backfilling (only the queue head holds a reservation). Slurm's own backfill, where every tested
job reserves (``SchedulerType=sched/backfill`` with ``bf_window``, ``bf_resolution``,
``bf_max_job_test``), is the Slurm-model issue's mode ``slurm``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.sim.engine import compiled_passes
from gpuplan.sim.registry import Registry


@dataclass(frozen=True)
class CompiledPass:
    """A scheduling pass compiled into the engine (``_core/policies.c``)."""

    compiled_name: str
    description: str

    def __post_init__(self) -> None:
        if self.compiled_name not in compiled_passes():
            raise ValueError(f"the engine has no compiled pass {self.compiled_name!r}")


BACKFILL = Registry[CompiledPass]("--backfill")
BACKFILL.register("none", CompiledPass("fifo", "strict FIFO: start from the head while the head fits"))
BACKFILL.register(
    "easy", CompiledPass("easy", "EASY backfill: the head reserves at its shadow time, others backfill")
)
