#!/usr/bin/env bash
# Stop everything setup.sh started for this work dir: jobs, slurmd's, slurmctld, slurmdbd, MariaDB,
# munged. Processes are found by their pid files and by GPUPLAN_SLURM_WORK=<work dir> in their
# environment, and stopped by id (TERM, then KILL after a bounded wait).
#
#   bench/fidelity_slurm/teardown.sh [--purge]    # --purge also deletes the work dir
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"
PURGE=0
[[ "${1:-}" == --purge ]] && PURGE=1

stop() { # stop SECONDS PID...: TERM, wait up to SECONDS, then KILL
    local limit="$1" pid deadline
    shift
    (($#)) || return 0
    kill "$@" 2>/dev/null
    deadline=$(($(date +%s) + limit))
    for pid in "$@"; do
        while kill -0 "$pid" 2>/dev/null && (($(date +%s) < deadline)); do sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            log "killing $pid ($(cat /proc/"$pid"/comm 2>/dev/null))"
            kill -9 "$pid" 2>/dev/null
        fi
    done
}
pids_of() { # pids_of NAME PIDFILE...: live pids from the files whose command is NAME
    local name="$1" f
    shift
    for f in "$@"; do pid_alive "$f" "$name" && cat "$f"; done
}

if [[ -d "$WORK" ]]; then
    # Jobs first, so slurmstepd's end cleanly.
    if pid_alive "$WORK/run/slurmctld.pid" slurmctld; then
        for u in "${USERS[@]}"; do # scancel -u takes one user (a comma list is "Invalid user name")
            timeout 10 scancel --full -u "$u" 2>/dev/null
        done
        for _ in $(seq 1 20); do
            [[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]] && break
            sleep 0.5
        done
    fi
    # shellcheck disable=SC2046
    stop 20 $(pids_of slurmd "$WORK"/run/slurmd-*.pid)
    stop 20 $(pids_of slurmctld "$WORK/run/slurmctld.pid")
    stop 20 $(pids_of slurmdbd "$WORK/run/slurmdbd.pid")
    stop 60 $(pids_of mariadbd "$DB_RUN/mariadb.pid")
    stop 10 $(pids_of munged "$WORK/run/munged.pid")
fi
# Whatever is left of this harness (slurmstepd's, job processes, a daemon whose pid file went).
leftover=$(harness_pids)
if [[ -n "$leftover" ]]; then
    log "stopping leftovers: $(for p in $leftover; do printf '%s(%s) ' "$p" "$(cat /proc/"$p"/comm 2>/dev/null)"; done)"
    # shellcheck disable=SC2086
    stop 10 $leftover
fi
rm -f "$WORK"/run/*.pid "$DB_RUN"/mariadb.pid 2>/dev/null
if ((PURGE)); then
    rm -rf "$WORK"
    log "removed $WORK"
fi
left=$(harness_pids)
[[ -z "$left" ]] || { log "still running: $left"; exit 1; }
log "stopped"
