#!/usr/bin/env bash
# How much CPU does qualify itself spend driving a large plan through Slurm? Runs a plan of N
# cells (default 1000) of `true` with `qualify run --executor slurm` against the local cluster
# (ci/slurm-up.sh) and prints qualify's own user+sys CPU (from /proc/<pid>/stat, sampled until
# it exits: its own threads only, not sbatch/squeue/scancel nor the jobs) next to the CPU of its
# direct children (sbatch/squeue/scancel calls) and the wall time.
#
#   bench/slurm_scale.sh [CELLS] [QUALIFY]
set -euo pipefail
cells=${1:-1000}
qualify=${2:-$(dirname "$0")/../target/release/qualify}
if [ ! -x "$qualify" ]; then
  echo "slurm_scale: build first (cargo build --release -p qualify) or pass the binary" >&2
  exit 2
fi
qualify=$(realpath "$qualify")
scontrol ping | grep -q 'is UP' || { echo "slurm_scale: no Slurm controller (ci/slurm-up.sh)" >&2; exit 2; }
work=$(mktemp -d /tmp/qualify-slurm-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/qualify.toml" <<SPEC
[artifact]
name = "scale"
command = "true {i}"

[claim]
level = "trial"

[functional]
command = "true"

[executor]
kind = "slurm"

[limits]
timeout = "30s"
stall = "10s"

[[axis]]
name = "i"
kind = "workload"
range = [1, $cells]
step = 1
SPEC
tick=$(getconf CLK_TCK)
cd "$work"
start=$(date +%s.%N)
"$qualify" run qualify.toml --receipt receipt.json >/dev/null 2>run.log &
pid=$!
self=0 kids=0
while kill -0 "$pid" 2>/dev/null; do
  # Fields after the command name: utime(14) stime(15) cutime(16) cstime(17).
  if stat=$(cat "/proc/$pid/stat" 2>/dev/null); then
    read -r ut st cut cst < <(echo "${stat##*) }" | awk '{print $12, $13, $14, $15}')
    self=$((ut + st)) kids=$((cut + cst))
  fi
  sleep 0.1
done
wait "$pid" && rc=0 || rc=$?
end=$(date +%s.%N)
done_cells=$(python3 -c 'import json,sys; r=json.load(open("receipt.json")); print(r["predicate"]["tested"]["cells_completed"])' 2>/dev/null || echo "?")
awk -v s="$self" -v k="$kids" -v t="$tick" -v a="$start" -v b="$end" -v n="$cells" -v d="$done_cells" -v rc="$rc" 'BEGIN {
  w = b - a
  printf "cells planned %d, completed %s, exit %d\n", n, d, rc
  printf "qualify own CPU (user+sys):        %8.2f s  (%.2f ms/cell)\n", s/t, 1000*s/t/n
  printf "sbatch/squeue/scancel CPU:         %8.2f s\n", k/t
  printf "wall:                              %8.2f s  (the jobs themselves, on this cluster)\n", w
  printf "own CPU / wall:                    %8.3f\n", (s/t)/w
}'
