"""Kubernetes-model benchmark: whole simulations, simulation time only (as ``timing_s.simulate``).

    python bench/bench_k8s.py            # every case
    python bench/bench_k8s.py alibaba    # cases whose name contains "alibaba"

Cases: the Alibaba 2023 pod trace on its own node list (its 6,203 GPU pods that ran; with Kueue's
default single ClusterQueue, and as plain Jobs), and a synthetic 100,000-pod workload on 2,000 8-GPU
nodes, four teams' ClusterQueues in one cohort (borrowing, reclaim), seeded. Each case runs
``--repeats`` times (default 3) in this process and keeps the fastest. Results go to
bench/results/k8s.json and a Markdown table on stdout. Targets: issue 16's, on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.inputs import load_input
from gpuplan.scenario.kubernetes import KubernetesSettings
from gpuplan.sim.kubernetes import NodePoolSpec, simulate_kubernetes
from gpuplan.sim.kubernetes.settings import node_list_pools, node_pool_specs
from gpuplan.sim.outcome import ModelRun
from gpuplan.workload.jobtable import JobTable
from gpuplan.workload.k8s_pods import PodTrace

ROOT = Path(__file__).resolve().parents[1]
ALIBABA = ROOT.parent / "shared" / "traces" / "k8s" / "alibaba_openb_pod_list_default.csv.gz"
RESULTS = ROOT / "bench" / "results"
TEAMS = ("research", "vision", "speech", "product")


def alibaba(kueue: bool) -> Callable[[], ModelRun]:
    loaded = load_input(ALIBABA)
    trace = loaded.trace
    assert isinstance(trace, PodTrace) and loaded.node_list is not None
    settings = KubernetesSettings.model_validate({"kueue": {"enable": kueue}})
    pools = node_pool_specs(node_list_pools(loaded.node_list), settings)

    def run() -> ModelRun:
        return simulate_kubernetes(
            trace.jobs,
            pools,
            settings,
            gpu_milli=trace.gpu_milli,
            cpu_milli=trace.cpu_milli,
            memory_mib=trace.memory_mib,
        )

    return run


def synthetic(pods: int, nodes: int, kueue: bool, seed: int = 7) -> Callable[[], ModelRun]:
    """Jobs of 1, 2, 4, 8 GPUs (one pod) and 2x8, 4x8 (multi-pod), lognormal run times (median 30 min),
    Poisson arrivals sized for ~90 % offered load on ``nodes`` 8-GPU nodes."""
    rng = np.random.default_rng(seed)
    sizes = np.array([(1, 1), (1, 2), (1, 4), (1, 8), (2, 8), (4, 8)])
    weights = np.array([30, 20, 15, 20, 10, 5], float)
    mix = sizes[rng.choice(len(sizes), p=weights / weights.sum(), size=pods * 2)]
    cumulative = np.cumsum(mix[:, 0])
    mix = mix[: int(np.searchsorted(cumulative, pods)) + 1]  # jobs until ``pods`` pods
    count = len(mix)
    duration = np.maximum(np.round(1800 * np.exp(1.0 * rng.standard_normal(count))), 30)
    gpu_s = (mix[:, 0] * mix[:, 1] * duration).sum()
    span = gpu_s / (0.9 * nodes * 8)
    submit = np.sort(np.floor(rng.uniform(0, span, count)))
    jobs = JobTable.build(
        job_id=np.arange(1, count + 1),
        submit_s=submit,
        duration_s=duration,
        nodes=mix[:, 0],
        gpus_per_node=mix[:, 1],
        team=[TEAMS[t] for t in rng.integers(0, len(TEAMS), count)],
    )
    pools = [NodePoolSpec("h100", 8, 112_000, 2_000_000, nodes, nodes, nodes)]
    quota = nodes * 8 / len(TEAMS)
    queues = [
        {
            "name": team,
            "cohort": "org",
            "teams": [team],
            "flavors": [{"name": "h100", "nominalQuota": quota}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        }
        for team in TEAMS
    ]
    settings = KubernetesSettings.model_validate({"kueue": {"enable": kueue, "clusterQueues": queues}})
    return lambda: simulate_kubernetes(jobs, pools, settings)


CASES: dict[str, tuple[Callable[[], Callable[[], ModelRun]], str]] = {
    "alibaba openb (8,152 pods listed, GPU pods run), 1,213 nodes, Kueue": (lambda: alibaba(True), "≤ 0.3 s"),
    "alibaba openb, plain Jobs": (lambda: alibaba(False), ""),
    "synthetic 100k pods, 2,000 nodes, Kueue cohort": (lambda: synthetic(100_000, 2_000, True), "≤ 3 s"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="?", default="", help="run cases whose name contains this")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    for name, (make, target) in CASES.items():
        if args.only not in name:
            continue
        if "alibaba" in name and not ALIBABA.is_file():
            print(f"skipped {name}: {ALIBABA} is absent")
            continue
        run = make()
        best = fastest = np.inf
        outcome = None
        for _ in range(args.repeats):
            began = time.perf_counter()
            outcome = run()
            best = min(best, time.perf_counter() - began)
            fastest = min(fastest, outcome.simulate_s)
        assert outcome is not None
        pods = int(outcome.jobs.nodes.sum())
        results.append(
            {
                "case": name,
                "jobs": len(outcome.jobs),
                "pods": pods,
                "simulate_s": round(float(fastest), 3),
                "fastest_whole_s": round(float(best), 3),
                "pods_per_s": round(pods / fastest),
                "completed": int((outcome.state == 0).sum()),
                "target": target,
            }
        )
        print(json.dumps(results[-1]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "k8s.json").write_text(json.dumps(results, indent=2) + "\n")
    print(
        "\n| case | jobs | pods | simulate (s) | pods/s | target |\n| --- | ---: | ---: | ---: | ---: | --- |"
    )
    for r in results:
        cells = (
            r["case"],
            f"{r['jobs']:,}",
            f"{r['pods']:,}",
            r["simulate_s"],
            f"{r['pods_per_s']:,}",
            r["target"],
        )
        print("| " + " | ".join(map(str, cells)) + " |")


if __name__ == "__main__":
    main()
