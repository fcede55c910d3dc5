#!/usr/bin/env bash
# Benchmark for the fault proxy (qualify-faults), not a test. Against one redis-server started
# here (loopback, no persistence), prints side by side in one run:
#   1. overhead at an offered rate (open model, as qualify drives a service: 1k, 5k, 10k PING/s
#      over 8 connections, latency from each request's intended start) and at saturation (closed
#      loop over 1, 8, 32 connections: the most the proxy forwards here), each run for
#      SECONDS_PER_RUN s direct to redis and through the proxy with no fault, alternating for
#      ROUNDS rounds (medians): achieved rate and its ratio proxy/direct (goal ≥ 0.90 at an
#      offered rate), p50 and the p50 the proxy adds (goal ≤ 100 µs), p99;
#   2. reaction: for reset, down and latency(50ms), the time from the window's scheduled start
#      to the first request a client sees affected (goal ≤ 10 ms), over TRIALS trials, and how
#      late the proxy itself switched the fault on.
# The load generator, redis and the proxy share this machine's cores: the figures include that
# contention, as they would in a qualify run.
#
# Usage: bench/proxy.sh                          (SECONDS_PER_RUN=3 ROUNDS=3 TRIALS=10)
#        SECONDS_PER_RUN=5 ROUNDS=5 TRIALS=20 bench/proxy.sh
# Needs: cargo, redis-server (Debian package redis-server), python3 (to pick a free port).
# Builds the example with `cargo build --release`; honours CARGO_TARGET_DIR. Installs nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECS="${SECONDS_PER_RUN:-3}"
ROUNDS="${ROUNDS:-3}"
TRIALS="${TRIALS:-10}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

missing=()
command -v redis-server >/dev/null || missing+=("redis-server (apt-get install redis-server)")
command -v cargo >/dev/null || missing+=("cargo")
command -v python3 >/dev/null || missing+=("python3")
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "bench/proxy.sh: missing: ${missing[*]}; install them and run again" >&2
    exit 2
fi

echo "building the proxy benchmark (release)..." >&2
(cd "$ROOT" && cargo build --release -p qualify-faults --example proxy_bench --quiet)

WORK="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
    >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
trap 'kill "$REDIS_PID" 2>/dev/null; wait "$REDIS_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null; then
        break
    fi
    sleep 0.05
done

echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1:$PORT; $(nproc) cores"
"$TARGET/release/examples/proxy_bench" "127.0.0.1:$PORT" \
    --seconds "$SECS" --rounds "$ROUNDS" --trials "$TRIALS"
