"""``gpuplan simulate --model kubernetes`` end to end: a pod trace on its node list, the cohort and
inference examples (borrowing and reclaim in the summary; SLO attainment against maxReplicas and a
pool's maxNodes), bad scenario references, and identical reruns."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gpuplan.cli import app

from builders import DATA, EXAMPLES, simulate_summary

runner = CliRunner()


def variant(tmp_path: Path, example: str, *edits: tuple[str, str]) -> Path:
    text = (EXAMPLES / example).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / example
    path.write_text(text)
    return path


def test_a_pod_trace_runs_on_the_node_list_beside_it(tmp_path: Path) -> None:
    code, summary, _ = simulate_summary(
        str(DATA / "k8s_alibaba_pod_list_sample.csv"), "--out", str(tmp_path), model="kubernetes"
    )
    assert code == 0
    assert summary["model"] == "kubernetes"
    assert summary["cluster"]["gpus"] == 1 * 2 + 5 * 8 + 7 * 2  # the sample node list
    assert 0 < summary["gpu_utilization"] <= 1
    assert set(summary["per_team"]) <= {"LS", "BE", "Burstable", "Guaranteed"}
    assert {"gang", "kueue", "node_pools", "preemption"} <= set(summary["kubernetes"])
    jobs = pq.read_table(tmp_path / "jobs.parquet")
    assert jobs.num_rows == summary["jobs"]["submitted"]
    timeline = pq.read_table(tmp_path / "timeline.parquet")
    assert set(timeline.column("pool").to_pylist()) == set(summary["cluster"]["pools"])


def test_the_alibaba_trace_end_to_end(tmp_path: Path, shared_trace: Callable[[str], Path]) -> None:
    pod_list = shared_trace("k8s/alibaba_openb_pod_list_default.csv.gz")
    code, summary, _ = simulate_summary(str(pod_list), "--out", str(tmp_path), model="kubernetes")
    assert code == 0
    assert summary["cluster"]["gpus"] == 6212
    assert summary["jobs"]["submitted"] == 6203  # GPU pods that ran in the trace
    assert summary["jobs"]["completed"] == 6203
    assert 0 < summary["gpu_utilization"] < 1 and summary["wait_s"]["p95"] is not None
    assert {"LS", "BE"} <= set(summary["per_team"])


def test_a_node_list_cannot_go_with_a_scenario() -> None:
    code, _, err = simulate_summary(
        str(EXAMPLES / "k8s-cohort.yaml"),
        "--node-list",
        str(DATA / "k8s_alibaba_node_list_gpu_node.csv"),
        model="kubernetes",
    )
    assert code == 2 and "--node-list" in err


def test_cohort_borrowing_while_one_team_is_idle_and_reclaim_when_it_returns(tmp_path: Path) -> None:
    code, summary, _ = simulate_summary(
        str(EXAMPLES / "k8s-cohort.yaml"), "--out", str(tmp_path / "any"), model="kubernetes"
    )
    assert code == 0
    kueue = summary["kubernetes"]["kueue"]
    assert kueue["cluster_queues"]["vision"]["borrowed_gpu_hours"] > 0
    assert kueue["cluster_queues"]["vision"]["peak_borrowed_gpus"] == 16
    assert kueue["borrowing_admissions"] > 0 and kueue["reclaims"] > 0
    assert summary["preemption"]["lost_gpu_hours"] > 0
    # reclaims hit vision's jobs, during nlp's deadline push (day 3)
    jobs = pq.read_table(tmp_path / "any" / "jobs.parquet").to_pylist()
    preempted = [j for j in jobs if j["preemptions"]]
    assert preempted and {j["team"] for j in preempted} == {"vision"}
    # without reclaim, nlp waits for vision's borrowed jobs to end
    never = tmp_path / "never.yaml"
    never.write_text(
        (EXAMPLES / "k8s-cohort.yaml")
        .read_text()
        .replace("reclaimWithinCohort: Any", "reclaimWithinCohort: Never")
    )
    code, waiting, _ = simulate_summary(str(never), "--out", str(tmp_path / "never"), model="kubernetes")
    assert code == 0
    assert waiting["kubernetes"]["kueue"]["reclaims"] == 0
    assert waiting["per_team"]["nlp"]["wait_s"]["mean"] > summary["per_team"]["nlp"]["wait_s"]["mean"]


@pytest.mark.parametrize(
    "edit",
    [("replicas: {min: 2, max: 16}", "replicas: {min: 2, max: 5}"), ("maxNodes: 6", "maxNodes: 2")],
    ids=["maxReplicas too low", "pool maxNodes too low"],
)
def test_slo_attainment_follows_max_replicas_and_max_nodes(tmp_path: Path, edit: tuple[str, str]) -> None:
    code, enough, _ = simulate_summary(
        str(EXAMPLES / "k8s-inference.yaml"), "--out", str(tmp_path / "a"), model="kubernetes"
    )
    assert code == 0
    code, capped, _ = simulate_summary(
        str(variant(tmp_path, "k8s-inference.yaml", edit)), "--out", str(tmp_path / "b"), model="kubernetes"
    )
    assert code == 0
    high, low = enough["services"]["chat"], capped["services"]["chat"]
    assert high["slo_attainment"] >= 0.99
    assert low["slo_attainment"] < high["slo_attainment"] - 0.2
    assert low["unmet_demand_fraction"] > high["unmet_demand_fraction"]
    raised = variant(tmp_path, "k8s-inference.yaml", ("maxNodes: 6", "maxNodes: 12"))
    code, more, _ = simulate_summary(str(raised), "--out", str(tmp_path / "c"), model="kubernetes")
    assert more["services"]["chat"]["slo_attainment"] >= high["slo_attainment"]
    pools = enough["kubernetes"]["node_pools"]["a10"]
    assert pools["nodes_added"] > 0 and pools["node_hours"] > 0
    assert enough["cost_usd"] == pytest.approx(pools["node_hours"] * 4 * 2.0)


def test_a_bad_kubernetes_reference_names_file_line_and_field(tmp_path: Path) -> None:
    path = variant(tmp_path, "k8s-cohort.yaml", ("teams: [nlp]", "teams: [nlpp]"))
    code, _, err = simulate_summary(str(path), model="kubernetes")
    message = " ".join(err.split())
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "nlpp" in text)
    assert code == 2
    assert (
        f"{path}:{line}: models.kubernetes.kueue.clusterQueues[1].teams[0]: no team named 'nlpp'" in message
    )


def test_an_unknown_kueue_key_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    path = variant(
        tmp_path, "k8s-cohort.yaml", ("{name: h100, nominalQuota: 16}", "{name: h100, nominalQuta: 16}")
    )
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "did you mean 'nominalQuota'?" in " ".join(result.stderr.split())


def test_reruns_are_identical(tmp_path: Path) -> None:
    for run in ("one", "two"):
        code, _, _ = simulate_summary(
            str(EXAMPLES / "k8s-inference.yaml"), "--out", str(tmp_path / run), model="kubernetes"
        )
        assert code == 0
    for name in ("jobs.parquet", "timeline.parquet", "events.parquet"):
        assert pq.read_table(tmp_path / "one" / name).equals(pq.read_table(tmp_path / "two" / name))
    first = json.loads((tmp_path / "one" / "summary.json").read_text())["models"]["kubernetes"]
    second = json.loads((tmp_path / "two" / "summary.json").read_text())["models"]["kubernetes"]
    first.pop("timing_s"), second.pop("timing_s")
    assert first == second
