#!/usr/bin/env bash
# A private single-node Slurm 22.05 with its own munged, for tests (e2e_slurm). Must run as root.
# From the project recipe (shared/recipes/slurm.sh), kept here so a clean checkout has it. Source it:
#   SLURM_CI_ROOT=/tmp/x MUNGE_CI_ROOT=/tmp/y SLURM_CI_CTLD_PORT=… SLURM_CI_SLURMD_PORT=… slurm_ci_start
#   export SLURM_CONF=$SLURM_CI_ROOT/slurm.conf; …; slurm_ci_stop
#   slurm_ci_start && export SLURM_CONF=$SLURM_CI_ROOT/slurm.conf && sbatch ... ; slurm_ci_stop
SLURM_CI_ROOT=${SLURM_CI_ROOT:-${TMPDIR:-/tmp}/tunectl-slurm}
MUNGE_CI_ROOT=${MUNGE_CI_ROOT:-${TMPDIR:-/tmp}/tunectl-munge}
SLURM_CI_CTLD_PORT=${SLURM_CI_CTLD_PORT:-16817}
SLURM_CI_SLURMD_PORT=${SLURM_CI_SLURMD_PORT:-16818}

munge_ci_start() {
  local M=$MUNGE_CI_ROOT
  mkdir -p "$M"/{etc,run,log,lib}
  chown -R munge:munge "$M"; chmod 700 "$M"/etc "$M"/lib "$M"/log; chmod 755 "$M" "$M"/run
  [ -s "$M/etc/munge.key" ] || runuser -u munge -- mungekey --create --keyfile="$M/etc/munge.key"
  runuser -u munge -- munged --socket="$M/run/munge.socket.2" --key-file="$M/etc/munge.key" \
      --pid-file="$M/run/munged.pid" --log-file="$M/log/munged.log" --seed-file="$M/lib/munged.seed" || return 1
  munge -S "$M/run/munge.socket.2" -n | unmunge -S "$M/run/munge.socket.2" >/dev/null   # sanity check
}

slurm_ci_write_conf() {
  local S=$SLURM_CI_ROOT node
  # CPUs/Sockets/Cores/Threads/RealMemory exactly as slurmd detects them (avoids "Low RealMemory" drain)
  node=$(slurmd -C | head -1 | sed 's/^NodeName=[^ ]*/NodeName=localhost NodeAddr=127.0.0.1/')
  cat >"$S/slurm.conf" <<CONF
ClusterName=tunectl
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$SLURM_CI_CTLD_PORT
SlurmdPort=$SLURM_CI_SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_CI_ROOT/run/munge.socket.2
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$S/log/jobcomp.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
MinJobAge=300
$node State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
}

slurm_ci_start() {
  local S=$SLURM_CI_ROOT i
  mkdir -p "$S"/{state,spool/localhost,log,run,out}   # pre-create spool/%n (else slurmd logs an error)
  munge_ci_start || return 1
  slurm_ci_write_conf
  export SLURM_CONF=$S/slurm.conf
  slurmctld -f "$SLURM_CONF" -c || return 1      # -c: ignore saved state (fresh cluster)
  slurmd -f "$SLURM_CONF" -N localhost || return 1
  for ((i = 0; i < 150; i++)); do                   # up to 30 s for the node to be idle
    [ "$(sinfo -h -n localhost -o %t 2>/dev/null)" = idle ] && return 0
    sleep 0.2
  done
  echo "slurm node not idle:" >&2; sinfo -R >&2; tail -5 "$S"/log/*.log >&2; return 1
}

_wait_pids_gone() {  # wait (max 30 s) until every given pid has exited (zombie counts as exited)
  local pid i
  for pid in "$@"; do
    for ((i = 0; i < 300; i++)); do
      { [ -d /proc/$pid ] && ! grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null; } || break
      sleep 0.1
    done
    [ -d /proc/$pid ] && ! grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null && { echo "pid $pid still running" >&2; return 1; }
  done
  return 0
}

slurm_ci_stop() {
  local S=$SLURM_CI_ROOT i pids
  export SLURM_CONF=$S/slurm.conf
  pids=$(cat "$S"/run/slurmd.pid "$S"/run/slurmctld.pid 2>/dev/null)   # read before shutdown removes them
  if [ -n "$pids" ]; then
    scancel --user=root --full 2>/dev/null
    # let jobs leave COMPLETING first, else slurmd retries "epilog complete" to a dead controller (~10 s)
    for ((i = 0; i < 150; i++)); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
    scontrol shutdown 2>/dev/null                                  # stops slurmctld and every slurmd
    _wait_pids_gone $pids
  fi
  pids=$(cat "$MUNGE_CI_ROOT/run/munged.pid" 2>/dev/null)
  if [ -n "$pids" ]; then
    runuser -u munge -- munged --stop --socket="$MUNGE_CI_ROOT/run/munge.socket.2" 2>/dev/null
    _wait_pids_gone $pids
  fi
}

slurm_ci_wait_job() {  # slurm_ci_wait_job JOBID [TIMEOUT_S=120]: prints final state; rc 0 only if COMPLETED
  local j=$1 st i                # (faster than `sbatch --wait`, whose poll interval makes short jobs take ~10 s)
  for ((i = 0; i < ${2:-120} * 5; i++)); do
    st=$(scontrol show job -o "$j" 2>/dev/null | grep -oP 'JobState=\K\S+')
    case $st in
      PENDING|CONFIGURING|RUNNING|COMPLETING|SUSPENDED|REQUEUED|RESIZING) sleep 0.2 ;;
      *) echo "$st"; [ "$st" = COMPLETED ]; return ;;
    esac
  done
  echo TIMEOUT; return 1
}
