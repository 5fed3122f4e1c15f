"""The scenario file: an organisation's GPU pools, teams, workloads, policies and targets.

Every section is a pydantic model that refuses unknown keys (with a did-you-mean), so a misspelt
key is an error, not a silent default. Durations are strings like ``6h``; sizes ``2x8`` (nodes x
GPUs per node); rates ``20/day``. Numbers are strict (``StrictInt``, ``StrictFloat``): YAML's
``true`` is a boolean, not 1, and ``"4"`` is text, so both are refused where a number is meant (an
integer is still a number, 3 for 3.0). Names that become configuration keys (teams, pools,
partitions, QoS, reservations, Kueue's queues, cohorts, flavors, topologies and priority classes) are
letters, digits and ``-_.`` (gpuplan.scenario.names). ``gpuplan schema`` prints the JSON Schema for
editors.
References between sections (a workload's team and pool, a pool's shape) are checked by
``gpuplan.scenario.load`` so errors point at the line that names them.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictFloat, StrictInt, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from gpuplan.scenario.hybrid import HybridSettings
from gpuplan.scenario.kubernetes import MAX_REPLICAS, KubernetesSettings
from gpuplan.scenario.names import DisplayName, Name
from gpuplan.scenario.section import Section
from gpuplan.scenario.units import (
    MAX_DURATION_S,
    MAX_SIZE_GPUS_PER_NODE,
    MAX_SIZE_NODES,
    Duration,
    Rate,
    SizeMix,
    parse_size,
)
from gpuplan.sim.slurm.billing import billing_weights

Level = Literal["none", "low", "medium", "high"]
PreemptMode = Literal["off", "cancel", "requeue", "suspend"]

# Upper bounds of figures beyond any machine or organisation, so that a typo (an extra three zeros,
# 1e308) is an error naming its line rather than a simulation that runs out of memory. Each field's
# description states its bound.
MAX_NODES = MAX_SIZE_NODES  # nodes of a pool: the largest GPU clusters have some 25,000 nodes
MAX_GPUS_PER_NODE = MAX_SIZE_GPUS_PER_NODE  # a GB200 NVL72 rack has 72 GPUs
MAX_CPUS_PER_NODE = 4096
MAX_MEMORY_GB = 65536.0  # 64 TiB
MAX_MEMORY_MB_PER_NODE = int(MAX_MEMORY_GB * 1024)  # Slurm's MB are MiB
MAX_PRICE_PER_GPU_HOUR = 1000.0  # USD; list prices are 1-15
MAX_USERS = 100_000
MAX_SHARE = 1_000_000.0
MAX_FACTOR = 1000.0  # rate multipliers, ratios: peak_to_trough, burst factor, over_request
MAX_SIGMA = 10.0  # of a log: e^10 is a factor of 22,000 at one sigma
MAX_REQUESTS_PER_S = 1e9
MAX_GPUS = 10_000_000  # GPU counts of limits and quotas
UINT32_MAX = 4_294_967_295  # Slurm's priority weights and QOS priority are 32-bit unsigned


# ---- cluster -----------------------------------------------------------------------------------


class Pricing(Section):
    """How a pool's nodes are paid for, as Oracle prices them (gpuplan.cost). ``on_demand``: the list
    price per node-hour up. ``preemptible``: preemptible capacity, offered on VM shapes only (not
    bare metal) and reclaimable by Oracle (the simulation does not reclaim it). ``reserved``: a
    capacity reservation of ``reserved_nodes``, billed while reserved: nodes up at the price, the
    reserved nodes not up at the documented share of it."""

    option: Literal["on_demand", "preemptible", "reserved"] = "on_demand"
    committed_discount_percent: StrictFloat = Field(
        0.0,
        ge=0,
        lt=100,
        description="a committed-use (contract) discount off list, in percent: negotiated, not published",
    )
    reserved_nodes: StrictInt | None = Field(
        None, ge=0, le=MAX_NODES, description="nodes the capacity reservation holds (default: all the pool's)"
    )


class PoolSpec(Section):
    """A pool of identical GPU nodes: an OCI shape from the catalogue, or a custom node."""

    name: Name = Field(pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", description="lower-case DNS-style name")
    shape: str | None = Field(None, description="OCI shape, e.g. BM.GPU.H100.8 (see the catalogue)")
    nodes: StrictInt = Field(ge=1, le=MAX_NODES, description=f"nodes in the pool (at most {MAX_NODES:,})")
    gpus_per_node: StrictInt | None = Field(
        None,
        ge=1,
        le=MAX_GPUS_PER_NODE,
        description=f"required for a custom node (no shape); at most {MAX_GPUS_PER_NODE}",
    )
    gpu_model: str | None = None
    cpus_per_node: StrictInt | None = Field(
        None, ge=1, le=MAX_CPUS_PER_NODE, description=f"CPU cores per node (at most {MAX_CPUS_PER_NODE})"
    )
    memory_gb: StrictFloat | None = Field(
        None, gt=0, le=MAX_MEMORY_GB, description=f"memory per node, GB (at most {MAX_MEMORY_GB:g})"
    )
    rdma: bool | None = Field(
        None, description="on an RDMA cluster network (default: the shape's capability)"
    )
    price_per_gpu_hour: StrictFloat | None = Field(
        None,
        ge=0,
        le=MAX_PRICE_PER_GPU_HOUR,
        description=f"USD; overrides the catalogue's list price (at most {MAX_PRICE_PER_GPU_HOUR:g})",
    )
    pricing: Pricing = Pricing()

    @model_validator(mode="after")
    def _shape_or_size(self) -> PoolSpec:
        if self.shape is None and self.gpus_per_node is None:
            raise PydanticCustomError("pool", "a pool needs a shape or gpus_per_node", {})
        return self


class ClusterSpec(Section):
    pools: list[PoolSpec] = Field(min_length=1)
    price_list: Path | None = Field(
        None,
        description="a copy of Oracle's price list written by gpuplan prices --refresh: its prices replace "
        "the catalogue's (a pool's own price_per_gpu_hour still wins)",
    )


# ---- teams -------------------------------------------------------------------------------------


class Team(Section):
    name: Name = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    # the advisor reads a persona only where the file states it (``model_fields_set``): left out, it
    # is unknown to the advisor's persona criteria, whatever this default says
    persona: Literal["researcher", "ml-engineer", "data-scientist", "app-developer", "platform"] = Field(
        "researcher",
        description="who the team is; the advisor weighs it only when stated (left out: unknown to it)",
    )
    share: StrictFloat = Field(
        1.0,
        gt=0,
        le=MAX_SHARE,
        description="fair-share weight (Slurm Fairshare, Kueue fair-sharing weight); "
        f"at most {MAX_SHARE:,.0f}",
    )
    users: StrictInt = Field(
        4,
        ge=1,
        le=MAX_USERS,
        description=f"people submitting jobs (per-user limits apply to each); at most {MAX_USERS:,}",
    )


# ---- batch workloads ---------------------------------------------------------------------------


class Diurnal(Section):
    """Arrivals follow the working day: a cosine peaking at ``peak_hour`` (local time)."""

    peak_hour: StrictFloat = Field(14.0, ge=0, lt=24)
    peak_to_trough: StrictFloat = Field(
        3.0,
        ge=1,
        le=MAX_FACTOR,
        description=f"rate at the peak over rate at the trough (at most {MAX_FACTOR:g})",
    )


class Weekly(Section):
    weekend_factor: StrictFloat = Field(
        0.4,
        ge=0,
        le=MAX_FACTOR,
        description=f"Saturday and Sunday rate relative to weekdays (at most {MAX_FACTOR:g})",
    )


class Burst(Section):
    """A period of extra load, e.g. before a conference deadline: the rate is multiplied by ``factor``."""

    name: DisplayName = "burst"
    start: Duration = Field(description="from the scenario start")
    duration: Duration = Field(gt=0)
    factor: StrictFloat = Field(gt=0, le=MAX_FACTOR, description=f"rate multiplier (at most {MAX_FACTOR:g})")


class Arrival(Section):
    """A Poisson process whose mean rate is ``rate``, shaped by the day, the week and bursts."""

    rate: Rate = Field(description="mean arrival rate over the week, e.g. '40/day'")
    diurnal: Diurnal | None = None
    weekly: Weekly | None = None
    bursts: list[Burst] = Field(default_factory=list)


class LogNormal(Section):
    """Run times drawn from a lognormal with this median and sigma (of the log)."""

    median: Duration = Field(gt=0)
    sigma: StrictFloat = Field(
        1.0, ge=0, le=MAX_SIGMA, description=f"standard deviation of the log (at most {MAX_SIGMA:g})"
    )
    max: Duration | None = Field(None, gt=0, description="cap of the run times")


class Empirical(Section):
    """Run times resampled from a trace's jobs."""

    trace: Path
    format: str | None = Field(
        None,
        description="trace format: swf, sacct, philly, chronus, helios, acme, alibaba, kubectl "
        "(default: told from the file name or header)",
    )
    scale: StrictFloat = Field(
        1.0, gt=0, le=MAX_FACTOR, description=f"run times are multiplied by this (at most {MAX_FACTOR:g})"
    )


def _duration_kind(data: Any) -> str:
    # called with the file's mapping when validating and with the model when serialising
    if isinstance(data, Empirical) or (isinstance(data, dict) and "trace" in data):
        return "empirical"
    return "lognormal"


DurationDistribution = Annotated[
    Annotated[LogNormal, Tag("lognormal")] | Annotated[Empirical, Tag("empirical")],
    Discriminator(_duration_kind),
]


class TimeLimit(Section):
    """Requested time limits (``--time``): run time x a lognormal over-request ratio, rounded up.

    Users over-request: a median ratio of 2-5 is common in HPC logs; a ratio below 1 for some jobs
    means they hit their limit and are killed (Slurm ``TIMEOUT``)."""

    over_request: StrictFloat = Field(
        2.0,
        gt=0,
        le=MAX_FACTOR,
        description=f"median ratio of time limit to run time (at most {MAX_FACTOR:g})",
    )
    sigma: StrictFloat = Field(
        0.5, ge=0, le=MAX_SIGMA, description=f"standard deviation of the log (at most {MAX_SIGMA:g})"
    )
    round_to: Duration | None = Field(
        None, ge=1, description="limits are rounded up to a multiple of this (at least 1s)"
    )
    max: Duration | None = Field(None, gt=0, description="cap, e.g. the partition's MaxTime")


class BatchWorkload(Section):
    """Jobs submitted by a team: training runs, sweeps, notebooks (interactive), pipeline steps."""

    name: DisplayName
    kind: Literal["batch", "interactive", "pipeline"]
    team: str
    pool: str | None = Field(None, description="pool the jobs run on (default: the first that fits)")
    arrival: Arrival
    size: SizeMix = Field(description="'1x8', or a mix {'1x8': 70, '4x8': 30} of weights")
    duration: DurationDistribution
    time_limit: TimeLimit = TimeLimit()
    mpi: bool | None = Field(None, description="multi-node jobs over RDMA (default: when a size has >1 node)")
    checkpoint_interval: Duration | None = Field(None, gt=0, description="a job checkpoints this often")
    qos: str = Field("normal", description="Slurm QoS of the jobs (models.slurm.qos)")
    partition: str | None = Field(
        None, description="Slurm partition of the jobs (models.slurm.partitions; default: the pool's first)"
    )
    cpus_per_gpu: StrictInt | None = Field(
        None,
        ge=1,
        le=MAX_CPUS_PER_NODE,
        description="sbatch --cpus-per-gpu: CPUs each job holds per GPU (default: models.slurm."
        "def_cpu_per_gpu, else one per node; on Kubernetes the pods' CPU requests)",
    )
    mem_per_gpu_gb: StrictFloat | None = Field(
        None,
        gt=0,
        le=MAX_MEMORY_GB,
        description="sbatch --mem-per-gpu, GB: memory each job holds per GPU (counted under "
        "SelectTypeParameters=CR_Core_Memory; default: models.slurm.def_mem_per_gpu, def_mem_per_cpu or "
        "def_mem_per_node, else the node's whole memory; on Kubernetes the pods' memory requests)",
    )

    def size_mix(self) -> list[tuple[int, int, float]]:
        """(nodes, GPUs per node, probability) of each size."""
        total = sum(self.size.values())
        return [(*parse_size(key), weight / total) for key, weight in self.size.items()]

    @model_validator(mode="after")
    def _mpi(self) -> BatchWorkload:
        if self.mpi is False and any(nodes > 1 for nodes, _, _ in self.size_mix()):
            raise PydanticCustomError(
                "mpi", "sizes with more than one node need mpi: true (or leave mpi unset)", {}
            )
        return self

    @property
    def multi_node(self) -> bool:
        return bool(self.mpi) or any(nodes > 1 for nodes, _, _ in self.size_mix())


# ---- services ----------------------------------------------------------------------------------


class Demand(Section):
    """Requests per second over time: a daily cosine between ``trough`` and ``peak``, optionally
    quieter at weekends, or a CSV of ``time_s,requests_per_s`` (repeated to fill the horizon)."""

    peak: StrictFloat | None = Field(
        None, ge=0, le=MAX_REQUESTS_PER_S, description="requests/s at the busiest hour (at most 1e9)"
    )
    trough: StrictFloat | None = Field(
        None, ge=0, le=MAX_REQUESTS_PER_S, description="requests/s at the quietest hour (at most 1e9)"
    )
    peak_hour: StrictFloat = Field(14.0, ge=0, lt=24)
    weekly: Weekly | None = None
    noise: StrictFloat = Field(
        0.0, ge=0, le=10, description="relative standard deviation of 5-minute noise (at most 10)"
    )
    csv: Path | None = Field(
        None,
        description="a CSV with a header naming time_s and requests_per_s, then rows of seconds from "
        "the curve's start (increasing) and requests/s; relative to the scenario file",
    )

    @model_validator(mode="after")
    def _curve(self) -> Demand:
        if self.csv is None and (self.peak is None or self.trough is None):
            raise PydanticCustomError("demand", "give peak and trough requests/s, or a csv", {})
        if self.csv is None and self.trough > self.peak:  # type: ignore[operator]
            raise PydanticCustomError(
                "demand",
                "trough ({trough}) is above peak ({peak})",
                {"trough": self.trough, "peak": self.peak},
            )
        return self


class Replicas(Section):
    min: StrictInt = Field(1, ge=0, le=MAX_REPLICAS, description=f"at most {MAX_REPLICAS:,}")
    max: StrictInt = Field(ge=1, le=MAX_REPLICAS, description=f"at most {MAX_REPLICAS:,}")

    @model_validator(mode="after")
    def _bounds(self) -> Replicas:
        if self.min > self.max:
            raise PydanticCustomError(
                "replicas", "min ({min}) is above max ({max})", {"min": self.min, "max": self.max}
            )
        return self


class ServiceWorkload(Section):
    """An inference service: a Deployment scaled between replica bounds to follow its demand."""

    name: DisplayName
    kind: Literal["service"]
    team: str
    pool: str | None = None
    gpus_per_replica: StrictInt = Field(1, ge=1, le=MAX_GPUS_PER_NODE)
    throughput_per_replica: StrictFloat = Field(
        ge=1e-6,
        le=MAX_REQUESTS_PER_S,
        description="requests/s one replica serves within the SLO (1e-6 to 1e9: demand over it must "
        "stay a finite number of replicas)",
    )
    replicas: Replicas
    demand: Demand
    slo_target: StrictFloat = Field(0.99, gt=0, le=1, description="share of time demand must be served")


# ---- trace-backed workloads --------------------------------------------------------------------


class Window(Section):
    start: Duration = Field(
        0.0, description="jobs submitted before this (from the trace's start) are left out"
    )
    end: Duration | None = Field(None, gt=0, description="jobs submitted from this on are left out")


class TraceSpec(Section):
    path: Path = Field(description="relative to the scenario file")
    format: str | None = Field(
        None,
        description="swf, sacct, philly, chronus, helios, acme, alibaba or kubectl "
        "(default: told from the file name or header)",
    )
    team: str | None = Field(None, description="every job goes to this team")
    team_map: dict[str, str] | None = Field(None, description="trace team (group, VC) -> scenario team")
    window: Window = Window()
    load_scale: StrictFloat = Field(
        1.0,
        ge=1 / MAX_FACTOR,
        le=MAX_FACTOR,
        description="2 = arrivals twice as fast (inter-arrival times halved); 0.001 to 1000",
    )
    gpus_per_node: StrictInt | None = Field(
        None,
        ge=1,
        le=MAX_GPUS_PER_NODE,
        description=f"grouping of GPUs into nodes (default: the pool's); at most {MAX_GPUS_PER_NODE}",
    )
    submitted_early: bool = Field(
        False,
        description="every job was submitted ahead, eligible at its submit time (sbatch --begin): "
        "Slurm's main scheduler notices it at its next pass instead of being asked to run",
    )

    @model_validator(mode="after")
    def _teams(self) -> TraceSpec:
        if (self.team is None) == (self.team_map is None):
            raise PydanticCustomError("trace", "give exactly one of team or team_map", {})
        return self


class TraceWorkload(Section):
    """Jobs replayed from a trace file."""

    name: DisplayName
    kind: Literal["batch", "interactive", "pipeline"] = "batch"
    pool: str | None = None
    trace: TraceSpec


class JobListWorkload(Section):
    """Jobs listed as Kueue users write them: Kubernetes manifests (batch Job, JobSet, PyTorchJob,
    MPIJob) with ``kueue.x-k8s.io/queue-name`` and ``kueue.x-k8s.io/priority-class`` labels, or a
    CSV of the same fields (see "Workload lists" in the Kubernetes guide). Each job's team is its
    namespace."""

    name: DisplayName
    kind: Literal["batch", "interactive", "pipeline"] = "batch"
    jobs: Path = Field(description="a YAML file of manifests, or a .csv; relative to the scenario file")


def _workload_kind(data: Any) -> str:
    # called with the file's mapping when validating and with the model when serialising
    if isinstance(data, TraceWorkload) or (isinstance(data, dict) and "trace" in data):
        return "trace"
    if isinstance(data, JobListWorkload) or (isinstance(data, dict) and "jobs" in data):
        return "jobs"
    if isinstance(data, ServiceWorkload) or (isinstance(data, dict) and data.get("kind") == "service"):
        return "service"
    return "batch"


Workload = Annotated[
    Annotated[BatchWorkload, Tag("batch")]
    | Annotated[ServiceWorkload, Tag("service")]
    | Annotated[TraceWorkload, Tag("trace")]
    | Annotated[JobListWorkload, Tag("jobs")],
    Discriminator(_workload_kind),
]


# ---- organisation, models, targets -------------------------------------------------------------


class Organisation(Section):
    """Answers to the decision guide's questions; the advisor weighs them beside the simulations."""

    kubernetes_skills: Level | None = None
    containerised: Literal["none", "some", "most", "all"] | None = None
    existing_slurm_scripts: Level | None = Field(None, description="how much Slurm batch tooling exists")
    cicd_gitops: Level | None = None
    self_service: Level | None = Field(None, description="how much teams need self-service namespaces")
    security_compliance: Literal["standard", "regulated", "strict"] | None = None
    operational_maturity: Level | None = None
    platform_today: Literal["none", "slurm", "kubernetes", "both"] | None = Field(
        None, description="what the teams run their GPU work on today"
    )


class QosSpec(Section):
    """A Slurm QoS (sacctmgr add qos NAME ...): its priority and limits."""

    name: Name = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    priority: StrictInt = Field(
        0, ge=0, le=UINT32_MAX, description="Priority, scaled by PriorityWeightQOS (32-bit unsigned)"
    )
    max_gpus_per_user: StrictInt | None = Field(
        None, ge=1, le=MAX_GPUS, description="MaxTRESPerUser=gres/gpu=N"
    )
    max_jobs_per_user: StrictInt | None = Field(None, ge=1, le=UINT32_MAX, description="MaxJobsPerUser")
    grp_gpus: StrictInt | None = Field(None, ge=1, le=MAX_GPUS, description="GrpTRES=gres/gpu=N")
    max_wall: Duration | None = Field(None, gt=0, description="MaxWall: longer time limits are refused")
    preempt: list[str] = Field(
        default_factory=list, description="Preempt: QoS whose jobs these may preempt (preempt_type: qos)"
    )
    preempt_mode: PreemptMode | None = Field(
        None, description="PreemptMode of its jobs (default: the cluster's)"
    )
    grace_time: Duration = Field(0.0, description="GraceTime: a preempted job keeps its nodes this long")
    usage_factor: StrictFloat = Field(
        1.0, ge=0, le=MAX_FACTOR, description="UsageFactor: its jobs' usage counts this much (at most 1000)"
    )


class PartitionSpec(Section):
    """A Slurm partition over all nodes of one pool (PartitionName=... Nodes=...); several may share
    a pool."""

    name: Name = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    pool: str = Field(description="the pool whose nodes the partition spans")
    priority_tier: StrictInt = Field(
        1, ge=0, le=65533, description="PriorityTier: higher tiers schedule and preempt first"
    )
    priority_job_factor: StrictInt = Field(
        1, ge=0, le=65533, description="PriorityJobFactor (partition factor)"
    )
    max_time: Duration | None = Field(None, gt=0, description="MaxTime: longer time limits are refused")
    default_time: Duration | None = Field(
        None, gt=0, description="DefaultTime: the time limit of jobs without one"
    )
    allow_accounts: list[str] | None = Field(
        None, description="AllowAccounts: teams that may submit (default: all)"
    )
    preempt_mode: PreemptMode | None = Field(
        None, description="PreemptMode of its jobs (default: the cluster's)"
    )
    grace_time: Duration = Field(0.0, description="GraceTime: a preempted job keeps its nodes this long")
    exclusive: bool = Field(False, description="OverSubscribe=EXCLUSIVE: jobs take whole nodes")
    def_cpu_per_gpu: StrictInt = Field(
        0, ge=0, le=MAX_CPUS_PER_NODE, description="DefCpuPerGPU of its jobs (0: models.slurm's)"
    )
    def_mem_per_gpu: StrictInt = Field(
        0, ge=0, le=MAX_MEMORY_MB_PER_NODE, description="DefMemPerGPU of its jobs, MB (0: models.slurm's)"
    )
    def_mem_per_cpu: StrictInt = Field(
        0,
        ge=0,
        le=MAX_MEMORY_MB_PER_NODE,
        description="DefMemPerCPU of its jobs, MB (0 with def_mem_per_node 0: models.slurm's)",
    )
    def_mem_per_node: StrictInt = Field(
        0,
        ge=0,
        le=MAX_MEMORY_MB_PER_NODE,
        description="DefMemPerNode of its jobs, MB (0 with def_mem_per_cpu 0: models.slurm's)",
    )
    suspend_time: Duration | None = Field(
        None,
        ge=0,
        description="SuspendTime of its nodes (power saving; the OCI HPC Stack sets 300 s on its on-demand "
        "partitions); a node in several partitions takes the highest; unset: models.slurm's",
    )
    resume_timeout: Duration | None = Field(
        None, gt=0, le=65533, description="ResumeTimeout of its nodes (the highest of their partitions')"
    )

    @model_validator(mode="after")
    def _one_memory_default(self) -> PartitionSpec:
        if self.def_mem_per_cpu and self.def_mem_per_node:
            raise PydanticCustomError(
                "partition", "give def_mem_per_cpu or def_mem_per_node, not both (one slurm.conf setting)", {}
            )
        return self


class ReservationSpec(Section):
    """An advance reservation (scontrol create reservation): NodeCnt nodes of a pool (its
    highest-numbered) from start for duration, for some accounts' jobs, or for maintenance."""

    name: Name = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    pool: str
    nodes: StrictInt = Field(ge=1, le=MAX_NODES, description="NodeCnt")
    start: Duration = Field(description="StartTime, from the scenario's start")
    duration: Duration = Field(gt=0, description="Duration (Slurm keeps whole minutes: seconds round up)")
    accounts: list[str] = Field(default_factory=list, description="Accounts (teams); none: maintenance")
    repeat: Duration | None = Field(None, gt=0, description="again every: 1d (Flags=DAILY), 7d (WEEKLY)")


class TopologySpec(Section):
    """TopologyPlugin for the RDMA cluster network: nodes grouped in order into blocks (OCI network
    blocks; topology/block) or under leaf switches (topology/tree)."""

    plugin: Literal["block", "tree"] = "block"
    nodes_per_block: StrictInt = Field(ge=1, le=MAX_NODES, description="nodes per block or leaf switch")
    require: bool = Field(
        False, description="a multi-node job that fits one block waits for one (--segment / --switches=1)"
    )


EnforceFlag = Literal["associations", "limits", "qos", "safe", "wckeys"]


class SlurmSection(Section):
    """Policy settings of the Slurm model, named as in slurm.conf (``SchedulerParameters``)."""

    backfill: Literal["none", "easy", "slurm"] = Field(
        "slurm", description="none: strict FIFO; easy: EASY backfilling; slurm: sched/backfill"
    )
    bf_interval: StrictInt = Field(30, ge=1, le=10800, description="seconds between backfill cycles")
    bf_window: StrictInt = Field(
        1440, ge=1, le=43200, description="minutes into the future a job may reserve"
    )
    bf_resolution: StrictInt = Field(
        60, ge=1, le=3600, description="seconds: granularity of the time profile"
    )
    bf_max_job_test: StrictInt = Field(500, ge=1, le=1_000_000, description="jobs tested per backfill cycle")
    bf_max_job_user: StrictInt = Field(
        0, ge=0, le=1_000_000, description="jobs of one user tested per backfill cycle (0: no limit)"
    )
    priority_type: Literal["basic", "multifactor"] = Field(
        "basic", description="PriorityType: priority/basic (first come, first served) or priority/multifactor"
    )
    priority_weight_age: StrictFloat = Field(
        0, ge=0, le=UINT32_MAX, description="PriorityWeightAge (32-bit unsigned in Slurm)"
    )
    priority_weight_fairshare: StrictFloat = Field(
        0, ge=0, le=UINT32_MAX, description="PriorityWeightFairshare (32-bit unsigned in Slurm)"
    )
    priority_weight_job_size: StrictFloat = Field(
        0, ge=0, le=UINT32_MAX, description="PriorityWeightJobSize (32-bit unsigned in Slurm)"
    )
    priority_max_age: Duration = Field(7 * 86400.0, gt=0, description="PriorityMaxAge")
    priority_decay_half_life: Duration = Field(7 * 86400.0, description="PriorityDecayHalfLife")
    priority_calc_period: Duration = Field(300.0, gt=0, description="PriorityCalcPeriod")
    priority_usage_reset_period: Literal["none", "daily", "weekly", "monthly", "quarterly", "yearly"] = Field(
        "none", description="PriorityUsageResetPeriod: fair-share usage back to 0 at each new period (UTC)"
    )
    fairshare: Literal["fair_tree", "classic"] = Field(
        "fair_tree", description="Fair Tree (Slurm's default) or classic (PriorityFlags=NO_FAIR_TREE)"
    )
    priority_weight_qos: StrictFloat = Field(
        0, ge=0, le=UINT32_MAX, description="PriorityWeightQOS (32-bit unsigned in Slurm)"
    )
    priority_weight_partition: StrictFloat = Field(
        0, ge=0, le=UINT32_MAX, description="PriorityWeightPartition (32-bit unsigned in Slurm)"
    )
    qos: list[QosSpec] = Field(default_factory=list, description="QoS besides 'normal' (or redefining it)")
    partitions: list[PartitionSpec] = Field(
        default_factory=list, description="partitions (default: one per pool, named after it)"
    )
    over_time_limit: StrictInt = Field(
        0, ge=0, le=65533, description="OverTimeLimit: minutes a job may run past its limit (at most 65533)"
    )
    select_type: Literal["cons_tres", "linear"] = Field(
        "cons_tres", description="SelectType: select/cons_tres (jobs take GPUs, share nodes) or select/linear"
    )
    select_type_parameters: Literal["CR_Core", "CR_Core_Memory"] = Field(
        "CR_Core",
        description=(
            "SelectTypeParameters: CR_Core (CPUs are consumed, memory is not) or CR_Core_Memory (both; "
            "Slurm's default and the OCI HPC stack's: a job asking no memory, with no DefMemPer*, then "
            "holds its nodes' whole memory)"
        ),
    )
    def_cpu_per_gpu: StrictInt = Field(
        0,
        ge=0,
        le=MAX_CPUS_PER_NODE,
        description="DefCpuPerGPU: CPUs per GPU for a job asking none (0: unset)",
    )
    def_mem_per_gpu: StrictInt = Field(
        0, ge=0, le=MAX_MEMORY_MB_PER_NODE, description="DefMemPerGPU, MB (0: unset; CR_Core_Memory only)"
    )
    def_mem_per_cpu: StrictInt = Field(
        0, ge=0, le=MAX_MEMORY_MB_PER_NODE, description="DefMemPerCPU, MB (0: unset; CR_Core_Memory only)"
    )
    def_mem_per_node: StrictInt = Field(
        0, ge=0, le=MAX_MEMORY_MB_PER_NODE, description="DefMemPerNode, MB (0: unset; CR_Core_Memory only)"
    )
    tres_billing_weights: str = Field(
        "",
        max_length=200,
        description=(
            "TRESBillingWeights, e.g. 'CPU=1.0,Mem=0.25G,GRES/gpu=2.0': what fair-share usage counts "
            "(unset: a job's CPUs, Slurm's default)"
        ),
    )

    @field_validator("tres_billing_weights")
    @classmethod
    def _billing_weights(cls, value: str) -> str:
        billing_weights(value)  # a ValueError names the item
        return value

    reservations: list[ReservationSpec] = Field(
        default_factory=list, description="advance reservations: maintenance windows, a team's nodes"
    )
    topology: TopologySpec | None = Field(None, description="TopologyPlugin (default: none, a flat network)")
    preempt_type: Literal["none", "partition_prio", "qos"] = Field(
        "none", description="PreemptType: preempt/partition_prio, preempt/qos, or none"
    )
    preempt_mode: PreemptMode = Field("off", description="PreemptMode: the cluster's default")
    preempt_youngest_first: bool = Field(
        False,
        description="SchedulerParameters=preempt_youngest_first (PreemptParameters=youngest_first from "
        "Slurm 23.02): preempt the jobs that started last first; default: lowest PriorityTier or QoS "
        "priority and fewest nodes first, then the oldest",
    )
    requeue_delay: Duration = Field(
        121.0, description="a requeued job is eligible again after this (AuthInfo cred_expire 120 s + 1)"
    )
    accounting_storage_enforce: list[EnforceFlag] = Field(
        default_factory=lambda: list[EnforceFlag](["associations", "limits", "qos"]),
        description="AccountingStorageEnforce: without 'limits' a job's use after the last "
        "PriorityCalcPeriod tick is never counted in fair share (as Slurm 22.05 does)",
    )
    sched_interval: StrictInt = Field(
        60,
        ge=-1,
        le=86400,
        description="SchedulerParameters sched_interval: seconds between the main "
        "scheduler's full passes (-1: none; it still runs for submissions and job ends)",
    )
    batch_sched_delay: StrictInt = Field(
        3,
        ge=0,
        le=3600,
        description="SchedulerParameters batch_sched_delay: seconds at least between the "
        "main scheduler's passes for submissions and job ends",
    )
    default_queue_depth: StrictInt = Field(
        100, ge=0, le=1_000_000, description="SchedulerParameters default_queue_depth: jobs those passes test"
    )
    controller_start: StrictFloat = Field(
        0.0,
        ge=-MAX_DURATION_S,
        le=MAX_DURATION_S,
        description="seconds from the scenario's start at which slurmctld started (negative: before): "
        "priorities are recalculated every PriorityCalcPeriod and backfill runs every bf_interval from then",
    )
    decay_start: StrictFloat | None = Field(
        None,
        ge=-MAX_DURATION_S,
        le=MAX_DURATION_S,
        description="seconds from the scenario's start at which slurmctld's decay thread started, if not "
        "with controller_start: priorities are recalculated every PriorityCalcPeriod from then "
        "(priority_multifactor.c:_decay_thread keeps its own clock; it starts a fraction of a second "
        "after the controller)",
    )
    main_loop_start: StrictFloat | None = Field(
        None,
        ge=-MAX_DURATION_S,
        le=MAX_DURATION_S,
        description="seconds from the scenario's start at which slurmctld's background thread started, if "
        "not with controller_start: the main scheduler's loop ticks every second from then and its first "
        "full pass comes sched_interval after it (controller.c:_slurmctld_background)",
    )
    backfill_start: StrictFloat | None = Field(
        None,
        ge=-MAX_DURATION_S,
        le=MAX_DURATION_S,
        description="seconds from the scenario's start at which slurmctld's backfill thread started, if "
        "not with controller_start: its cycles come every bf_interval from then (backfill.c:backfill_agent)",
    )
    suspend_time: Duration | None = Field(
        None,
        ge=0,
        description="SuspendTime: power saving. A node idle this long powers down (and is not paid); a job "
        "given one waits for its boot. Its nodes start powered down, as the OCI HPC Stack's on-demand nodes "
        "(State=CLOUD; the stack sets 300 s on their partitions). Unset: INFINITE, no power saving",
    )
    resume_timeout: Duration = Field(
        60.0,
        gt=0,
        le=65533,
        description="ResumeTimeout: the longest a powered-down node may take to boot (Slurm's default 60 s; "
        "the OCI HPC Stack's on-demand partitions: 1200 s)",
    )
    node_boot_time: Duration | None = Field(
        None,
        ge=0,
        description="gpuplan's (not a slurm.conf setting): how long a powered-down node takes to boot and "
        "register, at most its ResumeTimeout; unset: its ResumeTimeout, the longest Slurm waits",
    )

    @model_validator(mode="after")
    def _boot_within_resume_timeout(self) -> SlurmSection:
        if self.node_boot_time is None:
            return self
        timeouts = [("resume_timeout", self.resume_timeout)] + [
            (f"partitions {p.name} resume_timeout", p.resume_timeout)
            for p in self.partitions
            if p.resume_timeout is not None
        ]
        for name, timeout in timeouts:
            if self.node_boot_time > timeout:
                raise PydanticCustomError(
                    "slurm",
                    "node_boot_time {boot} s exceeds {name} {timeout} s: Slurm would mark the node DOWN",
                    {"boot": self.node_boot_time, "name": name, "timeout": timeout},
                )
        return self


ModelName = Literal["slurm", "kubernetes", "hybrid"]


def _all_models() -> list[ModelName]:
    return ["slurm", "kubernetes", "hybrid"]


class Models(Section):
    slurm: SlurmSection = SlurmSection()
    kubernetes: KubernetesSettings = KubernetesSettings()
    hybrid: HybridSettings = HybridSettings()
    compare: list[ModelName] = Field(
        default_factory=_all_models,
        min_length=1,
        description="the models `gpuplan compare` and `recommend` run",
    )


class Targets(Section):
    p95_wait: Duration | None = None
    slo_attainment: StrictFloat | None = Field(None, gt=0, le=1)
    gpu_utilization: StrictFloat | None = Field(None, gt=0, le=1)
    budget_usd_per_month: StrictFloat | None = Field(None, gt=0, le=1e12, description="USD (at most 1e12)")

    def values(self) -> dict[str, float | None]:
        """Each target by name, in seconds where it is a duration (attributes, not model_dump(),
        which writes durations back as text such as "4h")."""
        return {name: getattr(self, name) for name in type(self).model_fields}


class Scenario(Section):
    """An organisation's GPU platform: what runs, on what, under which targets."""

    name: DisplayName
    description: str = ""
    seed: StrictInt = Field(0, ge=0, le=2**63 - 1, description="of the random streams: same seed, same jobs")
    horizon: Duration = Field(
        30 * 86400.0,
        gt=0,
        le=MAX_DURATION_S,
        description="span of synthesised arrivals (at most 3650d; validate warns past 365d)",
    )
    start: datetime = Field(
        datetime(2026, 1, 5), description="wall-clock time of t = 0 (a Monday by default), for daily profiles"
    )
    cluster: ClusterSpec
    teams: list[Team] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    organisation: Organisation = Organisation()
    models: Models = Models()
    targets: Targets = Targets()
