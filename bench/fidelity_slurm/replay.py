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
``sacct --parsable2 -D -X`` (-D: one record per run of a requeued job).

Configurations a and b (setup.sh) replay whole-node jobs (``--gres=gpu:8 --exclusive``) of two
users; c and d replay ``workload.generate_shared`` traces on shared nodes: each job with its GPUs
per node (``--gres=gpu:N``, never --exclusive), ``-c`` CPUs, ``--mem``, ``--qos``, account and
partition, as its local user (``--population``).

Writes to DIR: trace.csv, trace.swf (same jobs, for gpuplan), real.csv (job, submit_s, start_s,
end_s relative to the replay start, plus slurm_id, sbatch_s, state, node_list, and per job its runs
and preemptions: a requeued job's start_s is its first run's, final_start_s its last run's),
sacct.txt (raw, times as sacct prints them: gpuplan's sacct reader reads it), replay.json
(settings, slurmctld's start time with its fraction of a second, the loops' clocks) and the logs
of the replay: slurmctld.log (the controller's log without the backfill map dumps; when that is
large, also without the backfill plans, which then go to backfill.log.gz), sched.log (the
scheduling log's pass lines) and sched-full.log.gz (the whole scheduling log of the replay).
"""

from __future__ import annotations

import argparse
import csv
import gzip
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
# as the shared sample lists them (issue 15), which gpuplan's sacct reader reads
SACCT_FIELDS = (
    "JobID,JobName,User,Account,Partition,QOS,Submit,Eligible,Start,End,Elapsed,Timelimit,NNodes,"
    "NCPUS,ReqTRES,AllocTRES,State,ExitCode,Priority,NodeList"
)
SHARED_CONFIGS = ("c", "d")  # nodes shared by jobs (setup.sh): generate_shared traces
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


def slurm_duration_s(text: str) -> float:
    """Seconds of a slurm.conf duration: ``[D-]HH:MM:SS``, ``MM:SS`` or ``MM`` (minutes)."""
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if len(parts) == 1:
        parts = [0, parts[0], 0]
    elif len(parts) == 2:
        parts = [0, *parts]
    hours, minutes, seconds = parts
    return float(((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds)


def conf_value(conf: str, key: str) -> str | None:
    found = re.findall(rf"^{key}=(\S+)", conf, re.M)
    return found[-1] if found else None


def sacctmgr_rows(*args: str) -> list[list[str]]:
    proc = run(["sacctmgr", "-n", "-P", "show", *args], check=False)
    return [line.split("|") for line in proc.stdout.splitlines() if line.strip()]


def slurm_settings() -> dict[str, object]:
    conf = (WORK / "etc" / "slurm.conf").read_text()
    sched = conf_value(conf, "SchedulerParameters") or ""
    params = dict(re.findall(r"(\w+)=(\d+)", sched))
    priority = conf_value(conf, "PriorityType") or "priority/basic"
    nodes = len(re.findall(r"^NodeName=", conf, re.M))
    config_file = WORK / "etc" / "config"
    settings: dict[str, object] = {
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
    if settings["config"] not in SHARED_CONFIGS:
        return settings
    # Configurations c and d: every setting a scenario may state, read from slurm.conf and the
    # accounting database, so compare.py writes gpuplan's scenario from these alone.
    timings_file = WORK / "etc" / "timings"
    node_line = re.search(r"^NodeName=\S+ .*$", conf, re.M)
    node_conf = dict(re.findall(r"(\w+)=(\S+)", node_line.group(0))) if node_line else {}
    partitions = []
    for line in re.findall(r"^PartitionName=.*$", conf, re.M):
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        partitions.append(
            {
                "name": fields["PartitionName"],
                "priority_tier": int(fields.get("PriorityTier", 1)),
                "priority_job_factor": int(fields.get("PriorityJobFactor", 1)),
                "preempt_mode": fields.get("PreemptMode"),
                "oversubscribe": fields.get("OverSubscribe", "NO"),
                "default": fields.get("Default", "NO") == "YES",
            }
        )
    auth = dict(re.findall(r"(\w+)=([^,\s]+)", conf_value(conf, "AuthInfo") or ""))
    qos = [
        {
            "name": name,
            "priority": int(prio or 0),
            "preempt": [q for q in preempt.split(",") if q],
            "preempt_mode": mode.lower(),
        }
        for name, prio, preempt, mode in sacctmgr_rows("qos", "format=name,priority,preempt,preemptmode")
    ]
    associations = [
        {"account": account, "user": user, "fairshare": share, "qos": qos_list, "default_qos": default_qos}
        for account, user, share, qos_list, default_qos in sacctmgr_rows(
            "assoc", "where", "cluster=gpuplan", "format=account,user,fairshare,qos,defaultqos"
        )
    ]
    priority_keys = ("PriorityWeightAge", "PriorityWeightFairshare", "PriorityWeightJobSize",
                     "PriorityWeightPartition", "PriorityWeightQOS")  # fmt: skip
    settings |= {
        "timings": timings_file.read_text().strip() if timings_file.exists() else "",
        "scheduler_parameters": sched,
        "default_queue_depth": int(params.get("default_queue_depth", 100)),
        "batch_sched_delay": int(params.get("batch_sched_delay", 3)),
        "bf_max_job_test": int(params.get("bf_max_job_test", 500)),
        "bf_window_min": int(params.get("bf_window", 1440)),
        "sched_min_interval": int(params.get("sched_min_interval", 2)),
        "select_type": conf_value(conf, "SelectType"),
        "select_type_parameters": conf_value(conf, "SelectTypeParameters"),
        "node_cpus": int(node_conf.get("CPUs", 1)),
        "node_real_memory_mb": int(node_conf.get("RealMemory", 1)),
        "gpus_per_node": int(re.sub(r"\D", "", node_conf.get("Gres", "gpu:8").split(":")[-1]) or 8),
        "priority_weights": {k: int(conf_value(conf, k) or 0) for k in priority_keys},
        "priority_max_age_s": slurm_duration_s(conf_value(conf, "PriorityMaxAge") or "7-00:00:00"),
        "priority_decay_half_life_s": slurm_duration_s(conf_value(conf, "PriorityDecayHalfLife") or "7-0"),
        "preempt_type": conf_value(conf, "PreemptType") or "preempt/none",
        "preempt_mode": (conf_value(conf, "PreemptMode") or "OFF").lower(),
        "cred_expire_s": int(auth.get("cred_expire", 120)),
        "accounting_storage_enforce": (conf_value(conf, "AccountingStorageEnforce") or "").split(","),
        "debug_flags": conf_value(conf, "DebugFlags") or "",
        "partition_settings": partitions,
        "qos": qos,
        "associations": associations,
    }
    return settings


def slurmctld_start() -> dict[str, float | None]:
    """When the running slurmctld started, in Unix seconds with their fraction: the process's start
    (/proc/<pid>/stat field 22, clock ticks since boot, 10 ms; boot = now - /proc/uptime) and its
    log's "slurmctld version ... started" line (milliseconds; after reading its state)."""
    out: dict[str, float | None] = {"process_s": None, "log_s": None}
    try:
        pid = (WORK / "run" / "slurmctld.pid").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: after pid, (comm) and 19 more
        boot = time.time() - float(Path("/proc/uptime").read_text().split()[0])
        out["process_s"] = round(boot + ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError):
        pass
    started = log_times(WORK / "log" / "slurmctld.log", "slurmctld version", 0, time.time())
    if started:
        out["log_s"] = started[-1]
    return out


def check_trace(jobs: list[workload.Job], settings: dict[str, object]) -> None:
    """Everything a job names exists: partitions, QoS, (account, user) associations, users."""
    partitions = set(settings["partitions"])  # type: ignore[arg-type]
    bad = {j.partition for j in jobs} - partitions
    if bad:
        raise SystemExit(
            f"trace partitions {sorted(bad)} are not in this configuration's {sorted(partitions)}"
        )
    if settings["config"] not in SHARED_CONFIGS:
        return
    qos = {q["name"] for q in settings["qos"]}  # type: ignore[attr-defined]
    bad = {j.qos for j in jobs if j.qos} - qos
    if bad:
        raise SystemExit(f"trace QoS {sorted(bad)} are not in the database's {sorted(qos)}")
    assocs = {(a["account"], a["user"]) for a in settings["associations"]}  # type: ignore[attr-defined]
    bad = {(j.account, j.username) for j in jobs} - assocs
    if bad:
        raise SystemExit(
            f"trace users not in their accounts {sorted(bad)}: run setup.sh with "
            "GPUPLAN_SLURM_POPULATION set to the trace's population"
        )
    too_big = [j.job for j in jobs if j.cpus_per_node > int(settings["node_cpus"])]  # type: ignore[call-overload]
    if too_big:
        raise SystemExit(f"jobs {too_big} ask more CPUs than a node has")


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
    """sacct's records of the jobs, times as sacct prints them by default (local time; this machine
    runs in UTC, and gpuplan reads sacct times as UTC)."""
    env = slurm_env() | {"SLURM_TIME_FORMAT": "standard"}
    cmd = ["sacct", "--parsable2", "-D", "-X", "-n", "-j", ",".join(ids), "-o", SACCT_FIELDS]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    names = SACCT_FIELDS.split(",")
    return [
        dict(zip(names, line.split("|"), strict=True)) for line in proc.stdout.splitlines() if line.strip()
    ]


def epoch(value: str) -> int | None:
    """Unix seconds of a sacct time (local time, YYYY-MM-DDTHH:MM:SS); None for Unknown/None."""
    try:
        return int(datetime.fromisoformat(value).timestamp())
    except ValueError:
        return None


# Backfill lines of DebugFlags=BackfillMap that replay.py moves to backfill-map.log.gz (the
# node-space map after every reservation: most of the log), and those it moves to backfill.log.gz
# when the log is large
MAP_DUMPS = ("_dump_node_space_table", "_dump_job_test")
PLAN_LINES = ("_dump_job_sched", "_attempt_backfill: completed testing", "no jobs to backfill")
LARGE_LOG = 400_000  # bytes


def copy_logs(out: Path, since_epoch: float, until: float) -> dict[str, str]:
    """The controller's logs of the replay into ``out`` (see the module docstring); what went where."""
    kept: dict[str, str] = {}
    since = datetime.fromtimestamp(since_epoch).strftime("[%Y-%m-%dT%H:%M:%S")
    log = WORK / "log" / "slurmctld.log"
    if log.exists():  # the controller's log lines from the usage reset on
        with log.open(errors="replace") as src:
            lines = [line for line in src if not line.startswith("[") or line[:20] >= since]
        maps = [line for line in lines if any(k in line for k in MAP_DUMPS)]
        if maps:
            with gzip.open(out / "backfill-map.log.gz", "wt") as dst:
                dst.writelines(maps)
            kept["backfill-map.log.gz"] = "the backfill cycles' node-space maps (DebugFlags=BackfillMap)"
            lines = [line for line in lines if not any(k in line for k in MAP_DUMPS)]
        if sum(map(len, lines)) > LARGE_LOG:
            with gzip.open(out / "backfill.log.gz", "wt") as dst:
                dst.writelines(line for line in lines if "sched/backfill" in line)
            lines = [line for line in lines if not any(k in line for k in PLAN_LINES)]
            kept["backfill.log.gz"] = "the backfill thread's lines (plans, cycles, starts)"
        (out / "slurmctld.log").write_text("".join(lines))
        kept["slurmctld.log"] = "the controller's log" + (", without plans" if len(kept) > 1 else "")
    sched_log = WORK / "log" / "sched.log"
    if sched_log.exists():
        copy_sched_log(sched_log, out / "sched.log", until)
        with sched_log.open(errors="replace") as src, gzip.open(out / "sched-full.log.gz", "wt") as dst:
            dst.writelines(line for line in src if line.removeprefix("sched: ")[:20] >= since)
        kept["sched.log"] = "the scheduling log's pass lines"
        kept["sched-full.log.gz"] = "the whole scheduling log of the replay"
    return kept


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
    shared = ap.add_argument_group("configurations c and d (workload.generate_shared)")
    shared.add_argument(
        "--population",
        default=workload.DEFAULT_POPULATION,
        help="users and accounts, ACCOUNT:USER,USER;... (default: the shared sample's; setup.sh must "
        "have made the same: GPUPLAN_SLURM_POPULATION)",
    )
    shared.add_argument(
        "--shapes",
        default=workload.DEFAULT_SHAPES,
        help="NODESxGPUS:WEIGHT,... (default: the shared sample's)",
    )
    shared.add_argument("--high-share", type=float, help='share of jobs in partition "high" (c 0.15, d 0)')
    shared.add_argument("--qos", help="QOS:WEIGHT,... (c: normal:85,high:15; d: low:25,normal:50,high:25)")
    shared.add_argument("--cpus", help="CPUS:WEIGHT,... per task, 0 asks none (default: none asked)")
    shared.add_argument("--mem", help="MB:WEIGHT,... per node, 0 asks none (default: none asked)")
    ap.add_argument("--trace", type=Path, help="replay this trace.csv instead of generating one")
    ap.add_argument("--out", type=Path, help="output directory (default runs/<config>-<jobs>-<time>)")
    ap.add_argument("--lead", type=float, help="seconds between the first sbatch and the replay start")
    ap.add_argument("--timeout", type=float, help="seconds to wait for the jobs (default: serial worst case)")
    ap.add_argument("--force", action="store_true", help="replay even if the cluster has jobs")
    ap.add_argument(
        "--reservation",
        help="NODES:START:DURATION: a maintenance reservation (Flags=MAINT, Users=root: no job may use "
        "it) of the highest-numbered NODES nodes from START to START + DURATION seconds after t0; with "
        "--trace, the default is the reservation of the replay beside it",
    )
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
        help="begin: sbatch everything first with --begin (default); arrival: sbatch each job at its "
        "arrival second (an arrival then triggers Slurm's event-driven scheduling, as a real "
        "submission does; --begin eligibility waits for the next periodic pass); with --trace, the "
        "default is the mode of the replay beside it (its replay.json)",
    )
    args = ap.parse_args()
    source = args.trace.parent / "replay.json" if args.trace else None
    source_meta = json.loads(source.read_text()) if source and source.exists() else {}
    if args.submit is None:
        args.submit = source_meta.get("submit_mode", "begin")
    reservation = None
    if args.reservation:
        count, begin, length = (int(v) for v in args.reservation.split(":"))
        reservation = {"nodes": count, "start_s": begin, "duration_s": length}
    elif source_meta.get("reservation"):
        reservation = {k: source_meta["reservation"][k] for k in ("nodes", "start_s", "duration_s")}

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
    elif config in SHARED_CONFIGS:
        jobs = workload.generate_shared(
            args.jobs,
            args.span,
            args.seed,
            population=workload.Population.parse(args.population),
            shapes=workload.parse_weights(args.shapes),
            run_range=(args.run_min, args.run_max),
            high_share=args.high_share if args.high_share is not None else (0.15 if config == "c" else 0.0),
            qos_weights=workload.parse_weights(
                args.qos or ("normal:85,high:15" if config == "c" else "low:25,normal:50,high:25")
            ),
            cpu_weights=workload.parse_weights(args.cpus) if args.cpus else None,
            mem_weights=workload.parse_weights(args.mem) if args.mem else None,
        )
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
    check_trace(jobs, settings)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or HERE / "runs" / f"{config}-{len(jobs)}jobs-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    workload.write_csv(jobs, out / "trace.csv")
    workload.write_swf(jobs, out / "trace.swf", nodes=int(settings["nodes"]))

    log_since = time.time() - 1  # the controller's log lines of this replay start here
    controller_started = slurmctld_start()
    align = args.align or ("minute" if settings["priority"] == "priority/multifactor" else "none")
    reset_at = None
    if config == "b":  # fair-share: every replay starts from zero usage
        reset_at = time.time()
        for account in sorted({j.account for j in jobs}):
            run(["sacctmgr", "-i", "modify", "account", f"name={account}", "set", "RawUsage=0"], check=False)
        for user, account in sorted({(j.username, j.account) for j in jobs}):
            reset = ["sacctmgr", "-i", "modify", "user", f"name={user}", f"account={account}"]
            run([*reset, "set", "RawUsage=0"], check=False)
    elif config in SHARED_CONFIGS:  # the same for every account and user association in the tree
        reset_at = time.time()
        assocs = settings["associations"]
        for account in sorted({a["account"] for a in assocs if a["account"] != "root"}):  # type: ignore[attr-defined]
            run(["sacctmgr", "-i", "modify", "account", f"name={account}", "set", "RawUsage=0"], check=False)
        for a in assocs:  # type: ignore[attr-defined]
            if a["user"]:
                reset = ["sacctmgr", "-i", "modify", "user", f"name={a['user']}", f"account={a['account']}"]
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
    if reservation is not None:
        # the highest-numbered nodes, as gpuplan's reservations hold them (sim/slurm/reservations.py)
        names = run(["sinfo", "-h", "-N", "-o", "%N"]).stdout.split()
        held = sorted(set(names))[-int(reservation["nodes"]) :]
        length = int(reservation["duration_s"])
        run([
            "scontrol", "create", "reservation", "ReservationName=gp_maint",
            f"StartTime={datetime.fromtimestamp(t0 + int(reservation['start_s'])):%Y-%m-%dT%H:%M:%S}",
            f"Duration={length // 3600:02d}:{length % 3600 // 60:02d}:{length % 60:02d}",
            f"Nodes={','.join(held)}", "Users=root", "Flags=MAINT,IGNORE_JOBS",
        ])  # fmt: skip
        reservation["node_list"] = held
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
        if config in SHARED_CONFIGS:  # nodes shared: each job its GPUs per node, CPUs, memory, QoS
            resources = [f"--gres=gpu:{job.gpus_per_node}"]
            resources += [f"--cpus-per-task={job.cpus_per_task}"] if job.cpus_per_task else []
            resources += [f"--mem={job.mem_mb}"] if job.mem_mb else []
            resources += [f"--qos={job.qos}"] if job.qos else []
        else:  # whole nodes (the partitions are OverSubscribe=EXCLUSIVE too)
            resources = [f"--gres=gpu:{workload.GPUS_PER_NODE}", "--exclusive"]
        cmd = [
            "runuser", "-u", job.username, "--",
            "sbatch", "--parsable", *when, f"--time={job.time_limit_min}",
            "-N", str(job.nodes), *resources,
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
    if reservation is not None:  # (a reservation still to come would hold the next replay's nodes)
        run(["scontrol", "delete", "ReservationName=gp_maint"], check=False)

    # Read back from the accounting database (it lags the controller a little).
    rows: list[dict[str, str]] = []
    for _ in range(60):
        rows = sacct_rows(ids)
        runs: dict[str, list[dict[str, str]]] = {}
        for r in rows:  # -D: one record per run of a requeued job
            runs.setdefault(r["JobID"], []).append(r)
        done = {
            k
            for k, records in runs.items()
            if all(r["State"].split()[0] in (*TERMINAL, "REQUEUED") and epoch(r["End"]) for r in records)
        }
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
        seconds = epoch(value)
        return "" if seconds is None else str(seconds - t0)

    missing = []
    with (out / "real.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["job", "submit_s", "start_s", "end_s", "slurm_id", "sbatch_s", "state", "nodes",
                         "node_list", "partition", "account", "records", "final_start_s", "preemptions",
                         "first_node_list", "qos", "user"])  # fmt: skip
        for job in jobs:
            # -D: a requeued job has one record per run (the later ones with Submit reset to the
            # requeue), in the order of their starts
            records = sorted(by_id.get(submitted[job.job], []), key=lambda r: epoch(r["Start"]) or 2**40)
            if not records:
                missing.append(job.job)
                continue
            first, last = records[0], records[-1]
            preempted = sum(r["State"].split()[0] in ("PREEMPTED", "REQUEUED") for r in records)
            writer.writerow([
                job.job, rel(first["Eligible"]), rel(first["Start"]), rel(last["End"]), submitted[job.job],
                f"{sbatch_at[job.job] - t0:.2f}", last["State"].split()[0], last["NNodes"], last["NodeList"],
                last["Partition"], last["Account"], len(records), rel(last["Start"]), preempted,
                first["NodeList"], last["QOS"], last["User"],
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
        # every decay-thread pass (DebugFlags=Priority: Fair Tree prints its tree from the root at
        # each, fair_tree.c:_ft_debug; the classic formula logs the decay factor)
        "decay_ticks_s": sorted(
            {
                round(t - t0, 3)
                for pattern in ("_ft_debug:     root (root)", "Decay factor over")
                for t in log_times(ctld_log, pattern, *window)
            }
        ),
    }
    meta = {
        **settings,
        "t0": t0,
        "loops": loops,
        "jobs": len(jobs),
        "seed": args.seed if not args.trace else None,
        "trace": str(args.trace) if args.trace else "generated",
        "generator": None if args.trace else " ".join(sys.argv[1:]),
        "lead_s": lead,
        "submit_mode": args.submit,
        "late_submissions": late,
        "replay_s": round(finished_at - t0, 1),
        "missing_in_sacct": missing,
        "slurm_ids": submitted,
        "reservation": reservation,
    }
    # slurmctld's start, with its fraction of a second (its loops count from about then)
    meta["slurmctld_start"] = {
        k: None if v is None else round(v, 3) for k, v in controller_started.items()
    } | {
        k.replace("_s", "_rel_t0_s"): None if v is None else round(v - t0, 3)
        for k, v in controller_started.items()
    }
    if config in SHARED_CONFIGS:
        meta["requeued_jobs"] = sorted(job.job for job in jobs if len(by_id.get(submitted[job.job], [])) > 1)
        meta["logs"] = copy_logs(out, log_since, finished_at + 1)
    (out / "replay.json").write_text(json.dumps(meta, indent=2) + "\n")
    if config not in SHARED_CONFIGS:
        log = WORK / "log" / "slurmctld.log"
        if log.exists():  # the controller's log lines from the usage reset on
            since = datetime.fromtimestamp(log_since).strftime("[%Y-%m-%dT%H:%M:%S")
            # without the backfill map dumps (DebugFlags=BackfillMap: ~1 MB per replay); the plans
            # ("_dump_job_sched: JobId=.. to start at ..") stay
            with log.open(errors="replace") as src, (out / "slurmctld.log").open("w") as dst:
                dst.writelines(
                    line
                    for line in src
                    if (not line.startswith("[") or line[:20] >= since)
                    and not any(k in line for k in MAP_DUMPS)
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
