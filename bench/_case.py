"""One benchmark case in its own process: ``python _case.py TRACE BACKFILL SCALE COPIES REPEATS``.

Prints one JSON line: jobs, nodes, read and fastest simulation time, peak memory above the imports."""

from __future__ import annotations

import json
import resource
import sys
import time
from dataclasses import replace

import numpy as np
import pyarrow  # noqa: F401  (imported before the baseline, as gpuplan simulate does)

from gpuplan.inputs import cluster_nodes
from gpuplan.sim.cluster import Pool
from gpuplan.sim.slurm.model import SlurmSettings, simulate_slurm
from gpuplan.workload.jobtable import JobTable
from gpuplan.workload.swf import read_swf


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    path, backfill = sys.argv[1], sys.argv[2]
    scale, copies, repeats = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    base_mb = rss_mb()
    began = time.perf_counter()
    trace = read_swf(path)
    jobs = trace.jobs
    if scale != 1.0:  # e.g. 0.5: arrivals come twice as fast (rounded as the AccaSim runner does)
        jobs = replace(jobs, submit_s=np.round(jobs.submit_s * scale))
    if copies > 1:  # each copy shifted past the previous copy's last arrival
        shift, id_shift = jobs.submit_s.max() + 1, int(jobs.job_id.max()) + 1
        jobs = JobTable.concat(
            [
                replace(jobs, submit_s=jobs.submit_s + k * shift, job_id=jobs.job_id + k * id_shift)
                for k in range(copies)
            ]
        )
    read_s = time.perf_counter() - began
    nodes, _ = cluster_nodes(trace, None, 1)
    pool = Pool("batch", nodes, 1)
    times = []
    for _ in range(repeats):
        run = simulate_slurm(jobs, [pool], SlurmSettings(backfill))
        times.append(run.simulate_s)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    span = jobs.submit_s.max() - jobs.submit_s.min()
    result = {
        "jobs": len(jobs),
        "nodes": nodes,
        "read_s": read_s,
        "simulate_s": min(times),
        "peak_mb_above_imports": peak_mb - base_mb,
        "offered_load": float((jobs.gpus * jobs.duration_s).sum() / (nodes * span)),
        "mean_wait_s": float(np.nanmean(run.start_s - run.jobs.submit_s)),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
