#!/usr/bin/env bash
# sweep_slurm_local.sh: run tests/sweep.sh with a real one-node Slurm cluster on
# this machine, so the emitted job-array script is submitted with sbatch.
# Needs root and the Debian packages slurmd, slurmctld, slurm-client, munge
# (apt-get install --no-install-recommends slurmd slurmctld slurm-client munge).
# The cluster's configuration, state and logs live in a temporary directory
# (SLURM_CONF points there; /etc/slurm is left alone); the daemons it starts
# are stopped by their pids at the end.  Usage: tests/sweep_slurm_local.sh [BIN]
set -eu
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in munged slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null || { echo "sweep_slurm_local: $tool not installed" >&2; exit 1; }
done
S=$(mktemp -d /tmp/pipegrid-slurm.XXXXXX)
chmod 755 "$S"
NODE=$(hostname -s)
CPUS=$(nproc)
# Ports away from the defaults, so a system Slurm (if any) is not disturbed.
CTLD_PORT=16817
SLURMD_PORT=16818
cat >"$S/slurm.conf" <<CONF
ClusterName=pipegridtest
SlurmctldHost=$NODE
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
MpiDefault=none
NodeName=$NODE CPUs=$CPUS RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
mkdir -p "$S/state" "$S/spool"
export SLURM_CONF="$S/slurm.conf"

started_munge=0
if ! munge -n >/dev/null 2>&1; then
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    [ -s /etc/munge/munge.key ] || { command -v mungekey >/dev/null && mungekey --create; }
    su -s /bin/sh munge -c munged
    started_munge=1
fi
stop() {
    for f in "$S/slurmd.pid" "$S/slurmctld.pid"; do
        [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
    if [ "$started_munge" = 1 ] && [ -s /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true; fi
    sleep 1
    rm -rf "$S"
}
trap stop EXIT
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 30); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && break
    sleep 1
done
sinfo
PIPEGRID_TEST_SLURM=1 "$HERE/sweep.sh" "$BIN"
