#!/usr/bin/env bash
# The orders envelope by hand: for each workers × rps cell of qualify.toml, start orders.py,
# wait for /healthz, run the load generator's example driver (crates/qualify-load/examples/
# loadgen.rs) with the spec's [load] and [[slo]], print the cell's outcome, stop the service.
# This is what a service cell of `qualify run` does, minus the probe's supervision; it checks
# the arithmetic in README.md. The plan below mirrors qualify.toml's [load] — keep them equal.
#
# Usage: examples/orders/envelope.sh            (builds the driver in release mode first)
#        LOADGEN=/path/to/loadgen examples/orders/envelope.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
if [ -z "${LOADGEN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q -p qualify-load --example loadgen)
  LOADGEN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/loadgen"
fi
WORKERS=(2 4 8)
RPS=(100 180 300 600)
SLOS=(latency_p99:max:0.1 error_rate:max:0.01)
plan() {
  printf '{"model":"open","rate":%s,"duration_seconds":5,"warmup_seconds":1,"timeout_seconds":2,"max_in_flight":64,"requests":[{"http":{"method":"POST","path":"/orders/{seq}","body":"{\\"id\\": {seq}, \\"note\\": \\"{pad:32}\\"}","headers":{"content-type":"application/json"},"expect_status":[201]}}]}' "$1"
}
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
printf '%-8s %-6s %-6s %-13s %9s %8s %9s %9s  %s\n' workers rps rho outcome achieved dropped p50_ms p99_ms detail
for w in "${WORKERS[@]}"; do
  for r in "${RPS[@]}"; do
    python3 "$HERE/orders.py" --port 0 --workers "$w" --service-time 0.01 > "$tmp/out" &
    pid=$!
    for _ in $(seq 100); do grep -q listening "$tmp/out" && break; sleep 0.1; done
    addr=$(awk '{print $4}' "$tmp/out")
    "$LOADGEN" "$(plan "$r")" "$addr" "${SLOS[@]}" > "$tmp/cell.json"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    python3 - "$w" "$r" "$tmp/cell.json" <<'PY'
import json, sys
w, r, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
d = json.load(open(path)); rep = d["report"]; c = rep["latency"]["corrected"]
ms = lambda v: "%.1f" % (v * 1e3) if v is not None else "-"
print("%-8d %-6d %-6.2f %-13s %9.1f %8d %9s %9s  %s" % (
    w, r, r * 0.01 / w, d["outcome"], rep["achieved_rate"], rep["dropped"],
    ms(c["p50"]), ms(c["p99"]), d["detail"] or ""))
PY
  done
done
