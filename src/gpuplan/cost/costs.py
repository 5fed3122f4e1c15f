"""What each model's run costs over the measuring window, from its node-hours up and a price book.

A pool costs its node-hours up in the window (``metrics.summary.remeasure``: every node over the
window, or the node-hours an autoscaled, lent or power-saved pool's nodes were up) times the
node-hour price its pricing option pays (``cost.book``). A capacity reservation also pays, for each
reserved node-hour not up, the documented share of the price. Idle cost is the part of a pool's
cost its busy GPU-hours do not use; a pool whose peak use stays below ``UNDERUSED_PEAK_SHARE`` of
its GPUs is flagged (``underused``). Everything lands in the model's summary:

- ``cluster.pools.<name>``: ``price_per_node_hour`` (paid), ``price_per_gpu_hour``, ``price_source``,
  ``pricing_option``, ``node_hours_up``, ``cost_usd``, ``idle_cost_usd``, ``peak_share``, ``underused``;
- ``cost_usd`` (null when a pool has no price) and ``cost {usd, usd_per_month,
  usd_per_completed_gpu_hour, idle_usd, hours, prices}`` (completed: busy GPU-hours less the work
  preemption lost).

Example: ``apply_costs(summary["models"]["slurm"], price_book(loaded.scenario))``
"""

from __future__ import annotations

from typing import Any

from gpuplan.cost.book import RESERVED, PriceBook

HOURS_PER_MONTH = 730.0  # 365 x 24 / 12, as Oracle's cost estimator counts a month
# A pool whose busiest moment uses less than this share of its GPUs is sized well above its load
UNDERUSED_PEAK_SHARE = 0.5


def apply_costs(summary: dict[str, Any], book: PriceBook | None) -> dict[str, Any]:
    """Set every cost figure of one model's summary (changed in place, and returned)."""
    window = summary.get("window") or {}
    hours = max(float(window.get("end_s", 0.0)) - float(window.get("begin_s", 0.0)), 0.0) / 3600.0
    total: float | None = 0.0
    idle_total = 0.0
    prices: dict[str, str] = {}
    for pool in summary["cluster"]["pools"].values():
        price = book.of(pool.get("origin", "")) if book is not None else None
        gpus_per_node = max(int(pool["gpus_per_node"]), 1)
        node_hours = float(pool["gpu_hours_available"]) / gpus_per_node
        pool["node_hours_up"] = node_hours
        pool["peak_share"] = pool["peak_busy_gpus"] / pool["gpus"] if pool["gpus"] else None
        pool["underused"] = pool["peak_share"] is not None and pool["peak_share"] < UNDERUSED_PEAK_SHARE
        paid = price.usd_per_node_hour_paid if price is not None else None
        pool["pricing_option"] = price.option if price is not None else None
        pool["price_source"] = price.source if price is not None else "none (no price book: a trace)"
        pool["price_per_node_hour"] = paid
        pool["price_per_gpu_hour"] = None if paid is None else paid / gpus_per_node
        if price is None or paid is None:
            pool["cost_usd"] = pool["idle_cost_usd"] = None
            total = None
            continue
        prices[price.pool] = price.source
        cost = node_hours * paid
        if price.option == RESERVED and price.unused_reserved_share is not None and price.nodes:
            # this pool's part of the reservation (a hybrid side holds its share of the nodes)
            reserved = price.reserved_nodes * int(pool["nodes"]) / price.nodes * hours
            unused = max(reserved - node_hours, 0.0)
            cost += unused * paid * price.unused_reserved_share
        available = float(pool["gpu_hours_available"])
        busy = min(float(pool["gpu_hours_busy"]), available)
        idle = cost * (1.0 - busy / available) if available > 0 else cost
        pool["cost_usd"], pool["idle_cost_usd"] = cost, idle
        idle_total += idle
        if total is not None:
            total += cost
    if not summary["cluster"]["pools"]:
        total = None
    summary["cost_usd"] = total
    # the GPU-hours of work done: busy, less the work preemption threw away
    done_hours = float(summary.get("gpu_hours") or 0.0) - float(
        (summary.get("preemption") or {}).get("lost_gpu_hours") or 0.0
    )
    summary["cost"] = {
        "usd": total,
        "usd_per_month": None if total is None or hours <= 0 else total * HOURS_PER_MONTH / hours,
        "usd_per_completed_gpu_hour": None if total is None or done_hours <= 0 else total / done_hours,
        "idle_usd": None if total is None else idle_total,
        "hours": hours,
        "prices": prices,
    }
    return summary
