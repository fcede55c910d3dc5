#!/usr/bin/env bash
# Benchmark (not a test): a split load on the cluster against one local generator. The same
# service — redis-server answering PING over its line protocol, fast enough that the load
# generator, not the service, is what runs out first — qualified as one cell at RATE req/s
# offered for SECS seconds:
#
#   local, 1 generator      `--executor local`: the generator in qualify's process, on this machine
#   slurm, N = 1, 2, 3      `--executor slurm`, `[load] generators = N`: the service on the first
#                           node, N `qualify load-gen` job steps on the other nodes (sharing
#                           them when N exceeds them), their reports merged into one
#
# Printed per run: the merged achieved rate (answers/s in the measured phase), its ratio to the
# local generator's, the sent count and the per-generator achieved rate, CPU seconds and
# whether it saturated (a saturated generator makes the cell `interrupted`, never the
# service's fault). Caveat: the nodes of ci/slurm-up.sh --nodes 3 are network namespaces of
# ONE machine, so the generators share its cores with the service and each other; the figures
# show the mechanism's cost and that the merge is whole, not a real cluster's scaling.
#
# Usage: export SLURM_CONF=$(ci/slurm-up.sh --nodes 3); bench/cluster.sh
#        RATE=20000 SECS=5 QUALIFY=target/release/qualify bench/cluster.sh
# Needs: a Slurm controller with >= 2 nodes answering, redis-server, python3, a built qualify
# (default target/debug/qualify; cargo build -p qualify).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RATE="${RATE:-20000}"
SECS="${SECS:-5}"
QUALIFY="${QUALIFY:-$ROOT/target/debug/qualify}"
QUALIFY="$(cd "$(dirname "$QUALIFY")" && pwd)/$(basename "$QUALIFY")"

command -v redis-server >/dev/null || { echo "bench/cluster.sh: needs redis-server" >&2; exit 2; }
scontrol ping 2>/dev/null | grep -q 'is UP' || {
  echo "bench/cluster.sh: no Slurm controller answers (export SLURM_CONF=\$(ci/slurm-up.sh --nodes 3))" >&2; exit 2; }
[ -x "$QUALIFY" ] || { echo "bench/cluster.sh: no qualify at $QUALIFY (cargo build -p qualify)" >&2; exit 2; }

# Shared with the nodes (the run directory and spec must be visible there): under target/.
work="$ROOT/target/bench-cluster.$$"
mkdir -p "$work"
# Kept with KEEP=1 (each run's receipt.json and out.txt), removed otherwise.
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT

spec() { # generators
  cat <<TOML
[artifact]
name = "bench-redis-ping"
command = "redis-server --port {port} --bind \$HOST --protected-mode no --save '' --appendonly no"

[claim]
level = "trial"

[functional]
command = ["redis-server", "--version"]

[limits]
timeout = "120s"

[service]
ready = { tcp = true, within = "10s" }

[load]
rate = $RATE
duration = "${SECS}s"
warmup = "1s"
timeout = "1s"
generators = $1

[[load.request]]
tcp = { send = "PING\\r\\n", expect = "+PONG" }
TOML
}

# One run: executor, generators → "achieved sent per-generator…" from the receipt.
run() {
  local executor=$1 n=$2 dir="$work/$1-$2"
  mkdir -p "$dir"
  spec "$n" > "$dir/qualify.toml"
  (cd "$dir" && "$QUALIFY" run qualify.toml --no-ledger --receipt receipt.json \
      --executor "$executor" >"$dir/out.txt" 2>&1) || true
  python3 - "$dir/receipt.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    c = r["predicate"]["cells"][0]["result"]
except Exception as e:
    print("- - (no receipt: %s)" % e)
    sys.exit(0)
l = c.get("load") or {}
gens = l.get("generators") or []
nodes = {g["index"]: g["node"] for g in (c.get("evidence", {}).get("cluster", {}) or {}).get("generators", [])}
per = "; ".join(
    "%s %.0f/s cpu %.2fs%s" % (nodes.get(g["index"], "local"), g["achieved_rate"], g["cpu_seconds"],
                               " SATURATED" if g.get("saturated") else "")
    for g in gens) or "in-process, cpu %.2fs%s" % (
        (l.get("generator") or {}).get("cpu_seconds", 0.0),
        " SATURATED" if (l.get("generator") or {}).get("saturated") else "")
print("%.0f %d %s [%s]" % (l.get("achieved_rate", 0.0), l.get("sent", 0), c["outcome"], per))
PY
}

printf 'offered %s req/s for %s s (redis PING); qualify %s\n' "$RATE" "$SECS" "$QUALIFY"
printf '%-22s %12s %8s %10s  %s\n' run "achieved/s" "ratio" sent "outcome [per generator]"
read -r base sent rest <<<"$(run local 1)"
printf '%-22s %12s %8s %10s  %s\n' "local, 1 generator" "$base" "1.00" "$sent" "$rest"
for n in 1 2 3; do
  read -r got sent rest <<<"$(run slurm "$n")"
  ratio=$(python3 -c "import sys; b=float(sys.argv[1]); g=float(sys.argv[2]); print('%.2f' % (g/b) if b > 0 else '-')" "$base" "$got" 2>/dev/null || echo -)
  printf '%-22s %12s %8s %10s  %s\n' "slurm, $n generator(s)" "$got" "$ratio" "$sent" "$rest"
done
