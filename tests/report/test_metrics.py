"""Summary figures on a schedule small enough to compute by hand."""

from __future__ import annotations

import pytest

from gpuplan.metrics.summary import jain_index, summarize

from builders import workload


def test_summary_of_a_hand_computed_schedule() -> None:
    # 2 nodes. Team a: job 1 runs 0-100 on 2 nodes. Team b: job 2 (submit 10, run 5) waits 90 and
    # runs 100-105; job 3 (submit 20, run 40, limit 20) waits 80 beside it and is killed at 120.
    run = (
        workload()
        .job(submit=0, run=100, nodes=2, team="a")
        .job(submit=10, run=5, nodes=1, team="b")
        .job(submit=20, run=40, nodes=1, limit=20, team="b")
        .simulate(2, "easy")
    )
    summary = summarize(run)
    assert summary["jobs"] == {
        "submitted": 3,
        "completed": 2,
        "killed_at_limit": 1,
        "preempted": 0,
        "rejected": 0,
        "unfinished": 0,
    }
    # waits 0, 80, 90: linear interpolation between ranks
    assert summary["wait_s"]["mean"] == pytest.approx(170 / 3)
    assert summary["wait_s"]["p50"] == 80.0
    assert summary["wait_s"]["p95"] == pytest.approx(80 + 0.9 * 10)
    assert summary["wait_s"]["max"] == 90.0
    # bounded slowdown: job 1 -> 1; job 2 -> (90 + 5) / 10; job 3 -> (80 + 20) / 20
    assert summary["bounded_slowdown"]["mean"] == pytest.approx((1 + 9.5 + 5) / 3)
    assert summary["makespan_s"] == 120.0
    busy_gpu_s = 200 + 5 + 20
    assert summary["gpu_hours"] == pytest.approx(busy_gpu_s / 3600)
    assert summary["gpu_utilization"] == pytest.approx(busy_gpu_s / (2 * 120))
    assert summary["per_team"]["a"]["share_of_gpu_hours"] == pytest.approx(200 / busy_gpu_s)
    assert summary["per_team"]["b"]["wait_s"]["mean"] == pytest.approx(85.0)
    assert summary["fairness_jain"] == pytest.approx(jain_index_of([200, 25]))


def jain_index_of(values: list[float]) -> float:
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


@pytest.mark.parametrize(
    ("values", "expected"),
    [([1.0, 1.0, 1.0], 1.0), ([1.0, 0.0, 0.0, 0.0], 0.25), ([], None), ([0.0, 0.0], None)],
    ids=["equal use is fair", "one of four takes all", "no teams", "no use"],
)
def test_jain_index(values: list[float], expected: float | None) -> None:
    import numpy as np

    assert jain_index(np.array(values)) == expected


def test_team_shares_weight_fairness() -> None:
    run = workload().job(submit=0, run=30, team="a").job(submit=0, run=10, team="b").simulate(2, "none")
    assert summarize(run)["fairness_jain"] < 1.0
    assert summarize(run, team_shares={"a": 3.0, "b": 1.0})["fairness_jain"] == pytest.approx(1.0)
