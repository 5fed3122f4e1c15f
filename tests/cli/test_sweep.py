"""``gpuplan sweep``: variants x models x seeds, a row per point in sweep.parquet, resumable after a
``kill -9``, the same results on this machine's workers and on Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import EXAMPLES, gpuplan

SCENARIO = """\
name: tiny
seed: 11
horizon: 2d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 4}
teams:
  - {name: research, persona: researcher}
workloads:
  - name: train
    kind: batch
    team: research
    pool: h100
    arrival: {rate: 30/day}
    size: {"1x8": 70, "2x8": 30}
    duration: {median: 3h, sigma: 0.8}
targets:
  p95_wait: 2h
"""

SWEEP = """\
scenario: tiny.yaml
models: [slurm, kubernetes]
seeds: 2
grid:
  cluster.pools.h100.nodes: [3, 5]
variants:
  - {workloads.train.arrival.rate: 20/day}
  - {workloads.train.arrival.rate: 40/day}
"""


def write_sweep(directory: Path, sweep: str = SWEEP) -> Path:
    (directory / "tiny.yaml").write_text(SCENARIO)
    path = directory / "sweep.yaml"
    path.write_text(sweep)
    return path


def test_a_row_per_variant_model_and_seed_and_the_medians_per_variant(tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path)
    out = tmp_path / "out"
    code, stdout, err = gpuplan("sweep", str(sweep), "--out", str(out))
    assert code == 0, err
    assert "16 points: 16 run on local" in stdout
    table = pq.read_table(out / "sweep.parquet").to_pylist()
    assert len(table) == 4 * 2 * 2  # 4 variants (2 rates x 2 sizes), 2 models, 2 seeds
    first = table[0]
    assert (
        first["set:cluster.pools.h100.nodes"] == "3" and first["set:workloads.train.arrival.rate"] == "20/day"
    )
    assert first["cluster.pools.h100.nodes"] == 3  # the figure: the pool's nodes in the run
    assert {row["model"] for row in table} == {"slurm", "kubernetes"}
    assert all(row["wait_s.p95"] is not None and row["cost.usd_per_month"] > 0 for row in table)
    summary = json.loads((out / "sweep.json").read_text())
    assert [v["set"] for v in summary["variants"]][:2] == [
        ['workloads.train.arrival.rate="20/day"', "cluster.pools.h100.nodes=3"],
        ['workloads.train.arrival.rate="20/day"', "cluster.pools.h100.nodes=5"],
    ]
    # more nodes: cost more a month, wait less (the medians over the seeds)
    small, large = (summary["variants"][k]["models"]["slurm"] for k in (0, 1))
    assert large["cost per month (USD)"] > small["cost per month (USD)"]
    assert large["p95 wait (s)"] <= small["p95 wait (s)"]
    assert isinstance(large["targets_met_in_every_seed"], bool)
    html = (out / "sweep.html").read_text()
    assert "chart-frontier" in html and "Every variant" in html
    # the same sweep again reads every point back, and writes the same table
    before = (out / "sweep.parquet").read_bytes()
    code, stdout, _ = gpuplan("sweep", str(sweep), "--out", str(out))
    assert code == 0 and "16 points: 0 run on local" in stdout and "16 read back" in stdout
    assert (out / "sweep.parquet").read_bytes() == before


def test_killed_midway_a_rerun_runs_only_the_points_not_stored(tmp_path: Path) -> None:
    many = SWEEP.replace("[3, 5]", "[3, 4, 5, 6]").replace("seeds: 2", "seeds: 3")  # 48 points
    sweep = write_sweep(tmp_path, many)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "gpuplan",
        "sweep",
        str(sweep),
        "--out",
        str(out),
        "--processes",
        "1",
        "-q",
    ]
    process = subprocess.Popen(command, start_new_session=True)
    points = out / "points"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(points.glob("*.json"))) < 5:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    stored = len(list(points.glob("*.json")))
    assert 5 <= stored < 48, "the sweep finished before it could be killed"
    assert not (out / "sweep.json").exists()
    code, stdout, err = gpuplan("sweep", str(sweep), "--out", str(out))
    assert code == 0, err
    assert f"48 points: {48 - stored} run on local" in stdout and f"{stored} read back" in stdout
    # and the results are those of a sweep never interrupted
    fresh = tmp_path / "fresh"
    assert gpuplan("sweep", str(sweep), "--out", str(fresh), "-q")[0] == 0
    assert pq.read_table(out / "sweep.parquet").equals(pq.read_table(fresh / "sweep.parquet"))


def test_ray_runs_the_same_points_to_the_same_results(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is the extra gpuplan[ray]")
    import ray

    from gpuplan.sweep.executors import RayExecutor
    from gpuplan.sweep.sweep import SweepRequest, run_sweep

    sweep = write_sweep(tmp_path)
    local = tmp_path / "local"
    assert gpuplan("sweep", str(sweep), "--out", str(local), "-q")[0] == 0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result = run_sweep(SweepRequest(sweep, tmp_path / "ray", RayExecutor()))
    finally:
        ray.shutdown()
    assert result.progress.run == 16
    assert pq.read_table(tmp_path / "ray" / "sweep.parquet").equals(pq.read_table(local / "sweep.parquet"))


@pytest.mark.parametrize(
    ("sweep", "expected"),
    [
        (
            "scenario: tiny.yaml\ngird: {a: [1]}\n",
            "sweep.yaml:2: gird: unknown key 'gird'; did you mean 'grid'?",
        ),
        ("scenario: tiny.yaml\nseeds: 2\n", "grid: give a grid or variants: nothing to sweep"),
        (
            "scenario: tiny.yaml\ngrid: {cluster.pools.h10.nodes: [3]}\n",
            "--set cluster.pools.h10.nodes: cluster.pools has no item named 'h10'; did you mean 'h100'?",
        ),
        ("scenario: none.yaml\ngrid: {horizon: [1d]}\n", "none.yaml: scenario: no such scenario file"),
        ("scenario: tiny.yaml\nseeds: true\ngrid: {horizon: [1d]}\n", "sweep.yaml:2: seeds: "),
    ],
)
def test_a_wrong_sweep_file_is_exit_2_naming_file_line_and_field(
    tmp_path: Path, sweep: str, expected: str
) -> None:
    path = write_sweep(tmp_path, sweep)
    code, _, err = gpuplan("sweep", str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert expected in err


def test_the_bundled_sweep_example_is_valid() -> None:
    from gpuplan.sweep.sweep import read_spec, variants_of

    spec = read_spec(EXAMPLES / "research-lab.sweep.yml")
    assert len(variants_of(spec)) == 8 and (EXAMPLES / spec.scenario).is_file()
