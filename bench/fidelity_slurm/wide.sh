#!/usr/bin/env bash
# The wide calibration set of issue 15 (README: "The wide calibration set"): replay pairs on shared
# nodes (configurations c and d of setup.sh), each pair two fresh replays of one trace (a new
# slurmctld before each, its state cleared), then compare.py on both, each against the other.
#
#   sudo bench/fidelity_slurm/wide.sh PAIR...        # e.g. wide.sh c-1s-begin c-1s-arrival-cpu
#   sudo bench/fidelity_slurm/wide.sh --list         # the pairs and their settings
#
# Writes results/PAIR-1 and results/PAIR-2 (WIDE_OUT: another directory). A 40-job pair takes
# about 20 minutes, almost all of it waiting. Two private clusters may run pairs at once, each with
# its own GPUPLAN_SLURM_DIR and GPUPLAN_SLURM_PORT_BASE (the recorded set ran as two such lists,
# README). Tears down the work dir's cluster at the end (also on failure). Needs what setup.sh needs
# and a Python with gpuplan and pyarrow (PYTHON, default python3 on PATH). Exits non-zero only if a
# step breaks, never for low agreement.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${WIDE_OUT:-$HERE/results}"
PYTHON="${PYTHON:-python3}"

# name | configuration | timings | replay.py arguments of the first replay (the trace) [| setup.sh's
# environment for the pair, KEY=VALUE ...]. The
# "light" traces (mean wait ~5 s) are for pairs whose two replays agree: at heavier load, the order
# of Slurm's two loops within a second (their sub-second phases, new at each controller start)
# decides more starts, and two replays agree less (README).
CPUS="--cpus 0:60,8:20,32:15,60:5"
QOS_D="--qos low:20,normal:65,high:15"
PAIRS="$(
    cat <<EOF
c-1s-begin|c|1s|--jobs 40 --span 150 --seed 11 --run-max 70 --submit begin
c-1s-arrival-cpu|c|1s|--jobs 40 --span 150 --seed 12 --run-max 70 --submit arrival $CPUS --mem 0:50,64000:30,256000:20
c-1s-begin-cpu-50|c|1s|--jobs 50 --span 160 --seed 13 --run-max 70 --submit begin $CPUS
c-default-begin|c|default|--jobs 40 --span 150 --seed 21 --run-max 70 --submit begin
c-default-arrival-cpu|c|default|--jobs 40 --span 150 --seed 22 --run-max 70 --submit arrival $CPUS
d-1s-begin|d|1s|--jobs 40 --span 150 --seed 31 --run-max 70 --submit begin $QOS_D
d-1s-arrival-cpu|d|1s|--jobs 40 --span 150 --seed 32 --run-max 70 --submit arrival $QOS_D $CPUS
d-1s-begin-30|d|1s|--jobs 30 --span 120 --seed 33 --run-max 70 --submit begin $QOS_D
c-1s-begin-light|c|1s|--jobs 35 --span 180 --seed 16 --run-max 50 --submit begin
c-default-begin-light|c|default|--jobs 35 --span 180 --seed 16 --run-max 50 --submit begin
d-1s-begin-light|d|1s|--jobs 35 --span 180 --seed 36 --run-max 50 --submit begin $QOS_D
c-1s-requeue-default|c|1s|--jobs 40 --span 150 --seed 12 --run-max 70 --submit arrival $CPUS --mem 0:50,64000:30,256000:20|GPUPLAN_SLURM_CRED_EXPIRE=default
d-default-begin|d|default|--jobs 40 --span 150 --seed 37 --run-max 70 --submit begin $QOS_D
c-1s-reservation|c|1s|--jobs 40 --span 150 --seed 18 --run-max 70 --submit begin --reservation 4:60:120
c-1s-reservation-mid|c|1s|--jobs 40 --span 150 --seed 19 --run-max 70 --submit arrival --reservation 2:30:90
EOF
)"

if [[ "${1:-}" == --list || $# == 0 ]]; then
    echo "pairs (name | configuration | timings | replay.py arguments):"
    echo "$PAIRS"
    exit 0
fi
for name in "$@"; do
    grep -q "^$name|" <<<"$PAIRS" || { echo "unknown pair $name (wide.sh --list)" >&2; exit 1; }
done

cleanup() { "$HERE/teardown.sh" || true; }
trap cleanup EXIT
"$PYTHON" -c "import gpuplan, pyarrow"
for name in "$@"; do
    IFS='|' read -r _ config timings trace_args pair_env <<<"$(grep "^$name|" <<<"$PAIRS")"
    read -r -a trace <<<"$trace_args"
    read -r -a setup_env <<<"${pair_env:-}"
    echo "== pair $name: configuration $config, $timings timings: ${trace[*]} ${setup_env[*]} ($(date +%T))"
    env "${setup_env[@]}" "$HERE/setup.sh" --config "$config" --timings "$timings" --fresh
    "$PYTHON" "$HERE/replay.py" "${trace[@]}" --out "$OUT/$name-1"
    env "${setup_env[@]}" "$HERE/setup.sh" --config "$config" --timings "$timings" --fresh # new phases
    "$PYTHON" "$HERE/replay.py" --trace "$OUT/$name-1/trace.csv" --out "$OUT/$name-2"
    for k in 1 2; do
        "$PYTHON" "$HERE/compare.py" "$OUT/$name-$k" --repeat "$OUT/$name-$((3 - k))" >"$OUT/$name-$k/compare.txt" \
            || echo "compare.py failed on $name-$k" >&2
        tail -n 12 "$OUT/$name-$k/compare.txt"
    done
done
