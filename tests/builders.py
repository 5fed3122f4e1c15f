"""What the tests build their cases from, for both models: workloads of batch jobs for Slurm
(``workload().job(submit=0, run=10, nodes=2)...``) and of pods for Kubernetes
(``pods().job(team="a", gpus=8, pods=2)...``), the pools and node pools they run on, one run of
each model, the oracle's view of a Slurm run, the paths of the examples, the test data and the
shared traces, and gpuplan's CLI in this process."""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.sim.cluster import Pool
from gpuplan.sim.kubernetes import NodePoolSpec, simulate_kubernetes
from gpuplan.sim.kubernetes.cluster import UNKNOWN
from gpuplan.sim.outcome import ModelRun
from gpuplan.sim.slurm.model import simulate_slurm
from gpuplan.sim.slurm.settings import SlurmSettings
from gpuplan.workload.jobtable import JobTable, Labels
from gpuplan.workload.services import Service
from gpuplan.workload.trace import Trace

from reference import reference_schedule

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "data"
# real traces too large for the repository, beside the clone (../shared/traces/{swf,slurm,gpu,k8s});
# tests of them skip where they are absent (the ``shared_trace`` fixture)
SHARED_TRACES = ROOT.parent / "shared" / "traces"


# A small scenario (one H100 pool, two teams, a batch workload and a service): tests change it
# by replacing lines
SMALL_SCENARIO = """\
name: small
seed: 1
horizon: 7d
cluster:
  pools:
    - name: gpu
      shape: BM.GPU.H100.8
      nodes: 4
teams:
  - name: alpha
    share: 2
  - name: beta
workloads:
  - name: training
    kind: batch
    team: alpha
    arrival: {rate: 10/day}
    size: {"1x8": 3, "2x8": 1}
    duration: {median: 2h, sigma: 0.5}
  - name: chat
    kind: service
    team: beta
    throughput_per_replica: 5
    replicas: {min: 1, max: 4}
    demand: {peak: 20, trough: 2}
"""

# -- Slurm: batch jobs on one pool of nodes --------------------------------------------------------


@dataclass
class Workload:
    ids: list[int] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    run: list[float] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    limit: list[float] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    qos: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    checkpoints: list[float] = field(default_factory=list)
    gpus_per_node: list[int] = field(default_factory=list)
    cpus_per_node: list[int] = field(default_factory=list)
    mem_per_node: list[float] = field(default_factory=list)

    def job(
        self,
        *,
        submit: float,
        run: float,
        nodes: int = 1,
        limit: float | None = None,
        job_id: int | None = None,
        team: str = "a",
        user: str = "u",
        qos: str = "normal",
        partition: str = "",
        checkpoint: float | None = None,
        gpus: int = 1,
        cpus: int = 0,
        mem_mb: float | None = None,
    ) -> Workload:
        self.ids.append(len(self.ids) + 1 if job_id is None else job_id)
        self.submit.append(submit)
        self.run.append(run)
        self.nodes.append(nodes)
        self.limit.append(math.nan if limit is None else limit)
        self.teams.append(team)
        self.users.append(user)
        self.qos.append(qos)
        self.partitions.append(partition)
        self.checkpoints.append(math.nan if checkpoint is None else checkpoint)
        self.gpus_per_node.append(gpus)
        self.cpus_per_node.append(cpus)
        self.mem_per_node.append(math.nan if mem_mb is None else mem_mb)
        return self

    def copy(self) -> Workload:
        return Workload(*(list(getattr(self, f.name)) for f in fields(self)))

    def table(self) -> JobTable:
        table = JobTable.build(
            job_id=self.ids,
            submit_s=self.submit,
            duration_s=self.run,
            nodes=self.nodes,
            time_limit_s=self.limit,
            team=self.teams,
            user=self.users or None,
            qos=self.qos or None,
            partition=self.partitions or None,
            checkpoint_s=self.checkpoints or None,
            gpus_per_node=self.gpus_per_node or 1,
        )
        return replace(
            table,
            cpus_per_node=np.array(self.cpus_per_node, dtype=np.int32),
            mem_per_node=np.array(self.mem_per_node, dtype=np.float64),
        )

    def simulate(
        self,
        total_nodes: int,
        backfill: str,
        gpus_per_node: int = 1,
        epoch_s: float | None = None,
        **bf: Any,
    ) -> ModelRun:
        """The jobs under ``--backfill BACKFILL`` (and backfill settings ``bf``)."""
        return run_slurm(self, total_nodes, gpus_per_node, SlurmSettings(backfill, **bf), epoch_s=epoch_s)

    def starts(self, total_nodes: int, backfill: str, **bf: Any) -> dict[int, float | None]:
        """Start time by job id (None: never started)."""
        return start_times(self.simulate(total_nodes, backfill, **bf))


def workload() -> Workload:
    return Workload()


def batch_pool(nodes: int, gpus_per_node: int = 1, cpus: int = 0, mem_mb: int = 0) -> Pool:
    """The one Slurm pool of the tests, ``batch``: ``nodes`` nodes of ``gpus_per_node`` GPUs (and
    ``cpus`` CPUs and ``mem_mb`` MB each, 0: unknown)."""
    return Pool("batch", nodes, gpus_per_node, cpu_milli=1000 * cpus, memory_mib=mem_mb)


def run_slurm(
    jobs: Workload | JobTable,
    nodes: int,
    gpus_per_node: int = 1,
    settings: SlurmSettings | None = None,
    *,
    base: Mapping[str, Any] | None = None,
    team_shares: dict[str, float] | None = None,
    epoch_s: float | None = None,
    submitted_early: list[bool] | None = None,
    node_cpus: int = 0,
    node_mem_mb: int = 0,
    **options: Any,
) -> ModelRun:
    """The Slurm model on ``jobs`` on ``batch_pool(nodes, gpus_per_node)``, with ``settings``, or
    else ``SlurmSettings(**options)`` over the file's common settings ``base``. ``team_shares``:
    the accounts' Fairshare=; ``epoch_s``: the Unix time of t = 0; ``submitted_early``: per job,
    submitted before its submit time with --begin (noticed by the next pass); ``node_cpus``,
    ``node_mem_mb``: each node's CPUs and memory (0: unknown)."""
    table = jobs.table() if isinstance(jobs, Workload) else jobs
    if submitted_early is not None:
        table = replace(table, submitted_early=np.array(submitted_early))
    if settings is None:
        settings = SlurmSettings(**{**(base or {}), **options})
    elif base or options:
        raise TypeError("run_slurm takes settings or options, not both")
    return simulate_slurm(
        table,
        [batch_pool(nodes, gpus_per_node, node_cpus, node_mem_mb)],
        settings,
        team_shares=team_shares,
        epoch_s=epoch_s,
    )


def by_job_id(run: ModelRun, values: np.ndarray) -> dict[int, Any]:
    """``values`` (one per job of ``run``) by job id; NaN as None (a job that never started)."""
    return {
        int(job_id): (None if isinstance(v, float) and np.isnan(v) else v)
        for job_id, v in zip(run.jobs.job_id, values.tolist(), strict=True)
    }


def start_times(run: ModelRun) -> dict[int, float | None]:
    """Start time by job id (None: never started)."""
    return by_job_id(run, run.start_s)


def starts_of(run: ModelRun) -> list[float | None]:
    return [None if math.isnan(start) else start for start in run.start_s.tolist()]


# The Slurm main scheduler passing at every whole second (sched_interval=1, batch_sched_delay=0),
# as at every event for whole-second workloads: for tests of what backfill decides on its own.
MAIN_EVERY_SECOND = {"sched_interval": 1, "batch_sched_delay": 0}


@st.composite
def workloads(draw: st.DrawFn) -> tuple[Workload, int]:
    """Random whole-second workloads on 1-8 nodes, some jobs too large for the cluster (rejected)."""
    total_nodes = draw(st.integers(1, 8))
    jobs = workload()
    for _ in range(draw(st.integers(1, 25))):
        run = draw(st.integers(0, 40))
        limit = draw(st.one_of(st.none(), st.integers(1, 60)))
        jobs.job(
            submit=draw(st.integers(0, 60)),
            run=run,
            nodes=draw(st.integers(1, total_nodes + 1)),  # sometimes too large: rejected
            limit=limit,
            job_id=draw(st.integers(0, 10**6)),
            team=draw(st.sampled_from("abc")),
        )
    return jobs, total_nodes


# Random settings of `--backfill slurm`: the backfill cycle's and the main scheduler's.
bf_settings = st.fixed_dictionaries(
    {
        "bf_interval": st.integers(1, 25),
        "bf_resolution": st.sampled_from([1, 2, 5, 60]),
        "bf_window": st.sampled_from([1, 1440]),
        "bf_max_job_test": st.integers(1, 6),
        "sched_interval": st.sampled_from([-1, 1, 7, 60]),
        "batch_sched_delay": st.sampled_from([0, 3]),
        "default_queue_depth": st.sampled_from([0, 1, 100]),
    }
)


def reference_for(
    run: ModelRun,
    total_nodes: int,
    backfill: str,
    plans: list[tuple[float, str, int, frozenset[int], float, float]] | None = None,
) -> tuple[list[float | None], dict[int, list[float]]]:
    """The oracle's start times (and EASY reservations) for the jobs of ``run``
    (bench/fidelity_slurm/reference.py, ``reference_schedule``)."""
    jobs = run.jobs
    estimate = np.where(jobs.time_limit_s > 0, jobs.time_limit_s, jobs.duration_s)
    settings = run.settings
    bf = None
    if backfill == "slurm":
        bf = {
            "bf_interval": settings["bf_interval"],
            "bf_window": 60.0 * settings["bf_window"],
            "bf_resolution": settings["bf_resolution"],
            "bf_max_job_test": settings["bf_max_job_test"],
            "sched_interval": settings["sched_interval"],
            "batch_sched_delay": settings["batch_sched_delay"],
            "default_queue_depth": settings["default_queue_depth"],
        }
    return reference_schedule(
        jobs.submit_s.tolist(),
        run.run_s.tolist(),
        estimate.tolist(),
        jobs.nodes.tolist(),
        jobs.job_id.tolist(),
        total_nodes,
        backfill,
        bf,
        plans,
    )


def expand_hosts(hosts: str) -> list[int]:
    """Node numbers of a Slurm host list such as ``node[0-3,8]``."""
    body = hosts[hosts.index("[") + 1 : -1] if "[" in hosts else hosts.lstrip("abcdefghijklmnopqrstuvwxyz")
    nodes: list[int] = []
    for part in body.split(","):
        first, _, last = part.partition("-")
        nodes.extend(range(int(first), int(last or first) + 1))
    return nodes


def assert_no_node_overcommitted(run: ModelRun, nodes: int, gpus_per_node: int) -> None:
    """At no instant do a node's jobs hold more GPUs than it has (ends before starts at a tie)."""
    events = []
    for job, hosts in enumerate(run.node_lists().to_pylist()):
        if hosts is None:
            continue
        for node in expand_hosts(hosts):
            gpus = int(run.jobs.gpus_per_node[job])
            events += [(float(run.start_s[job]), 1, node, gpus), (float(run.end_s[job]), -1, node, gpus)]
    used = [0] * nodes
    for _, sign, node, gpus in sorted(events, key=lambda e: (e[0], e[1])):
        used[node] += sign * gpus
        assert used[node] <= gpus_per_node


# -- Kubernetes: jobs of pods on node pools --------------------------------------------------------


@dataclass
class Pods:
    """Kubernetes jobs (``pods()``): each of ``pods`` pods asks ``gpus`` GPUs; ``gpu_milli`` below
    1000 asks that share of one GPU, ``cpu_milli`` and ``memory_mib`` are the pod's CPU and memory
    requests (not given: the node's share for the pod's GPUs). ``defaults`` hold for every job
    that does not say otherwise; a column no job sets keeps JobTable.build's default (team
    "unknown", QoS "normal": the priority class's, partition "": any pool)."""

    defaults: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def job(self, **values: Any) -> Pods:
        """One job: ``team``, ``gpus`` (8), ``pods`` (1), ``at`` (submit, 0 s), ``run`` (1000 s),
        ``qos``, ``partition`` (a pool: a node selector), ``checkpoint`` (s), ``gpu_milli``,
        ``cpu_milli``, ``memory_mib``, ``job_id`` (default: 1, 2, ... in order)."""
        row = {"gpus": 8, "pods": 1, "at": 0.0, "run": 1000.0, **self.defaults, **values}
        unknown = set(row) - set(_POD_FIELDS)
        if unknown:
            raise TypeError(f"Pods.job: unknown {sorted(unknown)}")
        self.rows.append(row)
        return self

    def column(self, name: str, default: Any) -> list[Any] | None:
        """The values of ``name``, ``default`` where a job left it out; None if no job set it."""
        if not any(name in r for r in self.rows):
            return None
        return [r.get(name, default) for r in self.rows]

    def table(self) -> JobTable:
        qos = self.column("qos", "")
        checkpoints = self.column("checkpoint", math.nan)
        return JobTable.build(
            job_id=self.column("job_id", None) or range(1, len(self.rows) + 1),
            submit_s=[r["at"] for r in self.rows],
            duration_s=[r["run"] for r in self.rows],
            nodes=[r["pods"] for r in self.rows],
            gpus_per_node=[r["gpus"] for r in self.rows],
            team=self.column("team", "unknown"),
            qos=None if qos is None else [q or "normal" for q in qos],
            partition=self.column("partition", ""),
            checkpoint_s=None if checkpoints is None else [math.nan if c is None else c for c in checkpoints],
        )

    def requests(self, name: str, whole: int | None = None) -> np.ndarray | None:
        """One request of every pod (``gpu_milli``, ``cpu_milli``, ``memory_mib``), as
        simulate_kubernetes takes it beside the table; None if no job gives it (``whole``: the
        value of a job that does not)."""
        values = self.column(name, whole)
        if values is not None and None in values:
            raise ValueError(f"Pods: {name} given for some jobs only")
        return None if values is None else np.array(values)

    def simulate(
        self,
        pools: list[NodePoolSpec],
        settings: KubernetesSettings,
        services: list[Service] | None = None,
        **options: Any,
    ) -> ModelRun:
        """The Kubernetes model on these jobs (and ``services``) on ``pools``; ``options``:
        simulate_kubernetes's (horizon_s, pool_aliases)."""
        return simulate_kubernetes(
            self.table(),
            pools,
            settings,
            services,
            gpu_milli=self.requests("gpu_milli", 1000),
            cpu_milli=self.requests("cpu_milli"),
            memory_mib=self.requests("memory_mib"),
            **options,
        )


_POD_FIELDS = (
    "team",
    "gpus",
    "pods",
    "at",
    "run",
    "qos",
    "partition",
    "checkpoint",
    "gpu_milli",
    "cpu_milli",
    "memory_mib",
    "job_id",
)


def pods(**defaults: Any) -> Pods:
    return Pods(defaults)


def node_pool(
    nodes: int,
    *,
    gpus: int = 8,
    name: str = "h100",
    cpu_milli: int = UNKNOWN,
    memory_mib: int = UNKNOWN,
    max_nodes: int | None = None,
    provision_delay_s: float = 600.0,
) -> NodePoolSpec:
    """An OKE node pool of ``nodes`` nodes of ``gpus`` GPUs (allocatable CPU and memory per node:
    UNKNOWN, not checked), which the cluster autoscaler may grow to ``max_nodes``."""
    return NodePoolSpec(
        name,
        gpus,
        cpu_milli,
        memory_mib,
        nodes,
        nodes,
        nodes if max_nodes is None else max_nodes,
        provision_delay_s=provision_delay_s,
    )


def kubernetes_settings(**values: Any) -> KubernetesSettings:
    """The scenario's ``kubernetes:`` section (kueue, scheduler, priorities, hpa ...) as written."""
    return KubernetesSettings.model_validate(values)


# -- traces and the CLI ----------------------------------------------------------------------------


def require(path: Path) -> Path:
    """``path``, or the test skipped when it is absent: the shared traces are not part of a clone."""
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared traces (../shared/traces beside the clone) are not here")
    return path


def assert_same_traces(a: Trace, b: Trace) -> None:
    """Two reads of a trace give the same jobs and the same account of what was dropped."""
    for name in ("format", "skipped_invalid", "bad_lines", "epoch_s", "header"):
        assert getattr(a, name) == getattr(b, name), name
    for f in fields(JobTable):
        x, y = getattr(a.jobs, f.name), getattr(b.jobs, f.name)
        if isinstance(x, Labels):
            assert x.values() == y.values(), f.name
        elif x is None or y is None:
            assert x is y, f.name
        else:
            np.testing.assert_array_equal(x, y, err_msg=f.name)


def gpuplan(*args: str, columns: int | None = 250) -> tuple[int, str, str]:
    """``gpuplan ARGS`` in this process: (exit code, stdout, stderr). Anything but a clean exit, such as
    an exception escaping a command, fails the test; tables are not wrapped (``columns``; None: the
    environment's width)."""
    from typer.testing import CliRunner

    from gpuplan.cli import app

    env = None if columns is None else {"COLUMNS": str(columns)}
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def simulate_summary(*args: str, model: str) -> tuple[int, dict[str, Any], str]:
    """``gpuplan simulate ARGS --model MODEL --json``: (exit code, the summary it printed, empty when
    it failed, stderr)."""
    code, out, err = gpuplan("simulate", *args, "--model", model, "--json", columns=None)
    return code, json.loads(out) if code == 0 else {}, err


def simulate_into(scenario: Path, out: Path, model: str = "kubernetes") -> None:
    """``gpuplan simulate SCENARIO --model MODEL --out OUT``, which must succeed."""
    code, _, err = gpuplan("simulate", str(scenario), "--model", model, "--out", str(out), "--quiet")
    assert code == 0, err


def job_events(out: Path, *options: str) -> list[dict[str, Any]]:
    """``gpuplan events OUT --json`` (every event, ``options`` choosing which): the rows it printed."""
    code, text, err = gpuplan("events", str(out), "--json", "--limit", "0", *options)
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(text)
    return rows


# ---- results directories and signals (tests/report/test_results_dir.py, tests/results) ----------

SMALL_TWO_DAYS = """\
name: {name}
seed: 2
horizon: 2d
cluster:
  pools:
    - {{name: h100, shape: BM.GPU.H100.8, nodes: 4}}
teams:
  - {{name: research}}
workloads:
  - name: training
    kind: batch
    team: research
    arrival: {{rate: 12/day}}
    size: {{"1x8": 80, "2x8": 20}}
    duration: {{median: 2h}}
"""


def small_scenario(tmp_path: Path, name: str = "small") -> Path:
    """A two-day scenario named ``name`` (about a second to compare), in ``tmp_path/NAME.yaml``."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(SMALL_TWO_DAYS.format(name=name))
    return path


def session_processes(session: int) -> list[int]:
    """Processes of a session (the command and its workers), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session and fields[0] != "Z":  # field 6 of stat: the session id
                found.append(int(entry.name))
    return found


def default_sigint() -> None:
    """In the child before exec: Ctrl-C's default action. A pytest run in the background (``pytest &``)
    ignores SIGINT, its children inherit that, and Python installs no KeyboardInterrupt handler for a
    signal ignored at start-up, so the command would never see the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
