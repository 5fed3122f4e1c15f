"""Whole-simulation benchmark: jobs/s and peak memory on the shared SWF traces, the whole-process
time of ``gpuplan simulate``, and a side-by-side run of AccaSim on the same trace and policy.

    python bench/bench_sim.py                # everything (AccaSim takes a few minutes)
    python bench/bench_sim.py --no-accasim   # gpuplan only

Each case runs in a fresh subprocess (so peak memory is its own), repeats the simulation and keeps
the fastest run. Simulation time is the engine proper, as ``summary.json`` reports it in
``timing_s.simulate``: no start-up, parsing or writing. Memory is the peak resident set of that
subprocess above its resident set once gpuplan, NumPy and Arrow are imported. Results go to
bench/results/latest.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces" / "swf"
RESULTS = ROOT / "bench" / "results"


@dataclass(frozen=True)
class Case:
    name: str
    trace: str
    backfill: str
    arrival_scale: float = 1.0
    copies: int = 1
    target: str = ""


CASES = [
    Case("lublin_256 easy", "lublin_256.swf.gz", "easy", target="≥ 100× AccaSim"),
    Case("lublin_256 none", "lublin_256.swf.gz", "none"),
    Case(
        "NASA, arrivals halved, easy", "NASA-iPSC-1993-3.1-cln.swf.gz", "easy", 0.5, target="≥ 100× AccaSim"
    ),
    Case("LCG none", "LCG-2005-1.swf.gz", "none", target="≥ 200,000 jobs/s"),
    Case("LCG easy", "LCG-2005-1.swf.gz", "easy"),
    Case("lublin_256 × 10 easy", "lublin_256.swf.gz", "easy", copies=10, target="≤ 1.5 s"),
    Case("lublin_256 slurm", "lublin_256.swf.gz", "slurm"),
    Case("NASA, arrivals halved, slurm", "NASA-iPSC-1993-3.1-cln.swf.gz", "slurm", 0.5),
    Case("lublin_256 × 10 slurm", "lublin_256.swf.gz", "slurm", copies=10),
    Case("CEA-Curie sample easy", "CEA-Curie-2011-sample10k.swf.gz", "easy"),
    Case("MetaCentrum easy", "MetaCentrum-wagap-2013.alea-swf.gz", "easy"),
]

# AccaSim runs: (our case name, policy), with the same trace and arrival scaling.
ACCASIM_RUNS = [
    ("lublin_256 easy", "easy"),
    ("lublin_256 none", "fifo"),
    ("NASA, arrivals halved, easy", "easy"),
]


def run_case(case: Case, repeats: int) -> dict[str, Any]:
    path = TRACES / case.trace
    args = [sys.executable, str(Path(__file__).with_name("_case.py")), str(path), case.backfill]
    args += [str(case.arrival_scale), str(case.copies)]
    out = subprocess.run([*args, str(repeats)], check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out)
    result["jobs_per_s"] = result["jobs"] / result["simulate_s"]
    result["mb_per_100k_jobs"] = result["peak_mb_above_imports"] * 100_000 / result["jobs"]
    return result


def whole_process_s(repeats: int) -> float:
    """Median wall time of ``gpuplan simulate lublin_256 --backfill easy`` as a whole process."""
    gpuplan = Path(sys.executable).with_name("gpuplan")
    command = [str(gpuplan), "simulate", str(TRACES / "lublin_256.swf.gz"), "--model", "slurm"]
    command += ["--backfill", "easy", "--quiet", "--out", str(RESULTS / "cli-out")]
    walls = []
    for _ in range(repeats):
        began = time.perf_counter()
        subprocess.run(command, check=True)
        walls.append(time.perf_counter() - began)
    return statistics.median(walls)


def accasim(cases: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from accasim.venv import ensure_accasim_venv, run_accasim  # type: ignore[import-not-found]

    python = ensure_accasim_venv(RESULTS / "accasim-venv")
    rows = []
    by_name = {case.name: case for case in CASES}
    for name, policy in ACCASIM_RUNS:
        case = by_name[name]
        theirs = run_accasim(python, TRACES / case.trace, policy, cases[name]["nodes"], case.arrival_scale)
        ours = cases[name]["jobs_per_s"]
        rows.append({"case": name, "accasim": theirs, "ratio": ours / theirs["jobs_per_s"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-accasim", action="store_true", help="skip the AccaSim side-by-side runs")
    parser.add_argument("--repeats", type=int, default=5, help="simulation repeats per case (fastest kept)")
    options = parser.parse_args()
    if not TRACES.is_dir():
        sys.exit(f"{TRACES} is absent: the benchmark needs the shared traces")
    RESULTS.mkdir(parents=True, exist_ok=True)

    results = {case.name: run_case(case, options.repeats) for case in CASES}
    whole = whole_process_s(options.repeats)
    side_by_side = [] if options.no_accasim else accasim(results)

    print("| case | jobs | offered load | simulate (s) | jobs/s | peak MB (per 100k jobs) | target |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for case in CASES:
        r = results[case.name]
        print(
            f"| {case.name} | {r['jobs']:,} | {r['offered_load']:.2f} | {r['simulate_s']:.4f} | "
            f"{r['jobs_per_s']:,.0f} | {r['peak_mb_above_imports']:.1f} ({r['mb_per_100k_jobs']:.1f}) | "
            f"{case.target} |"
        )
    print(
        f"\n`gpuplan simulate lublin_256.swf.gz --backfill easy` as a whole process: {whole:.2f} s (median)"
    )
    if side_by_side:
        print("\n| case | AccaSim jobs/s | gpuplan jobs/s | ratio |")
        print("|---|---:|---:|---:|")
        for row in side_by_side:
            theirs, ours = row["accasim"]["jobs_per_s"], results[row["case"]]["jobs_per_s"]
            print(f"| {row['case']} | {theirs:,.0f} | {ours:,.0f} | {row['ratio']:,.0f}× |")
    report = {"cases": results, "whole_process_s": whole, "accasim": side_by_side}
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
