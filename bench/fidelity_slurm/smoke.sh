#!/usr/bin/env bash
# CI smoke test of the Slurm fidelity harness: setup, a 5-job replay, compare, teardown.
# Fails (non-zero) if the harness breaks; low agreement is reported, never a failure.
# Needs root, Debian's packages (setup.sh installs them) and a Python with gpuplan installed
# (PYTHON, default python3 on PATH, e.g. an activated virtualenv). Target: under 3 minutes.
# Exit status: 0 passed, or skipped because setup.sh could not install the packages (no network:
# nothing is known about the harness then; a "SKIPPED: ..." line says so); 1 failed.
# On TERM/INT (e.g. CI's outer timeout) it stops the running step, tears down and exits 1.
#
#   bench/fidelity_slurm/smoke.sh [--config a|b]
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONFIG=a
[[ "${1:-}" == --config ]] && CONFIG="${2:?}"
[[ "${1:-}" == --config=* ]] && CONFIG="${1#*=}"
# A work dir and ports of its own, so a smoke run never meets a long replay's cluster.
export GPUPLAN_SLURM_DIR="${GPUPLAN_SLURM_DIR:-/tmp/gpuplan-slurm-smoke}"
export GPUPLAN_SLURM_PORT_BASE="${GPUPLAN_SLURM_PORT_BASE:-17800}"
# apt's update and download get 60 s each: an unreachable mirror is then a skip after ~2 minutes,
# well inside CI's 300-s limit, rather than a kill by it.
export GPUPLAN_SLURM_APT_TIMEOUT="${GPUPLAN_SLURM_APT_TIMEOUT:-60}"
OUT="${SMOKE_OUT:-$GPUPLAN_SLURM_DIR/run}"
PYTHON="${PYTHON:-python3}"
T0=$(date +%s)
status=0   # 1 once anything failed
skipped="" # why the packages could not be installed, if so
step_pid="" # the running step, for the traps

cleanup() {
    if [[ -n $step_pid ]]; then
        # Interrupted inside a step. A step under `timeout` runs in a process group of its own, out
        # of reach of a signal to ours: stop it (timeout passes TERM on to its group) before the
        # teardown, so that nothing it starts outlives the teardown.
        kill "$step_pid" 2>/dev/null
        wait "$step_pid" 2>/dev/null
        step_pid=""
    fi
    timeout 120 "$HERE/teardown.sh" --purge || status=1
}
# shellcheck disable=SC2317 # called by the traps below
interrupted() {
    echo "smoke: FAILED: interrupted by SIG$1 after $(($(date +%s) - T0)) s" >&2
    exit 1 # the EXIT trap stops the step and tears down
}
trap cleanup EXIT
trap 'interrupted TERM' TERM
trap 'interrupted INT' INT

# run_step NAME COMMAND...: run COMMAND, its exit status in step_rc. In the background, waited for:
# bash runs a trap only after a foreground command has ended, but interrupts `wait` at once.
run_step() {
    echo "== $1 ($(($(date +%s) - T0)) s)"
    shift
    "$@" &
    step_pid=$!
    wait "$step_pid"
    step_rc=$?
    step_pid=""
}
# step NAME COMMAND...: run_step; a non-zero exit status is a failure of the harness.
step() {
    run_step "$@"
    ((step_rc == 0)) && return 0
    echo "smoke: $1 FAILED (exit status $step_rc)" >&2
    status=1
    return 1
}
# setup.sh exits 3 when it cannot install the packages (no network, ...): a skip, for nothing is
# known about the harness then; any other failure of it fails.
setup() {
    run_step setup timeout 900 "$HERE/setup.sh" --config "$CONFIG" --fresh
    case $step_rc in
        0) return 0 ;;
        3)
            skipped="could not install slurm packages ($(cat "$GPUPLAN_SLURM_DIR/log/packages.failed" 2>/dev/null))"
            ;;
        *)
            echo "smoke: setup FAILED (exit status $step_rc)" >&2
            status=1
            ;;
    esac
    return 1
}
# Every trace job ran and was read back, and every model simulated all of them.
CHECK_OUTPUTS="$(
    cat <<'EOF'
import csv, json, sys
from pathlib import Path
out = Path(sys.argv[1])
real = list(csv.DictReader((out / "real.csv").open()))
report = json.loads((out / "compare.json").read_text())
assert len(real) == 5, f"real.csv has {len(real)} jobs, expected 5"
assert all(r["state"] == "COMPLETED" and r["start_s"] != "" for r in real), real
models = report["start_diff_real_minus_sim"]
assert report["jobs"] == 5 and models["ref"]["n"] == 5, report
if report.get("gpuplan_error"):  # gpuplan's own failure is reported, not the harness's
    print("smoke: WARNING gpuplan failed:", report["gpuplan_error"].splitlines()[0])
else:
    assert models["easy"]["n"] == 5 and models["slurm"]["n"] == 5, report
print("smoke: outputs complete; within tolerance:",
      ", ".join(f"{name} {m['within_tolerance']:.0%}" for name, m in models.items()))
EOF
)"

rm -rf "$OUT"
# compare.py needs gpuplan and pyarrow: PYTHON is an interpreter of the environment gpuplan is in
step prerequisites "$PYTHON" -c "import gpuplan, pyarrow" \
    && setup \
    && step replay timeout 150 "$PYTHON" "$HERE/replay.py" --jobs 5 --span 6 --seed 5 --max-nodes 6 \
        --run-min 5 --run-max 20 --lead 4 --timeout 120 --out "$OUT" \
    && step compare timeout 120 "$PYTHON" "$HERE/compare.py" "$OUT" \
    && step "check outputs" "$PYTHON" -c "$CHECK_OUTPUTS" "$OUT"
trap - EXIT
cleanup
if ((status != 0)); then
    result=FAILED
elif [[ -n $skipped ]]; then
    result="SKIPPED: $skipped"
else
    result=passed
fi
echo "smoke: $result in $(($(date +%s) - T0)) s"
exit $status
