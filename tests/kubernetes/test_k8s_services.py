"""Inference services in the Kubernetes model: the HPA algorithm, cold starts, the cluster autoscaler's
provisioning delay and scale-down, priority over batch, and SLO figures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpuplan.sim.kubernetes import NodePoolSpec
from gpuplan.sim.kubernetes.hpa import Hpa, HpaSpec
from gpuplan.sim.outcome import ModelRun
from gpuplan.workload.services import DEMAND_STEP_S, Service

from builders import Pods, kubernetes_settings, node_pool, pods


def hpa(**spec: Any) -> Hpa:
    values: dict[str, Any] = {"min_replicas": 1, "max_replicas": 50, "throughput_per_replica": 10.0}
    return Hpa(HpaSpec(**{**values, "target_utilization": 1.0, **spec}))


def test_hpa_sets_replicas_to_demand_over_target_per_replica() -> None:
    # 10 ready replicas at 80 % target; 150 requests/s need ceil(150 / 8) = 19
    assert hpa(target_utilization=0.8).desired(0.0, 10, 10, 150.0) == 19


def test_hpa_does_nothing_within_the_tolerance() -> None:
    assert hpa().desired(0.0, 10, 10, 108.0) == 10  # ratio 1.08 <= 1 + 0.1
    assert hpa().desired(0.0, 10, 10, 115.0) == 12


def test_hpa_scale_up_is_limited_by_the_default_policy() -> None:
    # from 2 replicas, at most max(2 x 2, 2 + 4) = 6 in one sync
    assert hpa().desired(0.0, 2, 2, 200.0) == 6


def test_hpa_counts_replicas_not_ready_as_idle_when_scaling_up() -> None:
    # 5 ready of 10: on the ready ones the ratio is 1.6, over all 10 it is 0.8: no scale-up
    assert hpa().desired(0.0, 10, 5, 80.0) == 10
    # over all 10 still 1.5: scale to ceil(1.5 x 10)
    assert hpa().desired(0.0, 10, 5, 150.0) == 15


def test_hpa_scale_down_waits_for_the_stabilization_window() -> None:
    h = hpa(scale_down_window_s=300.0)
    assert h.desired(0.0, 10, 10, 100.0) == 10
    assert h.desired(15.0, 10, 10, 20.0) == 10  # the recommendation of 10 at t = 0 still holds
    assert h.desired(299.0, 10, 10, 20.0) == 10
    assert h.desired(301.0, 10, 10, 20.0) == 2


def test_hpa_keeps_within_min_and_max_replicas() -> None:
    assert hpa(min_replicas=3).desired(0.0, 4, 4, 1.0) == 3
    assert hpa(max_replicas=7).desired(0.0, 4, 4, 100.0) == 7


def service(demand: list[float], **values: Any) -> Service:
    spec: dict[str, Any] = {
        "name": "chat",
        "team": "product",
        "pool": "a10",
        "gpus_per_replica": 1,
        "throughput_per_replica": 10.0,
        "min_replicas": 1,
        "max_replicas": 16,
        "slo_target": 0.99,
        "demand_rps": np.repeat(np.asarray(demand, float), 1),
    }
    return Service(**{**spec, **values})


def run_services(
    services: list[Service], pool: NodePoolSpec, jobs: Pods | None = None, **values: Any
) -> ModelRun:
    """``services`` (and batch ``jobs``) on ``pool``, the HPA targeting full use with a 3-min cold start."""
    settings = kubernetes_settings(hpa={"targetUtilization": 1.0, "coldStart": "3m"}, **values)
    return (jobs if jobs is not None else pods()).simulate([pool], settings, services)


def test_scale_up_waits_for_node_provisioning_and_cold_start() -> None:
    # Demand jumps from 10 to 60 requests/s at 5 min. One 4-GPU node is up; the pool may grow to 2.
    # The HPA asks 6 replicas at the first sync after the jump; 2 do not fit and wait for a node
    # the autoscaler launches (10 min), then their 3-min cold start.
    demand = [10.0] + [60.0] * 11
    pool = node_pool(1, gpus=4, name="a10", max_nodes=2, provision_delay_s=600.0)
    fast = run_services([service(demand)], node_pool(2, gpus=4, name="a10"))
    slow = run_services([service(demand)], pool)
    assert slow.extra["kubernetes"]["node_pools"]["a10"]["nodes_added"] == 1
    # SLO samples every 15 s. Without provisioning the demand is missed for the cold start (plus a
    # sync or two: the default scale-up policy adds at most 4 replicas per sync); with it, for the
    # 10-minute provisioning delay more (plus up to one --scan-interval).
    samples = len(demand) * DEMAND_STEP_S / 15.0
    missed_fast = (1 - fast.services[0].slo_attainment) * samples
    missed_slow = (1 - slow.services[0].slo_attainment) * samples
    assert 180 / 15 - 1e-6 <= missed_fast <= 180 / 15 + 3
    assert 600 / 15 - 1e-6 <= missed_slow - missed_fast <= (600 + 10) / 15 + 1
    assert slow.services[0].unmet_demand_fraction > fast.services[0].unmet_demand_fraction


def test_slo_attainment_falls_when_max_replicas_is_too_low() -> None:
    demand = [40.0] * 12
    enough = run_services([service(demand)], node_pool(2, gpus=4, name="a10"))
    capped = run_services([service(demand, max_replicas=3)], node_pool(2, gpus=4, name="a10"))
    assert enough.services[0].slo_attainment == 1.0
    assert capped.services[0].slo_attainment == 0.0
    assert capped.services[0].unmet_demand_fraction == pytest.approx(10 / 40)
    assert capped.services[0].mean_replicas == 3.0


def test_idle_nodes_are_removed_after_scale_down_unneeded_time() -> None:
    # A burst needs 2 nodes, then demand falls: the extra node goes after 10 min unneeded
    demand = [10.0] + [70.0] * 6 + [10.0] * 17
    pool = node_pool(1, gpus=4, name="a10", max_nodes=2, provision_delay_s=60.0)
    outcome = run_services([service(demand, max_replicas=8)], pool)
    figures = outcome.extra["kubernetes"]["node_pools"]["a10"]
    assert figures["nodes_added"] == 1 and figures["nodes_removed"] == 1
    # the pool is billed for the node-hours it had: less than 2 nodes for the whole span
    assert 24 * DEMAND_STEP_S / 3600 < figures["node_hours"] < 2 * 24 * DEMAND_STEP_S / 3600


def test_inference_replicas_preempt_batch_jobs() -> None:
    # A batch job fills the only node; a service replica (production priority) evicts it.
    jobs = pods().job(gpus=4, run=5000.0)
    demand = [0.0, 0.0, 30.0, 30.0]
    outcome = run_services([service(demand, min_replicas=0)], node_pool(1, gpus=4, name="a10"), jobs)
    assert outcome.preemptions.tolist() == [1]
    assert outcome.lost_gpu_s[0] > 0
    # served once the replicas' cold start (3 min) is over, not when the batch job would have ended
    assert outcome.services[0].slo_attainment == pytest.approx(1 - 180 / 1200, abs=15 / 1200)


@pytest.mark.pure_python  # patches Deployments._resume_at
@pytest.mark.parametrize("example", ["k8s-inference.yaml", "mixed-org.yaml"])
def test_skipped_syncs_give_what_every_sync_gives(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Deployments._resume_at lets the run skip the syncs that change nothing (recorded later by
    # _record_skipped); running every sync must give the same schedule and service figures, bit
    # for bit
    from gpuplan.inputs import load_input
    from gpuplan.results.files import jobs_table, timeline_table
    from gpuplan.sim.kubernetes.services import Deployments
    from gpuplan.sim.models import run_input

    from builders import EXAMPLES

    loaded = load_input(EXAMPLES / example)
    skipping = run_input("kubernetes", loaded)
    resume_at = Deployments._resume_at
    gaps: list[float] = []

    pending: list[bool] = []  # a skip while a replica was pending (bound later: wake)

    def every_sync(self: Deployments, deployment: Any, now: float, period: float) -> float:
        gaps.append(resume_at(self, deployment, now, period) - (now + period))
        pending.append(gaps[-1] > 0 and deployment.bound < len(deployment.replicas))
        return now + period

    monkeypatch.setattr(Deployments, "_resume_at", every_sync)
    every = run_input("kubernetes", loaded)
    assert (
        sum(gap > 0 for gap in gaps) > len(gaps) / 4
    )  # many syncs were skippable: the test exercises the skip
    assert any(pending)  # ... also with replicas pending
    assert jobs_table(skipping).equals(jobs_table(every))
    assert timeline_table(skipping).equals(timeline_table(every))
    assert skipping.services == every.services
