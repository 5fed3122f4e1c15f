"""``gpuplan size``: the least-cost node counts per model that meet the targets in every seed, checked
here by re-simulating them (and one node fewer) with ``compare``, a path the search does not use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplan.advisor.scoring import target_misses
from gpuplan.compare import CompareRequest, compare

from builders import gpuplan

SCENARIO = """\
name: sized
seed: 21
horizon: 3d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 6}
teams:
  - {name: research, persona: researcher}
workloads:
  - name: train
    kind: batch
    team: research
    pool: h100
    arrival: {rate: 40/day}
    size: {"1x8": 70, "2x8": 30}
    duration: {median: 3h, sigma: 0.8}
targets:
  p95_wait: 3h
"""


def _meets(tmp_path: Path, scenario: Path, model: str, nodes: int, seeds: int) -> bool:
    """Every seed of ``compare`` at ``nodes`` meets the p95 wait target (no material work undone)."""
    out = tmp_path / f"check-{model}-{nodes}"
    sets = (f"cluster.pools.h100.nodes={nodes}",)
    summary = compare(CompareRequest(scenario, (model,), out, 2, seeds=seeds, sets=sets)).summary
    per_seed: dict[str, Any] = summary.get("per_seed") or {"only": summary["models"]}
    return all(target_misses(s[model], {"p95_wait": 3 * 3600.0}) == 0 for s in per_seed.values())


@pytest.mark.parametrize("model", ["slurm", "kubernetes"])
def test_the_size_meets_the_targets_in_every_seed_and_one_node_fewer_does_not(
    tmp_path: Path, model: str
) -> None:
    scenario = tmp_path / "sized.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    code, stdout, err = gpuplan("size", str(scenario), "--model", model, "--seeds", "3", "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "size.json").read_text())
    body = summary["models"][model]
    nodes = body["nodes"]["h100"]
    assert body["found"] and body["targets"] == {"p95_wait": "met"}
    assert f"{model}: h100 {nodes} nodes ({8 * nodes} GPUs)" in stdout and "meets the targets" in stdout
    assert f"({body['simulations']} simulations)" in stdout
    # bisection and the doubling: far fewer simulations than trying every count
    assert body["simulations"] <= 3 * (2 + 2 * 5)
    assert _meets(tmp_path, scenario, model, nodes, 3)
    assert not _meets(tmp_path, scenario, model, nodes - 1, 3)
    assert body["one_node_fewer_misses"] == {"h100": True}
    assert body["figures"]["cost_usd_per_month"] == pytest.approx(nodes * 80.0 * 730, rel=0.02)
    assert "What size meets the targets" in (out / "size.html").read_text()
    # a rerun reads every simulation back
    code, stdout, _ = gpuplan("size", str(scenario), "--model", model, "--seeds", "3", "--out", str(out))
    assert code == 0 and f"{body['simulations']} simulations: 0 run" in stdout


def test_a_scenario_without_a_target_more_nodes_help_is_refused(tmp_path: Path) -> None:
    scenario = tmp_path / "sized.yaml"
    scenario.write_text(SCENARIO.replace("  p95_wait: 3h", "  gpu_utilization: 0.5"))
    code, _, err = gpuplan("size", str(scenario), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "targets: size needs a target more nodes help: targets.p95_wait or targets.slo_attainment" in err


def test_targets_more_nodes_hurt_are_checked_at_the_size(tmp_path: Path) -> None:
    # a budget below the size the wait target needs: no size meets both, and the command says which
    scenario = tmp_path / "sized.yaml"
    scenario.write_text(SCENARIO.replace("  p95_wait: 3h", "  p95_wait: 3h\n  budget_usd_per_month: 1000"))
    code, stdout, err = gpuplan(
        "size", str(scenario), "--model", "slurm", "--seeds", "2", "--out", str(tmp_path / "o")
    )
    assert code == 1
    assert "misses budget_usd_per_month" in stdout
    assert "misses budget_usd_per_month" in err


def test_recommend_at_size_compares_each_model_at_its_least_cost_size(tmp_path: Path) -> None:
    scenario = tmp_path / "sized.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    code, stdout, err = gpuplan("recommend", str(scenario), "--size", "--seeds", "2", "--out", str(out))
    assert code in (0, 1), err
    sizes = json.loads((out / "size" / "size.json").read_text())["models"]
    summary = json.loads((out / "summary.json").read_text())
    for model in ("slurm", "kubernetes"):
        nodes = sizes[model]["nodes"]["h100"]
        assert f"size of {model}: h100 {nodes} nodes" in stdout
        assert summary["models"][model]["set"] == [f"cluster.pools.h100.nodes={nodes}"]
        assert summary["models"][model]["cluster"]["pools"]["h100"]["nodes"] == nodes


def test_a_target_held_at_a_quantile_of_the_seeds_needs_no_more_nodes(tmp_path: Path) -> None:
    scenario = tmp_path / "sized.yaml"
    scenario.write_text(SCENARIO)
    sizes = {}
    for quantile in ("1", "0.5"):
        out = tmp_path / f"q{quantile}"
        args = ["size", str(scenario), "--model", "slurm", "--seeds", "4", "--quantile", quantile]
        code, _, err = gpuplan(*args, "--out", str(out))
        assert code == 0, err
        summary = json.loads((out / "size.json").read_text())
        assert summary["quantile"] == float(quantile)
        sizes[quantile] = summary["models"]["slurm"]["nodes"]["h100"]
    assert sizes["0.5"] <= sizes["1"]


def test_the_runner_up_and_its_distance_are_printed(tmp_path: Path) -> None:
    scenario = tmp_path / "sized.yaml"
    scenario.write_text(SCENARIO)
    args = ["size", str(scenario), "--model", "slurm", "--model", "kubernetes", "--seeds", "2"]
    code, stdout, err = gpuplan(*args, "--out", str(tmp_path / "out"))
    assert code == 0, err
    summary = json.loads((tmp_path / "out" / "size.json").read_text())
    cheapest, runner = summary["cheapest"], summary["runner_up"]
    assert f"cheapest that meets the targets: {cheapest}; the runner-up, {runner['model']}, costs" in stdout
