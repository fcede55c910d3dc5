#!/usr/bin/env bash
# Stop the Slurm started by ci/slurm-up.sh. A multi-node cluster (its record `cluster.env` in
# the state directory) is torn down by ci/slurm-nodes.sh: daemons by pid, every process left in
# the nodes' namespaces, the namespaces, the bridge, its munged. A single node: slurmd,
# slurmctld, then munged (only the daemons whose pid files ci/slurm-up.sh's state directory
# holds, plus munged's own pid file).
set -uo pipefail
state=${QUALIFY_SLURM_STATE:-/var/lib/qualify-slurm}
if [ -s "$state/cluster.env" ]; then
  QUALIFY_SLURM_STATE=$state exec "$(dirname "$0")/slurm-nodes.sh" down
fi
stop() { # name, pidfile
  local name=$1 pidfile=$2 pid
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  # Only a process still running that program: a stale pid file's pid may be another's now.
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    echo "slurm-down: stopped $name ($pid)" >&2
  fi
  rm -f "$pidfile"
}
stop slurmd "$state/run/slurmd.pid"
stop slurmctld "$state/run/slurmctld.pid"
stop munged /run/munge/munged.pid
exit 0
