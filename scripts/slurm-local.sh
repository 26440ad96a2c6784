#!/usr/bin/env bash
# A Slurm cluster on this machine, one node or several, for the tests and for trying
# `--executor slurm`.
#
#   eval "$(scripts/slurm-local.sh up [--nodes N] [--name NAME])"  up (idempotent) + SLURM_CONF
#   scripts/slurm-local.sh status [--name NAME]   controller, nodes and queue in a few lines
#   scripts/slurm-local.sh down [--name NAME]     cancel its jobs, stop what it started, clean up
#   scripts/slurm-local.sh env [--name NAME]      print the export line only
#   scripts/slurm-local.sh kill-node NODE         fault: SIGKILL the node's slurmd and its steps
#   scripts/slurm-local.sh cut-node NODE [--freeze]  fault: the node's link down (network cut);
#                                                 --freeze also stops (SIGSTOP) its jobs, as
#                                                 when its shared storage is cut too
#   scripts/slurm-local.sh heal-node NODE         its link up again, frozen jobs continued
#
# Debian's slurm-wlm and munge (scripts/apt-packages.txt), started directly: no systemd, and
# /etc is never touched. One cluster per NAME (--name, or $CODEGEN_SLURM_NAME, default
# "default"), all of it in one state directory, $CODEGEN_SLURM_STATE (default
# /var/lib/codegen-lab-slurm/NAME): munge key and socket, slurm.conf, controller state, spool,
# pid files, logs, and the ports and network it chose. Two clusters (two names) on one machine
# share nothing: the ports are picked free at the first `up` and kept, and `down` stops only
# the daemons whose pid files are in its own state directory.
#
# One node (the default): `localnode` at 127.0.0.1, this machine's CPUs and 90% of its memory.
# N > 1 nodes: node1..nodeN, each a network + UTS + mount namespace of this machine:
#   a bridge in the root namespace with the controller's address (.1), no uplink, no route out;
#   per node a network namespace /run/netns/cgl-TAG-nI with a veth into the bridge, address
#   .(10+I) and no default route; its slurmd started by
#   `nsenter --net=... unshare --uts --mount --propagation private` with its own hostname, a
#   private /etc/hosts (every node and the controller) and a private /dev/shm.
# The addresses are a /24 of 10.250.0.0/16 not routed on this machine, used only inside these
# namespaces and on that bridge: nothing is sent anywhere else. Each node claims all of this
# machine's CPUs (oversubscribed N times) and 90%/N of its memory.
#
# Settings that matter (measured, see docs/running-at-scale.md): EnforcePartLimits=ALL (an
# impossible request is refused at submit instead of pending forever), MpiDefault=pmix
# (Debian's Open MPI initialises under pmix, not pmi2), a scheduler that starts jobs at once
# (batch_sched_delay=0, sched_min_interval=0), no accounting (squeue/scontrol suffice). On
# several nodes, each found from an error: TmpFS per node (PMIx "Cannot create client cli
# tmpdir ... File exists"), the spool directory per node made first ("Domain socket directory
# ... No such file or directory"), `nsenter --net=` and not `ip netns exec` (which remounts
# /sys: "slurmd initialization failed"), an absolute -f path (a relative one hung steps 60 s),
# SlurmdTimeout=10 and cred_expire=10 (a dead node is noticed, a requeued job restarts, in
# seconds instead of minutes).
# Every Slurm client call here runs under `timeout`: with the controller down they block 10 s+.
set -euo pipefail

say() { printf '[slurm-local] %s\n' "$*" >&2; }
die() {
  say "error: $*"
  exit 1
}
usage() {
  echo "usage: scripts/slurm-local.sh up [--nodes N] [--name NAME] | down | status | env" \
    "| kill-node NODE | cut-node NODE | heal-node NODE   (each takes --name NAME)" >&2
  exit 2
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
NAME="${CODEGEN_SLURM_NAME:-default}"
NODES=""
TARGET=""
FREEZE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES="${2:-}"; shift 2 || usage ;;
    --nodes=*) NODES="${1#--nodes=}"; shift ;;
    --name) NAME="${2:-}"; shift 2 || usage ;;
    --name=*) NAME="${1#--name=}"; shift ;;
    --freeze) FREEZE=1; shift ;;
    -*) die "unknown option $1" ;;
    *) [ -z "$TARGET" ] || usage; TARGET="$1"; shift ;;
  esac
done
[[ "$NAME" =~ ^[A-Za-z0-9_-]{1,32}$ ]] || die "--name: letters, digits, - and _ (1-32), not '$NAME'"
if [ -n "$NODES" ]; then
  [[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 64 ] ||
    die "--nodes: a number from 1 to 64, not '$NODES'"
fi

if [ "$(id -u)" -eq 0 ]; then
  STATE="${CODEGEN_SLURM_STATE:-/var/lib/codegen-lab-slurm/$NAME}"
else
  STATE="${CODEGEN_SLURM_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/codegen-lab-slurm/$NAME}"
fi
CONF="$STATE/slurm.conf"
MUNGE_SOCKET="$STATE/munge/munge.socket"
PARTITION=debug
# A short tag from the state path names this cluster's namespaces, bridge and veths.
TAG="$(printf '%s' "$STATE" | md5sum | cut -c1-6)"
BRIDGE="cglb$TAG"
export SLURM_CONF="$CONF"

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
ctld_ok() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_states() { timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u; }
nodes_ok() { # every configured node answers (idle, mixed, allocated, completing)
  local s want
  s="$(node_states)" || return 1
  want="$(node_names | wc -w)"
  [ "$(printf '%s\n' "$s" | grep -cE ' (idle|mixed|allocated|completing)$')" -eq "$want" ]
}
saved_nodes() { cat "$STATE/nodes" 2>/dev/null || echo 1; }
node_names() {
  local n i
  n="$(saved_nodes)"
  if [ "$n" -eq 1 ]; then echo localnode; else for i in $(seq 1 "$n"); do printf 'node%d ' "$i"; done; fi
}
netns_of() { echo "cgl-$TAG-n${1#node}"; }
veth_of() { echo "cgl${TAG}v${1#node}"; }

print_env() { printf 'export SLURM_CONF=%q\n' "$CONF"; }

port_free() { ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
ports_of_live_clusters() { # ports kept by other clusters whose controller runs
  local d
  for d in "$(dirname "$STATE")"/*/; do
    [ "${d%/}" = "$STATE" ] && continue
    alive "$d/run/slurmctld.pid" && cat "$d/ports" 2>/dev/null || true
  done
}
ports_usable() { # the stored pair is free now and no running cluster keeps it
  local ctld slurmd taken
  read -r ctld slurmd <"$STATE/ports" 2>/dev/null || return 1
  taken="$(ports_of_live_clusters)"
  for p in "$ctld" "$slurmd"; do
    port_free "$p" || return 1
    grep -qw -- "$p" <<<"$taken" && return 1
  done
  return 0
}
pick_ports() { # picked when the cluster starts, kept while it runs (the conf and nodes know them)
  if [ -s "$STATE/ports" ] && { alive "$STATE/run/slurmctld.pid" || ports_usable; }; then return 0; fi
  local p ctld="" slurmd="" taken
  exec 8>"$(dirname "$STATE")/.ports.lock"
  flock 8 # two clusters starting at once do not take the same pair
  taken="$(ports_of_live_clusters)"
  for p in $(seq 6817 2 7999); do
    if port_free "$p" && port_free "$((p + 1))" && ! grep -qwE -- "$p|$((p + 1))" <<<"$taken"; then
      ctld="$p" slurmd="$((p + 1))"
      break
    fi
  done
  [ -n "$ctld" ] || die "no free pair of ports between 6817 and 7999"
  echo "${CODEGEN_SLURM_CTLD_PORT:-$ctld} ${CODEGEN_SLURM_SLURMD_PORT:-$slurmd}" >"$STATE/ports"
}

pick_subnet() { # a /24 of 10.250.0.0/16 that nothing on this machine routes, kept per state
  if [ -s "$STATE/subnet" ]; then return 0; fi
  local i used
  used="$(ip -4 route show table all 2>/dev/null; cat /var/lib/codegen-lab-slurm/*/subnet 2>/dev/null || true)"
  for i in $(seq 1 254); do
    if ! grep -qE "10\.250\.$i(\.|/|$)" <<<"$used"; then
      echo "10.250.$i" >"$STATE/subnet"
      return 0
    fi
  done
  die "no free /24 in 10.250.0.0/16"
}

write_conf() {
  local cpus mem_mb n ports ctld_port slurmd_port ctld_host node_lines tmpfs="" timeout=30 cred=""
  cpus="$(nproc)"
  n="$(saved_nodes)"
  mem_mb="$(awk -v n="$n" '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.9 / n}' /proc/meminfo)"
  read -r ctld_port slurmd_port <"$STATE/ports"
  mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/log" "$STATE/run" "$STATE/tmp"
  if [ "$n" -eq 1 ]; then
    ctld_host="localhost(127.0.0.1)"
    node_lines="NodeName=localnode NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN"
  else
    local net i
    net="$(cat "$STATE/subnet")"
    ctld_host="$(hostname -s)($net.1)"
    node_lines=""
    for i in $(seq 1 "$n"); do
      node_lines+="NodeName=node$i NodeHostname=node$i NodeAddr=$net.$((10 + i)) CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN"$'\n'
    done
    tmpfs="TmpFS=$STATE/tmp/%n"
    timeout=10
    cred=",cred_expire=10"
  fi
  cat >"$CONF.new" <<EOF
# Written by scripts/slurm-local.sh; rewritten on every \`up\`.
ClusterName=cgl$TAG
SlurmctldHost=$ctld_host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET$cred
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
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
SlurmdTimeout=$timeout
KillWait=2
MinJobAge=300
MaxJobCount=100000
$tmpfs
# Without a default, a job that does not ask for memory is given the whole node's, and with
# CR_CPU_Memory that runs one job at a time however many CPUs are free.
DefMemPerCPU=$((mem_mb / cpus))
${node_lines}
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
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

# ---------------------------------------------------------------- the simulated network
net_up() { # bridge + one namespace and veth per node; idempotent
  local net n i ns veth
  net="$(cat "$STATE/subnet")"
  n="$(saved_nodes)"
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    sysctl -qw "net.ipv6.conf.$BRIDGE.disable_ipv6=1" || true # no router solicitations
    ip addr add "$net.1/24" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$n"); do
    ns="$(netns_of "node$i")" veth="$(veth_of "node$i")"
    [ -e "/run/netns/$ns" ] || ip netns add "$ns"
    if ! ip link show "$veth" >/dev/null 2>&1; then
      ip link add "$veth" type veth peer name eth0 netns "$ns"
      sysctl -qw "net.ipv6.conf.$veth.disable_ipv6=1" || true
      ip link set "$veth" master "$BRIDGE"
      ip -n "$ns" link set lo up
      ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1 || true
      ip -n "$ns" addr add "$net.$((10 + i))/24" dev eth0
      ip -n "$ns" link set eth0 up # only the /24 route: no default route, nothing leaves
    fi
    ip link set "$veth" up
  done
}

net_down() {
  local node ns
  for node in $(node_names); do
    [ "$node" = localnode ] && continue
    ns="$(netns_of "$node")"
    [ -e "/run/netns/$ns" ] && ip netns delete "$ns" 2>/dev/null || true
    ip link delete "$(veth_of "$node")" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
}

write_hosts() {
  local net n i
  net="$(cat "$STATE/subnet")"
  n="$(saved_nodes)"
  {
    echo "127.0.0.1 localhost"
    echo "$net.1 $(hostname -s)"
    for i in $(seq 1 "$n"); do echo "$net.$((10 + i)) node$i"; done
  } >"$STATE/hosts"
}

start_node() { # one slurmd; in its own namespaces when the cluster has several nodes
  local node="$1"
  if alive "$STATE/run/slurmd-$node.pid"; then return 0; fi
  mkdir -p "$STATE/spool/$node" "$STATE/tmp/$node"
  say "starting slurmd $node"
  if [ "$node" = localnode ]; then
    setsid slurmd -f "$CONF" -N "$node" 9>&- </dev/null >>"$STATE/log/slurmd.out" 2>&1 ||
      die "slurmd did not start: $(tail -n 3 "$STATE/log/slurmd-$node.log" 2>/dev/null)"
    return 0
  fi
  # hostname, /etc/hosts and /dev/shm only inside this node's UTS and mount namespaces.
  setsid nsenter --net="/run/netns/$(netns_of "$node")" \
    unshare --uts --mount --propagation private \
    sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && mount -t tmpfs -o mode=1777 shm /dev/shm && exec slurmd -f "$3" -N "$1"' \
    node-sh "$node" "$STATE/hosts" "$CONF" 9>&- </dev/null >>"$STATE/log/slurmd.out" 2>&1 ||
    die "slurmd $node did not start: $(tail -n 3 "$STATE/log/slurmd-$node.log" 2>/dev/null)"
}

start_slurm() {
  command -v slurmctld >/dev/null || die "slurmctld is missing: apt-get install slurm-wlm (scripts/setup.sh)"
  if ! alive "$STATE/run/slurmctld.pid"; then
    say "starting slurmctld (log: $STATE/log/slurmctld.log)"
    # setsid: the daemons outlive this script and the test session that called it.
    setsid slurmctld -f "$CONF" 9>&- </dev/null >>"$STATE/log/slurmctld.out" 2>&1 ||
      die "slurmctld did not start: $(tail -n 3 "$STATE/log/slurmctld.log" 2>/dev/null)"
  fi
  local node
  for node in $(node_names); do start_node "$node"; done
  for _ in $(seq 1 100); do
    if ctld_ok && nodes_ok; then return 0; fi
    sleep 0.2
  done
  # Nodes left DOWN/DRAIN by an earlier crash come back with one update.
  timeout 5 scontrol update NodeName="$(node_names | tr ' ' ',' | sed 's/,$//')" State=RESUME >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do
    if ctld_ok && nodes_ok; then return 0; fi
    sleep 0.2
  done
  tail -n 15 "$STATE/log/slurmctld.log" >&2 2>/dev/null || true
  die "the cluster did not come up within 30 s (controller: $(ctld_ok && echo up || echo down), nodes: $(node_states | tr '\n' ' '))"
}

stop_pid() {
  local name="$1" file="$2" pid
  if alive "$file"; then
    pid="$(cat "$file")"
    say "stopping $name ($pid)"
    kill "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || return 0
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
}

tree_of() { # the given pids and all their descendants
  ps -eo pid=,ppid= | awk -v roots="$*" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END { changed = 1
      while (changed) { changed = 0
        for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 } }
      for (p in keep) print p }'
}

kill_node() { # SIGKILL the node's slurmd, its steps and everything they started
  local node="$1" ns pids
  if [ "$node" = localnode ]; then
    pids="$(cat "$STATE/run/slurmd-$node.pid" 2>/dev/null || true)"
  else
    ns="$(netns_of "$node")"
    pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ' || true)"
  fi
  [ -n "${pids// /}" ] || return 0
  # shellcheck disable=SC2046 # a list of pids
  kill -9 $(tree_of $pids) 2>/dev/null || true
}

signal_jobs() { # a signal to everything of a node but its slurmd (its jobs and steps)
  local node="$1" sig="$2" pids slurmd
  pids="$(ip netns pids "$(netns_of "$node")" 2>/dev/null | tr '\n' ' ' || true)"
  [ -n "${pids// /}" ] || return 0
  slurmd="$(cat "$STATE/run/slurmd-$node.pid" 2>/dev/null || echo none)"
  # shellcheck disable=SC2046 # a list of pids
  kill "-$sig" $(tree_of $pids | grep -vx "$slurmd") 2>/dev/null || true
}

known_node() {
  [ -n "$TARGET" ] || usage
  node_names | tr ' ' '\n' | grep -qx "$TARGET" || die "no node '$TARGET' in cluster $NAME ($(node_names))"
}

case "$cmd" in
  up)
    [ "$(id -u)" -eq 0 ] || die "the Slurm daemons of a local cluster need root (SlurmUser=root)"
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9 # concurrent `up`s (parallel test sessions) wait for the first one
    t0=$(date +%s.%N)
    NODES="${NODES:-1}"
    if alive "$STATE/run/slurmctld.pid" && [ "$(saved_nodes)" != "$NODES" ]; then
      die "cluster '$NAME' is up with $(saved_nodes) node(s), not $NODES: scripts/slurm-local.sh down --name $NAME first"
    fi
    echo "$NODES" >"$STATE/nodes"
    pick_ports
    [ "$NODES" -eq 1 ] || pick_subnet
    changed=0
    write_conf && changed=1
    if alive "$STATE/run/slurmctld.pid" && ctld_ok && nodes_ok; then
      if [ "$changed" = 1 ]; then # this script's settings changed since the cluster started
        say "slurm.conf changed: scontrol reconfigure"
        timeout 20 scontrol reconfigure >/dev/null || die "scontrol reconfigure failed"
      fi
    else
      if [ "$NODES" -gt 1 ]; then
        command -v nsenter >/dev/null && command -v ip >/dev/null ||
          die "several nodes need ip (iproute2) and nsenter/unshare (util-linux)"
        net_up
        write_hosts
      fi
      start_munge
      start_slurm
      say "cluster '$NAME' up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s: $(node_names | wc -w) node(s) ($(nproc) CPUs each), partition $PARTITION"
    fi
    print_env
    ;;
  down)
    [ -d "$STATE" ] || exit 0
    exec 9>"$STATE/lock"
    flock 9
    if alive "$STATE/run/slurmctld.pid" && ctld_ok; then
      timeout 10 scancel --full --user="$(id -un)" >/dev/null 2>&1 || true
    fi
    for node in $(node_names); do
      stop_pid "slurmd $node" "$STATE/run/slurmd-$node.pid"
      [ "$node" = localnode ] || kill_node "$node" # steps left in its namespace
    done
    stop_pid slurmctld "$STATE/run/slurmctld.pid"
    stop_pid munged "$STATE/munge/munged.pid"
    net_down
    ;;
  status)
    if ctld_ok; then
      say "cluster '$NAME': controller up ($CONF)"
      while read -r node state; do say "node $node: $state"; done < <(node_states)
      say "jobs: $(timeout 5 squeue -h 2>/dev/null | wc -l) in the queue"
      print_env
    else
      say "cluster '$NAME': controller not answering ($CONF)"
      exit 1
    fi
    ;;
  env) print_env ;;
  kill-node)
    known_node
    say "killing node $TARGET (slurmd and its steps)"
    kill_node "$TARGET"
    ;;
  cut-node | heal-node)
    known_node
    [ "$TARGET" != localnode ] || die "a one-node cluster has no network to cut"
    state=down
    [ "$cmd" = heal-node ] && state=up
    say "node $TARGET: link $state"
    ip link set "$(veth_of "$TARGET")" "$state"
    if [ "$cmd" = heal-node ]; then signal_jobs "$TARGET" CONT; elif [ "$FREEZE" = 1 ]; then signal_jobs "$TARGET" STOP; fi
    ;;
  *) usage ;;
esac
