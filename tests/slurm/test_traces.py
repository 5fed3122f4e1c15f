"""The compiled engine against the straightforward reference on real traces.

Runs on the bundled slice always, and on every SWF trace in ../shared/traces/swf when present."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpuplan.inputs import cluster_nodes
from gpuplan.sim.slurm.model import SlurmSettings
from gpuplan.workload.swf import read_swf

from builders import EXAMPLES, SHARED_TRACES, reference_for, run_slurm, starts_of

SHARED = SHARED_TRACES / "swf"
TRACES = [EXAMPLES / "lublin_256_first2000.swf.gz"]
TRACES += sorted(SHARED.glob("*.*swf.gz")) if SHARED.is_dir() else []


def check_against_reference(path: Path, backfill: str) -> None:
    trace = read_swf(path)
    nodes, _ = cluster_nodes(trace, None, 1)
    run = run_slurm(trace.jobs, nodes, settings=SlurmSettings(backfill))
    expected, _ = reference_for(run, nodes, backfill)
    mismatches = [i for i, (a, b) in enumerate(zip(starts_of(run), expected, strict=True)) if a != b]
    assert not mismatches, f"{len(mismatches)} jobs differ, first job id {run.jobs.job_id[mismatches[0]]}"


@pytest.mark.parametrize("backfill", ["none", "easy"])
@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_start_times_equal_the_reference(path: Path, backfill: str) -> None:
    check_against_reference(path, backfill)


def test_shared_traces_are_present(shared_trace: Callable[[str], Path]) -> None:
    shared_trace("swf")  # else only the bundled slice was checked
    assert len(TRACES) > 1
