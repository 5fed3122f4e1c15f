"""Scheduling passes of the batch engine, registered by the names of the Slurm model's options.

``--backfill none`` is strict FIFO (a blocked head blocks everyone); ``--backfill easy`` is EASY
backfilling (only the queue head holds a reservation); ``--backfill slurm`` is Slurm's own backfill
(``SchedulerType=sched/backfill``), with the main scheduler on slurmctld's clock (``sched_interval``,
``batch_sched_delay``, ``default_queue_depth``): every ``bf_interval`` seconds each tested job, up to
``bf_max_job_test``, starts now or reserves the earliest slot within ``bf_window`` in a time profile
kept at ``bf_resolution`` on the epoch clock, with cycles every ``bf_interval`` from slurmctld's start
(see ``_core/policies.c`` and ``_core/backfill_map.c``).

Each option names a compiled scheduling piece (``sched/builtin``, ``sched/easy``,
``sched/backfill``) and the settings it reads by name; node choice is a select piece: Slurm's
``select/cons_tres`` or ``select/linear`` (best fit over runs of consecutive free nodes) with Slurm's
backfill, the lowest-numbered free nodes (``select/first_fit``) with the textbook passes, whose
published simulators place jobs so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplan.sim.engine.core import PieceInputs, compiled_pieces
from gpuplan.sim.registry import Registry
from gpuplan.workload.jobtable import Int32


@dataclass(frozen=True)
class CompiledPass:
    """A scheduling pass compiled into the engine (``_core/policies.c``), by its plugin name."""

    plugin: str
    description: str
    parameters: tuple[str, ...] = ()  # names of the settings the pass reads
    slurm_placement: bool = False  # Slurm's select plugins choose the nodes (else the lowest-numbered)

    def __post_init__(self) -> None:
        if self.plugin not in compiled_pieces()["scheduler"]:
            raise ValueError(f"the engine has no compiled pass {self.plugin!r}")

    def scheduler(self, settings: Mapping[str, float | int], users: Int32 | None = None) -> PieceInputs:
        """The pass with its ``settings`` (by name, those of ``parameters``) and, when it limits the
        jobs tested per user (``bf_max_job_user``), each job's user."""
        per_job = {"users": users} if users is not None and "bf_max_job_user" in self.parameters else {}
        return PieceInputs(self.plugin, settings, per_job)

    def select(self, select_type: str) -> PieceInputs:
        """The node-choice piece for ``SelectType`` (``cons_tres`` or ``linear``) under this pass."""
        return PieceInputs(f"select/{select_type}" if self.slurm_placement else "select/first_fit")


BACKFILL = Registry[CompiledPass]("--backfill")
BACKFILL.register(
    "none", CompiledPass("sched/builtin", "strict FIFO: start from the head while the head fits")
)
BACKFILL.register(
    "easy",
    CompiledPass("sched/easy", "EASY backfill: the head reserves at its shadow time, others backfill"),
)
BACKFILL.register(
    "slurm",
    CompiledPass(
        "sched/backfill",
        "Slurm backfill: every tested job starts now or reserves its earliest slot",
        (
            "bf_interval_s",
            "bf_window_s",
            "bf_resolution_s",
            "bf_max_job_test",
            "clock_epoch_s",
            "controller_start_s",
            "main_loop_start_s",
            "backfill_start_s",
            "bf_max_job_user",
            "sched_interval_s",
            "batch_sched_delay_s",
            "default_queue_depth",
        ),
        slurm_placement=True,
    ),
)
