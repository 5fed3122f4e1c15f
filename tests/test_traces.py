"""The compiled engine against the straightforward reference on real traces.

Runs on the bundled slice always, and on every SWF trace in ../shared/traces/swf when present."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.inputs import cluster_nodes
from gpuplan.sim.cluster import Pool
from gpuplan.sim.slurm.model import SlurmSettings, simulate_slurm
from gpuplan.workload.swf import read_swf

from builders import reference_for, starts_of

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces" / "swf"
TRACES = [ROOT / "examples" / "lublin_256_first2000.swf.gz"]
TRACES += sorted(SHARED.glob("*.*swf.gz")) if SHARED.is_dir() else []


def check_against_reference(path: Path, backfill: str) -> None:
    trace = read_swf(path)
    nodes, _ = cluster_nodes(trace, None, 1)
    run = simulate_slurm(trace.jobs, [Pool("batch", nodes, 1)], SlurmSettings(backfill))
    expected, _ = reference_for(run, nodes, backfill)
    mismatches = [i for i, (a, b) in enumerate(zip(starts_of(run), expected, strict=True)) if a != b]
    assert not mismatches, f"{len(mismatches)} jobs differ, first job id {run.jobs.job_id[mismatches[0]]}"


@pytest.mark.parametrize("backfill", ["none", "easy"])
@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_start_times_equal_the_reference(path: Path, backfill: str) -> None:
    check_against_reference(path, backfill)


def test_shared_traces_are_present() -> None:
    if not SHARED.is_dir():
        pytest.skip(
            f"{SHARED} is absent (a fresh clone has no ../shared): only the bundled slice was checked"
        )
    assert len(TRACES) > 1
