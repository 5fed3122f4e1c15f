"""Scheduling passes of the batch engine, registered by the names of the Slurm model's options.

``--backfill none`` is strict FIFO (a blocked head blocks everyone); ``--backfill easy`` is EASY
backfilling (only the queue head holds a reservation); ``--backfill slurm`` is Slurm's own backfill
(``SchedulerType=sched/backfill``), with the main scheduler on slurmctld's clock (``sched_interval``,
``batch_sched_delay``, ``default_queue_depth``): every ``bf_interval`` seconds each tested job, up to
``bf_max_job_test``, starts now or reserves the earliest slot within ``bf_window`` in a time profile
kept at ``bf_resolution`` on the epoch clock, with cycles every ``bf_interval`` from slurmctld's start
(see ``_core/policies.c`` and ``_core/backfill_map.c``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.sim.engine.core import compiled_passes
from gpuplan.sim.registry import Registry


@dataclass(frozen=True)
class CompiledPass:
    """A scheduling pass compiled into the engine (``_core/policies.c``)."""

    compiled_name: str
    description: str
    parameters: tuple[str, ...] = ()  # names of the settings the pass reads, in order

    def __post_init__(self) -> None:
        if self.compiled_name not in compiled_passes():
            raise ValueError(f"the engine has no compiled pass {self.compiled_name!r}")


BACKFILL = Registry[CompiledPass]("--backfill")
BACKFILL.register("none", CompiledPass("fifo", "strict FIFO: start from the head while the head fits"))
BACKFILL.register(
    "easy", CompiledPass("easy", "EASY backfill: the head reserves at its shadow time, others backfill")
)
BACKFILL.register(
    "slurm",
    CompiledPass(
        "slurm",
        "Slurm backfill: every tested job starts now or reserves its earliest slot",
        (
            "bf_interval_s",
            "bf_window_s",
            "bf_resolution_s",
            "bf_max_job_test",
            "clock_epoch_s",
            "controller_start_s",
            "bf_max_job_user",
            "sched_interval_s",
            "batch_sched_delay_s",
            "default_queue_depth",
        ),
    ),
)
