#!/usr/bin/env bash
# CI smoke test of the Slurm fidelity harness: setup, a 5-job replay, compare, teardown.
# Fails (non-zero) if the harness breaks; low agreement is reported, never a failure.
# Needs root, Debian's packages (setup.sh installs them) and a Python with gpuplan installed
# (PYTHON, default python3 on PATH, e.g. an activated virtualenv). Target: under 3 minutes.
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
OUT="${SMOKE_OUT:-$GPUPLAN_SLURM_DIR/run}"
PYTHON="${PYTHON:-python3}"
T0=$(date +%s)
status=0

cleanup() { timeout 120 "$HERE/teardown.sh" --purge || status=1; }
trap cleanup EXIT

step() {
    local name="$1"
    shift
    echo "== $name ($(($(date +%s) - T0)) s)"
    if ! "$@"; then
        echo "smoke: $name FAILED" >&2
        status=1
        return 1
    fi
}

rm -rf "$OUT"
# compare.py needs gpuplan and pyarrow: PYTHON is an interpreter of the environment gpuplan is in
step prerequisites "$PYTHON" -c "import gpuplan, pyarrow" \
    && step setup timeout 900 "$HERE/setup.sh" --config "$CONFIG" --fresh \
    && step replay timeout 150 "$PYTHON" "$HERE/replay.py" --jobs 5 --span 6 --seed 5 --max-nodes 6 \
        --run-min 5 --run-max 20 --lead 4 --timeout 120 --out "$OUT" \
    && step compare timeout 120 "$PYTHON" "$HERE/compare.py" "$OUT" \
    && step "check outputs" "$PYTHON" - "$OUT" <<'EOF'
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
trap - EXIT
cleanup
echo "smoke: $([[ $status == 0 ]] && echo passed || echo FAILED) in $(($(date +%s) - T0)) s"
exit $status
