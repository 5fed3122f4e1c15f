"""The fidelity harness's workload: a small, deterministic, time-compressed trace, as CSV and SWF.

Both replay.py (real Slurm) and compare.py (gpuplan) read the same files, so the two sides see the
same jobs. Times are whole seconds: ``sbatch --begin`` takes whole seconds and ``--time`` whole
minutes, so each job's time limit is a whole number of minutes and the SWF's requested time (field
9) is that limit in seconds, which is the estimate gpuplan's backfill uses.
"""

from __future__ import annotations

import csv
import random
from dataclasses import asdict, dataclass, fields
from pathlib import Path

GPUS_PER_NODE = 8
PARTITION_NUMBER = {"gpu": 1, "batch": 1, "high": 2}  # SWF field 16


@dataclass(frozen=True)
class Job:
    job: int  # trace job number, 1-based, in submit order
    submit_s: int  # arrival (Slurm: --begin) relative to the replay start
    run_s: int  # sleep length
    nodes: int
    time_limit_min: int  # sbatch --time, whole minutes
    user: int  # 1-based; setup.sh maps user k to local user gpuplan<k>, account team<k>
    partition: str

    @property
    def account(self) -> str:
        return f"team{self.user}"

    @property
    def username(self) -> str:
        return f"gpuplan{self.user}"


def generate(
    n_jobs: int = 40,
    span_s: int = 150,
    seed: int = 1,
    config: str = "a",
    max_nodes: int = 4,
    run_range: tuple[int, int] = (5, 55),
    high_share: float = 0.25,
    node_weights: tuple[float, ...] | None = None,
) -> list[Job]:
    """``n_jobs`` jobs arriving over ``span_s`` seconds, 1..max_nodes whole nodes, runs in
    ``run_range`` seconds; time limits of whole minutes, ceil((run + 5 s) / 60 s) plus 0, 0, 1 or 2
    minutes, so no job meets its limit (Slurm checks limits only every ~30 s, gpuplan at the exact
    second). Configuration b sends ``high_share`` of the jobs to partition "high", the rest to
    "batch". ``node_weights`` (w1, w2, ...) draws k nodes with weight w_k instead of uniformly
    from 1..max_nodes."""
    rng = random.Random(seed)
    arrivals = sorted(rng.randint(0, span_s) for _ in range(n_jobs))
    jobs = []
    for k, submit in enumerate(arrivals, start=1):
        run = rng.randint(*run_range)
        base_min = -(-(run + 5) // 60)  # ceil
        limit = base_min + rng.choice((0, 0, 1, 2))  # users overestimate, some a lot
        # config a draws nothing here, so its traces stay those recorded in results/
        partition = "gpu" if config == "a" else ("high" if rng.random() < high_share else "batch")
        jobs.append(
            Job(
                job=k,
                submit_s=submit,
                run_s=run,
                nodes=(
                    rng.choices(range(1, len(node_weights) + 1), node_weights)[0]
                    if node_weights
                    else rng.randint(1, max_nodes)
                ),
                time_limit_min=limit,
                user=rng.randint(1, 2),
                partition=partition,
            )
        )
    return jobs


def write_csv(jobs: list[Job], path: Path) -> None:
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=[f.name for f in fields(Job)])
        writer.writeheader()
        for job in jobs:
            writer.writerow(asdict(job))


def read_csv(path: Path) -> list[Job]:
    with path.open(newline="") as src:
        return [
            Job(
                job=int(r["job"]),
                submit_s=int(r["submit_s"]),
                run_s=int(r["run_s"]),
                nodes=int(r["nodes"]),
                time_limit_min=int(r["time_limit_min"]),
                user=int(r["user"]),
                partition=r["partition"],
            )
            for r in csv.DictReader(src)
        ]


def write_swf(jobs: list[Job], path: Path, nodes: int, run_s: dict[int, float] | None = None) -> None:
    """SWF with the same jobs: field 8 (requested processors) = nodes x 8 GPUs, field 9 (requested
    time) = the minutes-rounded --time in seconds, field 16 = partition number. ``run_s`` overrides
    field 4 (run time) per job, e.g. with the run times measured on the real Slurm."""
    lines = [
        "; gpuplan Slurm fidelity harness trace (bench/fidelity_slurm/workload.py)",
        "; Version: 2.2",
        f"; MaxNodes: {nodes}",
        f"; MaxProcs: {nodes * GPUS_PER_NODE}",
        "; Note: processors are GPUs; read with --gpus-per-node 8",
        "; Partition: 1 gpu/batch, 2 high",
    ]
    for job in jobs:
        run = job.run_s if run_s is None else run_s.get(job.job, job.run_s)
        procs = job.nodes * GPUS_PER_NODE
        row = [
            job.job,  # 1 job number
            job.submit_s,  # 2 submit time
            -1,  # 3 wait time
            run,  # 4 run time
            procs,  # 5 allocated processors
            -1,  # 6 average CPU time
            -1,  # 7 used memory
            procs,  # 8 requested processors
            job.time_limit_min * 60,  # 9 requested time
            -1,  # 10 requested memory
            1,  # 11 status
            job.user,  # 12 user id
            job.user,  # 13 group id (the account)
            -1,  # 14 executable
            -1,  # 15 queue
            PARTITION_NUMBER[job.partition],  # 16 partition
            -1,  # 17 preceding job
            -1,  # 18 think time
        ]
        lines.append(" ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in row))
    path.write_text("\n".join(lines) + "\n")


def expand_hostlist(hostlist: str) -> list[str]:
    """``gpu[01-03,07]`` -> gpu01, gpu02, gpu03, gpu07 (the forms sacct and gpuplan print)."""
    names: list[str] = []
    part, depth = "", 0
    pieces = []
    for ch in hostlist:  # split on commas outside brackets
        if ch == "," and depth == 0:
            pieces.append(part)
            part = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        part += ch
    if part:
        pieces.append(part)
    for piece in pieces:
        if "[" not in piece:
            names.append(piece)
            continue
        prefix, ranges = piece.split("[", 1)
        for r in ranges.rstrip("]").split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{i:0{width}d}")
    return names
