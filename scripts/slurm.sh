#!/usr/bin/env bash
# A real single-node Slurm on this machine, for tests of launcher=submitit_slurm.
#
#   scripts/slurm.sh start    install slurm-wlm + munge if missing, write the config, start
#                             munged, slurmctld and slurmd, wait until the node is idle
#   scripts/slurm.sh stop     scontrol shutdown, then stop munged
#   scripts/slurm.sh status   munge check and sinfo
#
# Why plain daemons: these machines (dev VMs, CI) run as root without systemd, and Debian's
# packages start no service on install. Without cgroups the daemons use proctrack/linuxproc and
# task/none; there is no accounting (submitit then logs "Bypassing sacct error" on each poll and
# reads job states as UNKNOWN, but every result still comes back). One node (the CPUs and memory
# `slurmd -C` reports), one partition.
#
# The config goes to /etc/slurm/slurm.conf, where every Slurm client looks. A slurm.conf that
# this script did not write (no MARKER line) is never overwritten: the script stops instead.
# Needs root. Environment: SLURM_IDLE_TIMEOUT (seconds to wait for the node, default 60).
set -euo pipefail

MARKER="# written by snapcompact-evals scripts/slurm.sh"
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
PARTITION=debug
LOG_DIR=/var/log/slurm
IDLE_TIMEOUT=${SLURM_IDLE_TIMEOUT:-60}
MUNGE_PID=/run/munge/munged.pid

die() { echo "slurm.sh: error: $*" >&2; exit 1; }
say() { echo "slurm.sh: $*" >&2; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (installs packages, writes $CONF, starts daemons)"; }

install_packages() {
    local missing=()
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        || missing+=(slurm-wlm)
    command -v munged >/dev/null && command -v mungekey >/dev/null || missing+=(munge)
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/slurm-apt.log 2>&1; then
        apt-get update -q >>/tmp/slurm-apt.log 2>&1 || true
        apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/slurm-apt.log 2>&1 \
            || die "apt-get install ${missing[*]} failed; see /tmp/slurm-apt.log"
    fi
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    if munge_ok; then return 0; fi
    local key=/etc/munge/munge.key
    # The package ships a key of its own; replace it once with a fresh one (owner munge, 0400).
    if [ ! -s "$key" ] || [ ! -e /etc/munge/.snapcompact-key ]; then
        mungekey --create --force --keyfile="$key" >/dev/null
        touch /etc/munge/.snapcompact-key
    fi
    chown munge:munge "$key" && chmod 400 "$key"
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    runuser -u munge -- munged --pid-file="$MUNGE_PID" || die "munged did not start; see /var/log/munge/munged.log"
    for _ in $(seq 50); do munge_ok && return 0; sleep 0.1; done
    die "munged started but 'munge -n | unmunge' fails; see /var/log/munge/munged.log"
}

write_config() {
    if [ -e "$CONF" ] && ! grep -qxF "$MARKER" "$CONF"; then
        die "$CONF exists and was not written by this script; not overwriting it"
    fi
    local host node
    host=$(hostname -s)
    node=$(slurmd -C | head -n 1)   # NodeName=... CPUs=... RealMemory=...
    case "$node" in NodeName=*) ;; *) die "slurmd -C printed no node line: $node" ;; esac
    install -d -m 0755 "$CONF_DIR" "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd
    cat >"$CONF.tmp" <<EOF
$MARKER
# One node, one partition, no cgroups, no accounting (see the script's header).
ClusterName=snapcompact
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
$node
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$CONF.tmp" "$CONF"
}

node_state() { sinfo -h -N -o '%T' 2>/dev/null | head -n 1; }

daemon_running() {  # pid file names a live process (a zombie waiting for its parent is dead)
    local pidfile=$1 stat
    [ -s "$pidfile" ] || return 1
    stat=$(ps -o stat= -p "$(cat "$pidfile")" 2>/dev/null) || return 1
    case "$stat" in Z*|"") return 1 ;; esac
}

start() {
    need_root
    install_packages
    start_munge
    write_config
    daemon_running /run/slurmctld.pid || slurmctld || die "slurmctld did not start; see $LOG_DIR/slurmctld.log"
    daemon_running /run/slurmd.pid || slurmd || die "slurmd did not start; see $LOG_DIR/slurmd.log"
    local state="" deadline=$((SECONDS + IDLE_TIMEOUT)) resumed=0
    while [ $SECONDS -lt $deadline ]; do
        state=$(node_state)
        case "$state" in
            idle|mixed|allocated) say "node $(hostname -s) $state, partition $PARTITION"; return 0 ;;
            down*|drain*)  # a node left down by an earlier run: put it back once
                if [ $resumed = 0 ]; then
                    scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true
                    resumed=1
                fi ;;
        esac
        sleep 0.5
    done
    die "node $(hostname -s) not idle after ${IDLE_TIMEOUT} s (state: ${state:-none}); see $LOG_DIR/slurmctld.log and $LOG_DIR/slurmd.log"
}

stop() {
    need_root
    if daemon_running /run/slurmctld.pid || daemon_running /run/slurmd.pid; then
        scontrol shutdown >/dev/null 2>&1 || true
        for _ in $(seq 100); do
            daemon_running /run/slurmctld.pid || daemon_running /run/slurmd.pid || break
            sleep 0.1
        done
        # scontrol shutdown asks slurmctld to stop every slurmd; if one is left, stop it by pid.
        for pidfile in /run/slurmd.pid /run/slurmctld.pid; do
            if daemon_running "$pidfile"; then
                say "$(basename "$pidfile" .pid) still running after scontrol shutdown; sending TERM"
                kill "$(cat "$pidfile")" 2>/dev/null || true
            fi
        done
    fi
    if daemon_running "$MUNGE_PID"; then
        kill "$(cat "$MUNGE_PID")"
        for _ in $(seq 50); do daemon_running "$MUNGE_PID" || break; sleep 0.1; done
    fi
    say "stopped"
}

status() {
    if munge_ok; then echo "munge: ok"; else echo "munge: not running"; fi
    if command -v sinfo >/dev/null && sinfo >/dev/null 2>&1; then sinfo; else echo "slurm: not running"; fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
