"""scheduler-plugins' Coscheduling beside plain Jobs and Kueue (pkg/coscheduling: a PodGroup's pods
wait at Permit until minMember of them have nodes, then bind together): two 3-pod Jobs created at
once on 4 nodes deadlock as plain Jobs (their pods interleave in the scheduling queue and each job
holds 2 nodes idle), and run one after the other as PodGroups."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import simulate_into

SCENARIO = """\
name: gangs
seed: 1
horizon: 6h
cluster:
  pools:
    - {{name: h100, shape: BM.GPU.H100.8, nodes: 4}}
teams:
  - {{name: team-a, share: 1}}
workloads:
  - {{name: listed, jobs: jobs.csv}}
models:
  kubernetes:
    kueue: {{enable: false}}
    scheduler: {{coscheduling: {coscheduling}}}
"""
JOBS = "name,namespace,created,runtime,pods,gpus\none,team-a,0,3600,3,8\ntwo,team-a,0,3600,3,8\n"


@pytest.mark.parametrize("coscheduling", [False, True])
def test_pod_groups_bind_whole_where_plain_jobs_deadlock(tmp_path: Path, coscheduling: bool) -> None:
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "scenario.yaml").write_text(SCENARIO.format(coscheduling=str(coscheduling).lower()))
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    rows = {r["name"]: r for r in pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["models"]["kubernetes"]
    idle = summary["kubernetes"]["gang"]["idle_held_gpu_hours"]
    if coscheduling:  # one group binds whole, the other waits for it to end
        assert sorted((row["start_s"], row["end_s"]) for row in rows.values()) == [
            (0.0, 3600.0),
            (3600.0, 7200.0),
        ]
        assert idle == 0
    else:
        assert all(rows[n]["start_s"] is None and rows[n]["reason"] == "Unschedulable" for n in rows)
        assert idle == pytest.approx(2 * 2 * 8 * 6)  # 2 jobs x 2 bound pods x 8 GPUs x 6 h
