"""The Slurm model's settings, named and defaulted as slurm.conf, and their one translation from a
scenario's ``models.slurm`` (``from_scenario``). This object is what the model runs on, what the
settings echo in summary.json shows (``echo``) and what rendering and sizing start from."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpuplan.sim.engine.core import PowerSaving
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.preemption import DEFAULT_REQUEUE_DELAY_S
from gpuplan.sim.slurm.priority import MultifactorSettings
from gpuplan.sim.slurm.qos import Qos
from gpuplan.sim.slurm.reservations import Reservation
from gpuplan.sim.slurm.topology import Topology

if TYPE_CHECKING:
    from gpuplan.inputs import Input
    from gpuplan.scenario.model import SlurmSection
    from gpuplan.sim.models import ModelSetup


# How long after slurmctld's start its decay thread starts, and with it the PriorityCalcPeriod ticks
# (priority_multifactor.c:_decay_thread sets its timer when it starts and sleeps a period after
# each pass; the priority plugin is loaded, and the thread started, after slurmctld has read its
# state at start-up): 0.83 s, the median over the 22 real replays of bench/fidelity_slurm (0.74 to
# 1.05 s; slurmctld's "started" log line to its first decay tick, less whole periods).
DECAY_THREAD_LAG_S = 0.83


@dataclass(frozen=True)
class SlurmSettings:
    """Scheduler settings, named and defaulted as in slurm.conf (SchedulerParameters)."""

    backfill: str = "slurm"  # none | easy | slurm
    bf_interval: int = 30  # seconds between backfill cycles
    bf_window: int = 1440  # minutes ahead a job may be reserved
    bf_resolution: int = 60  # seconds: granularity of the time profile
    bf_max_job_test: int = 500  # jobs tested per backfill cycle
    bf_max_job_user: int = 0  # jobs of one user tested per backfill cycle (0: no limit)
    # the main scheduler's clock (backfill "slurm"; none/easy pass at every event)
    sched_interval: int = 60  # seconds between its full passes (-1: none)
    batch_sched_delay: int = 3  # seconds at least between its passes for submissions and job ends
    default_queue_depth: int = 100  # jobs those passes test
    priority_type: str = "basic"  # PriorityType: priority/basic (FCFS) | priority/multifactor
    multifactor: MultifactorSettings = field(default_factory=MultifactorSettings)
    qos: tuple[Qos, ...] = ()  # besides "normal"
    partitions: tuple[Partition, ...] = ()  # besides one per pool that none covers
    reservations: tuple[Reservation, ...] = ()  # advance reservations (scontrol create reservation)
    topology: Topology | None = None  # TopologyPlugin: topology/block or topology/tree
    select_type: str = "cons_tres"  # SelectType: cons_tres (per-GPU) | linear (whole nodes)
    # SelectTypeParameters: CR_Core (CPUs consumed) | CR_Core_Memory (CPUs and memory). Slurm's own
    # default is CR_Core_Memory (cons_common.c:select_p_node_init); gpuplan's is CR_Core, so that a
    # scenario stating no memory shares nodes by GPUs (see resources.py)
    select_type_parameters: str = "CR_Core"
    def_cpu_per_gpu: int = 0  # DefCpuPerGPU (0: unset)
    def_mem_per_gpu: int = 0  # DefMemPerGPU, MB (0: unset)
    def_mem_per_cpu: int = 0  # DefMemPerCPU, MB (0: unset)
    def_mem_per_node: int = 0  # DefMemPerNode, MB (0: unset)
    # TRESBillingWeights (CPU=, Mem=, GRES/gpu=): what fair-share usage counts; unset: the job's CPUs
    tres_billing_weights: str = ""
    over_time_limit: int = 0  # OverTimeLimit, minutes a job may run past its time limit
    preempt_type: str = "none"  # PreemptType: none | partition_prio | qos
    preempt_mode: str = "off"  # PreemptMode (cluster-wide default): off | cancel | requeue | suspend
    requeue_delay_s: float = DEFAULT_REQUEUE_DELAY_S
    preempt_youngest_first: bool = False  # SchedulerParameters=preempt_youngest_first
    # when slurmctld started, on the workload's clock: its decay thread recalculates priorities
    # every PriorityCalcPeriod from then, and its backfill thread cycles every bf_interval
    controller_start_s: float = 0.0
    # when its decay thread started (priority_multifactor.c:_decay_thread): the PriorityCalcPeriod
    # ticks count from it; None: DECAY_THREAD_LAG_S after the controller (decay_phase_s)
    decay_start_s: float | None = None
    # when its background thread (the main scheduler's loop, controller.c:_slurmctld_background)
    # and its backfill thread (backfill.c:backfill_agent) started; None: with the controller
    main_loop_start_s: float | None = None
    backfill_start_s: float | None = None
    # AccountingStorageEnforce; without "limits" a job's use after the last decay tick is lost
    accounting_storage_enforce: tuple[str, ...] = ("associations", "limits", "qos")
    # power saving (power_save.c): SuspendTime (None: INFINITE, off) and ResumeTimeout, the
    # cluster's (a partition's own win for its nodes), and how long a node takes to boot
    # (gpuplan's; None: its ResumeTimeout)
    suspend_time_s: float | None = None
    resume_timeout_s: float = 60.0
    node_boot_s: float | None = None

    def power_saving(self, pool: str) -> PowerSaving | None:
        """Power saving on ``pool``'s nodes: the highest SuspendTime and ResumeTimeout of the
        partitions over it that set one, else the cluster's (power_save.c:_set_partition_options);
        None when its SuspendTime is INFINITE."""
        over = [p for p in self.partitions if p.pool == pool]
        suspends = [p.suspend_time_s for p in over if p.suspend_time_s is not None]
        timeouts = [p.resume_timeout_s for p in over if p.resume_timeout_s is not None]
        suspend = max(suspends) if suspends else self.suspend_time_s
        if suspend is None:
            return None
        timeout = max(timeouts) if timeouts else self.resume_timeout_s
        return PowerSaving(suspend, timeout if self.node_boot_s is None else self.node_boot_s)

    def decay_phase_s(self) -> float:
        """When the decay thread's PriorityCalcPeriod ticks count from: ``decay_start_s``, else
        DECAY_THREAD_LAG_S after the controller's start."""
        if self.decay_start_s is not None:
            return self.decay_start_s
        return self.controller_start_s + DECAY_THREAD_LAG_S

    def params(self, names: tuple[str, ...], epoch_s: float = 0.0) -> dict[str, float | int]:
        """The scheduling pass's settings ``names`` by name, in the units the engine reads (seconds;
        ``epoch_s`` is the Unix time of t = 0, for the rounding on Slurm's epoch clock)."""
        values: dict[str, float | int] = {
            "bf_interval_s": float(self.bf_interval),
            "bf_window_s": 60.0 * self.bf_window,
            "bf_resolution_s": float(self.bf_resolution),
            "bf_max_job_test": self.bf_max_job_test,
            "bf_max_job_user": self.bf_max_job_user,
            "clock_epoch_s": epoch_s,
            "controller_start_s": self.controller_start_s,
            "main_loop_start_s": math.nan if self.main_loop_start_s is None else self.main_loop_start_s,
            "backfill_start_s": math.nan if self.backfill_start_s is None else self.backfill_start_s,
            "sched_interval_s": float(self.sched_interval),
            "batch_sched_delay_s": float(self.batch_sched_delay),
            "default_queue_depth": self.default_queue_depth,
        }
        return {name: values[name] for name in names}

    def echo(self) -> dict[str, Any]:
        """The settings that matter for the chosen modes, for summary.json."""
        echoed: dict[str, Any] = {"backfill": self.backfill, "select_type": self.select_type}
        if self.select_type == "cons_tres" and self.backfill == "slurm":
            echoed["select_type_parameters"] = self.select_type_parameters
            for name in ("def_cpu_per_gpu", "def_mem_per_gpu", "def_mem_per_cpu", "def_mem_per_node"):
                if getattr(self, name):
                    echoed[name] = getattr(self, name)
        if self.over_time_limit:
            echoed["over_time_limit"] = self.over_time_limit
        if self.backfill == "slurm":
            echoed |= {
                "bf_interval": self.bf_interval,
                "bf_window": self.bf_window,
                "bf_resolution": self.bf_resolution,
                "bf_max_job_test": self.bf_max_job_test,
                "bf_max_job_user": self.bf_max_job_user,
                "sched_interval": self.sched_interval,
                "batch_sched_delay": self.batch_sched_delay,
                "default_queue_depth": self.default_queue_depth,
            }
        if self.controller_start_s:
            echoed["controller_start_s"] = self.controller_start_s
        for name in ("decay_start_s", "main_loop_start_s", "backfill_start_s"):
            if getattr(self, name) is not None:
                echoed[name] = getattr(self, name)
        if self.priority_type == "multifactor":
            echoed["accounting_storage_enforce"] = list(self.accounting_storage_enforce)
            echoed["tres_billing_weights"] = self.tres_billing_weights
        if self.priority_type == "multifactor":
            echoed |= {"priority_type": "multifactor", **asdict(self.multifactor)}
        if self.qos:
            echoed["qos"] = [asdict(qos) for qos in self.qos]
        if self.partitions:
            echoed["partitions"] = [asdict(partition) for partition in self.partitions]
        if self.reservations:
            echoed["reservations"] = [asdict(reservation) for reservation in self.reservations]
        if self.topology is not None:
            echoed["topology"] = asdict(self.topology)
        if self.preempt_type != "none":
            echoed |= {"preempt_type": self.preempt_type, "preempt_mode": self.preempt_mode}
            if self.preempt_youngest_first:
                echoed["preempt_youngest_first"] = True
        if self.suspend_time_s is not None or any(p.suspend_time_s is not None for p in self.partitions):
            echoed |= {"suspend_time": self.suspend_time_s, "resume_timeout": self.resume_timeout_s}
            if self.node_boot_s is not None:
                echoed["node_boot_time"] = self.node_boot_s
        return echoed


def whole_minutes(duration_s: float) -> float:
    """A reservation's Duration as Slurm keeps it: whole minutes, seconds rounded up
    (parse_time.c:time_str2mins, which scontrol create reservation reads Duration with): 90 s holds
    the nodes 120 s."""
    return math.ceil(duration_s / 60.0) * 60.0


def from_scenario(spec: SlurmSection) -> SlurmSettings:
    """The Slurm model's settings from a scenario's ``models.slurm`` (seconds where the scenario
    gives durations with units; the names slurm.conf and sacctmgr use)."""
    return SlurmSettings(
        backfill=spec.backfill,
        bf_interval=spec.bf_interval,
        bf_window=spec.bf_window,
        bf_resolution=spec.bf_resolution,
        bf_max_job_test=spec.bf_max_job_test,
        bf_max_job_user=spec.bf_max_job_user,
        sched_interval=spec.sched_interval,
        batch_sched_delay=spec.batch_sched_delay,
        default_queue_depth=spec.default_queue_depth,
        priority_type=spec.priority_type,
        multifactor=MultifactorSettings(
            weight_age=spec.priority_weight_age,
            weight_fairshare=spec.priority_weight_fairshare,
            weight_job_size=spec.priority_weight_job_size,
            max_age_s=spec.priority_max_age,
            decay_half_life_s=spec.priority_decay_half_life,
            calc_period_s=spec.priority_calc_period,
            usage_reset_period=spec.priority_usage_reset_period,
            fairshare=spec.fairshare,
            weight_qos=spec.priority_weight_qos,
            weight_partition=spec.priority_weight_partition,
        ),
        qos=tuple(
            Qos(
                q.name,
                q.priority,
                q.max_gpus_per_user,
                q.max_jobs_per_user,
                q.grp_gpus,
                q.max_wall,
                tuple(q.preempt),
                q.preempt_mode,
                q.grace_time,
                q.usage_factor,
            )
            for q in spec.qos
        ),
        partitions=tuple(
            Partition(
                p.name,
                p.pool,
                p.priority_tier,
                p.priority_job_factor,
                p.max_time,
                p.default_time,
                None if p.allow_accounts is None else tuple(p.allow_accounts),
                p.preempt_mode,
                p.grace_time,
                p.exclusive,
                p.def_cpu_per_gpu,
                p.def_mem_per_gpu,
                p.def_mem_per_cpu,
                p.def_mem_per_node,
                p.suspend_time,
                p.resume_timeout,
            )
            for p in spec.partitions
        ),
        select_type=spec.select_type,
        select_type_parameters=spec.select_type_parameters,
        def_cpu_per_gpu=spec.def_cpu_per_gpu,
        def_mem_per_gpu=spec.def_mem_per_gpu,
        def_mem_per_cpu=spec.def_mem_per_cpu,
        def_mem_per_node=spec.def_mem_per_node,
        tres_billing_weights=spec.tres_billing_weights,
        over_time_limit=spec.over_time_limit,
        controller_start_s=spec.controller_start,
        decay_start_s=spec.decay_start,
        main_loop_start_s=spec.main_loop_start,
        backfill_start_s=spec.backfill_start,
        accounting_storage_enforce=tuple(spec.accounting_storage_enforce),
        topology=None
        if spec.topology is None
        else Topology(spec.topology.plugin, spec.topology.nodes_per_block, spec.topology.require),
        reservations=tuple(
            Reservation(
                r.name, r.pool, r.nodes, r.start, whole_minutes(r.duration), tuple(r.accounts), r.repeat
            )
            for r in spec.reservations
        ),
        preempt_type=spec.preempt_type,
        preempt_mode=spec.preempt_mode,
        requeue_delay_s=spec.requeue_delay,
        preempt_youngest_first=spec.preempt_youngest_first,
        suspend_time_s=spec.suspend_time,
        resume_timeout_s=spec.resume_timeout,
        node_boot_s=spec.node_boot_time,
    )


def prepare(loaded: Input) -> ModelSetup[SlurmSettings]:
    """The scenario's ``models.slurm`` on its pools; Slurm's defaults on a trace's pool."""
    from gpuplan.sim.models import ModelSetup

    if loaded.scenario is None:
        return ModelSetup(loaded.pools, SlurmSettings())
    return ModelSetup(loaded.pools, from_scenario(loaded.scenario.scenario.models.slurm))


def with_backfill(settings: SlurmSettings, backfill: str) -> SlurmSettings:
    """``gpuplan simulate --backfill``: another backfill mode than the scenario's."""
    return replace(settings, backfill=backfill)
