"""Cost over the measuring window: node-hours up x the price the pool's option pays, idle cost, the
budget target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.advisor import advise
from gpuplan.compare import CompareRequest, compare
from gpuplan.cost.book import PoolPrice, PriceBook
from gpuplan.cost.costs import HOURS_PER_MONTH, apply_costs
from gpuplan.report import rebuild


def model_summary(pools: dict[str, dict[str, Any]], hours: float, busy: float) -> dict[str, Any]:
    """The figures apply_costs reads, as metrics.summary writes them."""
    for name, pool in pools.items():
        pool.setdefault("origin", name)
        pool["gpus"] = pool["nodes"] * pool["gpus_per_node"]
        up = pool.get("gpu_hours_up")
        pool["gpu_hours_available"] = pool["gpus"] * hours if up is None else up
    return {
        "cluster": {"pools": pools},
        "window": {"begin_s": 0.0, "end_s": hours * 3600.0},
        "gpu_hours": busy,
        "preemption": {"lost_gpu_hours": 0.0},
    }


def price(pool: str, nodes: int, usd: float | None, **terms: Any) -> PoolPrice:
    return PoolPrice(pool, nodes, 8, usd, f"test price of {pool}", **terms)


def test_a_pool_costs_its_node_hours_up_times_its_price() -> None:
    fixed = {
        "nodes": 4,
        "gpus_per_node": 8,
        "gpu_hours_up": None,
        "gpu_hours_busy": 320.0,
        "peak_busy_gpus": 32,
    }
    scaled = {
        "nodes": 4,
        "gpus_per_node": 8,
        "gpu_hours_up": 8 * 30.0,
        "gpu_hours_busy": 160.0,
        "peak_busy_gpus": 8,
    }
    summary = model_summary({"fixed": fixed, "scaled": scaled}, hours=10.0, busy=480.0)
    book = PriceBook({"fixed": price("fixed", 4, 80.0), "scaled": price("scaled", 4, 80.0)})
    apply_costs(summary, book)
    pools = summary["cluster"]["pools"]
    assert pools["fixed"]["cost_usd"] == pytest.approx(4 * 10 * 80.0)  # every node over the window
    assert pools["scaled"]["cost_usd"] == pytest.approx(30 * 80.0)  # the node-hours it was up
    assert pools["fixed"]["idle_cost_usd"] == 0.0  # busy all the time
    assert pools["scaled"]["idle_cost_usd"] == pytest.approx(30 * 80.0 * (1 - 160 / 240))
    assert pools["scaled"]["underused"] and not pools["fixed"]["underused"]  # peak 8 of 32 GPUs
    assert (
        pools["fixed"]["price_per_gpu_hour"] == 10.0
        and pools["fixed"]["price_source"] == "test price of fixed"
    )
    cost = summary["cost"]
    assert summary["cost_usd"] == cost["usd"] == pytest.approx(3200.0 + 2400.0)
    assert cost["usd_per_month"] == pytest.approx(5600.0 * HOURS_PER_MONTH / 10.0)
    assert cost["usd_per_completed_gpu_hour"] == pytest.approx(5600.0 / 480.0)


def test_pricing_options_and_a_committed_discount() -> None:
    def one(pool_price: PoolPrice, up: float | None = None) -> float:
        pool = {
            "nodes": 4,
            "gpus_per_node": 8,
            "gpu_hours_up": up,
            "gpu_hours_busy": 0.0,
            "peak_busy_gpus": 0,
        }
        summary = apply_costs(model_summary({"p": pool}, hours=10.0, busy=0.0), PriceBook({"p": pool_price}))
        return float(summary["cost_usd"])

    assert one(price("p", 4, 80.0, committed_discount=0.25)) == pytest.approx(0.75 * 3200.0)
    assert one(price("p", 4, 80.0, option="preemptible", option_share=0.5)) == pytest.approx(1600.0)
    # a reservation of 4 nodes with 2 up for the 10 hours: 2 x 10 up at the price, 2 x 10 unused at its share
    reserved = price("p", 4, 80.0, option="reserved", reserved_nodes=4, unused_reserved_share=0.85)
    assert one(reserved, up=2 * 10 * 8.0) == pytest.approx(20 * 80.0 + 20 * 80.0 * 0.85)
    # no price: no cost, and no total
    pool = {"nodes": 1, "gpus_per_node": 8, "gpu_hours_up": None, "gpu_hours_busy": 0.0, "peak_busy_gpus": 0}
    summary = apply_costs(model_summary({"p": pool}, 1.0, 0.0), PriceBook({"p": price("p", 1, None)}))
    assert summary["cost_usd"] is None and summary["cost"]["usd_per_month"] is None


INFERENCE = """\
name: {name}
seed: 5
horizon: 2d
cluster:
  pools:
    - {{name: a10, shape: BM.GPU.A10.4, nodes: 4, price_per_gpu_hour: 2.0}}
teams:
  - {{name: product, persona: app-developer}}
workloads:
  - name: chat
    kind: service
    team: product
    pool: a10
    gpus_per_replica: 1
    throughput_per_replica: 10
    replicas: {{min: 1, max: 16}}
    demand: {{peak: 100, trough: 5, peak_hour: 15}}
models:
  compare: [slurm, kubernetes]
  kubernetes:
    nodePools:
      - {{pool: a10, minNodes: {low}, maxNodes: 4, provisionDelay: 10m}}
"""


def _models(tmp_path: Path, name: str, low: int) -> dict[str, Any]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(INFERENCE.format(name=name, low=low))
    return compare(CompareRequest(path, None, tmp_path / name, 2, seeds=1)).summary["models"]


def test_an_autoscaled_pool_costs_less_where_its_nodes_are_up_fewer_hours(tmp_path: Path) -> None:
    scaled, fixed = _models(tmp_path, "scaled", 1), _models(tmp_path, "fixed", 4)
    up = {
        name: m["kubernetes"]["cluster"]["pools"]["a10"]["node_hours_up"]
        for name, m in (("scaled", scaled), ("fixed", fixed))
    }
    assert up["scaled"] < up["fixed"]
    assert scaled["kubernetes"]["cost_usd"] < fixed["kubernetes"]["cost_usd"]
    for models in (scaled, fixed):
        pool = models["kubernetes"]["cluster"]["pools"]["a10"]
        assert pool["cost_usd"] == pytest.approx(pool["node_hours_up"] * 4 * 2.0)  # 4 GPUs at 2 USD
    # where the node-hours are the same (every node up all the window), so is the cost
    hours = fixed["slurm"]["window"]["end_s"] / 3600.0
    assert fixed["kubernetes"]["window"] == fixed["slurm"]["window"]
    assert up["fixed"] == pytest.approx(4 * hours)
    assert fixed["kubernetes"]["cost_usd"] == pytest.approx(fixed["slurm"]["cost_usd"])
    source = fixed["slurm"]["cluster"]["pools"]["a10"]["price_source"]
    assert source == "scenario (pool a10: price_per_gpu_hour 2 USD)"


BATCH = """\
name: {name}
seed: 5
horizon: 3d
cluster:
  pools:
    - {{name: h100, shape: BM.GPU.H100.8, nodes: 4}}
teams:
  - {{name: research, persona: researcher}}
workloads:
  - name: training
    kind: batch
    team: research
    pool: h100
    arrival: {{rate: {rate}/day}}
    size: "1x8"
    duration: {{median: {median}, sigma: 0.3}}
models:
  compare: [slurm]
  slurm: {{{slurm}}}
"""
POWER_SAVING = "suspend_time: 300s, resume_timeout: 1200s"  # the OCI HPC Stack's on-demand partitions


def _slurm(tmp_path: Path, name: str, rate: int, median: str, slurm: str) -> dict[str, Any]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(BATCH.format(name=name, rate=rate, median=median, slurm=slurm))
    summary = compare(CompareRequest(path, None, tmp_path / name, 2, seeds=1)).summary
    return dict(summary["models"]["slurm"])


def test_a_slurm_pool_with_power_saving_costs_its_node_hours_up(tmp_path: Path) -> None:
    # a few short jobs a day on 4 nodes: idle nodes power down, so fewer node-hours and less cost,
    # and the jobs that land on a powered-down node wait for its boot (ResumeTimeout, 1,200 s)
    fixed = _slurm(tmp_path, "fixed", 4, "1h", "")
    saving = _slurm(tmp_path, "saving", 4, "1h", POWER_SAVING)
    pool, fixed_pool = saving["cluster"]["pools"]["h100"], fixed["cluster"]["pools"]["h100"]
    assert pool["power_saving"]["boots"] > 0
    assert pool["node_hours_up"] < 0.5 * fixed_pool["node_hours_up"]
    assert saving["cost_usd"] < 0.5 * fixed["cost_usd"]
    for one in (pool, fixed_pool):
        assert one["cost_usd"] == pytest.approx(one["node_hours_up"] * 80.0)  # the catalogue's list price
    assert saving["wait_s"]["p50"] >= 1200.0 > fixed["wait_s"]["p50"]
    assert saving["settings"]["suspend_time"] == 300.0
    rebuild(tmp_path / "saving")  # the report's cost section names it, with its boots
    report = (tmp_path / "saving" / "report.md").read_text()
    boots = pool["power_saving"]["boots"]
    assert "slurm's pool h100: 4 nodes power down after 5 min idle (SuspendTime)" in report
    assert f"{boots} boots" in report

    # a pool its jobs keep busy from the start: no node is idle for SuspendTime before the last
    # ends, so its node-hours are the fixed pool's over the same span (each node then stays up
    # for SuspendTime after its last job, paid, and the fixed pool until the window's end)
    busy_fixed = _slurm(tmp_path, "busy-fixed", 200, "6h", "")
    busy = _slurm(tmp_path, "busy-saving", 200, "6h", POWER_SAVING)
    pool = busy["cluster"]["pools"]["h100"]
    assert pool["power_saving"]["boots"] == 4  # each node once, at t = 0 (State=CLOUD)
    last_end_h = max(busy["last_end_s"], busy_fixed["last_end_s"]) / 3600.0
    assert pool["node_hours_up"] <= 4 * (last_end_h + 300 / 3600.0)
    fixed_hours = busy_fixed["cluster"]["pools"]["h100"]["node_hours_up"]
    assert pool["node_hours_up"] == pytest.approx(fixed_hours, rel=0.01)
    assert busy["cost_usd"] == pytest.approx(busy_fixed["cost_usd"], rel=0.01)


def test_a_boot_longer_than_resume_timeout_is_refused(tmp_path: Path) -> None:
    from builders import gpuplan

    path = tmp_path / "boot.yaml"
    slurm = "suspend_time: 300s, resume_timeout: 10m, node_boot_time: 15m"
    path.write_text(BATCH.format(name="boot", rate=4, median="1h", slurm=slurm))
    code, _, err = gpuplan("validate", str(path))
    assert code == 2
    assert f"{path}:19: models.slurm: node_boot_time 900.0 s exceeds resume_timeout 600.0 s" in err


def outcome(p95: float, per_month: float) -> dict[str, Any]:
    return {
        "wait_s": {"mean": p95 / 3, "p50": p95 / 4, "p95": p95},
        "gpu_utilization": 0.6,
        "per_team": {"a": {"wait_s": {"p95": p95}}},
        "services": {},
        "cost_usd": per_month,
        "cost": {"usd_per_month": per_month},
        "work_not_done": {"jobs": 0, "gpu_hours": 0.0, "workload_gpu_hours": 1000.0, "by_workload": {}},
    }


def test_the_budget_target_can_change_the_recommendation() -> None:
    from dataclasses import replace

    from gpuplan.advisor.evidence import gather
    from gpuplan.advisor.scoring import recommend

    summary = {
        "gpuplan_version": "test",
        "input": {},
        "models": {"slurm": outcome(600.0, 300_000.0), "kubernetes": outcome(3600.0, 200_000.0)},
    }
    assert advise(summary).chosen == "slurm"  # shorter waits, no budget
    within = recommend(replace(gather(summary), targets={"budget_usd_per_month": 250_000.0}))
    assert within.chosen == "kubernetes"
    slurm = next(m for m in within.models if m.model == "slurm")
    (check,) = [c for c in slurm.targets if c.target == "budget_usd_per_month"]
    assert check.status == "missed" and check.actual == 300_000.0


PRICED = """\
name: priced
seed: 1
horizon: 1d
cluster:
  pools:
    - name: gpu
      shape: {shape}
      nodes: 2
      pricing: {pricing}
teams:
  - {{name: research}}
workloads:
  - {{name: t, kind: batch, team: research, arrival: {{rate: 4/day}}, size: "1x1", duration: {{median: 1h}}}}
"""


def test_preemptible_capacity_on_a_bare_metal_shape_is_refused(tmp_path: Path) -> None:
    from builders import gpuplan

    path = tmp_path / "priced.yaml"
    path.write_text(PRICED.format(shape="BM.GPU.H100.8", pricing="{option: preemptible}"))
    code, _, err = gpuplan("validate", str(path))
    assert code == 2
    assert f"{path}:9: cluster.pools[0].pricing.option: BM.GPU.H100.8 is a bare-metal shape" in err


def test_a_catalogue_price_by_shape_and_its_options_end_to_end(tmp_path: Path) -> None:
    """No price in the scenario: the catalogue's list price by shape, named as such; preemptible
    capacity on a VM shape at Oracle's published share, a committed discount off that."""
    from gpuplan.scenario.shapes import PRICING, get_shape

    list_price = get_shape("VM.GPU.A10.1").price_per_node_hour_usd
    assert list_price is not None and PRICING.preemptible_share is not None
    costs = {}
    for name, pricing in (
        ("on-demand", "{option: on_demand}"),
        ("preemptible", "{option: preemptible, committed_discount_percent: 10}"),
    ):
        path = tmp_path / f"{name}.yaml"
        path.write_text(PRICED.format(shape="VM.GPU.A10.1", pricing=pricing))
        body = compare(CompareRequest(path, ("slurm",), tmp_path / name, 1, seeds=1)).summary["models"][
            "slurm"
        ]
        pool = body["cluster"]["pools"]["gpu"]
        assert "catalogue list price of VM.GPU.A10.1" in pool["price_source"]
        assert "skypilot-catalog" in pool["price_source"] and pool["pricing_option"] == name.replace("-", "_")
        costs[name] = body["cost_usd"]
        hours = body["window"]["end_s"] / 3600.0
    assert costs["on-demand"] == pytest.approx(2 * hours * list_price)
    assert costs["preemptible"] == pytest.approx(costs["on-demand"] * PRICING.preemptible_share * 0.9)


def test_a_lent_node_is_paid_once(tmp_path: Path) -> None:
    """Hybrid lending: a node Slurm lends to Kubernetes is up on one side at a time, so the two sides'
    node-hours up never exceed the pool's nodes over the window, and the cost is those node-hours."""
    from builders import DATA

    text = (DATA / "hybrid_lending.yaml").read_text()
    text = text.replace(
        "    split: {gpu: 4}", "    split: {gpu: 5}\n    lending: {policy: kubernetes_borrows}"
    )
    text = text.replace("gpus_per_node: 4, nodes: 6", "gpus_per_node: 4, nodes: 6, price_per_gpu_hour: 3.0")
    path = tmp_path / "lending.yaml"
    path.write_text(text)
    body = compare(CompareRequest(path, ("hybrid",), tmp_path / "out", 1, seeds=1)).summary["models"][
        "hybrid"
    ]
    pools = body["cluster"]["pools"]
    hours = (body["window"]["end_s"] - body["window"]["begin_s"]) / 3600.0
    lent = pools["gpu/kubernetes"]["node_hours_up"] - 1 * hours  # beyond its own node
    assert lent > 0  # Kubernetes borrowed Slurm nodes
    assert pools["gpu/slurm"]["node_hours_up"] < 5 * hours
    up = sum(pool["node_hours_up"] for pool in pools.values())
    assert up <= 6 * hours + 1e-6
    assert body["cost_usd"] == pytest.approx(up * 4 * 3.0)
