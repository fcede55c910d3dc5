#!/usr/bin/env bash
# A multi-node Slurm cluster on one machine, for the Slurm executor's multi-node tests: one
# slurmctld in the host's network namespace on a private bridge, and per node a network
# namespace (a veth into the bridge, its own address, `lo` up) plus a UTS and a mount namespace
# (its hostname, its own /etc/hosts), each running `slurmd -N nodeK`. Its own munged (own key and
# socket), controller port and controller state (spool/ctld-nodes: slurmctld refuses state
# written under another ClusterName). It shares QUALIFY_SLURM_STATE's slurm.conf path and pid
# files with the single-node cluster of ci/slurm-up.sh, so one of the two runs at a time
# (ci/slurm-up.sh refuses to start one over the other). Traffic stays on the bridge.
#
# Called by ci/slurm-up.sh --nodes N and ci/slurm-down.sh; directly:
#
#   ci/slurm-nodes.sh up N          # start; stdout is only the slurm.conf path
#   ci/slurm-nodes.sh down          # stop everything `up` started (also after a failed start)
#   ci/slurm-nodes.sh kill NODE     # the node dies: its slurmd and every process in its namespaces
#   ci/slurm-nodes.sh start NODE    # bring a killed node back (slurmd again, resumed, idle)
#   ci/slurm-nodes.sh alive         # exit 0 when a daemon of the recorded cluster still runs
#
# Environment: QUALIFY_SLURM_STATE (default /var/lib/qualify-slurm) holds slurm.conf, the munge
# key and socket, logs, spools, per-node TmpFS and `cluster.env` (what was started, read by
# `down`); QUALIFY_SLURM_PORT (default 6827) is slurmctld's port; QUALIFY_SLURM_NET (default
# 10.77.0) the bridge's /24: .1 the controller, .11, .12, … the nodes.
#
# Pitfalls this avoids: `ip netns exec` remounts /sys (slurmd then finds no cgroup filesystem),
# so namespaces are entered with `nsenter --net=`; PMIx step daemons of nodes sharing /tmp
# collide on /tmp/spmix_appdir_* (TmpFS is per node); with NoCtldInAddrAny slurmctld must
# resolve its own name, which a hosts file bind-mounted in its own mount namespace provides
# without editing /etc/hosts.
set -euo pipefail
# shellcheck source=ci/slurm-policy.sh
source "$(dirname "$0")/slurm-policy.sh"

state=${QUALIFY_SLURM_STATE:-/var/lib/qualify-slurm}
port=${QUALIFY_SLURM_PORT:-6827}
net=${QUALIFY_SLURM_NET:-10.77.0}
record=$state/cluster.env
bridge=qslurm0
ns_prefix=qslurm-

say() { echo "slurm-nodes: $*" >&2; }

# ---------------------------------------------------------------------------------------------
# teardown

netns_inode() { stat -L -c %i "/run/netns/$1" 2>/dev/null || true; }

# Every process whose network namespace is the named one.
pids_in_netns() {
  local ino pid link
  ino=$(netns_inode "$1")
  [ -n "$ino" ] || return 0
  for link in /proc/[0-9]*/ns/net; do
    pid=${link#/proc/}; pid=${pid%%/*}
    [ "$(readlink "$link" 2>/dev/null)" = "net:[$ino]" ] && echo "$pid"
  done
  return 0
}

# The pid in a pid file, if that process still runs the named program. A record or pid file can
# outlive its processes (a reboot, a machine restored from a snapshot): its pid may belong to
# another program by now, which must never be signalled.
daemon_pid() { # pidfile, program
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
  echo "$pid"
}

stop_pidfile() { # name, pidfile (the name's first word is the program)
  local name=$1 pidfile=$2 pid
  [ -s "$pidfile" ] || return 0
  if pid=$(daemon_pid "$pidfile" "${name%% *}"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    say "stopped $name ($pid)"
  fi
  rm -f "$pidfile"
}

kill_netns_pids() { # netns name
  local pids
  for _ in 1 2 3 4 5; do
    pids=$(pids_in_netns "$1")
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
}

# Whether any daemon of the recorded cluster still runs.
recorded_alive() {
  [ -s "$record" ] || return 1
  local NODES='' n
  # shellcheck disable=SC1090
  . "$record"
  daemon_pid "$state/run/slurmctld.pid" slurmctld >/dev/null && return 0
  daemon_pid "$state/munge/munged.pid" munged >/dev/null && return 0
  for n in ${NODES:-}; do
    daemon_pid "$state/run/slurmd-$n.pid" slurmd >/dev/null && return 0
  done
  return 1
}

down() {
  if [ ! -s "$record" ]; then
    say "nothing recorded in $record: nothing to stop"
    return 0
  fi
  # shellcheck disable=SC1090
  . "$record"
  local n
  for n in ${NODES:-}; do
    stop_pidfile "slurmd $n" "$state/run/slurmd-$n.pid"
  done
  stop_pidfile slurmctld "$state/run/slurmctld.pid"
  for n in ${NODES:-}; do
    kill_netns_pids "$ns_prefix$n"
    ip netns del "$ns_prefix$n" 2>/dev/null || true
    ip link del "qsl-$n" 2>/dev/null || true
  done
  if [ "${BRIDGE:-}" = yes ]; then
    ip link del "$bridge" 2>/dev/null || true
  fi
  stop_pidfile munged "$state/munge/munged.pid"
  if [ "${NETNS_MOUNTED:-}" = yes ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
    rmdir /run/netns 2>/dev/null || true
  fi
  rm -f "$record"
  say "cluster stopped"
}

# ---------------------------------------------------------------------------------------------
# one node

node_addr() { echo "$net.$((10 + ${1#node}))"; }

start_node() { # node name
  local n=$1 addr
  addr=$(node_addr "$n")
  mkdir -p "$state/spool/$n" "$state/tmp/$n"
  if [ ! -e "/run/netns/$ns_prefix$n" ]; then
    ip netns add "$ns_prefix$n"
    ip link add "qsl-$n" type veth peer name eth0 netns "$ns_prefix$n"
    ip link set "qsl-$n" master "$bridge" up
    nsenter --net="/run/netns/$ns_prefix$n" ip addr add "$addr/24" dev eth0
    nsenter --net="/run/netns/$ns_prefix$n" ip link set eth0 up
    nsenter --net="/run/netns/$ns_prefix$n" ip link set lo up
  fi
  # Its own hostname and /etc/hosts; slurmd daemonizes and keeps both namespaces alive.
  nsenter --net="/run/netns/$ns_prefix$n" -- unshare --uts --mount --propagation private -- \
    sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && exec slurmd -f "$3" -N "$1"' \
    slurmd "$n" "$state/hosts" "$state/slurm.conf"
}

wait_idle() { # node names…
  # Up to 90 s: a restarted slurmd registers in a second or two on a quiet machine, but a
  # CI run on a busy one saw 20 s pass before its node was idle again.
  local n st all
  for _ in $(seq 900); do
    # A controller that died (a fork refused on a machine out of processes) never answers:
    # say so now rather than asking it for 90 s.
    if ! daemon_pid "$state/run/slurmctld.pid" slurmctld >/dev/null; then
      say "slurmctld is not running:"; tail -n 5 "$state/log/slurmctld.log" >&2 || true
      return 1
    fi
    all=yes
    for n in "$@"; do
      st=$(SLURM_CONF=$state/slurm.conf sinfo -h -n "$n" -o %t 2>/dev/null | head -1)
      case "$st" in
        down*|drain*|drng*|fail*)
          SLURM_CONF=$state/slurm.conf scontrol update NodeName="$n" State=RESUME 2>/dev/null || true ;;
      esac
      [ "$st" = idle ] || all=no
    done
    [ $all = yes ] && return 0
    sleep 0.1
  done
  say "nodes did not become idle:"
  SLURM_CONF=$state/slurm.conf sinfo -N -l >&2 || true
  return 1
}

kill_node() { # node name: the node dies
  local n=$1
  [ -e "/run/netns/$ns_prefix$n" ] || { say "no node $n"; return 2; }
  kill_netns_pids "$ns_prefix$n"
  rm -f "$state/run/slurmd-$n.pid"
  say "node $n killed (slurmd and every process in its namespaces)"
}

# ---------------------------------------------------------------------------------------------
# bring-up

up() {
  local nodes=$1
  if [ "$(id -u)" -ne 0 ]; then
    say "run as root (network namespaces, munged, slurmctld and slurmd are started directly)"
    exit 2
  fi
  if [ -s "$record" ]; then
    if recorded_alive; then
      say "a cluster is recorded in $record already and runs; stop it first (ci/slurm-down.sh)"
      exit 2
    fi
    say "a cluster recorded in $record no longer runs (a reboot?): clearing what it left first"
    down
  fi
  for tool in ip nsenter unshare munged slurmctld slurmd; do
    command -v "$tool" >/dev/null || { say "missing $tool"; exit 2; }
  done
  mkdir -p "$state"/{spool/ctld-nodes,log,run,munge,tmp}
  # From here on every step is recorded first, so `down` undoes a failed start.
  trap 'status=$?; if [ $status -ne 0 ]; then say "start failed; tearing down"; down; fi' EXIT
  local node_list=() n i
  for i in $(seq "$nodes"); do node_list+=("node$i"); done
  local was_mounted=no
  mountpoint -q /run/netns 2>/dev/null && was_mounted=yes
  {
    echo "NODES='${node_list[*]}'"
    echo "BRIDGE=yes"
    # `ip netns add` mounts /run/netns when it is not yet a mount point: undo only that.
    if [ $was_mounted = no ]; then echo "NETNS_MOUNTED=yes"; fi
  } > "$record"

  local cpus mem_kib real_mem
  cpus=$(nproc --all)
  mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  # Per node a share of the machine, a little below it so slurmd does not drain the node.
  real_mem=$(( mem_kib / 1024 * 90 / 100 / nodes ))

  {
    echo "127.0.0.1 localhost"
    echo "$net.1 ctl"
    for n in "${node_list[@]}"; do echo "$(node_addr "$n") $n"; done
  } > "$state/hosts"
  : > "$state/plugstack.conf"

  cat > "$state/slurm.conf" <<CONF
# generated by qualify ci/slurm-nodes.sh — ${nodes} nodes in network namespaces on bridge $bridge
ClusterName=qualify-nodes
SlurmctldHost=ctl($net.1)
SlurmctldPort=$port
SlurmdPort=6818
CommunicationParameters=NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.socket
CredType=cred/munge
MpiDefault=none
PlugStackConfig=$state/plugstack.conf
StateSaveLocation=$state/spool/ctld-nodes
SlurmdSpoolDir=$state/spool/%n
TmpFS=$state/tmp/%n
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd-%n.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd-%n.log
SlurmdTimeout=30
$(slurm_policy_conf "$state")
CONF
  for n in "${node_list[@]}"; do
    echo "NodeName=$n NodeAddr=$(node_addr "$n") NodeHostname=$n CPUs=$cpus RealMemory=$real_mem State=UNKNOWN" >> "$state/slurm.conf"
  done
  echo "PartitionName=debug Nodes=$(IFS=,; echo "${node_list[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$state/slurm.conf"

  # munge: its own key, socket, pid and log.
  if [ ! -s "$state/munge/munge.key" ]; then
    dd if=/dev/urandom bs=1 count=1024 of="$state/munge/munge.key" status=none
  fi
  chmod 0700 "$state/munge"
  chmod 0400 "$state/munge/munge.key"
  munged --force --socket="$state/munge/munge.socket" --key-file="$state/munge/munge.key" \
    --pid-file="$state/munge/munged.pid" --log-file="$state/munge/munged.log" \
    --seed-file="$state/munge/munged.seed"
  for _ in $(seq 50); do
    munge -n -S "$state/munge/munge.socket" </dev/null >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n -S "$state/munge/munge.socket" </dev/null | unmunge -S "$state/munge/munge.socket" >/dev/null \
    || { say "munged does not answer on $state/munge/munge.socket"; exit 1; }

  # The bridge: the controller's address, nothing routed anywhere else.
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  ip addr replace "$net.1/24" dev "$bridge"
  ip link set "$bridge" up

  # slurmctld in its own UTS + mount namespace: hostname `ctl`, our hosts file.
  # Its state lives apart from the single-node cluster's (ci/slurm-up.sh without --nodes):
  # slurmctld refuses a state directory written under another ClusterName.
  unshare --uts --mount --propagation private -- \
    sh -c 'hostname ctl && mount --bind "$1" /etc/hosts && exec slurmctld -f "$2"' \
    slurmctld "$state/hosts" "$state/slurm.conf" || {
    say "slurmctld did not start:"; tail -n 5 "$state/log/slurmctld.log" >&2 || true; exit 1; }
  for _ in $(seq 100); do
    SLURM_CONF=$state/slurm.conf scontrol ping 2>/dev/null | grep -q 'is UP' && break
    sleep 0.1
  done
  SLURM_CONF=$state/slurm.conf scontrol ping 2>/dev/null | grep -q 'is UP' || {
    say "slurmctld does not answer:"; tail -n 20 "$state/log/slurmctld.log" >&2 || true; exit 1; }

  for n in "${node_list[@]}"; do start_node "$n"; done
  if ! wait_idle "${node_list[@]}"; then
    for n in "${node_list[@]}"; do tail -n 5 "$state/log/slurmd-$n.log" >&2 || true; done
    exit 1
  fi
  trap - EXIT
  say "$nodes nodes idle (${node_list[*]}: $cpus CPUs, ${real_mem} MiB each) on $bridge $net.0/24; config $state/slurm.conf"
  say "clients need: export SLURM_CONF=$state/slurm.conf"
  echo "$state/slurm.conf"
}

case "${1:-}" in
  up) up "${2:?usage: ci/slurm-nodes.sh up N}" ;;
  down) down ;;
  kill) kill_node "${2:?usage: ci/slurm-nodes.sh kill NODE}" ;;
  alive) recorded_alive ;;   # exit 0 when a recorded cluster's daemon still runs
  start)
    n=${2:?usage: ci/slurm-nodes.sh start NODE}
    [ -e "/run/netns/$ns_prefix$n" ] || { say "no node $n"; exit 2; }
    pids=$(pids_in_netns "$ns_prefix$n")
    if [ -n "$pids" ]; then say "node $n is running (pids $pids)"; else start_node "$n"; fi
    wait_idle "$n"
    say "node $n idle"
    ;;
  *) echo "usage: ci/slurm-nodes.sh up N | down | alive | kill NODE | start NODE" >&2; exit 2 ;;
esac
