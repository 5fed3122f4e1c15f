#!/usr/bin/env python3
"""Compare per-job start times of a real Slurm replay (replay.py) with gpuplan's Slurm model and the
harness's reference model.

    python3 bench/fidelity_slurm/compare.py RUN_DIR [--repeat RUN_DIR2] [--plans] [--ablate]
                                            [--gpuplan CMD] [--no-gpuplan]

Models, each on RUN_DIR's trace with the same cluster (nodes x 8 GPUs) and the minutes-rounded time
limits as estimates:

  slurm     gpuplan --backfill slurm through a scenario file (RUN_DIR/gpuplan-scenario.yaml) with the
            replay's settings as far as a scenario can state them: bf_interval, bf_resolution,
            bf_window, bf_max_job_test, priority/multifactor weights, PriorityMaxAge,
            PriorityDecayHalfLife, PriorityCalcPeriod, Fair Tree, team shares, and the partitions
            (named after the SWF partition numbers, so each trace job keeps its own); what it cannot
            state is printed ("gpuplan cannot express")
  easy      gpuplan trace.swf --backfill easy (Slurm's defaults otherwise)
  none      gpuplan trace.swf --backfill none: strict FIFO, for reference
  ref       reference.py with the replay's settings and the clocks measured in its logs (periodic
            main passes, backfill thread phase, decay tick)
  ref-phase reference.py with only the phases of those clocks (periodic passes every
            sched_interval from the first, no drift): what a simulator given the phases can do
  ref-real  as ref, with each job's run time as measured on Slurm (End - Start)
  repeat    (with --repeat RUN_DIR2) the other real replay of the same trace: the noise floor

Configurations c and d (setup.sh: jobs sharing nodes, users in accounts, QoS, preemption) are
compared differently (``compare_shared``): gpuplan reads the trace as sacct lists it
(RUN_DIR/gpuplan-trace.sacct: users, accounts, partitions, QoS, GPUs per node, CPUs and memory by
name, the real eligibility and sbatch second) through a scenario written from replay.json alone
(every slurm.conf and sacctmgr setting a scenario states, slurmctld's start with its fraction as
controller_start), and runs it with --backfill slurm, easy and none (the same settings otherwise);
per model it prints the share of jobs within ±2 s and within ±(bf_interval + 2) s and whether the
same jobs were preempted the same number of times (sacct -D runs), with --repeat for real vs real
too. reference.py is skipped there (it cannot express those configurations; the output says so).

Prints per job real - simulated start and how real Slurm started it (main scheduler or backfill, from
slurmctld.log); then per model the share of jobs within the tolerance (bf_interval + 2 s), and with
--plans the first backfill plan that differs between Slurm's log and reference.py, with --ablate
the agreement of reference.py with each of its behaviours switched off. Writes RUN_DIR/compare.csv,
compare.json (and ablation.json). Exits non-zero only if the harness broke (missing files, no
gpuplan to run), never for low agreement; a failing gpuplan is a warning (compare.json:
gpuplan_error) and the reference models are still compared.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

import reference  # noqa: E402


class GpuplanFailed(Exception):
    """gpuplan ran but failed (its own bug or an option it no longer takes)."""


def gpuplan_command(given: str | None) -> list[str]:
    if given:
        return shlex.split(given)
    found = shutil.which("gpuplan")
    if found:
        return [found]
    if importlib.util.find_spec("gpuplan") is not None:
        return [sys.executable, "-m", "gpuplan"]
    raise SystemExit("gpuplan not found: activate the virtualenv it is installed in, or pass --gpuplan CMD")


def read_jobs_parquet(out: Path, offset_s: float = 0.0) -> dict[int, dict]:
    import pyarrow.parquet as pq

    result = {}
    for r in pq.read_table(out / "jobs.parquet").to_pylist():
        names = workload.expand_hostlist(r["node_list"] or "")
        # gpuplan's nodes are 0-based (node0, gpu0, ...); setup.sh's gpu<NN> are 1-based
        nodes = frozenset(int(re.sub(r"^\D+", "", n)) + 1 for n in names if n)
        start = r["start_s"]
        result[int(r["job_id"])] = {
            "start_s": None if start is None or start != start else start + offset_s,
            "nodes": nodes,
            "preemptions": int(r.get("preemptions") or 0),
            "columns": tuple(r),
        }
    return result


def simulate(cmd: list[str], swf: Path, out: Path, backfill: str, nodes: int) -> dict[int, dict]:
    """Run gpuplan on ``swf`` with Slurm's defaults; per trace job: start_s, node set."""
    args = [*cmd, "simulate", str(swf), "--model", "slurm", "--backfill", backfill, "--nodes", str(nodes),
            "--gpus-per-node", str(workload.GPUS_PER_NODE), "--json", "--out", str(out), "-q"]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise GpuplanFailed(f"gpuplan failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr}")
    return read_jobs_parquet(out)


def controller_start(meta: dict, offset_s: float) -> int:
    """When slurmctld started, in whole seconds of the simulation's clock (t = 0 at the first
    submission, t0 + offset_s): a decay tick (every PriorityCalcPeriod from the start), else the
    first measured backfill cycle (bf_interval after the start)."""
    loops = meta.get("loops") or {}
    if loops.get("decay_tick_s") is not None:
        return round(loops["decay_tick_s"] - offset_s)
    cycles = loops.get("backfill_cycles_s") or []
    return round(cycles[0] - int(meta["bf_interval"]) - offset_s) if cycles else 0


def reservation_as_created(run_dir: Path, meta: dict) -> dict:
    """replay.json's maintenance reservation with the window slurmctld created (its log's "Created
    reservation=gp_maint ... start=... end=..." line): scontrol counts Duration in whole minutes,
    rounding seconds up (parse_time.c:time_str2mins), so `--reservation 2:30:90` held its nodes
    120 s. Without the line (no log), the window replay.py asked for."""
    asked = meta["reservation"]
    t0 = int(meta["t0"])
    pattern = re.compile(r"Created reservation=gp_maint .* start=(\S+) end=(\S+)")
    for _, line in reference._log_lines(run_dir / "slurmctld.log", t0):
        if m := pattern.search(line):
            start, end = (datetime.strptime(v, "%Y-%m-%dT%H:%M:%S").timestamp() - t0 for v in m.groups())
            created = {"start_s": start, "duration_s": end - start}
            return {**asked, **created, "asked_duration_s": asked["duration_s"]}
    return asked


def scenario_text(meta: dict, jobs: list[workload.Job], with_partitions: bool, offset_s: float) -> str:
    """A scenario that replays trace.swf under the replay's slurm.conf settings and clocks: its start
    is the first submission's Unix time (Slurm rounds on the epoch clock), slurmctld's start."""
    nodes = int(meta["nodes"])
    # replay.py submits every job ahead with sbatch --begin unless told --submit arrival
    early = ", submitted_early: true" if meta.get("submit_mode", "begin") == "begin" else ""
    start = datetime.fromtimestamp(int(meta["t0"]) + offset_s, tz=UTC).isoformat()
    lines = [
        f"# written by compare.py: the settings of {meta.get('config', '?')}-configuration replay",
        "name: fidelity-replay",
        f"start: {start}",
        "cluster:",
        "  pools:",
        f"    - {{name: gpu, nodes: {nodes}, gpus_per_node: {workload.GPUS_PER_NODE}}}",
        "teams:",
    ]
    for account in sorted({j.account for j in jobs}):
        lines.append(f"  - {{name: {account}, share: 1, users: 1}}")
    team_map = ", ".join(
        f"g{j.user}: {j.account}" for j in sorted({j.user: j for j in jobs}.values(), key=lambda j: j.user)
    )
    lines += [
        "workloads:",
        "  - name: replay",
        "    kind: batch",
        "    pool: gpu",
        f"    trace: {{path: trace.swf, format: swf, gpus_per_node: {workload.GPUS_PER_NODE},"
        f" team_map: {{{team_map}}}{early}}}",
        "models:",
        "  slurm:",
        "    backfill: slurm",
        f"    bf_interval: {int(meta['bf_interval'])}",
        f"    bf_resolution: {int(meta['bf_resolution'])}",
        "    bf_window: 1440",
        "    bf_max_job_test: 500",
        f"    controller_start: {controller_start(meta, offset_s)}",
        f"    sched_interval: {int(meta['sched_interval'])}",
    ]
    if (meta.get("loops") or {}).get("decay_tick_s") is not None:  # the start was read off a decay tick
        lines.append(f"    decay_start: {controller_start(meta, offset_s)}")
    if meta.get("priority") == "priority/multifactor":
        lines += [
            "    priority_type: multifactor",
            "    priority_weight_age: 1000",
            "    priority_weight_fairshare: 10000",
            "    priority_max_age: 10m",
            "    priority_decay_half_life: 10m",
            f"    priority_calc_period: {int(meta.get('priority_calc_period_s', 60))}s",
            "    fairshare: fair_tree",
            "    accounting_storage_enforce: [associations]  # setup.sh, configuration b",
        ]
        if with_partitions:
            # a trace job keeps its traced partition when the scenario defines one of that name on
            # the pool; SWF partitions are numbers (workload.PARTITION_NUMBER: 1 batch, 2 high)
            lines += [
                "    priority_weight_partition: 1000",
                "    partitions:  # SWF partition numbers: 1 = batch, 2 = high",
                "      - {name: '1', pool: gpu, priority_tier: 1, priority_job_factor: 1}",
                "      - {name: '2', pool: gpu, priority_tier: 10, priority_job_factor: 10}",
            ]
    return "\n".join(lines) + "\n"


def simulate_scenario(
    cmd: list[str], run_dir: Path, meta: dict, jobs: list[workload.Job]
) -> tuple[dict, list[str]]:
    """gpuplan --backfill slurm with the replay's settings; what it cannot express, as notes."""
    notes = [
        "the sub-second phases of Slurm's loops and their drift (gpuplan ticks the main scheduler every "
        "second, runs backfill every bf_interval and decay ticks every PriorityCalcPeriod from "
        "slurmctld's start, in whole seconds)",
    ]
    offset = float(min(j.submit_s for j in jobs))  # a trace workload starts at its first submission
    for with_partitions in (True, False):
        text = scenario_text(meta, jobs, with_partitions, offset)
        path = run_dir / "gpuplan-scenario.yaml"
        path.write_text(text)
        out = run_dir / "gpuplan-slurm"
        args = [*cmd, "simulate", str(path), "--model", "slurm", "--json", "--out", str(out), "-q"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            if not with_partitions and meta.get("config") == "b":
                notes.append("partitions over a shared pool with PriorityTier, and a trace job's own "
                             "partition (models.slurm.partitions)")  # fmt: skip
            return read_jobs_parquet(out, offset), notes
        if not with_partitions or "partition" not in proc.stderr:
            raise GpuplanFailed(f"gpuplan failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr}")
    raise AssertionError


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
    """``diffs`` in trace order."""
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
        "within_count": sum(abs(d) <= tolerance for d in diffs),
        "real_later": sum(d > tolerance for d in diffs),
        "real_earlier": sum(d < -tolerance for d in diffs),
    }


def logged_plans(run_dir: Path, t0: int, slurm_to_trace: dict[str, int]) -> dict[int, list[tuple]]:
    """Slurm's backfill plans per cycle (DebugFlags=Backfill): cycle second -> [(trace job, planned
    start, nodes)], in the order the cycle tested the jobs; a start now is a plan for now."""
    plans: dict[int, list[tuple]] = {}
    cycle = None
    for t, line in reference._log_lines(run_dir / "slurmctld.log", t0):
        if "_attempt_backfill: beginning" in line:
            cycle = int(t // 1)
            plans[cycle] = []
            continue
        if cycle is None:
            continue
        m = re.search(r"_dump_job_sched: JobId=(\d+) to start at (\S+), end at \S+ on nodes (\S+)", line)
        if m:
            start = datetime.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S").timestamp() - t0
            nodes = tuple(int(n.removeprefix("gpu")) for n in workload.expand_hostlist(m.group(3)))
            plans[cycle].append((slurm_to_trace.get(m.group(1)), int(start), nodes))
            continue
        m = re.search(r"_start_job: Started JobId=(\d+) in \S+ on (\S+)", line)
        if m:
            nodes = tuple(int(n.removeprefix("gpu")) for n in workload.expand_hostlist(m.group(2)))
            plans[cycle].append((slurm_to_trace.get(m.group(1)), cycle, nodes))
    return plans


def first_plan_difference(run_dir: Path, meta: dict, real: dict, jobs: list, settings) -> str:
    """The first backfill cycle whose plan (jobs in test order, planned starts, nodes) differs between
    Slurm's log and reference.py: where to look first when the two disagree."""
    logged = logged_plans(run_dir, int(meta["t0"]), {r["slurm_id"]: k for k, r in real.items()})
    if not any(logged.values()):
        return (
            "no backfill plans in slurmctld.log (none was made, or the replay ran without "
            "GPUPLAN_SLURM_DEBUGFLAGS=Backfill,BackfillMap)"
        )
    model = reference.Model(jobs, settings, None)
    model.run()
    ref: dict[int, list[tuple]] = {}
    for cycle, job, when, nodes in model.plans:
        ref.setdefault(cycle, []).append((job, when, nodes))
    # cycles with something to plan, in order (a cycle may fall a second apart in the two)
    real_cycles = [(c, p) for c, p in sorted(logged.items()) if p]
    ref_cycles = [(c, p) for c, p in sorted(ref.items()) if p]
    for k, ((ca, a), (cb, b)) in enumerate(zip(real_cycles, ref_cycles, strict=False)):
        if a != b:
            return (f"first plan difference: cycle {k + 1} (Slurm at t={ca}, ref at t={cb}):\n"
                    f"  slurm {a}\n  ref   {b}")  # fmt: skip
    if len(real_cycles) != len(ref_cycles):
        return (
            f"the first {min(len(real_cycles), len(ref_cycles))} plans are the same; Slurm planned in "
            f"{len(real_cycles)} cycles, ref in {len(ref_cycles)}"
        )
    return f"all {len(real_cycles)} backfill plans are the same (jobs in test order, planned starts, nodes)"


def agreement(real: dict[int, int], sim: dict[int, tuple], tolerance: float) -> float:
    ok = [abs(real[k] - sim[k][0]) <= tolerance for k in real if k in sim]
    return sum(ok) / len(real) if real else 0.0


# ---- configurations c and d: jobs sharing nodes, users in accounts, QoS, preemption -------------------

SHARED_CONFIGS = ("c", "d")  # setup.sh's configurations whose jobs share nodes
GPUPLAN_TRACE = "gpuplan-trace.sacct"


def duration_text(seconds: float) -> str:
    """A scenario duration: whole seconds as ``3600s``."""
    return f"{seconds:g}s"


def shared_offset(jobs: list[workload.Job], real: dict[int, dict]) -> dict[int, int]:
    """Each job's eligibility on the replay's clock (t0 = 0): sacct's Eligible of its first run (a
    late sbatch in ``--submit arrival`` makes it later than the trace's submit_s), else the trace's."""
    out = {}
    for job in jobs:
        r = real.get(job.job)
        out[job.job] = int(r["submit_s"]) if r and r.get("submit_s") else job.submit_s
    return out


def write_gpuplan_trace(run_dir: Path, meta: dict, jobs: list[workload.Job], real: dict[int, dict]) -> float:
    """gpuplan's input trace (``GPUPLAN_TRACE``): the jobs as sacct lists them, with the nominal run
    times, the real eligibility and (with --begin) the real sbatch second, so a job submitted ahead
    reads as submitted early. Returns the offset of gpuplan's t = 0 (the first eligibility) from t0."""
    t0 = int(meta["t0"])
    eligible = shared_offset(jobs, real)
    begin = meta.get("submit_mode", "begin") == "begin"
    submitted = {}
    for job in jobs:
        r = real.get(job.job)
        sbatch = float(r["sbatch_s"]) if r and r.get("sbatch_s") else None
        # sbatch --begin: Submit is when sbatch ran; at arrival, Submit = Eligible
        submitted[job.job] = (
            t0 + math.floor(sbatch) if begin and sbatch is not None else t0 + eligible[job.job]
        )
    shifted = [replace(job, submit_s=eligible[job.job]) for job in jobs]
    workload.write_sacct(shifted, run_dir / GPUPLAN_TRACE, t0, submitted)
    return float(min(eligible.values()))


def preempt_type_name(meta: dict) -> str:
    return {"preempt/partition_prio": "partition_prio", "preempt/qos": "qos"}.get(
        str(meta.get("preempt_type")), "none"
    )


def shared_controller_start(meta: dict, offset_s: float, rounding: str = "log") -> float | None:
    """slurmctld's start on gpuplan's clock (seconds from its t = 0), with its fraction: its log's
    "slurmctld version ... started" line as replay.py recorded it (milliseconds; the process's start
    from /proc, 10 ms and a few ms of clock offset, when the log has none)."""
    start = meta.get("slurmctld_start") or {}
    value = start.get("log_rel_t0_s")
    if value is None:
        value = start.get("process_rel_t0_s")
    if value is None:
        return None
    start_s = float(value)
    # --controller-start (issue 15, gap 4: which phase, and do whole seconds give the same
    # agreement?): main / decay put gpuplan's one clock at the measured phase of the main loop's
    # ticks (its first periodic pass, less the whole seconds since the start) or of the decay ticks
    loops = meta.get("loops") or {}
    passes = loops.get("main_periodic_passes_s") or []
    if rounding == "main" and passes:
        start_s = passes[0] - round(passes[0] - start_s)
    elif rounding == "decay" and loops.get("decay_tick_s") is not None:
        period = float(meta.get("priority_calc_period_s", 60))
        start_s = loops["decay_tick_s"] - period * round((loops["decay_tick_s"] - start_s) / period)
    start_s -= offset_s
    return {"floor": math.floor(start_s), "ceil": math.ceil(start_s)}.get(rounding, round(start_s, 3))


def shared_decay_start(meta: dict, offset_s: float) -> float | None:
    """When slurmctld's decay thread ticks, on gpuplan's clock: a measured tick (replay.py's
    loops.decay_tick_s), as the thread keeps its own PriorityCalcPeriod clock from its start."""
    tick = (meta.get("loops") or {}).get("decay_tick_s")
    return None if tick is None else round(float(tick) - offset_s, 3)


def shared_thread_starts(meta: dict, offset_s: float) -> dict[str, float]:
    """When slurmctld's background thread (main_loop_start: the main scheduler's loop) and its
    backfill thread (backfill_start) started, on gpuplan's clock. Each starts a fraction of a second
    after the log's "started" line, and each loop drifts by its sleep's overrun and its work, so
    the phase taken is the one at the replay's start: the first periodic main pass and the first
    backfill cycle at or after t0, less whole sched_interval / bf_interval since slurmctld's start."""
    start = (meta.get("slurmctld_start") or {}).get("log_rel_t0_s")
    loops = meta.get("loops") or {}
    found: dict[str, float] = {}
    if start is None:
        return found
    for name, key, interval in (
        ("main_loop_start", "main_periodic_passes_s", float(meta["sched_interval"])),
        ("backfill_start", "backfill_cycles_s", float(meta["bf_interval"])),
    ):
        after = [float(t) for t in loops.get(key) or [] if float(t) >= 0]
        if after and interval > 0:
            phase = after[0] - interval * math.floor((after[0] - float(start)) / interval)
            found[name] = round(phase - offset_s, 3)
    return found


def select_type_parameters(meta: dict) -> str:
    """slurm.conf's SelectTypeParameters as a scenario states it (Slurm's default when unset:
    CR_Core_Memory, cons_common.c:select_p_node_init); CR_CPU counts the same as CR_Core with one
    thread per core."""
    value = str(meta.get("select_type_parameters") or "CR_Core_Memory")
    return "CR_Core_Memory" if "Memory" in value else "CR_Core"


def scenario_text_shared(meta: dict, jobs: list[workload.Job], offset_s: float, rounding: str = "log") -> str:
    """A scenario with every setting of a configuration-c/d replay that a scenario can state, from its
    replay.json (slurm.conf and the accounting database as replay.py read them)."""
    weights = meta["priority_weights"]
    start = datetime.fromtimestamp(int(meta["t0"]) + offset_s, tz=UTC).isoformat()
    users: dict[str, set[str]] = {}
    for job in jobs:
        users.setdefault(job.account, set()).add(job.username)
    shares = {a["account"]: a["fairshare"] for a in meta.get("associations", []) if not a["user"]}
    controller = shared_controller_start(meta, offset_s, rounding)
    lines = [
        f"# written by compare.py: the settings of configuration-{meta['config']} replay "
        f"({meta.get('timings') or ''} timings) from its replay.json",
        "name: fidelity-replay",
        f"start: {start}",
        "cluster:",
        "  pools:",
        f"    - {{name: gpu, nodes: {int(meta['nodes'])}, gpus_per_node: {int(meta['gpus_per_node'])}, "
        f"cpus_per_node: {int(meta['node_cpus'])}, memory_gb: {int(meta['node_real_memory_mb']) / 1024:g}}}",
        "teams:  # accounts (sacctmgr): Fairshare and user associations, with jobs or not",
    ]
    members: dict[str, int] = {}
    for association in meta.get("associations", []):
        if association["user"] and association["account"] != "root":
            members[association["account"]] = members.get(association["account"], 0) + 1
    for account in sorted(set(users) | set(members)):
        share = shares.get(account, "1")
        count = max(members.get(account, 0), len(users.get(account, ())))
        lines.append(f"  - {{name: {account}, share: {share or 1}, users: {count}}}")
    team_map = ", ".join(f"{a}: {a}" for a in sorted(users))
    lines += [
        "workloads:",
        "  - name: replay",
        "    kind: batch",
        "    pool: gpu",
        f"    trace: {{path: {GPUPLAN_TRACE}, format: sacct, team_map: {{{team_map}}}}}",
        "models:",
        "  slurm:",
        "    backfill: slurm",
        f"    bf_interval: {int(meta['bf_interval'])}",
        f"    bf_resolution: {int(meta['bf_resolution'])}",
        f"    bf_window: {int(meta.get('bf_window_min', 1440))}",
        f"    bf_max_job_test: {int(meta['bf_max_job_test'])}",
        f"    sched_interval: {int(meta['sched_interval'])}",
        f"    batch_sched_delay: {int(meta['batch_sched_delay'])}",
        f"    default_queue_depth: {int(meta['default_queue_depth'])}",
    ]
    if controller is not None:
        lines.append(f"    controller_start: {controller:g}  # slurmctld's start ({rounding})")
    decay = shared_decay_start(meta, offset_s)
    if decay is not None and rounding == "log":
        lines.append(f"    decay_start: {decay:g}  # its decay thread's ticks (log)")
        for name, value in shared_thread_starts(meta, offset_s).items():
            lines.append(f"    {name}: {value:g}  # the thread's loop phase at t0 (log)")
    lines += [
        f"    select_type: {str(meta['select_type']).removeprefix('select/')}",
        f"    select_type_parameters: {select_type_parameters(meta)}",
        "    priority_type: multifactor"
        if meta["priority"] == "priority/multifactor"
        else "    priority_type: basic",
        f"    priority_weight_age: {weights['PriorityWeightAge']}",
        f"    priority_weight_fairshare: {weights['PriorityWeightFairshare']}",
        f"    priority_weight_job_size: {weights['PriorityWeightJobSize']}",
        f"    priority_weight_partition: {weights['PriorityWeightPartition']}",
        f"    priority_weight_qos: {weights['PriorityWeightQOS']}",
        f"    priority_max_age: {duration_text(meta['priority_max_age_s'])}",
        f"    priority_decay_half_life: {duration_text(meta['priority_decay_half_life_s'])}",
        f"    priority_calc_period: {duration_text(meta['priority_calc_period_s'])}",
        "    fairshare: fair_tree",
        f"    accounting_storage_enforce: [{', '.join(f for f in meta['accounting_storage_enforce'] if f)}]",
        f"    preempt_type: {preempt_type_name(meta)}",
        f"    preempt_mode: {meta['preempt_mode']}",
        f"    requeue_delay: {duration_text(int(meta['cred_expire_s']) + 1)}  # cred_expire + 1",
        "    qos:",
    ]
    for q in meta["qos"]:
        item = f"name: {q['name']}, priority: {q['priority']}"
        if q["preempt"]:
            item += f", preempt: [{', '.join(q['preempt'])}]"
        if q["preempt_mode"] not in ("", "cluster"):
            item += f", preempt_mode: {q['preempt_mode']}"
        lines.append(f"      - {{{item}}}")
    reservation = meta.get("reservation")
    if reservation:  # replay.py --reservation: maintenance of the highest-numbered nodes
        begin = float(reservation["start_s"]) - offset_s
        lines += [
            "    reservations:",
            f"      - {{name: gp_maint, pool: gpu, nodes: {int(reservation['nodes'])}, start: {begin:g}s, "
            f"duration: {int(reservation['duration_s'])}s}}",
        ]
    lines.append("    partitions:")
    for p in meta["partition_settings"]:
        item = (
            f"name: {p['name']}, pool: gpu, priority_tier: {p['priority_tier']}, "
            f"priority_job_factor: {p['priority_job_factor']}"
        )
        if p["preempt_mode"]:
            item += f", preempt_mode: {str(p['preempt_mode']).lower()}"
        if str(p["oversubscribe"]).upper() == "EXCLUSIVE":
            item += ", exclusive: true"
        lines.append(f"      - {{{item}}}")
    return "\n".join(lines) + "\n"


def shared_cannot_express(meta: dict, jobs: list[workload.Job]) -> list[str]:
    """What a configuration-c/d replay has that gpuplan's scenario and model do not state."""
    notes = [
        "the drift of Slurm's loops and a job's end latency (gpuplan ticks the main scheduler every "
        "second from main_loop_start, runs backfill every bf_interval from backfill_start and decay "
        "ticks every PriorityCalcPeriod from decay_start, each the phase measured at t0; a job ends "
        "at start + run)",
    ]
    with_mem = [j.job for j in jobs if j.mem_mb]
    if with_mem and "Memory" not in str(meta.get("select_type_parameters")):
        notes.append(
            f"--mem of {len(with_mem)} jobs (no difference: with SelectTypeParameters="
            f"{meta['select_type_parameters']} Slurm does not allocate memory either)"
        )
    if meta.get("sched_min_interval") == 0:
        notes.append("sched_min_interval=0 (Slurm's default 2 µs between main passes; no setting in gpuplan)")
    return notes


def simulate_shared(
    cmd: list[str],
    run_dir: Path,
    meta: dict,
    jobs: list[workload.Job],
    real: dict[int, dict],
    rounding: str = "log",
) -> tuple[dict[str, dict[int, dict]], float]:
    """gpuplan on a configuration-c/d replay: its scenario with --backfill slurm, easy and none (the
    same settings, priorities, partitions, QoS and preemption; only the backfill differs)."""
    offset = write_gpuplan_trace(run_dir, meta, jobs, real)
    path = run_dir / "gpuplan-scenario.yaml"
    path.write_text(scenario_text_shared(meta, jobs, offset, rounding))
    sims = {}
    for backfill in ("slurm", "easy", "none"):
        out = run_dir / f"gpuplan-{backfill}"
        args = [*cmd, "simulate", str(path), "--model", "slurm", "--backfill", backfill, "--json",
                "--out", str(out), "-q"]  # fmt: skip
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise GpuplanFailed(f"gpuplan failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr}")
        sims[backfill] = read_jobs_parquet(out, offset)
    return sims, offset


def within(diffs: list[float], seconds: float) -> float:
    return round(sum(abs(d) <= seconds for d in diffs) / len(diffs), 3) if diffs else 0.0


def preemption_agreement(real_counts: dict[int, int], other: dict[int, int]) -> dict[str, object]:
    """Whether the same jobs were preempted the same number of times."""
    differ = sorted(k for k in real_counts if other.get(k, 0) != real_counts[k])
    return {
        "real_preempted_jobs": sorted(k for k, n in real_counts.items() if n),
        "real_preemptions": sum(real_counts.values()),
        "other_preemptions": sum(other.get(k, 0) for k in real_counts),
        "same": not differ,
        "jobs_differing": differ,
        "same_share": round(1 - len(differ) / len(real_counts), 3) if real_counts else 1.0,
    }


def loop_phases(meta: dict) -> str:
    """The measured clocks of slurmctld's loops relative to its start (README, gap 4 of issue 15)."""
    recorded = meta.get("slurmctld_start") or {}
    start = recorded.get("log_rel_t0_s")
    if start is None:
        start = recorded.get("process_rel_t0_s")
    loops = meta.get("loops") or {}
    if start is None:
        return "slurmctld's start was not recorded"
    parts = [f"slurmctld started at t0{start:+.3f} s (log; process {recorded.get('process_rel_t0_s')})"]
    main = loops.get("main_periodic_passes_s") or []
    if main:
        parts.append(
            f"first periodic main pass {main[0] - start:+.3f} s after it, "
            f"fraction {(main[0] - start) % 1:.3f}"
        )
    if loops.get("decay_tick_s") is not None:
        parts.append(
            f"decay tick {(loops['decay_tick_s'] - start) % meta.get('priority_calc_period_s', 60):.3f} s "
            "past a whole PriorityCalcPeriod from it"
        )
    cycles = loops.get("backfill_cycles_s") or []
    if cycles:
        parts.append(f"backfill cycles at fraction {(cycles[0] - start) % 1:.3f} (first measured)")
    return "; ".join(parts)


def compare_shared(args: argparse.Namespace, run_dir: Path, meta: dict) -> int:
    """compare.py for configurations c and d (setup.sh): real vs real and gpuplan, per job and in all,
    within ±2 s and ±(bf_interval + 2) s, and the preemptions per job."""
    jobs = {j.job: j for j in workload.read_csv(run_dir / "trace.csv")}
    job_list = list(jobs.values())
    with (run_dir / "real.csv").open(newline="") as fh:
        real = {int(r["job"]): r for r in csv.DictReader(fh)}
    bf_tolerance = int(meta["bf_interval"]) + 2
    tolerance = args.tolerance if args.tolerance is not None else bf_tolerance
    sims: dict[str, dict[int, dict]] = {}
    gpuplan_error = None
    offset = 0.0
    if not args.no_gpuplan:
        try:
            sims, offset = simulate_shared(
                gpuplan_command(args.gpuplan), run_dir, meta, job_list, real, args.controller_start
            )
        except GpuplanFailed as exc:
            gpuplan_error = str(exc)
            print(f"warning: {gpuplan_error.splitlines()[0]}; last lines:\n"
                  + "\n".join(gpuplan_error.splitlines()[-3:]), file=sys.stderr)  # fmt: skip
    other = None
    if args.repeat:
        with (args.repeat / "real.csv").open(newline="") as fh:
            other = {int(r["job"]): r for r in csv.DictReader(fh) if r["start_s"]}
        sims["repeat"] = {
            k: {"start_s": int(r["start_s"]), "preemptions": int(r.get("preemptions") or 0),
                "node_list": r.get("first_node_list") or r["node_list"]}
            for k, r in other.items()
        }  # fmt: skip
    how = how_started(run_dir / "slurmctld.log")
    rows = []
    for k, job in sorted(jobs.items()):
        r = real.get(k)
        if r is None or not r["start_s"]:
            continue
        row = {
            "job": k,
            "shape": f"{job.nodes}x{job.gpus_per_node}",
            "cpus": job.cpus_per_task,
            "mem_mb": job.mem_mb,
            "partition": job.partition,
            "qos": job.qos or "normal",
            "account": job.account,
            "user": job.username,
            "submit_s": job.submit_s,
            "eligible_s": int(r["submit_s"]),
            "limit_s": job.time_limit_min * 60,
            "run_s": job.run_s,
            "real_start_s": int(r["start_s"]),
            "real_final_start_s": int(r.get("final_start_s") or r["start_s"]),
            "real_preemptions": int(r.get("preemptions") or 0),
            "real_by": how.get(r["slurm_id"], "?"),
            "real_nodes": r.get("first_node_list") or r["node_list"],
        }
        for name, sim in sims.items():
            s = sim.get(k)
            start = s["start_s"] if s else None
            row[f"sim_{name}_start_s"] = start
            row[f"diff_{name}_s"] = None if start is None else row["real_start_s"] - start
            row[f"preemptions_{name}"] = s["preemptions"] if s else None
        rows.append(row)
    if not rows:
        raise SystemExit("no job has a real start time: the replay failed")

    print(f"run {run_dir.name}: configuration {meta['config']} ({meta.get('timings')} timings), "
          f"{meta['slurm_version']}, {meta['preempt_type']}, SchedulerParameters="
          f"{meta.get('scheduler_parameters')}; submission: {meta.get('submit_mode')}")  # fmt: skip
    print(f"{len(rows)} jobs: shapes {workload.shapes_text(job_list)}; "
          f"{sum(j.cpus_per_task > 0 for j in job_list)} ask CPUs, "
          f"{sum(j.mem_mb > 0 for j in job_list)} memory; "
          f"accounts/users {sorted({(j.account, j.username) for j in job_list})}")  # fmt: skip
    print(loop_phases(meta))
    shown = [n for n in ("repeat", "slurm", "easy", "none") if n in sims]
    header = (
        f"{'job':>4} {'shape':>5} {'cpu':>3} {'part':>5} {'qos':>6} {'user':>9} {'submit':>6} {'limit':>5}"
        f" {'run':>4} {'real':>5} {'by':>8} {'pre':>3}"
    )
    header += "".join(f" {'Δ' + n:>8}" for n in shown) + "  preemptions " + "/".join(shown) + "  nodes(real)"
    print(header)

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:+.0f}"

    for row in rows:
        line = (
            f"{row['job']:>4} {row['shape']:>5} {row['cpus']:>3} {row['partition']:>5} {row['qos']:>6}"
            f" {row['user'].removeprefix('sim_'):>9} {row['submit_s']:>6} {row['limit_s']:>5}"
            f" {row['run_s']:>4}"
            f" {row['real_start_s']:>5} {row['real_by']:>8} {row['real_preemptions']:>3}"
        )
        line += "".join(f" {fmt(row[f'diff_{n}_s']):>8}" for n in shown)
        line += "  " + "/".join(fmt(row[f"preemptions_{n}"]).lstrip("+") for n in shown)
        line += f"  {row['real_nodes']}"
        print(line)

    real_counts = {row["job"]: row["real_preemptions"] for row in rows}
    summary = {}
    for name in shown:
        diffs = [row[f"diff_{name}_s"] for row in rows if row[f"diff_{name}_s"] is not None]
        summary[name] = summarize(diffs, tolerance)
        summary[name]["within_2s"] = within(diffs, 2)
        summary[name]["within_bf_interval_plus_2s"] = within(diffs, bf_tolerance)
        counts = {row["job"]: row[f"preemptions_{name}"] or 0 for row in rows}
        summary[name]["preemptions"] = preemption_agreement(real_counts, counts)
    real_wait = round(statistics.fmean(row["real_start_s"] - row["eligible_s"] for row in rows), 1)
    notes = shared_cannot_express(meta, job_list)
    ref_skipped = (
        "reference.py (ref, ref-phase, ref-real) skipped: it models whole-node jobs of one user per "
        "account under partition tiers, without jobs sharing nodes, CPUs, QoS or preemption "
        f"(configuration {meta['config']} has them)"
    )
    report = {
        "run": run_dir.name,
        "config": meta["config"],
        "timings": meta.get("timings"),
        "submit_mode": meta.get("submit_mode"),
        "jobs": len(rows),
        "bf_interval": int(meta["bf_interval"]),
        "tolerance_s": tolerance,
        "real_mean_wait_s": real_wait,
        "real_preempted_jobs": sorted(k for k, n in real_counts.items() if n),
        "start_diff_real_minus_sim": summary,
        "gpuplan_offset_s": offset,
        "gpuplan_controller_start": args.controller_start,
        "gpuplan_cannot_express": notes,
        "gpuplan_error": gpuplan_error,
        "reference": ref_skipped,
        "real_started_by": {k: sum(row["real_by"] == k for row in rows) for k in ("main", "backfill", "?")},
        "late_submissions": meta.get("late_submissions", []),
    }
    print()
    print(f"real mean wait {real_wait:.1f} s; preempted: {len(report['real_preempted_jobs'])} jobs "
          f"{report['real_preempted_jobs']}, {sum(real_counts.values())} times; started by the main "
          f"scheduler {report['real_started_by']['main']}, "
          f"backfill {report['real_started_by']['backfill']}")  # fmt: skip
    for name, s in summary.items():
        p = s["preemptions"]
        first = f"job {s['first_divergence']}" if s["first_divergence"] else "none"
        same = (
            "same jobs preempted as often"
            if p["same"]
            else f"preemptions differ for jobs {p['jobs_differing']}"
        )
        print(f"{name:>7}: {s['within_2s']:6.1%} within ±2 s, {s['within_bf_interval_plus_2s']:6.1%} within "
              f"±{bf_tolerance} s ({s['within_count']}/{s['n']} within ±{tolerance:g} s, "
              f"{s['exact']:.0%} exact); "
              f"real − sim mean {s['mean']:+.1f} s, max |Δ| {s['max_abs']:.0f}; first beyond: {first}; "
              f"{p['other_preemptions']} preemptions ({same})")  # fmt: skip
    for note in notes:
        print(f"gpuplan cannot express: {note}")
    print(ref_skipped)
    with (run_dir / "compare.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--gpuplan", help='command that runs gpuplan (default: "gpuplan" on PATH)')
    ap.add_argument("--tolerance", type=float, help="seconds (default bf_interval + 2)")
    ap.add_argument("--repeat", type=Path, help="another replay of the same trace: also print real vs real")
    ap.add_argument("--ablate", action="store_true", help="reference.py with each behaviour switched off")
    ap.add_argument("--no-gpuplan", action="store_true", help="reference models only")
    ap.add_argument(
        "--controller-start",
        choices=("log", "start", "floor", "ceil", "main", "decay"),
        default="log",
        help="configurations c and d: gpuplan's controller_start is slurmctld's start with its "
        "fraction and each thread's measured phase (log, default), the start with its fraction "
        "and the threads' phases left to gpuplan's defaults (start: as a trace converted without "
        "the logs), the whole second before (floor) or after (ceil) it, or the measured phase of "
        "the main loop's ticks (main) or of the decay ticks (decay)",
    )
    ap.add_argument(
        "--plans",
        action="store_true",
        help="print the first backfill plan where reference.py and Slurm differ",
    )
    args = ap.parse_args()
    run_dir: Path = args.run_dir
    for name in ("trace.csv", "trace.swf", "real.csv", "replay.json"):
        if not (run_dir / name).exists():
            raise SystemExit(f"{run_dir / name} missing: run replay.py first")
    meta = json.loads((run_dir / "replay.json").read_text())
    if meta.get("reservation"):
        meta["reservation"] = reservation_as_created(run_dir, meta)
    if meta.get("config") in SHARED_CONFIGS:
        return compare_shared(args, run_dir, meta)
    jobs = {j.job: j for j in workload.read_csv(run_dir / "trace.csv")}
    with (run_dir / "real.csv").open(newline="") as fh:
        real = {int(r["job"]): r for r in csv.DictReader(fh)}
    tolerance = args.tolerance if args.tolerance is not None else meta["bf_interval"] + 2
    nodes = int(meta["nodes"])

    measured_run = {
        k: float(int(r["end_s"]) - int(r["start_s"])) for k, r in real.items() if r["start_s"] and r["end_s"]
    }
    job_list = list(jobs.values())
    sims: dict[str, dict[int, dict]] = {}
    notes: list[str] = []
    gpuplan_error = None
    if not args.no_gpuplan:
        cmd = gpuplan_command(args.gpuplan)
        try:
            sims["slurm"], notes = simulate_scenario(cmd, run_dir, meta, job_list)
            sims["easy"] = simulate(cmd, run_dir / "trace.swf", run_dir / "gpuplan-easy", "easy", nodes)
            sims["none"] = simulate(cmd, run_dir / "trace.swf", run_dir / "gpuplan-none", "none", nodes)
        except GpuplanFailed as exc:  # gpuplan's problem, not the harness's: compare the rest
            gpuplan_error = str(exc)
            for name in ("slurm", "easy", "none"):
                sims.pop(name, None)
            print(f"warning: {gpuplan_error.splitlines()[0]}; last lines:\n"
                  + "\n".join(gpuplan_error.splitlines()[-3:]), file=sys.stderr)  # fmt: skip

    # the harness's reference model (reference.py) with the replay's settings and clocks
    loops = reference.clocks_from_run(run_dir, meta)
    settings = reference.settings_from_replay(meta, job_list, real, loops)
    phase_only = reference.settings_from_replay(meta, job_list, real, loops, main_passes_s=())
    ref_runs = {
        "ref": (settings, None),
        "ref-phase": (phase_only, None),
        "ref-real": (settings, measured_run),
    }
    for name, (s, runs) in ref_runs.items():
        ref = reference.simulate(job_list, s, run_s=runs)
        sims[name] = {k: {"start_s": t, "nodes": frozenset(ns), "by": by} for k, (t, ns, by) in ref.items()}
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
            "partition": job.partition,
            "account": job.account,
            "submit_s": job.submit_s,
            "eligible_s": int(r["submit_s"]),
            "limit_s": job.time_limit_min * 60,
            "run_s": job.run_s,
            "real_run_s": int(measured_run.get(k, float("nan"))),
            "real_start_s": real_start,
            "real_by": how.get(r["slurm_id"], "?"),
            "real_nodes": r["node_list"],
            "ref_by": sims["ref"].get(k, {}).get("by", "?"),
        }
        for name, sim in sims.items():
            s = sim.get(k)
            start = s["start_s"] if s else None
            row[f"sim_{name}_start_s"] = start
            row[f"diff_{name}_s"] = None if start is None else real_start - start
            row[f"same_nodes_{name}"] = bool(s) and s["nodes"] == real_nodes
        rows.append(row)
    if not rows:
        raise SystemExit("no job has a real start time: the replay failed")

    print(f"run {run_dir.name}: configuration {meta['config']}, {meta['slurm_version']}, {meta['priority']}, "
          f"bf_interval={meta['bf_interval']} sched_interval={meta['sched_interval']} "
          f"bf_resolution={meta['bf_resolution']}; tolerance ±{tolerance:g} s")  # fmt: skip
    shown = [n for n in ("slurm", "easy", "none", "ref") if n in sims]
    header = (
        f"{'job':>4} {'n':>2} {'part':>5} {'acct':>5} {'submit':>6} {'limit':>5} {'run':>4} {'real':>5}"
        f" {'by':>8}"
    )
    header += "".join(f" {'Δ' + n:>7}" for n in shown) + f" {'ref by':>8}  nodes(real)  same(ref)"
    print(header)

    def fmt(v):
        return "-" if v is None else f"{v:+.0f}"

    for row in rows:
        line = (
            f"{row['job']:>4} {row['nodes']:>2} {row['partition']:>5} {row['account']:>5}"
            f" {row['submit_s']:>6} {row['limit_s']:>5} {row['run_s']:>4} {row['real_start_s']:>5}"
            f" {row['real_by']:>8}"
        )
        line += "".join(f" {fmt(row[f'diff_{n}_s']):>7}" for n in shown)
        line += f" {row['ref_by']:>8}  {row['real_nodes']:<12} {'y' if row['same_nodes_ref'] else 'n'}"
        print(line)

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
        summary[name]["same_nodes"] = round(sum(row[f"same_nodes_{name}"] for row in rows) / len(rows), 3)
    real_wait = round(statistics.fmean(row["real_start_s"] - row["eligible_s"] for row in rows), 1)
    if args.repeat:  # real vs real: the noise floor of the replay itself
        with (args.repeat / "real.csv").open(newline="") as fh:
            other = {int(r["job"]): r for r in csv.DictReader(fh) if r["start_s"]}
        diffs = [
            row["real_start_s"] - int(other[row["job"]]["start_s"]) for row in rows if row["job"] in other
        ]
        summary["repeat"] = summarize(diffs, tolerance)
        summary["repeat"]["mean_wait_s"] = round(
            statistics.fmean(int(other[k]["start_s"]) - jobs[k].submit_s for k in other if k in jobs), 1
        )
        summary["repeat"]["same_nodes"] = round(
            sum(row["real_nodes"] == other[row["job"]]["node_list"] for row in rows if row["job"] in other)
            / len(rows),
            3,
        )
    overhead = [row["real_run_s"] - row["run_s"] for row in rows]
    report = {
        "run": run_dir.name,
        "config": meta["config"],
        "jobs": len(rows),
        "tolerance_s": tolerance,
        "real_mean_wait_s": real_wait,
        "start_diff_real_minus_sim": summary,
        "run_overhead_s": {"mean": round(statistics.fmean(overhead), 2), "max": max(overhead)},
        "real_started_by": {k: sum(row["real_by"] == k for row in rows) for k in ("main", "backfill", "?")},
        "ref_started_by_agrees": round(sum(row["real_by"] == row["ref_by"] for row in rows) / len(rows), 3),
        "gpuplan_cannot_express": notes,
        "gpuplan_error": gpuplan_error,
        "reference_clocks": {
            "main_phase_s": settings.main_phase_s,
            "main_passes_measured": len(settings.main_passes_s),
            "bf_phase_s": round(settings.bf_phase_s, 3),
            "bf_last_cycle_s": settings.bf_last_cycle_s,
            "decay_phase_s": settings.decay_phase_s,
            "submit_s": settings.submit_s,
        },
        "late_submissions": meta.get("late_submissions", []),
    }
    print()
    print(f"real mean wait {real_wait:.1f} s")
    for name, s in summary.items():
        first = f"job {s['first_divergence']}" if s["first_divergence"] else "none"
        print(f"{name:>9}: {s['within_tolerance']:.1%} ({s['within_count']}/{s['n']}) "
              f"within ±{tolerance:g} s, "
              f"{s['exact']:.0%} exact; real − sim mean {s['mean']:+.1f} s, median {s['median']:+.1f}, "
              f"mean |Δ| {s['mean_abs']:.1f}, p90 |Δ| {s['p90_abs']:.0f}, max |Δ| {s['max_abs']:.0f}; "
              f"{s['real_later']} later, {s['real_earlier']} earlier; first beyond: {first}; "
              f"mean wait {s['mean_wait_s']:.1f} s; same nodes {s['same_nodes']:.0%}")  # fmt: skip
    print(
        f"run overhead (real End−Start − sleep): mean {report['run_overhead_s']['mean']:+.2f} s, "
        f"max {report['run_overhead_s']['max']:+d} s"
    )
    print(
        f"real Slurm started {report['real_started_by']['main']} jobs in the main scheduler, "
        f"{report['real_started_by']['backfill']} in backfill; ref names the same loop for "
        f"{report['ref_started_by_agrees']:.0%}"
    )
    for note in notes:
        print(f"gpuplan cannot express: {note}")

    if args.plans:
        print()
        print(first_plan_difference(run_dir, meta, real, job_list, settings))

    if args.ablate:
        real_starts = {row["job"]: row["real_start_s"] for row in rows}
        base = agreement(real_starts, reference.simulate(job_list, settings), tolerance)
        ablation = {"ref": base}
        print(f"\nablation (reference.py with one behaviour off): ref {base:.1%}")
        for feature, s in reference.ablate(settings).items():
            value = agreement(real_starts, reference.simulate(job_list, s), tolerance)
            ablation[feature] = value
            print(f"  {feature:>20}: {value:6.1%} ({value - base:+.1%})  {reference.FEATURES[feature]}")
        (run_dir / "ablation.json").write_text(json.dumps(ablation, indent=2) + "\n")

    with (run_dir / "compare.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
