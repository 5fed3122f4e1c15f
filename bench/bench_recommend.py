"""Issue 39's speed target: ``gpuplan recommend`` on the bundled example, as a whole process (start-up,
5 seeds of 3 models, the hybrid's split search when it runs, scoring, the report), against one seed.

    python bench/bench_recommend.py [--runs 5] [--seeds 5] [--processes N]

Runs the installed ``gpuplan`` (the venv's, or the one on PATH) ``--runs`` times with ``--seeds N``
and with ``--seeds 1``, alternating, and prints the fastest and the median of each and their ratio
(target: <= 3 s whole process with 5 seeds on 2 cores).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def gpuplan() -> list[str]:
    beside = Path(sys.executable).with_name("gpuplan")
    return [str(beside)] if beside.exists() else [shutil.which("gpuplan") or "gpuplan"]


def once(seeds: int, processes: int | None) -> float:
    with tempfile.TemporaryDirectory() as out:
        command = [*gpuplan(), "recommend", "--seeds", str(seeds), "--out", out, "-q"]
        if processes is not None:
            command += ["--processes", str(processes)]
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - began
    if done.returncode not in (0, 1):  # 1: no model meets the targets, still a full run
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args()
    once(1, args.processes)  # warm the file cache
    times: dict[int, list[float]] = {args.seeds: [], 1: []}
    for _ in range(args.runs):
        for seeds in times:
            times[seeds].append(once(seeds, args.processes))
    for seeds, figures in times.items():
        middle = statistics.median(figures)
        print(f"recommend --seeds {seeds}: fastest {min(figures):.2f} s, median {middle:.2f} s")
    ratio = statistics.median(times[args.seeds]) / statistics.median(times[1])
    print(f"ratio (median): {ratio:.2f}x")


if __name__ == "__main__":
    main()
