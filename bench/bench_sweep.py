"""Issue 41's speed targets for ``gpuplan sweep``, as whole processes:

1. a 200-point sweep (20 node counts of the H100 pool x 10 seeds, each point the three models) of a
   30-day mixed scenario on 1,024 GPUs (``bench/data/mixed-1000.yaml``) with ``--engine local`` on
   this machine's cores (target: <= 2.5 min on 2 cores);
2. with ``--engine ray`` on this machine, 2 workers against 1 on a smaller sweep (``--ray-counts``
   node counts x ``--ray-seeds`` seeds), in one run (target: >= 1.7x).

    python bench/bench_sweep.py [--counts 20] [--seeds 10] [--ray-counts 8] [--ray-seeds 5] [--no-ray]

Each sweep runs into a fresh directory, so no point is read back.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = Path(__file__).resolve().parent / "data" / "mixed-1000.yaml"


def gpuplan() -> list[str]:
    beside = Path(sys.executable).with_name("gpuplan")
    return [str(beside)] if beside.exists() else [shutil.which("gpuplan") or "gpuplan"]


def sweep_file(directory: Path, counts: int, seeds: int) -> Path:
    nodes = [64 + 4 * k for k in range(counts)]  # 64 .. 64 + 4 (counts - 1) H100 nodes
    path = directory / "sweep.yaml"
    path.write_text(
        f"scenario: {SCENARIO}\nmodels: [slurm, kubernetes, hybrid]\nseeds: {seeds}\n"
        f"grid:\n  cluster.pools.h100.nodes: {nodes}\n"
    )
    return path


def timed(counts: int, seeds: int, *options: str) -> float:
    with tempfile.TemporaryDirectory() as work:
        spec = sweep_file(Path(work), counts, seeds)
        command = [*gpuplan(), "sweep", str(spec), "--out", str(Path(work) / "out"), "-q", *options]
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--counts", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--ray-counts", type=int, default=8)
    parser.add_argument("--ray-seeds", type=int, default=5)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    points = args.counts * args.seeds
    local = timed(args.counts, args.seeds)
    print(f"local: {points} points x 3 models in {local:.1f} s ({local / points:.2f} s a point)")
    if args.no_ray:
        return
    one = timed(args.ray_counts, args.ray_seeds, "--engine", "ray", "--processes", "1")
    two = timed(args.ray_counts, args.ray_seeds, "--engine", "ray", "--processes", "2")
    small = args.ray_counts * args.ray_seeds
    print(f"ray: {small} points x 3 models, 1 worker {one:.1f} s, 2 workers {two:.1f} s: {one / two:.2f}x")


if __name__ == "__main__":
    main()
