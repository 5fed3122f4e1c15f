"""The model contract (``gpuplan.sim.models``): every registered model runs on a workload, pools
and its settings -- objects in memory, no file, no command -- and returns the same outcome."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.inputs import load_input
from gpuplan.results.files import timeline_table
from gpuplan.sim.cluster import Pool
from gpuplan.sim.hybrid.settings import HybridModelSettings
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings
from gpuplan.sim.models import MODELS, run_input, run_model
from gpuplan.sim.outcome import COMPLETED
from gpuplan.sim.slurm.settings import SlurmSettings
from gpuplan.workload.workload import Workload

from builders import workload

# Slurm's FIFO pass runs at every event (sched/backfill's main scheduler waits batch_sched_delay)
FIFO = SlurmSettings("none")
DEFAULTS = {
    "slurm": FIFO,
    "kubernetes": KubernetesModelSettings(),
    "hybrid": HybridModelSettings(slurm=FIFO),
}


def queue_of_four() -> Workload:
    """Four one-node, 8-GPU jobs submitted together, each running 100 s."""
    jobs = workload()
    for _ in range(4):
        jobs.job(submit=0, run=100, gpus=8)
    return Workload(jobs.table())


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_runs_from_objects_in_memory(name: str) -> None:
    run = run_model(name, queue_of_four(), [Pool("gpu", 4, 8)], DEFAULTS[name])
    assert run.model == name and len(run.jobs) == 4
    assert (run.state == COMPLETED).all() and (run.start_s == 0).all()


@pytest.mark.parametrize("name", ["slurm", "kubernetes"])
def test_sizing_varies_the_pools_in_memory(name: str) -> None:
    """Sizing changes the pools and runs again: half the nodes, the second pair waits a run."""
    small = run_model(name, queue_of_four(), [Pool("gpu", 2, 8)], DEFAULTS[name])
    assert sorted(small.start_s.tolist()) == [0.0, 0.0, 100.0, 100.0]


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_means_the_same_by_busy_and_queued(name: str) -> None:
    """timeline.parquet is the same in every model for the same schedule: busy GPUs are those of
    running jobs, queued jobs those submitted and not started."""
    table = timeline_table(run_model(name, queue_of_four(), [Pool("gpu", 2, 8)], DEFAULTS[name]))
    assert table.column("time_s").to_pylist() == [0.0, 100.0, 200.0]
    assert table.column("busy_gpus").to_pylist() == [16, 16, 0]
    assert table.column("queued_jobs").to_pylist() == [2, 0, 0]


def test_an_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(InputError) as error:
        run_model("sge", queue_of_four(), [Pool("gpu", 4, 8)], None)
    assert error.value.field == "--model" and "slurm" in str(error.value)


def test_prepare_is_the_one_translation_of_a_scenario() -> None:
    """``prepare`` gives the settings the model runs on: running them through ``run_model`` is the
    same run as ``simulate`` does (``run_input``)."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "examples" / "research-lab.yaml"
    loaded = load_input(path)
    setup = MODELS.get("slurm").setup(loaded)
    assert setup.settings.backfill == loaded.scenario.scenario.models.slurm.backfill  # type: ignore[union-attr]
    direct = run_model("slurm", loaded.workload, setup.pools, setup.settings)
    via_input = run_input("slurm", loaded)
    np.testing.assert_array_equal(direct.start_s, via_input.start_s)
    easy = run_input("slurm", loaded, backfill="easy")
    assert easy.settings["backfill"] == "easy"
    with pytest.raises(InputError, match="applies to the slurm and hybrid models, not kubernetes"):
        run_input("kubernetes", loaded, backfill="easy")
    hybrid = MODELS.get("hybrid").setup(loaded, backfill="none").settings
    assert (
        hybrid.slurm.backfill == "none"
        and replace(hybrid.slurm, backfill=setup.settings.backfill) == setup.settings
    )
