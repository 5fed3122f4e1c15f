#!/usr/bin/env python3
"""How reproducible is a replay? reference.py run with random clock phases, pair by pair.

    python3 bench/fidelity_slurm/noise.py RUN_DIR [--runs 12] [--bf-interval S] [--sched-interval S]
    python3 bench/fidelity_slurm/noise.py --trace-seed 1 [--jobs 44 --span 300 --run-min 20
        --run-max 120 --sizes 40,30,15,15] [--bf-interval 30 --sched-interval 1 --bf-resolution 60]

Two replays of one trace differ only in the clocks of Slurm's loops: the sub-second phase and drift
of the controller's ~1 s background loop (main scheduler), the phase of the backfill thread and the
duration of its cycles, the sub-second phase of the fair-share decay tick. reference.py reproduces
a replay from its measured clocks (README), so drawing those clocks at random and comparing the
simulated starts pair by pair (share of jobs within bf_interval + 2 s) predicts the real-vs-real
agreement of a setup before spending two 15-minute replays on it. Used to choose the calibration
setup (README: "The calibration setup").
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import random
import statistics
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

import reference  # noqa: E402


def random_clocks(base: reference.Settings, rng: random.Random) -> reference.Settings:
    """The clocks of one controller start: ~1 s ticks with a drift of 1-4 ms per second (measured
    range), a periodic pass every sched_interval ticks, the backfill thread's phase and cycle
    duration, the decay tick's sub-second phase."""
    drift = rng.uniform(0.001, 0.004)
    t = base.submit_s - 10 + rng.random()
    first = rng.randrange(base.sched_interval)
    passes = []
    for i in range(1500):
        if (i + first) % base.sched_interval == 0:
            passes.append(round(t, 3))
        t += 1 + drift
    return replace(
        base,
        main_passes_s=tuple(passes),
        bf_phase_s=rng.random(),
        bf_cycle_shift_s=rng.uniform(0.002, 0.01),
        bf_last_cycle_s=(base.bf_last_cycle_s or -30.0) + rng.uniform(-0.5, 0.5),
        decay_phase_s=int(base.decay_phase_s) + rng.random(),
    )


def pairwise(jobs: list[workload.Job], base: reference.Settings, runs: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    starts = []
    for _ in range(runs):
        result = reference.simulate(jobs, random_clocks(base, rng))
        starts.append({k: v[0] for k, v in result.items()})
    tolerance = base.bf_interval + 2
    return sorted(
        sum(abs(a[k] - b[k]) <= tolerance for k in a) / len(a) for a, b in itertools.combinations(starts, 2)
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, nargs="?", help="a replay: its trace and settings")
    ap.add_argument("--trace-seed", type=int, help="a generated configuration-b trace instead")
    ap.add_argument("--jobs", type=int, default=44)
    ap.add_argument("--span", type=int, default=300)
    ap.add_argument("--run-min", type=int, default=20)
    ap.add_argument("--run-max", type=int, default=120)
    ap.add_argument("--sizes", default="40,30,15,15")
    ap.add_argument("--bf-interval", type=int)
    ap.add_argument("--sched-interval", type=int)
    ap.add_argument("--bf-resolution", type=int)
    ap.add_argument("--runs", type=int, default=12, help="simulated replays (pairs: runs*(runs-1)/2)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.run_dir:
        meta = json.loads((args.run_dir / "replay.json").read_text())
        if meta.get("config") not in ("a", "b"):
            raise SystemExit(
                f"configuration {meta.get('config')}: reference.py models whole-node jobs of "
                "configurations a and b only (no shared nodes, QoS or preemption)"
            )
        jobs = workload.read_csv(args.run_dir / "trace.csv")
        with (args.run_dir / "real.csv").open(newline="") as fh:
            real = {int(r["job"]): r for r in csv.DictReader(fh)}
        base = reference.settings_from_replay(meta, jobs, real, reference.clocks_from_run(args.run_dir, meta))
    elif args.trace_seed is not None:
        jobs = workload.generate(
            args.jobs, args.span, args.trace_seed, "b", run_range=(args.run_min, args.run_max),
            node_weights=tuple(float(w) for w in args.sizes.split(",")),
        )  # fmt: skip
        meta = {"config": "b", "nodes": 8, "bf_interval": 30, "sched_interval": 1, "bf_resolution": 60,
                "t0": 1_796_000_040, "priority_calc_period_s": 60}  # fmt: skip
        # the calibration protocol: slurmctld started at second 29 (its backfill thread's first
        # cycle ~60 s before t0, the decay ticks ~30 s after each minute), jobs submitted ~30 s
        # before t0 (after the tick that follows the usage reset), t0 at a whole minute
        base = reference.settings_from_replay(meta, jobs, None, {}, submit_s=-29.8, decay_phase_s=30.0,
                                              bf_last_cycle_s=-60.0)  # fmt: skip
    else:
        raise SystemExit("give a RUN_DIR or --trace-seed")
    over = {
        k: v
        for k, v in (
            ("bf_interval", args.bf_interval),
            ("sched_interval", args.sched_interval),
            ("bf_resolution", args.bf_resolution),
        )
        if v is not None
    }
    base = replace(base, **over, initial_fs=())
    agreement = pairwise(jobs, base, args.runs, args.seed)
    print(
        f"bf_interval={base.bf_interval} sched_interval={base.sched_interval} "
        f"bf_resolution={base.bf_resolution}: "
        f"{len(agreement)} pairs of simulated replays agree (±{base.bf_interval + 2} s) for "
        f"{statistics.fmean(agreement):.1%} of the jobs on average; worst {agreement[0]:.1%}, "
        f"10th percentile {agreement[len(agreement) // 10]:.1%}, "
        f"{sum(a >= 0.9 for a in agreement) / len(agreement):.0%} of the pairs ≥ 90 %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
