"""Small builders for test workloads: ``workload().job(submit=0, run=10, nodes=2)...``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from gpuplan.sim.cluster import Pool
from gpuplan.sim.outcome import ModelRun
from gpuplan.sim.slurm.model import SlurmSettings, simulate_slurm
from gpuplan.workload.jobtable import JobTable, Labels
from gpuplan.workload.trace import Trace

from reference import reference_schedule


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
        return self

    def copy(self) -> Workload:
        return Workload(*(list(getattr(self, f.name)) for f in fields(self)))

    def table(self) -> JobTable:
        return JobTable.build(
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

    def simulate(
        self,
        total_nodes: int,
        backfill: str,
        gpus_per_node: int = 1,
        epoch_s: float | None = None,
        **bf: float,
    ) -> ModelRun:
        return simulate_slurm(
            self.table(),
            [Pool("batch", total_nodes, gpus_per_node)],
            SlurmSettings(backfill, **bf),  # type: ignore[arg-type]
            epoch_s=epoch_s,
        )

    def starts(self, total_nodes: int, backfill: str, **bf: float) -> dict[int, float | None]:
        """Start time by job id (None: never started)."""
        run = self.simulate(total_nodes, backfill, **bf)
        return {
            int(job_id): None if np.isnan(start) else float(start)
            for job_id, start in zip(run.jobs.job_id, run.start_s, strict=True)
        }


def reference_for(
    run: ModelRun,
    total_nodes: int,
    backfill: str,
    plans: list[tuple[float, str, int, frozenset[int], float, float]] | None = None,
) -> tuple[list[float | None], dict[int, list[float]]]:
    """The reference implementation's start times (and EASY reservations) for the jobs of ``run``."""
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


def starts_of(run: ModelRun) -> list[float | None]:
    return [None if math.isnan(start) else start for start in run.start_s.tolist()]


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


# The Slurm main scheduler passing at every whole second (sched_interval=1, batch_sched_delay=0),
# as at every event for whole-second workloads: for tests of what backfill decides on its own.
MAIN_EVERY_SECOND = {"sched_interval": 1, "batch_sched_delay": 0}


def workload() -> Workload:
    return Workload()


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


def gpuplan(*args: str, columns: int = 250) -> tuple[int, str, str]:
    """``gpuplan ARGS`` in this process: (exit code, stdout, stderr). Anything but a clean exit, such as
    an exception escaping a command, fails the test; tables are not wrapped (``columns``)."""
    from typer.testing import CliRunner

    from gpuplan.cli import app

    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr
