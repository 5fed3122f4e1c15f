#!/usr/bin/env bash
# Start a private, single-machine Slurm (Debian's 22.05 packages) for the fidelity harness.
#
#   sudo bench/fidelity_slurm/setup.sh [--config a|b] [--fresh] [--no-install]
#
# --config a  one partition "gpu", sched/backfill, priority/basic (FIFO by submit): what gpuplan's
#             Slurm model covers today (default)
# --config b  partitions "batch" (PriorityTier=1, default) and "high" (PriorityTier=10) on the same
#             nodes, priority/multifactor with fair-share between two accounts: the calibration
# --fresh     restart slurmctld with its state cleared (job ids go on from the database)
#
# Idempotent: run again to reuse what is running; if the Slurm configuration changed (e.g. another
# --config), slurmctld and the slurmd's are restarted. Environment: GPUPLAN_SLURM_DIR (work dir,
# default /tmp/gpuplan-slurm), GPUPLAN_SLURM_NODES (8), GPUPLAN_SLURM_GPUS (8 per node),
# GPUPLAN_SLURM_PORT_BASE (16800: MariaDB +6, slurmctld +17, slurmdbd +19, node i +100+i),
# GPUPLAN_SLURM_BF_INTERVAL, GPUPLAN_SLURM_SCHED_INTERVAL, GPUPLAN_SLURM_BF_RESOLUTION (a: 1, 1, 1;
# b: 30, 1, 60), GPUPLAN_SLURM_DEBUGFLAGS (none; Backfill,BackfillMap logs every backfill plan),
# GPUPLAN_SLURM_START_SECOND (b: 29: a new slurmctld starts at that second of a minute; a: at once),
# GPUPLAN_SLURM_APT_TIMEOUT (300: seconds for each of apt-get update and the download),
# GPUPLAN_SLURM_APT_GET (apt-get: the command used instead, e.g. to test the failure below).
# Exit status: 0 ready; 3 the packages could not be installed (no network, mirror unreachable, ...;
# the reason is in <work dir>/log/packages.failed); 1 anything else.
# Stop everything with teardown.sh. Everything listens on 127.0.0.1 only.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"

CONFIG=a
FRESH=0
INSTALL=1
while (($#)); do
    case "$1" in
        --config) CONFIG="${2:?--config needs a or b}"; shift 2 ;;
        --config=*) CONFIG="${1#*=}"; shift ;;
        --fresh) FRESH=1; shift ;;
        --no-install) INSTALL=0; shift ;;
        -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
        *) die "unknown argument $1" ;;
    esac
done
[[ "$CONFIG" == a || "$CONFIG" == b ]] || die "--config must be a or b, not $CONFIG"
[[ "$(id -u)" == 0 ]] || die "run as root"
# Defaults: configuration a keeps the 1-s loops of its recorded runs; configuration b is the
# calibration setup (README: Slurm's bf_interval=30 and bf_resolution=60, sched_interval=1).
if [[ $CONFIG == a ]]; then defaults=(1 1 1); else defaults=(30 1 60); fi
BF_INTERVAL="${GPUPLAN_SLURM_BF_INTERVAL:-${defaults[0]}}"
SCHED_INTERVAL="${GPUPLAN_SLURM_SCHED_INTERVAL:-${defaults[1]}}"
BF_RESOLUTION="${GPUPLAN_SLURM_BF_RESOLUTION:-${defaults[2]}}"
# configuration b starts slurmctld at second 29 of a minute (empty: at once)
if [[ $CONFIG == a ]]; then START_SECOND="${GPUPLAN_SLURM_START_SECOND-}"; else START_SECOND="${GPUPLAN_SLURM_START_SECOND-29}"; fi
# e.g. GPUPLAN_SLURM_DEBUGFLAGS=Backfill,BackfillMap to log each backfill plan in slurmctld.log
DEBUGFLAGS="${GPUPLAN_SLURM_DEBUGFLAGS:+DebugFlags=$GPUPLAN_SLURM_DEBUGFLAGS}"
T0=$(date +%s)

# --- packages -------------------------------------------------------------------------------------
# Not being able to install them is exit status 3, not 1: it says nothing about the harness (smoke.sh
# reports it as a skip). apt's network steps are time-limited, so that answer comes in bounded time.
PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
APT_GET="${GPUPLAN_SLURM_APT_GET:-apt-get}"
APT_TIMEOUT="${GPUPLAN_SLURM_APT_TIMEOUT:-300}"
rm -f "$WORK/log/packages.failed"

# apt_run NAME SECONDS ARGS...: $APT_GET ARGS under a time limit, its output shown and kept in
# log/apt-NAME.log; on failure apt_error says why (apt's first error line, or the time-out).
apt_run() {
    local name="$1" limit="$2" rc
    shift 2
    timeout "$limit" "$APT_GET" "$@" 2>&1 | tee "$WORK/log/apt-$name.log"
    rc=${PIPESTATUS[0]}
    ((rc == 0)) && return 0
    if ((rc == 124)); then
        apt_error="timed out after $limit s"
    else
        apt_error="$(grep -m1 -E '^(E|W): ' "$WORK/log/apt-$name.log" || tail -n1 "$WORK/log/apt-$name.log")"
        apt_error="${apt_error:-exit status $rc}"
    fi
    return 1
}
packages_failed() { # packages_failed REASON: exit 3, the reason in log/packages.failed
    ((created_policy)) && rm -f "$policy"
    echo "$1" >"$WORK/log/packages.failed"
    log "ERROR: could not install slurm packages ($1)"
    exit 3
}

if ((INSTALL)); then
    missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        install -d -m 755 "$WORK" "$WORK/log"
        # Debian's maintainer scripts would start the system-wide daemons; keep them from doing so.
        policy=/usr/sbin/policy-rc.d
        created_policy=0
        if [[ ! -e $policy ]]; then
            printf '#!/bin/sh\nexit 101\n' >"$policy"
            chmod 755 "$policy"
            created_policy=1
        fi
        export DEBIAN_FRONTEND=noninteractive
        update_error=""
        if ! apt_run update "$APT_TIMEOUT" update -qq; then
            update_error="; apt-get update: $apt_error"
            log "apt-get update failed ($apt_error); trying the install anyway"
        fi
        # Download first, alone: it is the only step that needs the network, so a dead mirror ends
        # here, by apt's error or the time limit, and never cuts a dpkg run short.
        apt_run download "$APT_TIMEOUT" install -y -q --download-only --no-install-recommends "${missing[@]}" \
            || packages_failed "download: $apt_error$update_error"
        apt_run install 600 install -y -q --no-install-recommends "${missing[@]}" \
            || packages_failed "install: $apt_error"
        ((created_policy)) && rm -f "$policy"
    fi
fi
for b in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sbatch sacct sacctmgr sinfo; do
    command -v "$b" >/dev/null || die "$b not found (install ${PACKAGES[*]})"
done

# --- work dir ---------------------------------------------------------------------------------------
# Readable by all: the submitting users need slurm.conf and the munge socket.
install -d -m 755 "$WORK" "$WORK/etc" "$WORK/munge" "$WORK/run" "$WORK/log" "$WORK/spool" "$WORK/dev"
install -d -m 700 "$WORK/state" "$WORK/munge/lib"
install -d -m 1777 "$WORK/jobs"
for i in $(seq 0 $((GPUS - 1))); do
    # Fake GPUs: a gres/gpu without File= is dropped and the node drains, so each GPU is a
    # character device (the same major/minor as /dev/null).
    [[ -c "$WORK/dev/gpu$i" ]] || mknod -m 666 "$WORK/dev/gpu$i" c 1 3
done
for u in "${USERS[@]}"; do
    id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$u"
done

# --- munge --------------------------------------------------------------------------------------------
if ! pid_alive "$WORK/run/munged.pid" munged; then
    [[ -s "$WORK/munge/munge.key" ]] || mungekey --create --keyfile="$WORK/munge/munge.key"
    chmod 600 "$WORK/munge/munge.key"
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    munged --socket="$MUNGE_SOCKET" --key-file="$WORK/munge/munge.key" --pid-file="$WORK/run/munged.pid" \
        --log-file="$WORK/log/munged.log" --seed-file="$WORK/munge/lib/munged.seed" --force \
        </dev/null >>"$WORK/log/munged.out" 2>&1
    wait_for 20 munged pid_alive "$WORK/run/munged.pid" munged || die "munged did not start: $WORK/log/munged.log"
    log "munged started"
fi
wait_for 10 "the munge socket" bash -c "munge -n -S '$MUNGE_SOCKET' | unmunge -S '$MUNGE_SOCKET'" \
    || die "munge does not answer on $MUNGE_SOCKET"

# --- MariaDB (accounting storage for sacct, fair-share and QoS) ----------------------------------
db() { mariadb --no-defaults --socket="$DB_SOCKET" -u root "$@"; }
if ! pid_alive "$DB_RUN/mariadb.pid" mariadbd; then
    if [[ ! -d "$WORK/mariadb/mysql" ]]; then
        install -d -m 750 -o mysql -g mysql "$WORK/mariadb"
        mariadb-install-db --no-defaults --datadir="$WORK/mariadb" --user=mysql --skip-test-db \
            --auth-root-authentication-method=socket >"$WORK/log/mariadb-install.log" 2>&1 \
            || die "mariadb-install-db failed: $WORK/log/mariadb-install.log"
    fi
    install -d -m 755 -o mysql -g mysql "$DB_RUN" # mariadbd runs as mysql: its socket, pid and log
    setsid mariadbd --no-defaults --user=mysql --datadir="$WORK/mariadb" --socket="$DB_SOCKET" \
        --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$DB_RUN/mariadb.pid" \
        --log-error="$DB_RUN/mariadb.log" --innodb-buffer-pool-size=128M --innodb-log-file-size=64M \
        --innodb-lock-wait-timeout=900 </dev/null >>"$WORK/log/mariadb.out" 2>&1 &
    wait_for 60 MariaDB db -e "select 1" || die "MariaDB did not start: $DB_RUN/mariadb.log"
    log "MariaDB started"
fi
db -e "CREATE DATABASE IF NOT EXISTS $DB_NAME;
       CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
       GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';"

# --- configuration --------------------------------------------------------------------------------
cat >"$WORK/etc/slurmdbd.conf.new" <<EOF
# slurmdbd for the gpuplan fidelity harness (generated by setup.sh)
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=$HOST_SHORT
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$WORK/log/slurmdbd.log
PidFile=$WORK/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF

if [[ $CONFIG == a ]]; then
    PRIORITY="PriorityType=priority/basic"
    PARTITIONS="PartitionName=gpu Nodes=$(node_range) Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE"
    ENFORCE=""
else
    # Compressed time: usage decays with a 10 min half-life, recomputed every minute.
    PRIORITY="PriorityType=priority/multifactor
PriorityDecayHalfLife=0-00:10:00
PriorityCalcPeriod=1
PriorityFavorSmall=NO
PriorityMaxAge=0-00:10:00
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=0
PriorityWeightPartition=1000
PriorityWeightQOS=0"
    PARTITIONS="PartitionName=batch Nodes=$(node_range) Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE PriorityTier=1 PriorityJobFactor=1
PartitionName=high Nodes=$(node_range) Default=NO MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE PriorityTier=10 PriorityJobFactor=10"
    ENFORCE="AccountingStorageEnforce=associations"
fi

{
    cat <<EOF
# Private Slurm for the gpuplan fidelity harness (generated by setup.sh, configuration $CONFIG)
ClusterName=$CLUSTER
SlurmctldHost=$HOST_SHORT(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool/%n
SlurmctldPidFile=$WORK/run/slurmctld.pid
SlurmdPidFile=$WORK/run/slurmd-%n.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
$DEBUGFLAGS
# The scheduling log records every main-scheduler pass ("Running job scheduler for full queue" on
# the periodic pass, "... for default depth" on an event): replay.py reads its phase from it.
SlurmSchedLogFile=$WORK/log/sched.log
SlurmSchedLogLevel=1
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
SlurmdTimeout=300
InactiveLimit=0
KillWait=2
MinJobAge=300
MessageTimeout=10
GresTypes=gpu
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=$BF_INTERVAL,sched_interval=$SCHED_INTERVAL,bf_resolution=$BF_RESOLUTION
$PRIORITY
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
$ENFORCE
JobCompType=jobcomp/none
EOF
    for i in $(seq 1 "$NODES"); do
        echo "NodeName=$(node_name "$i") NodeAddr=127.0.0.1 NodeHostname=$HOST_SHORT Port=$((NODE_PORT_BASE + i)) CPUs=16 RealMemory=64000 Gres=gpu:$GPUS State=UNKNOWN"
    done
    echo "$PARTITIONS"
} >"$WORK/etc/slurm.conf.new"
echo "NodeName=$(node_range) Name=gpu File=$WORK/dev/gpu[0-$((GPUS - 1))]" >"$WORK/etc/gres.conf.new"

changed=0
for f in slurm.conf gres.conf slurmdbd.conf; do
    if ! cmp -s "$WORK/etc/$f.new" "$WORK/etc/$f"; then
        mv "$WORK/etc/$f.new" "$WORK/etc/$f"
        changed=1
    else
        rm -f "$WORK/etc/$f.new"
    fi
done
chmod 644 "$WORK/etc/slurm.conf" "$WORK/etc/gres.conf"
chmod 600 "$WORK/etc/slurmdbd.conf" # slurmdbd refuses a readable one
echo "$CONFIG" >"$WORK/etc/config"

stop_pidfile() { # stop_pidfile FILE NAME
    local pid
    if pid_alive "$1" "$2"; then
        pid="$(cat "$1")"
        kill "$pid" || true
        wait_for 30 "$2 to stop" bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" || true
    fi
    rm -f "$1"
}
if ((changed || FRESH)); then
    # all slurmd's at once (each takes a second or two to stop), then the controller
    stoppers=()
    for i in $(seq 1 "$NODES"); do
        stop_pidfile "$WORK/run/slurmd-$(node_name "$i").pid" slurmd &
        stoppers+=($!)
    done
    wait "${stoppers[@]}" # only these: a bare wait would also wait for mariadbd, a child of this shell
    stop_pidfile "$WORK/run/slurmctld.pid" slurmctld
fi
if ((changed)); then stop_pidfile "$WORK/run/slurmdbd.pid" slurmdbd; fi

# --- slurmdbd and the accounts ----------------------------------------------------------------------
if ! pid_alive "$WORK/run/slurmdbd.pid" slurmdbd; then
    slurmdbd </dev/null >>"$WORK/log/slurmdbd.out" 2>&1 || die "slurmdbd failed: $WORK/log/slurmdbd.log"
    log "slurmdbd started"
fi
wait_for 60 slurmdbd timeout 10 sacctmgr -n show cluster || die "slurmdbd does not answer: $WORK/log/slurmdbd.log"
sacct_has() { [[ -n "$(timeout 20 sacctmgr -n -P "$@" 2>/dev/null)" ]]; }
sacct_has show cluster "$CLUSTER" format=cluster || timeout 20 sacctmgr -i add cluster "$CLUSTER" >/dev/null
for k in "${!USERS[@]}"; do
    account="${ACCOUNTS[$k]}" user="${USERS[$k]}"
    sacct_has show account "$account" format=account \
        || timeout 20 sacctmgr -i add account "$account" cluster="$CLUSTER" fairshare=1 >/dev/null
    sacct_has show assoc where user="$user" account="$account" format=user \
        || timeout 20 sacctmgr -i add user "$user" account="$account" defaultaccount="$account" cluster="$CLUSTER" >/dev/null
done

# --- slurmctld and the nodes -------------------------------------------------------------------------
if ! pid_alive "$WORK/run/slurmctld.pid" slurmctld; then
    flags=()
    ((FRESH)) && flags+=(-c) && log "slurmctld state cleared (--fresh)"
    if [[ -n "$START_SECOND" ]]; then
        # The controller's periodic threads (fair-share decay, backfill) count from its start:
        # starting it at a fixed second of the minute puts every replay's loops at the same phase
        # relative to the minute-aligned replay start (README: the calibration setup).
        now_s=$(date +%s)
        wait_s=$(((START_SECOND - now_s % 60 + 60) % 60))
        log "starting slurmctld at second $START_SECOND of the minute (in ${wait_s} s)"
        sleep "$wait_s"
    fi
    slurmctld "${flags[@]}" </dev/null >>"$WORK/log/slurmctld.out" 2>&1 || die "slurmctld failed: $WORK/log/slurmctld.log"
    wait_for 30 slurmctld timeout 5 scontrol ping || die "slurmctld does not answer: $WORK/log/slurmctld.log"
    log "slurmctld started (configuration $CONFIG)"
fi
for i in $(seq 1 "$NODES"); do
    n="$(node_name "$i")"
    if ! pid_alive "$WORK/run/slurmd-$n.pid" slurmd; then
        install -d -m 755 "$WORK/spool/$n"
        slurmd -N "$n" </dev/null >>"$WORK/log/slurmd-$n.out" 2>&1 || die "slurmd $n failed: $WORK/log/slurmd-$n.log"
    fi
done

all_idle() {
    local out
    out="$(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u)" || return 1
    [[ "$(grep -c . <<<"$out")" == "$NODES" ]] && ! grep -qv ' idle$' <<<"$out"
}
if ! wait_for 90 "all $NODES nodes idle" all_idle; then
    sinfo -N -o '%N %t %E' >&2 || true
    die "nodes not idle; see $WORK/log/slurmd-*.log and $WORK/log/slurmctld.log"
fi
log "ready: configuration $CONFIG, $NODES nodes x $GPUS GPUs idle in $(($(date +%s) - T0)) s; export SLURM_CONF=$SLURM_CONF"
