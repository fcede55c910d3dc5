#!/usr/bin/env bash
# Benchmark for multi-node cells (not a test): against a Slurm cluster of at least three nodes
# (ci/slurm-up.sh --nodes 3), prints side by side
#   1. time to verdict of a three-node deadlock (corpus/mpi/node_ring.c, 3 ranks on 3 nodes:
#      the nodes' leaders all in MPI_Recv over TCP) against the stall window (2 s, 4 s, 8 s):
#      the launcher's run until the coordinator stopped it, that time over the window, the
#      shortest time any node had been still when its agent called it stuck, and the whole
#      `qualify run` (submission, job start, agents, verdict, teardown);
#   2. qualify's CPU per multi-node cell — the coordinator (with the srun that starts the
#      agents) and the three agents (with their stack samplers) — for a passing cell that
#      computes for 10 s (corpus/mpi/allreduce.c) and for the deadlock at a 4 s window, next to
#      the CPU the ranks themselves used; and as a share of one core over the cell's time.
#
# Usage: SLURM_CONF=/var/lib/qualify-slurm/slurm.conf bench/nodes.sh
#        REPS=5 bench/nodes.sh          (default 3 runs per row)
#        QUALIFY=/path/to/qualify bench/nodes.sh   (measure that binary, skip the build)
# The work directory (BENCH_DIR, default a fresh one under /tmp) must be visible at the same path
# on every node, as the `qualify` binary must: true of the namespaced cluster on one machine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS="${REPS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

for tool in mpicc srun sinfo python3; do
    command -v "$tool" >/dev/null || { echo "bench/nodes.sh needs $tool on PATH" >&2; exit 2; }
done
nodes=$(sinfo -h -N -o %N | sort -u | wc -l)
if [[ "$nodes" -lt 3 ]]; then
    echo "bench/nodes.sh needs a cluster of 3 nodes (this one has $nodes): ci/slurm-up.sh --nodes 3" >&2
    exit 2
fi
if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi
work="${BENCH_DIR:-$(mktemp -d /tmp/qualify-bench-nodes.XXXXXX)}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/node_ring" "$ROOT/corpus/mpi/node_ring.c"
mpicc -O2 -o "$work/allreduce" "$ROOT/corpus/mpi/allreduce.c"

# spec COMMAND STALL TIMEOUT → qualify.toml in $work (one cell: 3 ranks on 3 nodes)
spec() {
    cat > "$work/qualify.toml" <<SPEC
[artifact]
name = "bench-nodes"
command = $1

[artifact.env]
OMPI_ALLOW_RUN_AS_ROOT = "1"
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = "1"

[claim]
level = "trial"

[functional]
command = "true"

[executor]
kind = "slurm"
launcher = "srun --mpi=pmix -n {ranks}"

[limits]
timeout = "$3"
stall = "$2"

[[axis]]
name = "nodes"
kind = "topology"
values = [3]

[[axis]]
name = "ranks"
kind = "topology"
values = [3]
SPEC
}

# run → prints one JSON line with the figures of the run's one cell
run() {
    rm -f "$work/receipt.json"
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$work" && "$QUALIFY" run qualify.toml --receipt receipt.json --no-ledger >/dev/null 2>&1) || true
    t1=$(date +%s.%N)
    python3 - "$work/receipt.json" "$t0" "$t1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["predicate"]["cells"][0]["result"]
n = c["evidence"].get("nodes", {})
agents = n.get("agents", [])
still = [a["stuck"].get("still_seconds") for a in agents if isinstance(a.get("stuck"), dict) and a["stuck"].get("still_seconds") is not None]
print(json.dumps({
    "outcome": c["outcome"],
    "verdict": c["evidence"].get("verdict_seconds", c["wall_seconds"]),
    "still": min(still) if still else None,
    "run": float(sys.argv[3]) - float(sys.argv[2]),
    "coordinator": n.get("cost", {}).get("coordinator_cpu_seconds", 0.0),
    "agents": [a.get("agent_cpu_seconds", 0.0) for a in agents],
    "ranks_cpu": sum(a.get("run_seconds", 0.0) for a in agents),
    "cell_seconds": c["wall_seconds"],
}))
PY
}

median() { python3 -c 'import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.2f}")' "$@"; }

echo "1. time to verdict of a three-node deadlock (node_ring, 3 ranks on 3 nodes), median of $REPS"
printf '%-8s %-9s %-10s %-14s %-14s %-12s %s\n' stall outcome verdict "verdict/stall" "over window" "node still" "qualify run"
for stall in 2 4 8; do
    spec '["./node_ring", "0.3"]' "${stall}s" "120s"
    v=() s=() w=() o=""
    for _ in $(seq "$REPS"); do
        line=$(run)
        o=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["outcome"])' "$line")
        v+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["verdict"])' "$line")")
        s+=("$(python3 -c 'import json,sys; x=json.loads(sys.argv[1])["still"]; print(x if x is not None else 0)' "$line")")
        w+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run"])' "$line")")
    done
    mv=$(median "${v[@]}")
    printf '%-8s %-9s %-10s %-14s %-14s %-12s %s\n' "${stall}s" "$o" "${mv}s" \
        "$(python3 -c "print(f'{$mv/$stall:.2f}')")" "$(python3 -c "print(f'{$mv-$stall:+.2f}s')")" \
        "$(median "${s[@]}")s" "$(median "${w[@]}")s"
done

echo
echo "2. qualify's CPU per multi-node cell (3 nodes, 3 ranks), median of $REPS"
printf '%-26s %-9s %-8s %-12s %-30s %-10s %s\n' cell outcome cell_s coordinator "agents (each)" ranks_cpu "qualify / core"
for what in pass deadlock; do
    if [[ $what == pass ]]; then
        spec '["./allreduce", "1000", "10"]' "4s" "120s"
        label="allreduce 10 s (ok)"
    else
        spec '["./node_ring", "0.3"]' "4s" "120s"
        label="node_ring (deadlock, 4 s)"
    fi
    lines=()
    for _ in $(seq "$REPS"); do lines+=("$(run)"); done
    python3 - "$label" "${lines[@]}" <<'PY'
import json, statistics, sys
label, rows = sys.argv[1], [json.loads(x) for x in sys.argv[2:]]
med = lambda k: statistics.median(r[k] for r in rows)
agents = [statistics.median(r["agents"][i] for r in rows) for i in range(min(len(r["agents"]) for r in rows))]
cell = med("cell_seconds")
qualify = med("coordinator") + sum(agents)
each = f"{sum(agents):.3f} ({', '.join(f'{a:.3f}' for a in agents)})"
print(f"{label:<26} {rows[0]['outcome']:<9} {cell:<8.2f} {med('coordinator'):<12.3f} "
      f"{each:<30} {med('ranks_cpu'):<10.2f} {100 * qualify / cell:.1f}%")
PY
done
