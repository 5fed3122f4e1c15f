"""Run AccaSim 1.1.3 on an SWF trace and print its throughput as one JSON line.

Meant to be run by the python of a throw-away virtual environment with ``accasim==1.1.3``
installed (see ``venv.py`` next to this file)::

    python run_accasim.py TRACE.swf[.gz] --policy fifo|easy --nodes N [--arrival-scale 0.5] [--out DIR]

The trace is first normalised into a temporary SWF file so that AccaSim sees the same jobs as
gpuplan (see README.md): processors = field 8 if > 0 else field 5, estimate = field 9 if > 0 else
the run time, run time cut at the estimate, submit times multiplied by --arrival-scale and rounded
to int, rows ordered by (submit time, job id). AccaSim then simulates N nodes of 1 core each.

Only the JSON line goes to stdout; AccaSim's own prints and logging go to stderr.
"""

# AccaSim 1.1.3 does `from collections import Mapping`, removed in Python 3.10: restore the
# collections ABC aliases before anything imports accasim.
import collections
import collections.abc

for _abc_name in (
    "Callable",
    "Container",
    "Hashable",
    "Iterable",
    "Iterator",
    "Mapping",
    "MutableMapping",
    "MutableSequence",
    "MutableSet",
    "Sequence",
    "Set",
    "Sized",
):
    if not hasattr(collections, _abc_name):
        setattr(collections, _abc_name, getattr(collections.abc, _abc_name))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from importlib.metadata import version as _dist_version  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

SWF_FIELDS = 18


def _open_text(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _int(text: str) -> int:
    return round(float(text))


def prepare_trace(src: Path, dst: Path, arrival_scale: float) -> dict[str, int]:
    """Write the normalised SWF that AccaSim will read; return counts of what was kept/dropped.

    AccaSim's parser takes processors from field 8 whenever it is not -1 (a 0 there would give a
    0-node job that never allocates and hangs the run), reads the estimate from field 9 (-1 in
    many archive traces, which breaks its EASY reservation) and needs rows sorted by submit time.
    So every row is rewritten with field 5 = field 8 = processors, field 9 = estimate, memory
    fields = -1 (not modelled), and the rows are sorted by (submit, job id).
    """
    rows: list[tuple[int, int, list[int]]] = []
    counts = {"lines": 0, "dropped_no_processors": 0, "dropped_bad_runtime": 0, "dropped_malformed": 0}
    with _open_text(src) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            counts["lines"] += 1
            p = s.split()
            if len(p) < SWF_FIELDS:
                counts["dropped_malformed"] += 1
                continue
            try:
                job_id, submit, run = _int(p[0]), float(p[1]), _int(p[3])
                alloc, req_procs = math.ceil(float(p[4])), math.ceil(float(p[7]))
                req_time = _int(p[8])
                status, user, group, exe, queue, part = (_int(x) for x in p[10:16])
            except ValueError:
                counts["dropped_malformed"] += 1
                continue
            procs = req_procs if req_procs > 0 else alloc
            if procs <= 0:
                counts["dropped_no_processors"] += 1
                continue
            if run < 0:
                counts["dropped_bad_runtime"] += 1
                continue
            estimate = req_time if req_time > 0 else run
            run = min(run, estimate)
            sub = round(submit * arrival_scale)  # half to even, as numpy.round in bench_sim.py
            fields = [
                job_id,
                sub,
                -1,
                run,
                procs,
                -1,
                -1,
                procs,
                estimate,
                -1,
                status,
                user,
                group,
                exe,
                queue,
                part,
                -1,
                -1,
            ]
            rows.append((sub, job_id, fields))
    rows.sort(key=lambda r: (r[0], r[1]))
    with open(dst, "w", encoding="utf-8") as out:
        out.write("; normalised for AccaSim by gpuplan bench/accasim/run_accasim.py\n")
        for _, _, fields in rows:
            out.write(" ".join(str(v) for v in fields) + "\n")
    counts["jobs"] = len(rows)
    return counts


def system_config(nodes: int) -> dict[str, Any]:
    """AccaSim system config: N identical nodes of one core; one SWF processor = one core."""
    return {
        "groups": {"g1": {"core": 1}},
        "resources": {"g1": nodes},
        "equivalence": {"processor": {"core": 1}},
        "start_time": 0,
    }


def make_dispatcher(policy: str):
    from accasim.base.allocator_class import FirstFit
    from accasim.base.scheduler_class import EASYBackfilling, FirstInFirstOut

    if policy == "fifo":
        return FirstInFirstOut(FirstFit())
    if policy == "easy":
        return EASYBackfilling(FirstFit())
    raise ValueError(f"unknown policy {policy!r}")


def time_parsing_only(trace: Path, nodes: int) -> float:
    """Wall seconds AccaSim's DefaultReader + JobFactory take to turn the trace into job objects.

    AccaSim reads the workload lazily inside its simulation loop, so this pass is run separately
    (after the simulation) to say how much of simulate_s is parsing.
    """
    from accasim.base.event_class import AttributeType, JobFactory
    from accasim.base.resource_manager_class import ResourceManager, Resources
    from accasim.utils.misc import DEFAULT_SWF_MAPPER
    from accasim.utils.reader_class import DefaultReader

    cfg = system_config(nodes)
    rm = ResourceManager(Resources(groups=cfg["groups"], resources=cfg["resources"]))
    # The same job description as Simulator.default_job_description().
    attrs = [
        AttributeType("core", int),
        AttributeType("expected_duration", int),
        AttributeType("queue", int),
        AttributeType("user_id", int),
    ]
    factory = JobFactory(rm, job_attrs=attrs, job_mapper=DEFAULT_SWF_MAPPER)
    t0 = time.perf_counter()
    reader = DefaultReader(str(trace), job_factory=factory, equivalence=cfg["equivalence"], start_time=0)
    n = 0
    while True:
        points, jobs = reader.next(0)
        n += sum(len(v) for v in jobs.values())
        if not points and not reader.submission_enabled and not reader.loaded_jobs:
            break
    elapsed = time.perf_counter() - t0
    del reader
    return elapsed


def run(
    trace: Path, policy: str, nodes: int, arrival_scale: float, out_dir: Path, parse_timing: bool
) -> dict[str, Any]:
    from accasim.base.simulator_class import Simulator

    out_dir.mkdir(parents=True, exist_ok=True)
    workload = out_dir / "workload.swf"
    t_prep = time.perf_counter()
    counts = prepare_trace(trace, workload, arrival_scale)
    prepare_s = time.perf_counter() - t_prep
    cfg_path = out_dir / "sys_config.json"
    cfg_path.write_text(json.dumps(system_config(nodes), indent=2) + "\n", encoding="utf-8")
    results = out_dir / "results"
    results.mkdir(exist_ok=True)

    # AccaSim prints a few things with print() (and logs to stderr): keep stdout for our JSON.
    with contextlib.redirect_stdout(sys.stderr):
        sim = Simulator(
            str(workload),
            str(cfg_path),
            make_dispatcher(policy),
            RESULTS_FOLDER_PATH=str(results),
            LOG_LEVEL="ERROR",  # no progress/statistics logging; errors still reach stderr
            show_statistics=False,
            statistics_output=True,
            scheduling_output=True,  # one line per completed job: used to check the job count
            pprint_output=False,
            benchmark_output=False,
            overwrite_previous=True,
        )
        t0 = time.perf_counter()
        sim.start_simulation()
        total_s = time.perf_counter() - t0
    # AccaSim's own perf_counter() stamps around its event loop (what it reports as "Simulation
    # time"): the loop also reads the trace lazily, so this includes parsing, but not the final
    # flush of its per-job output file nor the start/stop of its logging and writer threads.
    simulate_s = sim.end_simulation_time - sim.start_simulation_time
    logging.getLogger("accasim").handlers.clear()

    sched_file = results / ("sched-" + workload.name)
    completed_in_output = 0
    if sched_file.exists():
        with open(sched_file, encoding="utf-8") as f:
            completed_in_output = sum(1 for line in f if line.strip())

    completed = int(sim.mapper.finished)
    rejected = int(sim.rejected_jobs)
    processed = completed + rejected  # AccaSim rejects jobs larger than the machine at submission
    result: dict[str, Any] = {
        "tool": "accasim",
        "version": _dist_version("accasim"),
        "policy": policy,
        "trace": trace.name,
        "nodes": nodes,
        "arrival_scale": arrival_scale,
        "jobs": processed,
        "simulate_s": round(simulate_s, 4),
        "jobs_per_s": round(processed / simulate_s, 2) if simulate_s > 0 else None,
        "timing_includes_parsing": True,
        "total_s": round(total_s, 4),
        "jobs_in_trace": counts["lines"],
        "jobs_in_workload": counts["jobs"],
        "jobs_dropped": {k: v for k, v in counts.items() if k.startswith("dropped_")},
        "jobs_loaded": int(sim.loaded_jobs),
        "jobs_completed": completed,
        "jobs_rejected": rejected,
        "jobs_completed_in_output": completed_in_output,
        "all_jobs_simulated": processed == counts["jobs"] and completed == completed_in_output,
        "makespan_s": (
            sim.mapper.last_run_time - sim.mapper.first_time_dispatch
            if sim.mapper.last_run_time is not None and sim.mapper.first_time_dispatch is not None
            else None
        ),
        "mean_wait_s": round(sum(sim.mapper.wtimes) / len(sim.mapper.wtimes), 2)
        if sim.mapper.wtimes
        else None,
        "prepare_s": round(prepare_s, 4),
        "dispatcher": str(sim.mapper.dispatcher),
        "python": sys.version.split()[0],
    }
    if parse_timing:
        with contextlib.redirect_stdout(sys.stderr):
            parse_s = time_parsing_only(workload, nodes)
        result["parse_s"] = round(parse_s, 4)
        sim_only = simulate_s - parse_s
        result["jobs_per_s_excluding_parse"] = round(processed / sim_only, 2) if sim_only > 0 else None
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path, help="SWF trace, plain or .gz")
    ap.add_argument("--policy", choices=("fifo", "easy"), required=True)
    ap.add_argument("--nodes", type=int, required=True, help="nodes of 1 core each")
    ap.add_argument(
        "--arrival-scale",
        type=float,
        default=1.0,
        help="multiply submit times by this factor (0.5 = arrivals twice as dense)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="keep AccaSim's files (normalised trace, config, results) here; default: a temp dir, removed",
    )
    ap.add_argument("--no-parse-timing", action="store_true", help="skip the separate parse-only timing pass")
    args = ap.parse_args(argv)
    if args.nodes <= 0:
        ap.error("--nodes must be > 0")
    if args.arrival_scale <= 0:
        ap.error("--arrival-scale must be > 0")

    tmp = None
    out_dir = args.out
    if out_dir is None:
        tmp = tempfile.mkdtemp(prefix="accasim-run-")
        out_dir = Path(tmp)
    try:
        result = run(
            args.trace.resolve(),
            args.policy,
            args.nodes,
            args.arrival_scale,
            out_dir.resolve(),
            not args.no_parse_timing,
        )
        if args.out is not None:
            (out_dir / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    # AccaSim leaves non-daemon helper threads behind on some error paths: do not hang on them.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
