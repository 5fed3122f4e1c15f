#!/usr/bin/env bash
# Start a private, single-machine Slurm (Debian's 22.05 packages) for the fidelity harness.
#
#   sudo bench/fidelity_slurm/setup.sh [--config a|b|c|d] [--timings 1s|default] [--fresh] [--no-install]
#
# --config a  one partition "gpu", sched/backfill, priority/basic (FIFO by submit): what gpuplan's
#             Slurm model covers today (default)
# --config b  partitions "batch" (PriorityTier=1, default) and "high" (PriorityTier=10) on the same
#             nodes, priority/multifactor with fair-share between two accounts: the calibration
# --config c  the shared sample's cluster (issue 15): nodes of CPUs=64 RealMemory=512000 that jobs
#             share (cons_tres CR_Core, no OverSubscribe=EXCLUSIVE), batch/high by PriorityTier,
#             preempt/partition_prio with REQUEUE, cred_expire=10, multifactor priority with Fair Tree
#             over acct_a (sim_alice, sim_bob), acct_b (sim_carol, sim_dave) and ops (root), QoS
#             normal (Priority=0) and high (Priority=100)
# --config d  as c, but PreemptType=preempt/qos: QoS low, normal (Preempt=low) and high
#             (Preempt=low,normal), all PreemptMode=REQUEUE; jobs name their QoS (--qos)
# --timings   c and d only: 1s (default) the shared sample's 1-s loops (bf_interval=1,
#             sched_interval=1, bf_resolution=1, default_queue_depth=10000, batch_sched_delay=0);
#             default: Slurm's (30, 60, 60, 100, 3). Also GPUPLAN_SLURM_TIMINGS.
# --fresh     restart slurmctld with its state cleared (job ids go on from the database)
#
# Idempotent: run again to reuse what is running; if the Slurm configuration changed (e.g. another
# --config), slurmctld and the slurmd's are restarted. The accounts, users and QoS in the database
# are made those of the configuration (others are deleted: they would count in Fair Tree).
# Environment: GPUPLAN_SLURM_DIR (work dir,
# default /tmp/gpuplan-slurm), GPUPLAN_SLURM_NODES (8), GPUPLAN_SLURM_GPUS (8 per node),
# GPUPLAN_SLURM_PORT_BASE (16800: MariaDB +6, slurmctld +17, slurmdbd +19, node i +100+i),
# GPUPLAN_SLURM_BF_INTERVAL, GPUPLAN_SLURM_SCHED_INTERVAL, GPUPLAN_SLURM_BF_RESOLUTION (a: 1, 1, 1;
# b: 30, 1, 60; c, d: by --timings), GPUPLAN_SLURM_DEBUGFLAGS (a, b: none; c, d: Backfill,BackfillMap,Priority,
# which logs every backfill plan; empty: none), GPUPLAN_SLURM_START_SECOND (b, c, d: 29: a new
# slurmctld starts at that second of a minute; a: at once), GPUPLAN_SLURM_POPULATION (c, d: the
# accounts and users, ACCOUNT:USER,USER;ACCOUNT:USER..., default
# acct_a:sim_alice,sim_bob;acct_b:sim_carol,sim_dave), GPUPLAN_SLURM_SELECT_PARAMS (c, d: CR_Core;
# CR_Core_Memory makes memory a resource: a job without --mem then takes the node's),
# GPUPLAN_SLURM_CRED_EXPIRE (c, d: AuthInfo cred_expire, 10; "default": Slurm's 120 s, so a
# requeued job waits 121 s), GPUPLAN_SLURM_APT_TIMEOUT (300: seconds for each of apt-get update and the download),
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
TIMINGS="${GPUPLAN_SLURM_TIMINGS:-1s}"
while (($#)); do
    case "$1" in
        --config) CONFIG="${2:?--config needs a, b, c or d}"; shift 2 ;;
        --config=*) CONFIG="${1#*=}"; shift ;;
        --timings) TIMINGS="${2:?--timings needs 1s or default}"; shift 2 ;;
        --timings=*) TIMINGS="${1#*=}"; shift ;;
        --fresh) FRESH=1; shift ;;
        --no-install) INSTALL=0; shift ;;
        -h | --help) sed -n '2,40p' "$0"; exit 0 ;;
        *) die "unknown argument $1" ;;
    esac
done
[[ "$CONFIG" =~ ^[abcd]$ ]] || die "--config must be a, b, c or d, not $CONFIG"
[[ "$TIMINGS" == 1s || "$TIMINGS" == default ]] || die "--timings must be 1s or default, not $TIMINGS"
[[ "$(id -u)" == 0 ]] || die "run as root"
SHARED=0 # configurations c and d: the shared sample's cluster, jobs share nodes
[[ $CONFIG == c || $CONFIG == d ]] && SHARED=1
# Defaults: configuration a keeps the 1-s loops of its recorded runs; configuration b is the
# calibration setup (README: Slurm's bf_interval=30 and bf_resolution=60, sched_interval=1);
# c and d: the shared sample's 1-s loops, or Slurm's default timings (--timings default).
# bf_interval sched_interval bf_resolution default_queue_depth batch_sched_delay
if [[ $CONFIG == a ]]; then
    defaults=(1 1 1 "" "")
elif [[ $CONFIG == b ]]; then
    defaults=(30 1 60 "" "")
elif [[ $TIMINGS == 1s ]]; then
    defaults=(1 1 1 10000 0)
else
    defaults=(30 60 60 100 3)
fi
((SHARED)) || TIMINGS="" # a and b set their loops by the variables below only
BF_INTERVAL="${GPUPLAN_SLURM_BF_INTERVAL:-${defaults[0]}}"
SCHED_INTERVAL="${GPUPLAN_SLURM_SCHED_INTERVAL:-${defaults[1]}}"
BF_RESOLUTION="${GPUPLAN_SLURM_BF_RESOLUTION:-${defaults[2]}}"
SCHED_PARAMS="bf_interval=$BF_INTERVAL,sched_interval=$SCHED_INTERVAL,bf_resolution=$BF_RESOLUTION"
if ((SHARED)); then # the shared sample's SchedulerParameters, in its order
    SCHED_PARAMS="$SCHED_PARAMS,bf_continue,bf_max_job_test=10000,default_queue_depth=${defaults[3]}"
    SCHED_PARAMS="$SCHED_PARAMS,sched_min_interval=0,batch_sched_delay=${defaults[4]}"
fi
# configurations b, c and d start slurmctld at second 29 of a minute (empty: at once)
if [[ $CONFIG == a ]]; then START_SECOND="${GPUPLAN_SLURM_START_SECOND-}"; else START_SECOND="${GPUPLAN_SLURM_START_SECOND-29}"; fi
# e.g. GPUPLAN_SLURM_DEBUGFLAGS=Backfill,BackfillMap to log each backfill plan in slurmctld.log
# (c and d log them and, with Priority, each decay tick, unless it is set empty: replay.py keeps
# the plans and the ticks' times, and the map dumps in backfill-map.log.gz)
if ((SHARED)); then debug_default=Backfill,BackfillMap,Priority; else debug_default=""; fi
DEBUG_VALUE="${GPUPLAN_SLURM_DEBUGFLAGS-$debug_default}"
DEBUGFLAGS="${DEBUG_VALUE:+DebugFlags=$DEBUG_VALUE}"
SELECT_PARAMS=CR_Core
((SHARED)) && SELECT_PARAMS="${GPUPLAN_SLURM_SELECT_PARAMS:-CR_Core}"
# Who submits, in which account (users_of ACCOUNT...). a and b: gpuplan1 in team1, gpuplan2 in team2;
# c and d: the population, plus the shared sample's account ops with the user root (no jobs).
if ((SHARED)); then
    POPULATION="${GPUPLAN_SLURM_POPULATION:-acct_a:sim_alice,sim_bob;acct_b:sim_carol,sim_dave}"
else
    POPULATION="team1:gpuplan1;team2:gpuplan2"
fi
ASSOC_ACCOUNTS=() # parallel arrays: one user association per entry
ASSOC_USERS=()
IFS=';' read -r -a groups <<<"$POPULATION"
for group in "${groups[@]}"; do
    [[ "$group" == *:* ]] || die "GPUPLAN_SLURM_POPULATION: expected ACCOUNT:USER,USER;..., got $group"
    IFS=',' read -r -a members <<<"${group#*:}"
    for member in "${members[@]}"; do
        [[ "$member" =~ ^[a-z_][a-z0-9_-]*$ && "${group%%:*}" =~ ^[A-Za-z0-9_]+$ ]] \
            || die "GPUPLAN_SLURM_POPULATION: bad account or user in $group"
        ASSOC_ACCOUNTS+=("${group%%:*}")
        ASSOC_USERS+=("$member")
    done
done
LOCAL_USERS=("${ASSOC_USERS[@]}") # the local users made for them (root is not one)
if ((SHARED)); then
    ASSOC_ACCOUNTS+=(ops)
    ASSOC_USERS+=(root)
fi
# QoS: name, Preempt list (empty: none), sacctmgr settings (a and b: normal only, as Slurm makes it)
QOS_NAMES=(normal)
QOS_PREEMPT=("")
QOS_SETTINGS=("Priority=0 PreemptMode=cluster") # PreemptMode=cluster: the cluster's PreemptMode
if [[ $CONFIG == c ]]; then
    QOS_NAMES+=(high)
    QOS_PREEMPT+=("")
    QOS_SETTINGS+=("Priority=100 PreemptMode=cluster")
elif [[ $CONFIG == d ]]; then
    QOS_NAMES=(low normal high)
    QOS_PREEMPT=("" low low,normal)
    QOS_SETTINGS=("Priority=0 PreemptMode=requeue" "Priority=0 PreemptMode=requeue" "Priority=100 PreemptMode=requeue")
fi
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
for u in "${LOCAL_USERS[@]}"; do
    id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$u"
done
# teardown.sh (common.sh) cancels these users' jobs and finds their processes
printf '%s\n' "${LOCAL_USERS[@]}" >"$WORK/etc/users"

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

AUTH_INFO="socket=$MUNGE_SOCKET"
PREEMPT=""
NODE_RESOURCES="CPUs=16 RealMemory=64000"
if [[ $CONFIG == a ]]; then
    PRIORITY="PriorityType=priority/basic"
    PARTITIONS="PartitionName=gpu Nodes=$(node_range) Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE"
    ENFORCE=""
elif ((SHARED)); then
    # The shared sample's settings (issue 15), compressed time as there: hour-long decay and age
    PRIORITY="PriorityType=priority/multifactor
PriorityCalcPeriod=1
PriorityDecayHalfLife=1:00:00
PriorityMaxAge=1:00:00
PriorityWeightAge=1000
PriorityWeightPartition=1000
PriorityWeightJobSize=0
PriorityWeightFairshare=10000
PriorityWeightQOS=10000"
    # nodes shared by jobs (no OverSubscribe=EXCLUSIVE); preempted jobs are requeued, eligible
    # again cred_expire + 1 s later
    PARTITIONS="PartitionName=batch Nodes=$(node_range) Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE
PartitionName=high Nodes=$(node_range) Default=NO MaxTime=INFINITE State=UP PriorityTier=10 PriorityJobFactor=10"
    if [[ $CONFIG == c ]]; then PREEMPT_TYPE=preempt/partition_prio; else PREEMPT_TYPE=preempt/qos; fi
    PREEMPT="PreemptType=$PREEMPT_TYPE
PreemptMode=REQUEUE"
    # GPUPLAN_SLURM_CRED_EXPIRE: 10 (the shared sample's), or "default" (Slurm's 120 s)
    CRED_EXPIRE="${GPUPLAN_SLURM_CRED_EXPIRE:-10}"
    [[ $CRED_EXPIRE == default ]] || AUTH_INFO="$AUTH_INFO,cred_expire=$CRED_EXPIRE"
    ENFORCE="AccountingStorageEnforce=associations,limits,qos"
    NODE_RESOURCES="CPUs=64 RealMemory=512000"
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
AuthInfo=$AUTH_INFO
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
SelectTypeParameters=$SELECT_PARAMS
SchedulerType=sched/backfill
SchedulerParameters=$SCHED_PARAMS
$PRIORITY
$PREEMPT
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
$ENFORCE
JobCompType=jobcomp/none
EOF
    for i in $(seq 1 "$NODES"); do
        echo "NodeName=$(node_name "$i") NodeAddr=127.0.0.1 NodeHostname=$HOST_SHORT Port=$((NODE_PORT_BASE + i)) $NODE_RESOURCES Gres=gpu:$GPUS State=UNKNOWN"
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
echo "$TIMINGS" >"$WORK/etc/timings"

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
mgr() { timeout 20 sacctmgr -i "$@" >/dev/null; }
# QoS first (user associations name them): the configuration's, others deleted. sacctmgr 22.05 takes
# a QoS whose Preempt list was ever emptied (Preempt=, Preempt-=) for one that preempts: another QoS
# may then not preempt it ("QOS Preemption loop detected"). So a list is only ever set, never
# emptied: a QoS that should preempt nothing but does is made anew (normal, which cannot go, is
# emptied: no configuration has a QoS preempt it without giving it a list of its own first).
for k in "${!QOS_NAMES[@]}"; do
    q="${QOS_NAMES[$k]}" want="${QOS_PREEMPT[$k]}"
    have="$(timeout 20 sacctmgr -n -P show qos "$q" format=preempt 2>/dev/null)" || have=""
    if [[ -n "$have" && -z "$want" && "$q" != normal ]]; then
        mgr delete qos where name="$q"
        have=""
    fi
    sacct_has show qos "$q" format=name || mgr add qos "$q"
    # shellcheck disable=SC2086 # the settings are words
    mgr modify qos where name="$q" set ${QOS_SETTINGS[$k]}
    if [[ -n "$want" && "$have" != "$want" ]]; then
        mgr modify qos where name="$q" set Preempt="$want"
    elif [[ -n "$have" && -z "$want" ]]; then
        IFS=',' read -r -a emptied <<<"$have"
        for other in "${emptied[@]}"; do mgr modify qos where name="$q" set Preempt-="$other"; done
    fi
done
QOS_LIST="$(IFS=,; echo "${QOS_NAMES[*]}")"
for q in $(timeout 20 sacctmgr -n -P show qos format=name 2>/dev/null); do
    [[ " ${QOS_NAMES[*]} " == *" $q "* ]] || mgr delete qos where name="$q"
done
for k in "${!ASSOC_USERS[@]}"; do
    account="${ASSOC_ACCOUNTS[$k]}" user="${ASSOC_USERS[$k]}"
    sacct_has show account "$account" format=account \
        || mgr add account "$account" cluster="$CLUSTER" fairshare=1
    sacct_has show assoc where user="$user" account="$account" format=user \
        || mgr add user "$user" account="$account" cluster="$CLUSTER" $([[ $user == root ]] || echo defaultaccount="$account")
    if ((SHARED)); then # AccountingStorageEnforce=qos: the association must allow a job's QoS
        mgr modify user where name="$user" account="$account" cluster="$CLUSTER" set qos="$QOS_LIST" defaultqos=normal
    fi
done
# Associations of other configurations (left in the database of this work dir) would count in Fair
# Tree: every user association not listed above goes, then every account left without one; the
# cluster's own root account and its root user stay.
wanted=" "
for k in "${!ASSOC_USERS[@]}"; do wanted+="${ASSOC_ACCOUNTS[$k]}/${ASSOC_USERS[$k]} "; done
while IFS='|' read -r account user; do
    [[ -z "$user" || "$account" == root || "$wanted" == *" $account/$user "* ]] && continue
    log "removing the association $account/$user of another configuration"
    mgr delete user where name="$user" account="$account" cluster="$CLUSTER" || true
done < <(timeout 20 sacctmgr -n -P show assoc where cluster="$CLUSTER" format=account,user 2>/dev/null)
for account in $(timeout 20 sacctmgr -n -P show account format=account 2>/dev/null); do
    [[ "$account" == root || " ${ASSOC_ACCOUNTS[*]} " == *" $account "* ]] && continue
    log "removing the account $account of another configuration"
    mgr delete account where name="$account" || true
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
    log "slurmctld started (configuration $CONFIG${TIMINGS:+, $TIMINGS timings})"
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
log "ready: configuration $CONFIG${TIMINGS:+ ($TIMINGS timings)}, $NODES nodes x $GPUS GPUs idle in $(($(date +%s) - T0)) s; export SLURM_CONF=$SLURM_CONF"
