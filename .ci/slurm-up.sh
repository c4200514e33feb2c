#!/usr/bin/env bash
# Bring up a single-node Slurm cluster on this host for hourly's Slurm tests.
#
# Idempotent: installs Debian's slurm-wlm and munge when missing, makes the munge key once,
# writes a slurm.conf naming this host (hostname -s), starts munged, slurmctld and slurmd in
# the background when they are not running, and waits until sinfo shows the node idle (or
# mixed/allocated: jobs of an earlier run may still be there). Prints one line at the end.
#
# The node offers SLURM_CPUS CPUs (default 4) whatever the machine has: the test jobs are short
# and mostly wait on builds, so overcommit is fine (OverSubscribe on the partition as well).
#
# Environment knobs (all optional):
#   SLURM_CPUS         CPUs the node offers              (default 4)
#   SLURM_STATE_DIR    state, spool and log directory    (default /var/spool/hourly-slurm)
#   SLURM_PARTITION    the partition's name              (default debug)
#   SLURM_WAIT_S       seconds to wait for the node      (default 60)
set -uo pipefail

SLURM_CPUS=${SLURM_CPUS:-4}
STATE=${SLURM_STATE_DIR:-/var/spool/hourly-slurm}
PARTITION=${SLURM_PARTITION:-debug}
SLURM_WAIT_S=${SLURM_WAIT_S:-60}
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf

CI_NAME=slurm-up
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- 1. packages -------------------------------------------------------------------------
missing=()
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
command -v munged >/dev/null 2>&1 || missing+=(munge)
apt_install " (slurm-wlm's parts)" "${missing[@]}"

# --- 2. munge ----------------------------------------------------------------------------
munge_up() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
if munge_up; then
    say "munged already answering"
else
    $SUDO mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
    if [ ! -s /etc/munge/munge.key ]; then
        say "making /etc/munge/munge.key"
        $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none \
            || die "cannot write /etc/munge/munge.key"
    fi
    owner=root
    id munge >/dev/null 2>&1 && owner=munge
    $SUDO chown -R "$owner:" /etc/munge /var/lib/munge /var/log/munge /run/munge
    $SUDO chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    $SUDO chmod 0755 /run/munge
    $SUDO chmod 0400 /etc/munge/munge.key
    if [ "$owner" = munge ]; then
        if [ -z "$SUDO" ]; then
            runuser -u munge -- munged || die "munged did not start"
        else
            sudo -n -u munge munged || die "munged did not start"
        fi
    else
        $SUDO munged --force || die "munged did not start"
    fi
    for _ in $(seq 40); do munge_up && break; sleep 0.25; done
    munge_up || die "munged started but does not answer (see /var/log/munge/munged.log)"
    say "munged up"
fi

# --- 3. slurm.conf -----------------------------------------------------------------------
HOST=$(hostname -s)
$SUDO mkdir -p "$CONF_DIR" "$STATE/ctld" "$STATE/d" "$STATE/log"
want=$(cat <<CONFEOF
# Written by hourly's .ci/slurm-up.sh: one node, this host, for tests.
ClusterName=hourly
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/backfill
# test jobs start as soon as they are submitted (batch jobs may otherwise wait up to 3 s)
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# the node offers the CPUs named below whatever the machine has (overcommit, for tests)
SlurmdParameters=config_overrides
MpiDefault=none
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=3600
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$HOST CPUs=$SLURM_CPUS RealMemory=2000 State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONFEOF
)
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
    say "writing $CONF for node $HOST ($SLURM_CPUS CPUs, partition $PARTITION)"
    echo "$want" | $SUDO tee "$CONF" >/dev/null
    conf_changed=1
else
    conf_changed=0
fi

# --- 4. daemons --------------------------------------------------------------------------
running() { pgrep -x "$1" >/dev/null 2>&1; }
ctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q "is UP"; }

stop_daemon() {  # $1 = name; only the daemon whose pid file this script's configuration names
    local pidfile=$STATE/$1.pid pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 0
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    $SUDO kill "$pid"
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
    die "$1 (pid $pid) did not stop"
}
if [ "$conf_changed" = 1 ] && { running slurmctld || running slurmd; }; then
    say "configuration changed: restarting slurmd and slurmctld"
    stop_daemon slurmd
    stop_daemon slurmctld
fi
if ! running slurmctld; then
    say "starting slurmctld; log: $STATE/log/slurmctld.log"
    $SUDO slurmctld || die "slurmctld did not start (see $STATE/log/slurmctld.log)"
fi
for _ in $(seq $((SLURM_WAIT_S * 2))); do ctld_up && break; sleep 0.5; done
ctld_up || { tail -n 5 "$STATE/log/slurmctld.log" >&2; die "slurmctld does not answer scontrol ping"; }
if ! running slurmd; then
    say "starting slurmd; log: $STATE/log/slurmd.log"
    $SUDO slurmd || die "slurmd did not start (see $STATE/log/slurmd.log)"
fi

node_state() { sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n 1; }
state=""
for _ in $(seq $((SLURM_WAIT_S * 2))); do
    state=$(node_state)
    case "$state" in
        idle*|mixed*|allocated*|completing*) break ;;
        down*|drain*|fail*|inval*)
            # a node left down by an earlier daemon (or a changed configuration) comes back here
            timeout 10 scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
done
case "$state" in
    idle*|mixed*|allocated*|completing*) ;;
    *) tail -n 5 "$STATE/log/slurmd.log" >&2; die "node $HOST is '${state:-unknown}' after ${SLURM_WAIT_S}s (see $STATE/log/)" ;;
esac
echo "slurm-up: node $HOST $state in partition $PARTITION ($SLURM_CPUS CPUs); state in $STATE"
