"""Issue 6's speed target: `gpuplan compare` of Slurm, Kubernetes and hybrid on a 30-day, 1,000-GPU
mixed scenario (research batch training, nightly pipelines, notebooks and two inference services on
100 H100 nodes and 50 L40S nodes) on this machine's cores.

    python bench/bench_compare.py [--days 30] [--processes N]

Prints the jobs, each model's simulation time and the wall time of the whole comparison
(target: <= 60 s on 2 cores; issue 16's for simulation: Kubernetes <= 1 s, hybrid <= 1.5 s).
``--processes 1`` runs the models one after the other, so each has a core to itself.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from gpuplan.compare import CompareRequest, compare


def scenario(days: int) -> dict[str, object]:
    teams = [
        {"name": "llm", "share": 40, "users": 20},
        {"name": "vision", "share": 30, "users": 12},
        {"name": "mlops", "persona": "ml-engineer", "share": 15, "users": 6},
        {"name": "product", "persona": "app-developer", "share": 15, "users": 6},
    ]
    batch = {"kind": "batch", "time_limit": {"over_request": 2.5, "round_to": "1h", "max": "3d"}}
    workloads = [
        {
            **batch,
            "name": "llm-training",
            "team": "llm",
            "pool": "h100",
            "arrival": {"rate": "40/day", "diurnal": {"peak_hour": 16}, "weekly": {"weekend_factor": 0.3}},
            "size": {"1x8": 50, "2x8": 30, "4x8": 15, "8x8": 5},
            "duration": {"median": "4h", "sigma": 1.0, "max": "3d"},
            "checkpoint_interval": "1h",
        },
        {
            **batch,
            "name": "vision-jobs",
            "team": "vision",
            "arrival": {"rate": "150/day", "diurnal": {"peak_hour": 14}},
            "size": {"1x1": 30, "1x2": 20, "1x4": 30, "1x8": 20},
            "duration": {"median": "1h", "sigma": 0.9, "max": "1d"},
        },
        {
            **batch,
            "name": "retraining",
            "kind": "pipeline",
            "team": "mlops",
            "pool": "h100",
            "arrival": {"rate": "30/day", "diurnal": {"peak_hour": 2}},
            "size": "1x8",
            "duration": {"median": "2h", "sigma": 0.4},
        },
        {
            "name": "assistant",
            "kind": "service",
            "team": "product",
            "pool": "l40s",
            "gpus_per_replica": 1,
            "throughput_per_replica": 8,
            "replicas": {"min": 8, "max": 150},
            "demand": {"peak": 1000, "trough": 120, "peak_hour": 15},
        },
        {
            "name": "search",
            "kind": "service",
            "team": "product",
            "pool": "l40s",
            "gpus_per_replica": 2,
            "throughput_per_replica": 20,
            "replicas": {"min": 4, "max": 40},
            "demand": {"peak": 600, "trough": 100, "peak_hour": 11},
        },
    ]
    return {
        "name": "bench-1000-gpus",
        "seed": 1,
        "horizon": f"{days}d",
        "cluster": {
            "pools": [
                {"name": "h100", "shape": "BM.GPU.H100.8", "nodes": 100},
                {"name": "l40s", "shape": "BM.GPU.L40S.4", "nodes": 50},
            ]
        },
        "teams": teams,
        "workloads": workloads,
        "models": {
            "slurm": {"backfill": "slurm", "priority_type": "multifactor", "priority_weight_fairshare": 10000}
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.yaml"
        path.write_text(yaml.safe_dump(scenario(args.days), sort_keys=False))
        began = time.perf_counter()
        result = compare(CompareRequest(path, None, Path(directory) / "out", args.processes))
        wall_s = time.perf_counter() - began
    models = result.summary["models"]
    gpus = next(iter(models.values()))["cluster"]["gpus"]
    jobs = next(iter(models.values()))["jobs"]["submitted"]
    print(f"{jobs:,} jobs and 2 services on {gpus:,} GPUs over {args.days} days")
    for name, figures in models.items():
        print(
            f"  {name:<11} simulate {figures['timing_s']['simulate']:6.1f} s, "
            f"utilisation {figures['gpu_utilization']:.1%}, wait p95 {figures['wait_s']['p95'] or 0:,.0f} s"
        )
    print(f"compare, wall time: {wall_s:.1f} s")


if __name__ == "__main__":
    main()
