"""The engine core and its pieces: the registry by the names Slurm users know, settings by name.

How to add a piece's plugin (e.g. a preemption order, or a priority plugin): one C file and one
Python file. For a preemption order ``preempt/youngest_first``:

- ``src/gpuplan/sim/slurm/_core/preempt.c``: a comparator of ``Victim``, an ops table
  ``static const GpPreemptOps YOUNGEST = {youngest_cmp};``, a setup calling
  ``preempt_setup_with(sim, s, &YOUNGEST)`` and an entry
  ``{"preempt/youngest_first", "...", youngest_setup}`` in ``GP_PREEMPT_PLUGINS``;
- ``src/gpuplan/sim/slurm/preemption.py``: ``"youngest_first"`` in ``PREEMPT_TYPES`` (the inputs
  name their plugin ``preempt/<PreemptType>``) and, if it orders victims by another key, that key.

A priority plugin is an entry in ``GP_PRIORITY_PLUGINS`` (``_core/priority.c``) with its hooks, and
the ``plugin`` its inputs name in ``priority.py``. Nothing else names the plugins: the binding finds
them in their kind's list (``_core/plugins.h``), and ``pieces()`` lists them, as tested below.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine import _batchcore
from gpuplan.sim.engine.core import BatchJobs, PieceInputs, run_batch
from gpuplan.sim.slurm.policies import BACKFILL
from gpuplan.sim.slurm.preemption import PREEMPT_TYPES
from gpuplan.sim.slurm.settings import SlurmSettings


def test_pieces_are_registered_by_the_names_slurm_users_know() -> None:
    pieces = _batchcore.pieces()
    assert pieces["scheduler"] == ["sched/builtin", "sched/easy", "sched/backfill"]
    assert {"select/cons_tres", "select/linear", "select/first_fit"} <= set(pieces["select"])
    assert {"priority/multifactor", "priority/basic"} <= set(pieces["priority"])
    assert {f"preempt/{kind}" for kind in PREEMPT_TYPES} <= set(pieces["preempt"])
    assert {"topology/block", "topology/tree"} <= set(pieces["topology"])
    assert {"qos", "reservations", "lending"} <= set(pieces)


def test_every_backfill_option_names_a_compiled_scheduler_and_its_settings() -> None:
    defaults = SlurmSettings()
    for name in ("none", "easy", "slurm"):
        compiled = BACKFILL.get(name)
        assert compiled.plugin in _batchcore.pieces()["scheduler"]
        assert set(defaults.params(compiled.parameters)) == set(compiled.parameters)
    # node choice follows Slurm's select plugins with Slurm's backfill, the textbook one otherwise
    assert BACKFILL.get("slurm").select("cons_tres").plugin == "select/cons_tres"
    assert BACKFILL.get("easy").select("cons_tres").plugin == "select/first_fit"


def jobs(nodes: list[int], run: list[float]) -> BatchJobs:
    count = len(nodes)
    return BatchJobs(
        job_id=np.arange(1, count + 1, dtype=np.int64),
        submit_s=np.arange(count, dtype=np.float64),
        run_s=np.array(run, dtype=np.float64),
        estimate_s=np.array(run, dtype=np.float64),
        nodes=np.array(nodes, dtype=np.int32),
        gpus_per_node=np.full(count, 8, dtype=np.int32),
    )


def test_node_choice_is_the_select_piece_chosen_by_name() -> None:
    # A (2 nodes) ends at 5 leaving nodes 0, 1 and 3 free when C (1 node) arrives at 6
    batch = jobs([2, 1, 1], [5, 100, 100])
    batch = BatchJobs(**{**batch.__dict__, "submit_s": np.array([0.0, 1.0, 6.0])})
    placed = {}
    for select in ("select/first_fit", "select/linear", "select/cons_tres"):
        run = run_batch(batch, Pool("p", 4, 8), PieceInputs("sched/builtin"), PieceInputs(select))
        assert run.start_s.tolist() == [0, 1, 6]
        job, first, _ = run.node_ranges()
        placed[select] = int(first[job == 2][0])
    # the lowest-numbered free node; Slurm's best fit: the smallest run of free nodes that holds it
    assert placed == {"select/first_fit": 0, "select/linear": 3, "select/cons_tres": 3}


def minimal(**pieces: object) -> dict[str, Any]:
    one = np.zeros(1)
    return {
        "cluster": {"nodes": 1, "gpus_per_node": 1},
        "jobs": {
            "submit": one,
            "run": np.ones(1),
            "estimate": np.ones(1),
            "nodes": np.ones(1, dtype=np.int32),
            "gpus": np.ones(1, dtype=np.int32),
            "job_id": np.ones(1, dtype=np.int64),
            "gpus_per_node": np.ones(1, dtype=np.int32),
        },
        "results": {
            "start": np.empty(1),
            "range_first": np.zeros(1, dtype=np.int64),
            "range_count": np.zeros(1, dtype=np.int32),
        },
        "timeline": {
            "time_s": np.empty(8),
            "busy_gpus": np.empty(8, dtype=np.int64),
            "queued_jobs": np.empty(8, dtype=np.int32),
        },
        "scheduler": {"plugin": "sched/builtin"},
        "select": {"plugin": "select/first_fit"},
        **pieces,
    }


def test_simulate_takes_keywords_only() -> None:
    rows, ranges = _batchcore.simulate(**minimal())
    assert rows > 0 and np.frombuffer(ranges, dtype=np.int32).tolist() == [0, 1]
    with pytest.raises(TypeError):
        _batchcore.simulate(*minimal().values())  # type: ignore[call-arg]


def test_a_piece_rejects_a_setting_it_does_not_read() -> None:
    with pytest.raises(ValueError, match="unknown settings"):
        _batchcore.simulate(
            **minimal(topology={"plugin": "topology/block", "nodes_per_block": 1, "require": False, "x": 1})
        )


def test_a_missing_setting_is_named() -> None:
    with pytest.raises(ValueError, match="topology/tree: setting require is missing"):
        _batchcore.simulate(**minimal(topology={"plugin": "topology/tree", "nodes_per_block": 1}))


def test_an_unknown_plugin_is_named() -> None:
    with pytest.raises(ValueError, match="preempt: no plugin preempt/oldest"):
        _batchcore.simulate(**minimal(preempt={"plugin": "preempt/oldest"}))


@pytest.mark.parametrize(
    ("executed_s", "interval_s", "kept_s"),
    [
        (250.0, 100.0, 200.0),
        (300.0, 100.0, 300.0),
        (99.0, 100.0, 0.0),
        (250.0, 0.0, 0.0),
        (250.0, np.nan, 0.0),
    ],
)
def test_one_checkpoint_rule_for_every_model(executed_s: float, interval_s: float, kept_s: float) -> None:
    """An evicted job keeps the whole checkpoint intervals it ran (none without an interval): the
    engine's rule, which Slurm's requeue and Kubernetes' eviction both call."""
    assert _batchcore.checkpointed(executed_s, interval_s) == kept_s
