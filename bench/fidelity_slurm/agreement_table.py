#!/usr/bin/env python3
"""The agreement table of the wide calibration set (README), from the runs' compare.json.

    python3 bench/fidelity_slurm/agreement_table.py results/c-1s-begin-1 results/c-1s-begin-2 ...
    python3 bench/fidelity_slurm/agreement_table.py --all     # every c and d run in results/

Per run: its configuration and timings, jobs, submission mode, and the share of jobs whose start is
within ±2 s and within ±(bf_interval + 2) s of the real one, for the other real replay of the same
trace (real vs real, compare.py --repeat) and gpuplan's slurm, easy and none; then whether the same
jobs were preempted the same number of times (real vs real, gpuplan slurm), and the first job (in
trace order) beyond ±(bf_interval + 2) s (real vs real, gpuplan slurm). compare.py writes
compare.json; re-derive it first with ``compare.py RUN --repeat OTHER`` (no Slurm needed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("repeat", "slurm", "easy", "none")


def cell(summary: dict, name: str) -> str:
    s = summary.get(name)
    if not s:
        return "–"
    return f"{100 * s['within_2s']:.0f} / {100 * s['within_bf_interval_plus_2s']:.0f}"


def preempted(summary: dict, name: str) -> str:
    s = summary.get(name)
    if not s:
        return "–"
    p = s["preemptions"]
    return "same" if p["same"] else f"{len(p['jobs_differing'])} differ"


def first(summary: dict, name: str) -> str:
    s = summary.get(name)
    return "–" if not s else (f"job {s['first_divergence']}" if s["first_divergence"] else "none")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--all", action="store_true", help="every run of configurations c and d in results/")
    args = ap.parse_args()
    runs = list(args.runs)
    if args.all:
        runs += sorted(
            d
            for d in (HERE / "results").iterdir()
            if (d / "compare.json").exists() and d.name[:2] in ("c-", "d-")
        )
    if not runs:
        raise SystemExit("give run directories, or --all")
    print(
        "| configuration | run | jobs | submission | real vs real | gpuplan `slurm` | `easy` | `none` "
        "| preempted: real vs real | `slurm` | first beyond: real | `slurm` |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: |")
    for run in runs:
        report = json.loads((run / "compare.json").read_text())
        summary = report["start_diff_real_minus_sim"]
        config = f"{report['config']}, {report.get('timings')} (±2 s / ±{report['bf_interval'] + 2} s)"
        real_preempted = len(report.get("real_preempted_jobs", []))
        print(
            f"| {config} | `{run.name}` | {report['jobs']} | {report.get('submit_mode')} | "
            + " | ".join(cell(summary, m) for m in MODELS)
            + f" | {preempted(summary, 'repeat')} ({real_preempted} job{'s' if real_preempted != 1 else ''})"
            + f" | {preempted(summary, 'slurm')} | {first(summary, 'repeat')} | {first(summary, 'slurm')} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
