#!/usr/bin/env python3
"""Replay a small trace on the private Slurm started by setup.sh and record when each job started.

    python3 bench/fidelity_slurm/replay.py [--jobs 40] [--span 150] [--seed 1] [--out DIR]
    python3 bench/fidelity_slurm/replay.py --trace DIR/trace.csv --out DIR2   # same jobs again

Run as root (it submits as the trace's local users with runuser). By default every job is
submitted before the replay starts, in trace order, with ``sbatch --begin=<start + submit_s>``, so
it becomes eligible at its exact second whatever the submit latency (this removes submit races),
and the queue order (priority/basic: submit order) is the trace order. Slurm notices a --begin
time only at its next periodic pass, which is within 1 s with the harness's bf_interval=1 and
sched_interval=1; with longer intervals use ``--submit arrival`` (sbatch at each arrival second).
Then it waits (bounded) for all jobs to end and reads Submit/Eligible/Start/End back with
``sacct --parsable2 -D -X``.

Writes to DIR: trace.csv, trace.swf (same jobs, for gpuplan), real.csv (job, submit_s, start_s,
end_s relative to the replay start, plus slurm_id, sbatch_s, state, node_list...), sacct.txt (raw),
replay.json (settings and timings) and slurmctld.log (the controller's log during the replay).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

WORK = Path(os.environ.get("GPUPLAN_SLURM_DIR", "/tmp/gpuplan-slurm"))
SACCT_FIELDS = (
    "JobID,JobName,User,Account,Partition,Submit,Eligible,Start,End,State,NodeList,Timelimit,NNodes"
)
TERMINAL = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
)


def slurm_env() -> dict[str, str]:
    env = dict(os.environ)
    env["SLURM_CONF"] = str(WORK / "etc" / "slurm.conf")
    env["GPUPLAN_SLURM_WORK"] = str(WORK)  # teardown.sh finds the jobs by it
    env["SLURM_TIME_FORMAT"] = "%s"  # epoch seconds in squeue/sacct output
    return env


def run(cmd: list[str], timeout: float = 30, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=slurm_env(), **kw)
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def slurm_settings() -> dict[str, object]:
    conf = (WORK / "etc" / "slurm.conf").read_text()
    params = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^SchedulerParameters=(.*)$", conf, re.M).group(1)))
    priority = re.search(r"^PriorityType=(\S+)", conf, re.M).group(1)
    nodes = len(re.findall(r"^NodeName=", conf, re.M))
    config_file = WORK / "etc" / "config"
    return {
        "config": config_file.read_text().strip() if config_file.exists() else "?",
        "nodes": nodes,
        "priority": priority,
        "bf_interval": int(params.get("bf_interval", 30)),
        "sched_interval": int(params.get("sched_interval", 60)),
        "bf_resolution": int(params.get("bf_resolution", 60)),
        "partitions": re.findall(r"^PartitionName=(\S+)", conf, re.M),
        "priority_calc_period_s": 60
        * int((re.findall(r"^PriorityCalcPeriod=(\d+)", conf, re.M) or ["5"])[0]),
        "slurm_version": run(["sinfo", "--version"]).stdout.strip(),
    }


def last_decay_tick() -> float | None:
    """When the fair-share decay thread last ran: it rewrites StateSaveLocation's
    priority_last_decay_ran at every tick (priority_multifactor.c: _write_last_decay_ran)."""
    path = WORK / "state" / "priority_last_decay_ran"
    try:
        return path.stat().st_mtime - 0.01  # the write follows the tick by milliseconds
    except OSError:
        return None


def log_times(path: Path, pattern: str, since: float, until: float) -> list[float]:
    """Times (epoch seconds with milliseconds) of the log lines matching ``pattern`` in
    [since, until]; log lines start with [YYYY-MM-DDTHH:MM:SS.mmm] (after an optional prefix)."""
    out = []
    if not path.exists():
        return out
    stamp = re.compile(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\]")
    with path.open(errors="replace") as src:
        for line in src:
            if pattern not in line:
                continue
            m = stamp.search(line)
            if m:
                t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                if since <= t <= until:
                    out.append(round(t, 3))
    return out


SCHED_LOG_KEEP = (
    "slurmctld starting",
    "Backfill scheduler plugin loaded",
    "Running job scheduler",
    "Allocate",
)


def copy_sched_log(src_path: Path, dst_path: Path, until: float) -> None:
    """The scheduling log's lines about the loops (not its per-job lines) since the controller
    last started: its periodic passes ("for full queue"), event passes ("for default depth"), the
    start of the backfill thread, and the main scheduler's starts."""
    keep: list[str] = []
    last_until = datetime.fromtimestamp(until).strftime("[%Y-%m-%dT%H:%M:%S")
    with src_path.open(errors="replace") as src:
        for line in src:
            if "slurmctld starting" in line:
                keep = []
            if any(k in line for k in SCHED_LOG_KEEP) and line.removeprefix("sched: ")[:20] <= last_until:
                keep.append(line)
    dst_path.write_text("".join(keep))


def sacct_rows(ids: list[str]) -> list[dict[str, str]]:
    proc = run(
        ["sacct", "--parsable2", "-D", "-X", "-n", "-j", ",".join(ids), "-o", SACCT_FIELDS], timeout=30
    )
    names = SACCT_FIELDS.split(",")
    return [
        dict(zip(names, line.split("|"), strict=True)) for line in proc.stdout.splitlines() if line.strip()
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--span", type=int, default=150, help="arrivals over this many seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-nodes", type=int, default=4)
    ap.add_argument(
        "--sizes",
        help="weights of 1, 2, ... nodes, e.g. 40,30,15,15 (default: uniform over 1..--max-nodes)",
    )
    ap.add_argument("--run-min", type=int, default=5, help="shortest sleep, s")
    ap.add_argument(
        "--run-max", type=int, default=55, help="longest sleep, s (at most 55: limits stay above runs)"
    )
    ap.add_argument("--trace", type=Path, help="replay this trace.csv instead of generating one")
    ap.add_argument("--out", type=Path, help="output directory (default runs/<config>-<jobs>-<time>)")
    ap.add_argument("--lead", type=float, help="seconds between the first sbatch and the replay start")
    ap.add_argument("--timeout", type=float, help="seconds to wait for the jobs (default: serial worst case)")
    ap.add_argument("--force", action="store_true", help="replay even if the cluster has jobs")
    ap.add_argument(
        "--align",
        choices=("minute", "none"),
        help="minute (default with priority/multifactor): reset the accounts' usage, wait for the "
        "next fair-share decay tick (so the jobs are submitted with zero-usage factors), and start "
        "the replay at the next whole minute; none: start as soon as the lead allows",
    )
    ap.add_argument(
        "--submit",
        choices=("begin", "arrival"),
        default="begin",
        help="begin: sbatch everything first with --begin (default); arrival: sbatch each job at its "
        "arrival second (an arrival then triggers Slurm's event-driven scheduling, as a real "
        "submission does; --begin eligibility waits for the next periodic pass)",
    )
    args = ap.parse_args()

    if os.geteuid() != 0:
        raise SystemExit("run as root (submits as the trace's users with runuser)")
    if not (WORK / "etc" / "slurm.conf").exists():
        raise SystemExit(f"no {WORK}/etc/slurm.conf: run setup.sh first")
    settings = slurm_settings()
    config = str(settings["config"])
    queued = run(["squeue", "-h", "-o", "%i"]).stdout.split()
    if queued and not args.force:
        raise SystemExit(f"the cluster still has jobs {queued[:10]}; wait, scancel them, or --force")
    idle = run(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout.split("\n")
    not_idle = [line for line in idle if line.strip() and not line.endswith(" idle")]
    if not_idle:
        raise SystemExit(f"nodes not idle: {not_idle}")

    if args.trace:
        jobs = workload.read_csv(args.trace)
    else:
        jobs = workload.generate(
            args.jobs,
            args.span,
            args.seed,
            config,
            max_nodes=args.max_nodes,
            run_range=(args.run_min, args.run_max),
            node_weights=tuple(float(w) for w in args.sizes.split(",")) if args.sizes else None,
        )
    partitions = set(settings["partitions"])
    bad = {j.partition for j in jobs} - partitions
    if bad:
        raise SystemExit(
            f"trace partitions {sorted(bad)} are not in this configuration's {sorted(partitions)}"
        )
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or HERE / "runs" / f"{config}-{len(jobs)}jobs-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    workload.write_csv(jobs, out / "trace.csv")
    workload.write_swf(jobs, out / "trace.swf", nodes=int(settings["nodes"]))

    log_since = time.time() - 1  # the controller's log lines of this replay start here
    align = args.align or ("minute" if settings["priority"] == "priority/multifactor" else "none")
    reset_at = None
    if config == "b":  # fair-share: every replay starts from zero usage
        reset_at = time.time()
        for account in sorted({j.account for j in jobs}):
            run(["sacctmgr", "-i", "modify", "account", f"name={account}", "set", "RawUsage=0"], check=False)
        for user, account in sorted({(j.username, j.account) for j in jobs}):
            reset = ["sacctmgr", "-i", "modify", "user", f"name={user}", f"account={account}"]
            run([*reset, "set", "RawUsage=0"], check=False)

    # Submit everything first, each with its exact --begin.
    at_arrival = args.submit == "arrival"
    lead = args.lead if args.lead is not None else (3.0 if at_arrival else max(8.0, 0.35 * len(jobs)))
    t0 = math.ceil(time.time() + lead)
    decay_tick = last_decay_tick() if align == "minute" else None
    if decay_tick is not None and reset_at is not None:
        # Fair-share factors and priorities change only at a decay tick, so until the first tick
        # after the reset the controller still ranks the accounts by their old usage. Wait for it
        # (at most one PriorityCalcPeriod), then submit: every job starts with zero usage.
        period = int(settings["priority_calc_period_s"])
        deadline = time.time() + period + 10
        while (decay_tick is None or decay_tick < reset_at) and time.time() < deadline:
            time.sleep(0.2)
            decay_tick = last_decay_tick()
        if decay_tick is None or decay_tick < reset_at:
            raise SystemExit("no decay tick after the fair-share reset: is priority/multifactor running?")
    if align == "minute":
        # Slurm rounds plan times to bf_resolution and groups will-run ends on 30-s boundaries of
        # the epoch clock: a replay starting at a whole minute sees them at the same offsets.
        t0 = math.ceil((time.time() + lead) / 60) * 60
        if decay_tick is not None:
            # priority_multifactor.c: _decay_thread ticks every PriorityCalcPeriod from the
            # controller's start (absolute sleeps: no drift); setup.sh starts it at second 29, so
            # the ticks fall about 30 s after each minute: away from the first starts
            offset = (decay_tick - t0) % int(settings["priority_calc_period_s"])
            if not 10 <= offset <= 50:
                print(f"warning: the decay tick falls {offset:.1f} s after the minute", file=sys.stderr)
    jobdir = WORK / "jobs"
    submit_began = time.time()
    submitted: dict[int, str] = {}
    sbatch_at: dict[int, float] = {}
    print(
        f"replay of {len(jobs)} jobs (configuration {config}) starts at {t0} "
        f"({datetime.fromtimestamp(t0):%H:%M:%S}); submitting",
        flush=True,
    )
    for job in jobs:
        if at_arrival:  # sbatch at the arrival second itself (+50 ms), no --begin
            time.sleep(max(0.0, t0 + job.submit_s + 0.05 - time.time()))
            when = []
        else:
            when = [f"--begin={datetime.fromtimestamp(t0 + job.submit_s):%Y-%m-%dT%H:%M:%S}"]
        cmd = [
            "runuser", "-u", job.username, "--",
            "sbatch", "--parsable", *when, f"--time={job.time_limit_min}",
            "-N", str(job.nodes), f"--gres=gpu:{workload.GPUS_PER_NODE}", "--exclusive",
            "-p", job.partition, "-A", job.account, "-J", f"gp{job.job}",
            f"--chdir={jobdir}", "-o", "/dev/null", "--wrap", f"sleep {job.run_s}",
        ]  # fmt: skip
        sbatch_at[job.job] = time.time()
        proc = run(cmd, cwd=jobdir)
        submitted[job.job] = proc.stdout.strip().split(";")[0]
    late = [j.job for j in jobs if sbatch_at[j.job] > t0 + j.submit_s + (0.5 if at_arrival else 0.0)]
    print(f"submitted in {time.time() - submit_began:.1f} s; late submissions: {late or 'none'}", flush=True)

    # Wait for all to finish (bounded).
    ids = list(submitted.values())
    limit = args.timeout or (max(j.submit_s for j in jobs) + sum(j.run_s + 3 for j in jobs) + lead + 120)
    deadline = time.time() + limit
    last_report = 0.0
    while True:
        left = run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i %t"], check=False).stdout.split("\n")
        left = [line for line in left if line.strip()]
        if not left:
            break
        if time.time() > deadline:
            run(["scancel", *ids], check=False)
            print(
                f"timed out after {limit:.0f} s with {len(left)} jobs left; cancelled them", file=sys.stderr
            )
            break
        if time.time() - last_report > 15:
            states = [line.split()[1] for line in left]
            print(
                f"  t={time.time() - t0:6.0f} s: {states.count('R')} running, {states.count('PD')} pending, "
                f"{len(jobs) - len(left)} done",
                flush=True,
            )
            last_report = time.time()
        time.sleep(1)
    finished_at = time.time()

    # Read back from the accounting database (it lags the controller a little).
    rows: list[dict[str, str]] = []
    for _ in range(60):
        rows = sacct_rows(ids)
        done = {r["JobID"] for r in rows if r["State"].split()[0] in TERMINAL and r["End"].isdigit()}
        if done >= set(ids):
            break
        time.sleep(1)
    (out / "sacct.txt").write_text(
        SACCT_FIELDS.replace(",", "|") + "\n" + "\n".join("|".join(r.values()) for r in rows) + "\n"
    )
    by_id: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_id.setdefault(r["JobID"], []).append(r)

    def rel(value: str) -> str:
        return str(int(value) - t0) if value.isdigit() else ""

    missing = []
    with (out / "real.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["job", "submit_s", "start_s", "end_s", "slurm_id", "sbatch_s", "state", "nodes",
                         "node_list", "partition", "account", "records"])  # fmt: skip
        for job in jobs:
            records = by_id.get(submitted[job.job], [])
            if not records:
                missing.append(job.job)
                continue
            first, last = records[0], records[-1]  # -D: requeued jobs have one record per run
            writer.writerow([
                job.job, rel(last["Eligible"]), rel(first["Start"]), rel(last["End"]), submitted[job.job],
                f"{sbatch_at[job.job] - t0:.2f}", last["State"].split()[0], last["NNodes"], last["NodeList"],
                last["Partition"], last["Account"], len(records),
            ])  # fmt: skip
    sched_log = WORK / "log" / "sched.log"
    ctld_log = WORK / "log" / "slurmctld.log"
    window = (log_since, finished_at + 1)
    # the clocks of Slurm's loops during the replay, relative to t0 (see the README: phases)
    loops = {
        "align": align,
        "decay_tick_s": None if decay_tick is None else round(decay_tick - t0, 3),
        "main_periodic_passes_s": [
            round(t - t0, 3) for t in log_times(sched_log, "Running job scheduler for full queue", *window)
        ],
        "main_event_passes_s": [
            round(t - t0, 3) for t in log_times(sched_log, "Running job scheduler for default depth", *window)
        ],
        "backfill_cycles_s": [  # logged only with DebugFlags=Backfill
            round(t - t0, 3) for t in log_times(ctld_log, "_attempt_backfill: beginning", *window)
        ],
    }
    meta = {
        **settings,
        "t0": t0,
        "loops": loops,
        "jobs": len(jobs),
        "seed": args.seed if not args.trace else None,
        "trace": str(args.trace) if args.trace else "generated",
        "lead_s": lead,
        "submit_mode": args.submit,
        "late_submissions": late,
        "replay_s": round(finished_at - t0, 1),
        "missing_in_sacct": missing,
        "slurm_ids": submitted,
    }
    (out / "replay.json").write_text(json.dumps(meta, indent=2) + "\n")
    log = WORK / "log" / "slurmctld.log"
    if log.exists():  # the controller's log lines from the usage reset on
        since = datetime.fromtimestamp(log_since).strftime("[%Y-%m-%dT%H:%M:%S")
        # without the backfill map dumps (DebugFlags=BackfillMap: ~1 MB per replay); the plans
        # ("_dump_job_sched: JobId=.. to start at ..") stay
        skip = ("_dump_node_space_table", "_dump_job_test")
        with log.open(errors="replace") as src, (out / "slurmctld.log").open("w") as dst:
            dst.writelines(
                line
                for line in src
                if (not line.startswith("[") or line[:20] >= since) and not any(k in line for k in skip)
            )
    if sched_log.exists():
        copy_sched_log(sched_log, out / "sched.log", finished_at + 1)
    print(f"replay done in {finished_at - t0:.0f} s; wrote {out}/real.csv", flush=True)
    if missing:
        print(f"jobs missing in sacct: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
