# Shared settings of setup.sh, teardown.sh and smoke.sh (sourced, not run).
#
# Everything lives under one work dir, so a run never touches the machine's own /etc/slurm,
# /etc/munge or MariaDB. Every daemon is started with GPUPLAN_SLURM_WORK=<work dir> in its
# environment (and Slurm passes it on to slurmstepd and the jobs), so teardown.sh can find exactly
# the processes this harness started, by their ids.

WORK="${GPUPLAN_SLURM_DIR:-/tmp/gpuplan-slurm}"
NODES="${GPUPLAN_SLURM_NODES:-8}"
GPUS="${GPUPLAN_SLURM_GPUS:-8}"
PORT_BASE="${GPUPLAN_SLURM_PORT_BASE:-16800}"
CTLD_PORT=$((PORT_BASE + 17))
DBD_PORT=$((PORT_BASE + 19))
DB_PORT=$((PORT_BASE + 6))
NODE_PORT_BASE=$((PORT_BASE + 100)) # node i (1-based) listens on NODE_PORT_BASE + i
CLUSTER=gpuplan
HOST_SHORT="$(hostname -s)"
MUNGE_SOCKET="$WORK/munge/munge.socket.2"
DB_RUN="$WORK/mariadb-run"
DB_SOCKET="$DB_RUN/mariadb.sock"
DB_NAME=gpuplan_acct
DB_USER=slurm
DB_PASS=gpuplan-local
# Local users who submit jobs: configurations a and b's, and those setup.sh made for this work dir
# (etc/users: c and d's population). teardown.sh cancels their jobs and stops their processes.
USERS=(gpuplan1 gpuplan2)
if [[ -s "$WORK/etc/users" ]]; then
    while read -r user; do
        [[ -n "$user" && " ${USERS[*]} " != *" $user "* ]] && USERS+=("$user")
    done <"$WORK/etc/users"
fi

export SLURM_CONF="$WORK/etc/slurm.conf"
export GPUPLAN_SLURM_WORK="$WORK"

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

node_name() { printf 'gpu%02d' "$1"; }
node_range() { printf 'gpu[01-%02d]' "$NODES"; }

# pid_alive FILE NAME: the pid in FILE is a live process whose command is NAME.
pid_alive() {
    local pid
    [[ -s "$1" ]] || return 1
    pid="$(cat "$1" 2>/dev/null)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$2" ]]
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.5 s until it succeeds.
wait_for() {
    local limit="$1" what="$2" deadline
    shift 2
    deadline=$(($(date +%s) + limit))
    until "$@" >/dev/null 2>&1; do
        (($(date +%s) < deadline)) || { log "timed out after ${limit}s waiting for $what"; return 1; }
        sleep 0.5
    done
}

# Pids of every process started by this harness for this work dir (daemons, slurmstepd, jobs).
harness_pids() {
    local env_file pid owner
    # one grep over every process's environment (NUL-separated); unreadable ones are skipped
    for env_file in $(grep -l -s -z -x -F "GPUPLAN_SLURM_WORK=$WORK" /proc/[0-9]*/environ 2>/dev/null); do
        pid="${env_file#/proc/}"
        pid="${pid%/environ}"
        [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
        # daemons and jobs only, never the shells of this harness itself
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
            munged | mariadbd | slurmdbd | slurmctld | slurmd | slurmstepd) echo "$pid" ;;
            *) # a job's own processes: run as one of the harness's users
                owner="$(stat -c %U "/proc/$pid" 2>/dev/null)"
                [[ " ${USERS[*]} " == *" $owner "* ]] && echo "$pid" ;;
        esac
    done
    return 0
}
