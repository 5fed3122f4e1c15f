#!/usr/bin/env python3
"""Compare per-job start times of a real Slurm replay (replay.py) with gpuplan's Slurm model.

    python3 bench/fidelity_slurm/compare.py RUN_DIR [--gpuplan "gpuplan"] [--tolerance S]

Runs gpuplan three times on RUN_DIR's trace, with the same cluster (nodes x 8 GPUs) and the
minutes-rounded time limits as estimates:

  easy      trace.swf, --backfill easy: the model under test
  none      trace.swf, --backfill none: strict FIFO, for reference
  easy-real trace-realrun.swf, --backfill easy, with each job's run time as measured on Slurm
            (End - Start): what is left is scheduling, not run-time overhead
  repeat    (with --repeat RUN_DIR2) the other real replay of the same trace: the noise floor

and the harness's own reference model of Slurm's main and backfill loops (reference.py: every
pending job reserves, not only the head), as ``ref`` (trace run times) and ``ref-real`` (measured),
to tell which differences that documented behaviour explains;

and prints per job: real - simulated start, how real Slurm started it (main scheduler or backfill,
from slurmctld.log), whether the nodes match; then the share of jobs within the tolerance
(bf_interval + 2 s by default). Writes RUN_DIR/compare.csv and RUN_DIR/compare.json.
Exits non-zero only if the harness broke (missing files, gpuplan failed), never for low agreement.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

import reference  # noqa: E402


def gpuplan_command(given: str | None) -> list[str]:
    if given:
        return shlex.split(given)
    found = shutil.which("gpuplan")
    if found:
        return [found]
    if importlib.util.find_spec("gpuplan") is not None:
        return [sys.executable, "-m", "gpuplan"]
    raise SystemExit("gpuplan not found: activate the virtualenv it is installed in, or pass --gpuplan CMD")


def simulate(cmd: list[str], swf: Path, out: Path, backfill: str, nodes: int) -> dict[int, dict]:
    """Run gpuplan on ``swf``; per trace job: start_s, end_s, node set."""
    import pyarrow.parquet as pq

    args = [*cmd, "simulate", str(swf), "--model", "slurm", "--backfill", backfill, "--nodes", str(nodes),
            "--gpus-per-node", str(workload.GPUS_PER_NODE), "--json", "--out", str(out), "-q"]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"gpuplan failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr}")
    rows = pq.read_table(out / "jobs.parquet").to_pylist()
    result = {}
    for r in rows:
        names = workload.expand_hostlist(r["node_list"] or "")
        # gpuplan's node<i> is 0-based; setup.sh's gpu<NN> is 1-based
        result[int(r["job_id"])] = {
            "start_s": r["start_s"],
            "end_s": r["end_s"],
            "nodes": frozenset(int(n.removeprefix("node")) + 1 for n in names if n),
        }
    return result


def how_started(log: Path) -> dict[str, str]:
    """Slurm job id -> 'main' (sched: Allocate) or 'backfill' (sched/backfill: Started)."""
    how: dict[str, str] = {}
    if not log.exists():
        return how
    for line in log.read_text(errors="replace").splitlines():
        m = re.search(r"sched: Allocate JobId=(\d+)", line)
        if m:
            how.setdefault(m.group(1), "main")
            continue
        m = re.search(r"sched/backfill: _start_job: Started JobId=(\d+)", line)
        if m:
            how.setdefault(m.group(1), "backfill")
    return how


def summarize(diffs: list[float], tolerance: float) -> dict[str, float]:
    """``diffs`` in priority (trace) order."""
    if not diffs:
        return {"n": 0}
    absd = sorted(abs(d) for d in diffs)
    beyond = [i for i, d in enumerate(diffs) if abs(d) > tolerance]
    return {
        # the first job (1-based, trace order) beyond the tolerance: schedules are chaotic, so
        # after one different decision the later starts differ for reasons the model may get right
        "first_divergence": beyond[0] + 1 if beyond else None,
        "n": len(diffs),
        "mean": round(statistics.fmean(diffs), 2),
        "median": round(statistics.median(diffs), 2),
        "mean_abs": round(statistics.fmean(absd), 2),
        "p90_abs": absd[min(len(absd) - 1, int(0.9 * len(absd)))],
        "max_abs": absd[-1],
        "exact": round(sum(d == 0 for d in diffs) / len(diffs), 3),
        "within_tolerance": round(sum(abs(d) <= tolerance for d in diffs) / len(diffs), 3),
        "real_later": sum(d > tolerance for d in diffs),
        "real_earlier": sum(d < -tolerance for d in diffs),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--gpuplan", help='command that runs gpuplan (default: "gpuplan" on PATH)')
    ap.add_argument("--tolerance", type=float, help="seconds (default bf_interval + 2)")
    ap.add_argument("--repeat", type=Path, help="another replay of the same trace: also print real vs real")
    args = ap.parse_args()
    run_dir: Path = args.run_dir
    for name in ("trace.csv", "trace.swf", "real.csv", "replay.json"):
        if not (run_dir / name).exists():
            raise SystemExit(f"{run_dir / name} missing: run replay.py first")
    meta = json.loads((run_dir / "replay.json").read_text())
    jobs = {j.job: j for j in workload.read_csv(run_dir / "trace.csv")}
    with (run_dir / "real.csv").open(newline="") as fh:
        real = {int(r["job"]): r for r in csv.DictReader(fh)}
    tolerance = args.tolerance if args.tolerance is not None else meta["bf_interval"] + 2
    nodes = int(meta["nodes"])

    measured_run = {
        k: float(int(r["end_s"]) - int(r["start_s"])) for k, r in real.items() if r["start_s"] and r["end_s"]
    }
    workload.write_swf(list(jobs.values()), run_dir / "trace-realrun.swf", nodes, run_s=measured_run)
    cmd = gpuplan_command(args.gpuplan)
    sims = {
        "easy": simulate(cmd, run_dir / "trace.swf", run_dir / "gpuplan-easy", "easy", nodes),
        "none": simulate(cmd, run_dir / "trace.swf", run_dir / "gpuplan-none", "none", nodes),
        "easy-real": simulate(
            cmd, run_dir / "trace-realrun.swf", run_dir / "gpuplan-easy-real", "easy", nodes
        ),
    }
    # the harness's own reference model of Slurm's two loops (reference.py), same inputs
    for name, runs in (("ref", None), ("ref-real", {k: int(v) for k, v in measured_run.items()})):
        ref = reference.simulate(list(jobs.values()), nodes, run_s=runs, bf_interval=int(meta["bf_interval"]),
                                 bf_resolution=int(meta["bf_resolution"]))  # fmt: skip
        sims[name] = {k: {"start_s": t, "nodes": frozenset(ns)} for k, (t, ns) in ref.items()}
    how = how_started(run_dir / "slurmctld.log")

    rows = []
    for k, job in sorted(jobs.items()):
        r = real.get(k)
        if r is None or not r["start_s"]:
            continue
        real_start = int(r["start_s"])
        real_nodes = frozenset(int(n.removeprefix("gpu")) for n in workload.expand_hostlist(r["node_list"]))
        row = {
            "job": k,
            "nodes": job.nodes,
            "submit_s": job.submit_s,
            "eligible_s": int(r["submit_s"]),
            "limit_s": job.time_limit_min * 60,
            "run_s": job.run_s,
            "real_run_s": int(measured_run.get(k, float("nan"))),
            "real_start_s": real_start,
            "real_by": how.get(r["slurm_id"], "?"),
            "real_nodes": r["node_list"],
        }
        for name, sim in sims.items():
            s = sim.get(k)
            start = s["start_s"] if s else None
            row[f"sim_{name}_start_s"] = start
            row[f"diff_{name}_s"] = None if start is None else real_start - start
        row["same_nodes"] = sims["easy"].get(k, {}).get("nodes") == real_nodes
        row["same_nodes_ref"] = sims["ref"].get(k, {}).get("nodes") == real_nodes
        rows.append(row)
    if not rows:
        raise SystemExit("no job has a real start time: the replay failed")

    print(f"run {run_dir.name}: configuration {meta['config']}, {meta['slurm_version']}, {meta['priority']}, "
          f"bf_interval={meta['bf_interval']} sched_interval={meta['sched_interval']} "
          f"bf_resolution={meta['bf_resolution']}; tolerance ±{tolerance:g} s")  # fmt: skip
    header = (
        f"{'job':>4} {'n':>2} {'submit':>6} {'limit':>5} {'run':>4} {'real':>5} {'by':>8}"
        f" {'easy':>5} {'Δeasy':>6} {'Δnone':>6} {'Δe-rr':>6} {'Δref':>6}  nodes(real)  same"
    )
    print(header)
    for row in rows:

        def fmt(v):
            return "-" if v is None else f"{v:+.0f}"

        print(f"{row['job']:>4} {row['nodes']:>2} {row['submit_s']:>6} {row['limit_s']:>5} {row['run_s']:>4} "
              f"{row['real_start_s']:>5} {row['real_by']:>8} {row['sim_easy_start_s']:>5.0f} "
              f"{fmt(row['diff_easy_s']):>6} {fmt(row['diff_none_s']):>6} {fmt(row['diff_easy-real_s']):>6} "
              f"{fmt(row['diff_ref_s']):>6}  "
              f"{row['real_nodes']:<12} {'y' if row['same_nodes'] else 'n'}")  # fmt: skip

    summary = {}
    for name in sims:
        diffs = [row[f"diff_{name}_s"] for row in rows if row[f"diff_{name}_s"] is not None]
        summary[name] = summarize(diffs, tolerance)
        waits = [
            row[f"sim_{name}_start_s"] - row["submit_s"]
            for row in rows
            if row[f"sim_{name}_start_s"] is not None
        ]
        summary[name]["mean_wait_s"] = round(statistics.fmean(waits), 1)
    real_wait = round(statistics.fmean(row["real_start_s"] - row["eligible_s"] for row in rows), 1)
    if args.repeat:  # real vs real: the noise floor of the replay itself
        with (args.repeat / "real.csv").open(newline="") as fh:
            other = {int(r["job"]): int(r["start_s"]) for r in csv.DictReader(fh) if r["start_s"]}
        diffs = [row["real_start_s"] - other[row["job"]] for row in rows if row["job"] in other]
        summary["repeat"] = summarize(diffs, tolerance)
        summary["repeat"]["mean_wait_s"] = round(
            statistics.fmean(other[k] - jobs[k].submit_s for k in other if k in jobs), 1
        )
    overhead = [row["real_run_s"] - row["run_s"] for row in rows]
    # jobs the reference model starts at their arrival: how long real Slurm took from eligible to start
    latency = [
        row["real_start_s"] - row["eligible_s"] for row in rows if row["sim_ref_start_s"] == row["submit_s"]
    ]
    report = {
        "run": run_dir.name,
        "config": meta["config"],
        "jobs": len(rows),
        "tolerance_s": tolerance,
        "real_mean_wait_s": real_wait,
        "start_diff_real_minus_sim": summary,
        "run_overhead_s": {"mean": round(statistics.fmean(overhead), 2), "max": max(overhead)},
        "start_latency_when_ref_starts_at_arrival_s": {
            "n": len(latency),
            "mean": round(statistics.fmean(latency), 2) if latency else None,
            "max": max(latency) if latency else None,
        },
        "real_started_by": {k: sum(row["real_by"] == k for row in rows) for k in ("main", "backfill", "?")},
        "same_nodes_as_easy": round(sum(row["same_nodes"] for row in rows) / len(rows), 3),
        "same_nodes_as_ref": round(sum(row["same_nodes_ref"] for row in rows) / len(rows), 3),
        "late_submissions": meta.get("late_submissions", []),
    }
    print()
    if meta["config"] != "a":
        print("note: configuration b (two partitions by PriorityTier, multifactor fair-share) is modelled by "
              "neither gpuplan's slurm model nor ref yet: they see one FIFO queue")  # fmt: skip
    print(f"real mean wait {real_wait:.1f} s")
    for name, s in summary.items():
        first = f"job {s['first_divergence']}" if s["first_divergence"] else "none"
        print(f"{name:>9}: {s['within_tolerance']:.0%} within ±{tolerance:g} s, {s['exact']:.0%} exact; "
              f"real − sim mean {s['mean']:+.1f} s, median {s['median']:+.1f}, mean |Δ| {s['mean_abs']:.1f}, "
              f"p90 |Δ| {s['p90_abs']:.0f}, max |Δ| {s['max_abs']:.0f}; "
              f"{s['real_later']} later, {s['real_earlier']} earlier; first beyond: {first}; "
              f"mean wait {s['mean_wait_s']:.1f} s")  # fmt: skip
    print(
        f"run overhead (real End−Start − sleep): mean {report['run_overhead_s']['mean']:+.2f} s, "
        f"max {report['run_overhead_s']['max']:+d} s"
    )
    lat = report["start_latency_when_ref_starts_at_arrival_s"]
    if lat["n"]:
        print(
            f"start latency (real Start − Eligible) of the {lat['n']} jobs ref starts on arrival: "
            f"mean {lat['mean']:.2f} s, max {lat['max']} s"
        )
    print(
        f"real Slurm started {report['real_started_by']['main']} jobs in the main scheduler, "
        f"{report['real_started_by']['backfill']} in backfill; same nodes as gpuplan easy: "
        f"{report['same_nodes_as_easy']:.0%}, as ref: {report['same_nodes_as_ref']:.0%}"
    )

    with (run_dir / "compare.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
