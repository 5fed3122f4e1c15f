#!/usr/bin/env bash
# The calibration of issue 4 item 8 (README: "The calibration setup"): configuration b (partitions
# batch/high by PriorityTier, multifactor priority with Fair Tree fair-share between two accounts),
# bf_interval=30, bf_resolution=60, sched_interval=1, and two fresh replays of the same 44-job trace
# (a new slurmctld before each), then compare.py on both, then teardown. About 35 minutes.
#
#   sudo bench/fidelity_slurm/calibrate.sh [OUT_PREFIX]     # default runs/calib -> runs/calib-1, -2
#
# Needs what setup.sh needs and a Python with gpuplan and pyarrow (PYTHON, default python3 on PATH).
# Exits non-zero only if a step breaks, never for low agreement.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PREFIX="${1:-$HERE/runs/calib}"
PYTHON="${PYTHON:-python3}"
# the plans in slurmctld.log let compare.py --plans name the first backfill plan that differs
export GPUPLAN_SLURM_DEBUGFLAGS="${GPUPLAN_SLURM_DEBUGFLAGS-Backfill,BackfillMap}"
# the calibration trace (CALIBRATE_TRACE overrides it, e.g. "--jobs 5 --span 10" to try the script)
read -r -a TRACE <<<"${CALIBRATE_TRACE:---jobs 44 --span 300 --seed 1 --run-min 20 --run-max 120 --sizes 40,30,15,15}"

cleanup() { "$HERE/teardown.sh" || true; }
trap cleanup EXIT

"$PYTHON" -c "import gpuplan, pyarrow"
"$HERE/setup.sh" --config b --fresh
"$PYTHON" "$HERE/replay.py" "${TRACE[@]}" --out "$PREFIX-1"
"$HERE/setup.sh" --config b --fresh # a new controller: its loops start at new phases
"$PYTHON" "$HERE/replay.py" --trace "$PREFIX-1/trace.csv" --out "$PREFIX-2"
for k in 1 2; do
    other=$((3 - k))
    "$PYTHON" "$HERE/compare.py" "$PREFIX-$k" --repeat "$PREFIX-$other" --ablate --plans | tee "$PREFIX-$k/compare.txt"
done
