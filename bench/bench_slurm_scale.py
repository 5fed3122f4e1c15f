"""Scale: about a million jobs on 10,000 GPUs (1,250 nodes x 8) under the Slurm model with
multifactor priority (age and fair share over ten accounts) and Slurm's backfill.

    python bench/bench_slurm_scale.py [--days 96] [--sizes whole|gpu] [--cpus-per-task N] [--load X]

``--sizes whole`` (default): jobs of 1, 2, 4 or 8 whole nodes. ``--sizes gpu``: a third of the jobs
ask 1, 2 or 4 GPUs of a node and share nodes (select/cons_tres), at the same GPU-hours. Nodes have
112 CPUs and 2,048 GB (BM.GPU.H100.8's cores and memory), and jobs sharing them hold CPUs: one per
node (Slurm's default), or ``--cpus-per-task N`` each: with N above a GPU's share of the CPUs (14)
CPUs bind, and such jobs fit a node only with both their GPUs and their CPUs free. ``--load X``
scales the same jobs' arrival times so that they offer load X (deep queues above 1). Prints the
jobs, the simulation time and the peak memory of this process.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

from gpuplan.scenario.load import load_scenario
from gpuplan.sim.cluster import Pool
from gpuplan.sim.slurm.model import simulate_slurm
from gpuplan.sim.slurm.settings import from_scenario
from gpuplan.workload.synthesis import synthesize

SIZES = {
    "whole": {"1x8": 70, "2x8": 20, "4x8": 8, "8x8": 2},
    # about the same GPUs per job (12.4 against 12.6), with small jobs that share nodes
    "gpu": {"1x1": 10, "1x2": 10, "1x4": 12, "1x8": 31, "2x8": 23, "4x8": 11, "8x8": 3},
}


def scenario(days: int, sizes: str) -> dict[str, object]:
    teams = [{"name": f"account{t}", "share": 1 + t % 4, "users": 20} for t in range(10)]
    workloads = [
        {
            "name": f"jobs{w}",
            "kind": "batch",
            "team": f"account{w % 10}",
            "arrival": {"rate": "520/day", "diurnal": {"peak_hour": 14, "peak_to_trough": 3}},
            "size": SIZES[sizes],
            "duration": {"median": "40m", "sigma": 1.3, "max": "2d"},
            "time_limit": {"over_request": 2.5, "round_to": "30m", "max": "2d"},
        }
        for w in range(20)
    ]
    return {
        "name": "scale",
        "seed": 1,
        "horizon": f"{days}d",
        "cluster": {"pools": [{"name": "gpu", "gpus_per_node": 8, "nodes": 1250}]},
        "teams": teams,
        "workloads": workloads,
        "models": {
            "slurm": {
                "backfill": "slurm",
                "priority_type": "multifactor",
                "priority_weight_age": 1000,
                "priority_weight_fairshare": 10000,
            }
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=int, default=96)  # about a million jobs
    parser.add_argument("--sizes", choices=sorted(SIZES), default="whole")
    parser.add_argument("--cpus-per-task", type=int, default=0, help="CPUs of each job sharing nodes (0: 1)")
    parser.add_argument(
        "--load", type=float, default=0.0, help="offered load to scale arrivals to (0: as made)"
    )
    args = parser.parse_args()
    days = args.days
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "scale.yaml"
        path.write_text(yaml.safe_dump(scenario(days, args.sizes), sort_keys=False))
        loaded = load_scenario(path)
        began = time.perf_counter()
        workload = synthesize(loaded)
        synth_s = time.perf_counter() - began
    pool = loaded.pools[0]
    pools = [Pool(pool.name, pool.nodes, pool.gpus_per_node, cpu_milli=112_000, memory_mib=2048 * 1024)]
    settings = from_scenario(loaded.scenario.models.slurm)
    jobs = workload.jobs
    if args.cpus_per_task:
        sharing = jobs.gpus_per_node < pool.gpus_per_node
        cpus = np.where(sharing, args.cpus_per_task, 0).astype(np.int32)
        jobs = replace(jobs, cpus_per_node=cpus, cpus_per_task=cpus)
    span_s = days * 86400.0
    if args.load:  # the same jobs, arriving faster or slower
        run_s = np.fmin(jobs.duration_s, jobs.time_limit_s)
        scale = float((jobs.gpus * run_s).sum() / (pool.gpus * span_s)) / args.load
        span_s *= scale
        submitted = None if jobs.submitted_s is None else jobs.submitted_s * scale
        jobs = replace(jobs, submit_s=jobs.submit_s * scale, submitted_s=submitted)
    run = simulate_slurm(jobs, pools, settings, team_shares=workload.team_shares)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wait = (run.start_s - run.jobs.submit_s)[run.started]
    offered = float((run.jobs.gpus * run.run_s).sum() / (pool.gpus * span_s))
    days_s = f"{span_s / 86400:.1f} days"
    print(f"{len(run.jobs):,} jobs on {pool.gpus:,} GPUs over {days_s}, offered load {offered:.2f}")
    print(f"synthesise {synth_s:.1f} s; simulate {run.simulate_s:.1f} s; peak memory {peak_mb:,.0f} MB")
    print(f"mean wait {wait.mean():,.0f} s, p95 {float(np.percentile(wait, 95)):,.0f} s")


if __name__ == "__main__":
    main()
