#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the tests and for trying `--executor slurm`.
#
#   eval "$(scripts/slurm-local.sh up)"   cluster up (idempotent) + `export SLURM_CONF=...`
#   scripts/slurm-local.sh down            cancel its jobs, stop the daemons it started
#   scripts/slurm-local.sh status          controller, node and queue in a few lines
#   scripts/slurm-local.sh env             print the export lines only
#
# Debian's slurm-wlm and munge (scripts/apt-packages.txt), started directly: no systemd, and
# /etc is never touched. Everything lives in one state directory, $CODEGEN_SLURM_STATE
# (default /var/lib/codegen-lab-slurm as root, else $XDG_STATE_HOME/codegen-lab-slurm): a
# munge key and socket, slurm.conf, the controller's state, the daemons' spool, pid files and
# logs. The cluster is one node (`localnode`, this machine's CPUs and 90% of its memory) in one
# partition (`debug`). The daemons need root (SlurmUser=root); the jobs run as the submitter.
#
# Settings that matter (measured, see docs/running-at-scale.md): EnforcePartLimits=ALL (an
# impossible request is refused at submit instead of pending forever), MpiDefault=pmix
# (Debian's Open MPI initialises under pmix, not pmi2), a scheduler that starts jobs at once
# (batch_sched_delay=0, sched_min_interval=0), no accounting (squeue/scontrol suffice).
# Every Slurm client call here runs under `timeout`: with the controller down they block 10 s+.
set -euo pipefail
if [ "$(id -u)" -eq 0 ]; then
  STATE="${CODEGEN_SLURM_STATE:-/var/lib/codegen-lab-slurm}"
else
  STATE="${CODEGEN_SLURM_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/codegen-lab-slurm}"
fi
CTLD_PORT="${CODEGEN_SLURM_CTLD_PORT:-6817}"
SLURMD_PORT="${CODEGEN_SLURM_SLURMD_PORT:-6818}"
CONF="$STATE/slurm.conf"
MUNGE_SOCKET="$STATE/munge/munge.socket"
NODE=localnode
PARTITION=debug
export SLURM_CONF="$CONF"

say() { printf '[slurm-local] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
ctld_ok() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_state() { timeout 5 sinfo -h -n "$NODE" -o '%T' 2>/dev/null | head -n1; }
node_ok() {
  case "$(node_state)" in idle* | mixed* | allocated* | completing*) return 0 ;; esac
  return 1
}

print_env() {
  printf 'export SLURM_CONF=%q\n' "$CONF"
}

write_conf() {
  local cpus mem_mb
  cpus="$(nproc)"
  mem_mb="$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)"
  mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/log" "$STATE/run"
  cat >"$CONF.new" <<EOF
# Written by scripts/slurm-local.sh; rewritten on every \`up\`.
ClusterName=codegenlab
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
MpiDefault=pmix
EnforcePartLimits=ALL
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=1,sched_min_interval=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdTimeout=30
KillWait=2
MinJobAge=300
MaxJobCount=100000
# Without a default, a job that does not ask for memory is given the whole node's, and with
# CR_CPU_Memory that runs one job at a time however many CPUs are free.
DefMemPerCPU=$((mem_mb / cpus))
NodeName=$NODE NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  if cmp -s "$CONF.new" "$CONF"; then
    rm -f "$CONF.new"
    return 1 # unchanged
  fi
  mv "$CONF.new" "$CONF"
}

start_munge() {
  if alive "$STATE/munge/munged.pid" && [ -S "$MUNGE_SOCKET" ]; then return 0; fi
  command -v munged >/dev/null || die "munged is missing: apt-get install munge (scripts/setup.sh)"
  mkdir -p "$STATE/munge"
  chmod 755 "$STATE" "$STATE/munge" # munged refuses a socket directory others may write to
  if [ ! -s "$STATE/munge/munge.key" ]; then
    (umask 077 && head -c 1024 /dev/urandom >"$STATE/munge/munge.key")
  fi
  chmod 400 "$STATE/munge/munge.key"
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  munged --force --socket="$MUNGE_SOCKET" --key-file="$STATE/munge/munge.key" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/log/munged.log" \
    --seed-file="$STATE/munge/munged.seed" 9>&- ||
    die "munged did not start (log: $STATE/log/munged.log)"
  for _ in $(seq 1 40); do
    [ -S "$MUNGE_SOCKET" ] && return 0
    sleep 0.1
  done
  die "munged started but its socket $MUNGE_SOCKET did not appear"
}

start_slurm() {
  command -v slurmctld >/dev/null || die "slurmctld is missing: apt-get install slurm-wlm (scripts/setup.sh)"
  if ! alive "$STATE/run/slurmctld.pid"; then
    say "starting slurmctld (log: $STATE/log/slurmctld.log)"
    # setsid: the daemons outlive this script and the test session that called it.
    setsid slurmctld -f "$CONF" 9>&- </dev/null >>"$STATE/log/slurmctld.out" 2>&1 ||
      die "slurmctld did not start: $(tail -n 3 "$STATE/log/slurmctld.log" 2>/dev/null)"
  fi
  if ! alive "$STATE/run/slurmd.pid"; then
    say "starting slurmd"
    setsid slurmd -f "$CONF" -N "$NODE" 9>&- </dev/null >>"$STATE/log/slurmd.out" 2>&1 ||
      die "slurmd did not start: $(tail -n 3 "$STATE/log/slurmd.log" 2>/dev/null)"
  fi
  for _ in $(seq 1 100); do
    if ctld_ok && node_ok; then return 0; fi
    sleep 0.2
  done
  # A node left DOWN/DRAIN by an earlier crash comes back with one update.
  timeout 5 scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do
    if ctld_ok && node_ok; then return 0; fi
    sleep 0.2
  done
  tail -n 15 "$STATE/log/slurmctld.log" "$STATE/log/slurmd.log" >&2 2>/dev/null || true
  die "the cluster did not come up within 30 s (controller: $(ctld_ok && echo up || echo down), node: $(node_state || echo unknown))"
}

stop_pid() {
  local name="$1" file="$2" pid
  if alive "$file"; then
    pid="$(cat "$file")"
    say "stopping $name ($pid)"
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
}

cmd="${1:-}"
case "$cmd" in
  up)
    [ "$(id -u)" -eq 0 ] || die "the Slurm daemons of a local cluster need root (SlurmUser=root)"
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9 # concurrent `up`s (parallel test sessions) wait for the first one
    t0=$(date +%s.%N)
    changed=0
    write_conf && changed=1
    if alive "$STATE/run/slurmctld.pid" && ctld_ok && node_ok; then
      if [ "$changed" = 1 ]; then # this script's settings changed since the cluster started
        say "slurm.conf changed: scontrol reconfigure"
        timeout 20 scontrol reconfigure >/dev/null || die "scontrol reconfigure failed"
      fi
    else
      start_munge
      start_slurm
      say "cluster up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s: node $NODE ($(nproc) CPUs), partition $PARTITION"
    fi
    print_env
    ;;
  down)
    if ctld_ok; then timeout 10 scancel --full --user="$(id -un)" >/dev/null 2>&1 || true; fi
    stop_pid slurmd "$STATE/run/slurmd.pid"
    stop_pid slurmctld "$STATE/run/slurmctld.pid"
    stop_pid munged "$STATE/munge/munged.pid"
    ;;
  status)
    if ctld_ok; then
      say "controller: up ($CONF)"
      say "node $NODE: $(node_state)"
      say "jobs: $(timeout 5 squeue -h 2>/dev/null | wc -l) in the queue"
      print_env
    else
      say "controller: not answering ($CONF)"
      exit 1
    fi
    ;;
  env)
    print_env
    ;;
  *)
    echo "usage: scripts/slurm-local.sh up | down | status | env" >&2
    exit 2
    ;;
esac
