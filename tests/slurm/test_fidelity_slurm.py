"""gpuplan's Slurm model against a real Slurm: the calibration replays in bench/fidelity_slurm.

Each replay ran 44 jobs on a private Slurm 22.05 of 8 emulated nodes (two partitions by
PriorityTier, multifactor priority with Fair Tree between two accounts, bf_interval=30,
bf_resolution=60) and kept the real start times (real.csv) and the scenario that states the same
settings (gpuplan-scenario.yaml, written by compare.py). The issue's target: at least 90 % of the jobs
start within bf_interval + 2 s of the real start. Two fresh replays of the same trace agree with
each other for 97.7 % of the jobs.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gpuplan.cli import app

from builders import ROOT

RESULTS = ROOT / "bench" / "fidelity_slurm" / "results"


@pytest.mark.parametrize("replay", ["calib-1", "calib-2"])
def test_nine_in_ten_jobs_start_when_the_real_slurm_started_them(replay: str, tmp_path: Path) -> None:
    source = RESULTS / replay
    for name in ("gpuplan-scenario.yaml", "trace.swf"):
        shutil.copy(source / name, tmp_path / name)
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(tmp_path / "gpuplan-scenario.yaml"),
            "--model",
            "slurm",
            "--out",
            str(tmp_path),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    meta = json.loads((source / "replay.json").read_text())
    with (source / "real.csv").open(newline="") as fh:
        real = {int(r["job"]): r for r in csv.DictReader(fh)}
    # the scenario's clock starts at the first submission
    offset_s = min(float(r["submit_s"]) for r in real.values())
    simulated = {
        int(r["job_id"]): r["start_s"] + offset_s
        for r in pq.read_table(tmp_path / "jobs.parquet").to_pylist()
    }
    tolerance_s = meta["bf_interval"] + 2
    within = [abs(float(r["start_s"]) - simulated[job]) <= tolerance_s for job, r in real.items()]
    assert len(within) == 44
    assert sum(within) / len(within) >= 0.90
