"""The hybrid's split, sized rather than rounded (issue 39, item 4): the proposal gives a small
Kubernetes side the nodes its mean demand needs, ``candidate_splits`` lists feasible splits around it
for a search, ``with_split`` runs one, the user's Kueue quotas follow the split, and what cannot be
split or scaled is refused naming the file, line and field."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.inputs import Input, load_input
from gpuplan.metrics.summary import summarize
from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.sim.cluster import Pool
from gpuplan.sim.hybrid.model import candidate_splits
from gpuplan.sim.hybrid.settings import HybridModelSettings, scale_quotas, with_split
from gpuplan.sim.kubernetes.settings import KubernetesModelSettings
from gpuplan.sim.models import MODELS, run_input, run_model

from builders import EXAMPLES, simulate_summary

# The case, small: 28 nodes of 8 GPUs, batch training using most of them and pipelines
# with about 4 % of the GPU-hours, a mean demand of about 6.8 GPUs. Rounded, their share is 1 node.
SPLIT28 = """\
name: split28
seed: 7
horizon: 7d
cluster:
  pools:
    - {name: gpu, gpus_per_node: 8, nodes: 28}
teams:
  - {name: research, share: 3}
  - {name: mlops, share: 1}
workloads:
  - name: training
    kind: batch
    team: research
    arrival: {rate: 85/day}
    size: "1x8"
    duration: {median: 5h, sigma: 0.5}
    time_limit: {over_request: 2, round_to: 1h}
  - name: pipelines
    kind: pipeline
    team: mlops
    arrival: {rate: 10/day, diurnal: {peak_hour: 2, peak_to_trough: 3}}
    size: "1x8"
    duration: {median: 2h, sigma: 0.4}
    time_limit: {over_request: 1.5, round_to: 1h}
"""

# 16 nodes of 8 GPUs (128), Kubernetes given 3 (24 GPUs), Kueue quotas written for all 128.
QUOTAS = """\
name: quota-split
seed: 4
horizon: 4d
cluster:
  pools:
    - {name: gpu, shape: BM.GPU.H100.8, nodes: 16}
teams:
  - {name: research, share: 3}
  - {name: mlops, share: 1}
workloads:
  - name: training
    kind: batch
    team: research
    arrival: {rate: 30/day}
    size: "1x8"
    duration: {median: 5h, sigma: 0.5}
  - name: pipelines
    kind: pipeline
    team: mlops
    arrival: {rate: 40/day}
    size: {"2x8": 50, "1x8": 50}
    duration: {median: 1h, sigma: 0.4}
models:
  hybrid:
    split: {gpu: 13}
  kubernetes:
    kueue:
      waitForPodsReady: {enable: true, timeout: 10m}
      clusterQueues:
        - name: mlops
          cohort: org
          teams: [mlops]
          flavors: [{name: gpu, nominalQuota: 96, borrowingLimit: 32}]
        - name: everyone
          cohort: org
          flavors: [{name: gpu, nominalQuota: 32}]
"""


def load(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Input:
    path = tmp_path / name
    path.write_text(text)
    return load_input(path)


def p95_wait(run_summary: dict[str, Any], team: str) -> float:
    return float(run_summary["per_team"][team]["wait_s"]["p95"])


def test_the_proposal_gives_small_pipelines_their_mean_demand_in_whole_nodes(tmp_path: Path) -> None:
    loaded = load(tmp_path, SPLIT28)
    jobs = loaded.workload.jobs
    kind = np.array(jobs.kind.labels)[jobs.kind.codes]
    gpu_hours = jobs.gpus * jobs.duration_s / 3600.0
    pipelines = float(gpu_hours[kind == "pipeline"].sum())
    mean_gpus = pipelines / (7 * 24)
    share = pipelines / float(gpu_hours.sum())
    assert round(28 * share) == 1  # the case: the share rounded is one node ...
    assert 28 * share > 1 and mean_gpus > 6  # ... for a load above one node's share

    run = run_input("hybrid", loaded)
    split = run.settings["split"]["gpu"]
    assert run.settings["split_source"] == {"gpu": "proposed"}
    assert split["kubernetes"] * 8 >= mean_gpus
    assert split["kubernetes"] >= math.ceil(28 * share) == 2
    assert split["slurm"] + split["kubernetes"] == 28

    # and it matters: the pipelines' p95 wait on the rounded split is several times the proposal's
    setup = MODELS.get("hybrid").setup(loaded)
    rounded = run_model("hybrid", loaded.workload, setup.pools, with_split(setup.settings, {"gpu": 27}))
    assert rounded.settings["split_source"] == {"gpu": "chosen"}
    assert p95_wait(summarize(rounded), "mlops") > 3 * p95_wait(summarize(run), "mlops")


def test_candidate_splits_are_feasible_and_ordered_around_the_proposal(tmp_path: Path) -> None:
    loaded = load(tmp_path, SPLIT28)
    setup = MODELS.get("hybrid").setup(loaded)
    splits = candidate_splits(loaded.workload, setup.pools, setup.settings)
    proposed = run_input("hybrid", loaded).settings["split"]["gpu"]["slurm"]
    # the proposal, then Kubernetes +1, -1 and +2 nodes; -2 would leave the pipelines no node
    assert splits == [{"gpu": proposed}, {"gpu": proposed - 1}, {"gpu": proposed + 1}, {"gpu": proposed - 2}]
    for split in splits:
        assert 1 <= split["gpu"] <= 27  # each side holds its largest (1-node) job

    # a pool the scenario splits keeps its split; the others move, at most 5 candidates
    example = load_input(EXAMPLES / "hybrid-split.yaml")
    setup = MODELS.get("hybrid").setup(example)
    splits = candidate_splits(example.workload, setup.pools, setup.settings)
    assert 1 < len(splits) <= 5 and len({tuple(s.items()) for s in splits}) == len(splits)
    assert {split["h100"] for split in splits} == {10}
    assert all(0 <= split["a10"] < 6 for split in splits)
    assert candidate_splits(example.workload, setup.pools, setup.settings, limit=2) == splits[:2]


def test_a_split_given_in_memory_that_cannot_hold_a_job_is_refused(tmp_path: Path) -> None:
    # the defaults' pipelines move to Slurm when Kubernetes has no node; a rule's may not
    loaded = load(tmp_path, SPLIT28)
    setup = MODELS.get("hybrid").setup(loaded)
    run = run_model("hybrid", loaded.workload, setup.pools, with_split(setup.settings, {"gpu": 28}))
    assert run.settings["rerouted"]["pipelines"]["to"] == "slurm"
    ruled = load(
        tmp_path, SPLIT28 + "models:\n  hybrid:\n    routing: [{workload: pipelines, to: kubernetes}]\n"
    )
    setup = MODELS.get("hybrid").setup(ruled)
    with pytest.raises(InputError) as error:
        run_model("hybrid", ruled.workload, setup.pools, with_split(setup.settings, {"gpu": 28}))
    assert error.value.field == "models.hybrid.split.gpu"
    assert "workload 'pipelines' routed to kubernetes" in error.value.message


def test_user_quotas_are_scaled_to_the_kubernetes_side_and_the_run_progresses(tmp_path: Path) -> None:
    run = run_input("hybrid", load(tmp_path, QUOTAS))
    assert run.settings["split"]["gpu"] == {"slurm": 13, "kubernetes": 3}
    scaled = run.settings["kubernetes"]["quota_scaled"]
    assert scaled["mlops"]["gpu"]["nominalQuota"] == {"from": 96, "to": 18}
    assert scaled["mlops"]["gpu"]["borrowingLimit"] == {"from": 32, "to": 6}
    assert scaled["everyone"]["gpu"]["nominalQuota"] == {"from": 32, "to": 6}
    assert sum(queue["gpu"]["nominalQuota"]["to"] for queue in scaled.values()) <= 24
    assert any("scaled from 96 to 18 GPUs" in sentence for sentence in run.settings["assumptions"])
    figures = summarize(run)
    kueue = figures["kubernetes"]["kubernetes"]["kueue"]
    assert kueue["flavors"]["gpu"]["nominal_gpus"] <= 24
    assert kueue["pods_ready_timeouts"] < 100  # not the tens of thousands of issue 39
    assert kueue["cluster_queues"]["mlops"]["gpu_hours"] > 0
    assert figures["jobs"]["unfinished"] == 0


def test_a_cohort_s_scaled_quotas_never_add_up_to_more_than_the_side() -> None:
    kubernetes = KubernetesSettings.model_validate(
        {
            "kueue": {
                "clusterQueues": [
                    {"name": n, "cohort": "all", "flavors": [{"name": "gpu", "nominalQuota": q}]}
                    for n, q in (("a", 50), ("b", 50), ("c", 28))
                ]
                + [{"name": "alone", "flavors": [{"name": "gpu", "nominalQuota": 128, "lendingLimit": 10}]}]
            }
        }
    )
    settings = HybridModelSettings(kubernetes=KubernetesModelSettings(kubernetes))
    side, scaled, sentences = scale_quotas(settings, [Pool("gpu", 16, 8)], {"gpu": 3})
    queues = {q.name: q.flavors[0] for q in side.kubernetes.kueue.clusterQueues}
    assert sum(queues[n].nominalQuota for n in "abc") == 24  # 9.375 + 9.375 + 5.25, by largest remainder
    assert (queues["alone"].nominalQuota, queues["alone"].lendingLimit) == (24, 1)
    assert len(sentences) == sum(len(fields) for q in scaled.values() for fields in q.values())
    # a side with the whole pool keeps the user's quotas
    assert scale_quotas(settings, [Pool("gpu", 16, 8)], {"gpu": 16})[1] == {}


def test_a_quota_the_split_cannot_scale_is_refused_with_its_line(tmp_path: Path) -> None:
    # mlops' own ClusterQueue, no cohort: 16 of 128 GPUs scales to 3 on a 24-GPU side, below its
    # 16-GPU jobs, which the user's quota admitted
    text = QUOTAS.replace(
        "flavors: [{name: gpu, nominalQuota: 96, borrowingLimit: 32}]",
        "flavors: [{name: gpu, nominalQuota: 16}]",
    ).replace("          cohort: org\n          teams: [mlops]", "          teams: [mlops]")
    path = tmp_path / "refused.yaml"
    path.write_text(text)
    line = text.splitlines().index("          flavors: [{name: gpu, nominalQuota: 16}]") + 1
    with pytest.raises(InputError) as error:
        run_input("hybrid", load_input(path))
    assert error.value.field == "models.kubernetes.kueue.clusterQueues[0].flavors[0].nominalQuota"
    assert (error.value.path, error.value.line) == (str(path), line)
    assert "at most 3 GPUs" in error.value.message and "jobs of 16 GPUs" in error.value.message


def test_no_split_that_holds_both_sides_rule_routed_jobs_is_refused(tmp_path: Path) -> None:
    text = SPLIT28.replace(
        'size: "1x8"\n    duration: {median: 5h', 'size: "16x8"\n    duration: {median: 5h'
    )
    text += "models:\n  hybrid:\n    routing:\n      - {workload: training, to: slurm}\n"
    text = text.replace("nodes: 28}", "nodes: 28, rdma: true}")
    text = text.replace('size: "1x8"\n    duration: {median: 2h', 'size: "14x8"\n    duration: {median: 2h')
    text += "      - {workload: pipelines, to: kubernetes}\n"
    with pytest.raises(InputError) as error:
        run_input("hybrid", load(tmp_path, text))
    assert error.value.field == "models.hybrid.split.gpu"
    assert "no split of pool 'gpu' (28 nodes)" in error.value.message


def test_the_bundled_hybrid_example_runs_in_seconds() -> None:
    began = time.perf_counter()
    code, summary, err = simulate_summary(str(EXAMPLES / "hybrid-split.yaml"), model="hybrid")
    assert code == 0, err
    assert time.perf_counter() - began < 20
    settings = summary["settings"]
    assert settings["split"]["h100"] == {"slurm": 10, "kubernetes": 2}
    assert settings["split_source"] == {"h100": "scenario", "a10": "proposed"}
    assert settings["lending"]["moves_to_kubernetes"]["a10"] > 0
    assert settings["kubernetes"]["quota_scaled"]["mlops"]["h100"]["nominalQuota"] == {"from": 48, "to": 8}
    assert summary["jobs"]["submitted"] > 0 and summary["jobs"]["rejected"] == 0
