#!/usr/bin/env bash
# Benchmark (not a test): qualify's load generator (crates/qualify-load, driven through its
# example `loadgen`) side by side with wrk against the same local nginx, in one run.
#
#   1. Sustained rate: ROUNDS rounds alternate `wrk -t2 -c64` and qualify's closed model with
#      64 users on 2 threads, SECS seconds each (wrk first in odd rounds, qualify first in
#      even ones, so machine noise hits both alike). Printed: the median requests/s of each
#      and the ratio qualify/wrk. Goal: >= 0.8.
#   2. p50 agreement at the same concurrency (1 and 8 connections; wrk -t1, qualify closed
#      model on 1 thread): the median p50 of each and the ratio. Goal: within 10%.
#      Beside it, qualify's open model at half the rate wrk reached with 1 connection: its
#      corrected and uncorrected p50 (wrk has no fixed-rate mode to compare with).
#   3. Memory: qualify's open model at RSS_RATE req/s for RSS_SECS seconds; the generator
#      process's peak resident memory (VmHWM), its CPU, and whether it kept the schedule.
#      Goal: peak RSS <= 64 MiB.
#
# Usage: bench/load.sh                   (SECS=5 ROUNDS=3 RSS_SECS=60 RSS_RATE=5000)
#        SECS=10 ROUNDS=5 bench/load.sh
#        LOADGEN=/path/to/loadgen bench/load.sh   (skip the build)
# Needs: wrk (Debian package `wrk`), nginx (installed here as Debian's `nginx-light` with
# apt-get when missing — for this benchmark only; the tests never need it), python3, cargo
# unless LOADGEN is set. On a shared 2-core machine the three programs compete for the same
# cores; the figures are ratios of medians for that reason.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECS="${SECS:-5}"
ROUNDS="${ROUNDS:-3}"
RSS_SECS="${RSS_SECS:-60}"
RSS_RATE="${RSS_RATE:-5000}"

command -v wrk >/dev/null || { echo "load.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "load.sh: needs python3" >&2; exit 2; }
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  echo "load.sh: installing nginx-light with apt-get (for this benchmark only)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >&2 \
    || { echo "load.sh: could not install nginx-light; install nginx and rerun" >&2; exit 2; }
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if [ -z "${LOADGEN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q -p qualify-load --example loadgen)
  LOADGEN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/loadgen"
fi

work=$(mktemp -d)
nginx_pid=
cleanup() {
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/html" "$work/logs"
printf 'hello from nginx\n' > "$work/html/index.html"
cat > "$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  server { listen 127.0.0.1:$port; root $work/html; }
}
CONF
"$NGINX" -c "$work/nginx.conf" -p "$work" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break; sleep 0.1; done
URL="http://127.0.0.1:$port/"
ADDR="127.0.0.1:$port"

# wrk THREADS CONNS -> "rate p50_seconds"
wrk_run() {
  wrk -t"$1" -c"$2" -d"${SECS}s" --latency "$URL" | python3 -c '
import re, sys
text = sys.stdin.read()
rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", text).group(1))
m = re.search(r"^\s+50%\s+([0-9.]+)(us|ms|s)\s*$", text, re.M)
p50 = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
print(rate, p50)'
}
# qualify PLAN_JSON -> "achieved p50_corrected p50_uncorrected cpu saturated peak_rss"
q_run() {
  "$LOADGEN" "$1" "$ADDR" | python3 -c '
import json, sys
d = json.load(sys.stdin); r = d["report"]; l = r["latency"]
print(r["achieved_rate"], l["corrected"]["p50"], l["uncorrected"]["p50"],
      r["generator"]["cpu_seconds"], int(r["generator"]["saturated"]), d["peak_rss_bytes"])'
}
closed() { # USERS THREADS
  printf '{"model":"closed","users":%s,"threads":%s,"duration_seconds":%s,"timeout_seconds":2,"max_in_flight":%s,"requests":[{"http":{"path":"/"}}]}' "$1" "$2" "$SECS" "$1"
}
open_plan() { # RATE SECONDS
  printf '{"model":"open","rate":%s,"duration_seconds":%s,"warmup_seconds":1,"timeout_seconds":2,"max_in_flight":256,"requests":[{"http":{"path":"/"}}]}' "$1" "$2"
}
median() { python3 -c 'import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
ratio() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print("%.2f" % (a / b) if b else "n/a")' "$1" "$2"; }

echo "nginx (2 workers) on $ADDR; ${ROUNDS} rounds of ${SECS} s; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "1. Sustained rate, 64 connections, 2 generator threads"
wrk_rates=(); q_rates=()
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    w=$(wrk_run 2 64); q=$(q_run "$(closed 64 2)")
  else
    q=$(q_run "$(closed 64 2)"); w=$(wrk_run 2 64)
  fi
  wrk_rates+=("${w%% *}"); q_rates+=("${q%% *}")
  printf '   round %d: wrk %9.0f req/s   qualify %9.0f req/s\n' "$round" "${w%% *}" "${q%% *}"
done
w_med=$(median "${wrk_rates[@]}"); q_med=$(median "${q_rates[@]}")
printf '   median:  wrk %9.0f req/s   qualify %9.0f req/s   qualify/wrk = %s (goal >= 0.80)\n' "$w_med" "$q_med" "$(ratio "$q_med" "$w_med")"
echo
echo "2. p50 at the same concurrency (1 generator thread)"
c1_rate=
for conns in 1 8; do
  w50=(); q50=(); wr=(); qr=()
  for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then
      w=$(wrk_run 1 "$conns"); q=$(q_run "$(closed "$conns" 1)")
    else
      q=$(q_run "$(closed "$conns" 1)"); w=$(wrk_run 1 "$conns")
    fi
    wr+=("${w%% *}"); w50+=("${w##* }"); set -- $q; qr+=("$1"); q50+=("$2")
  done
  wm=$(median "${w50[@]}"); qm=$(median "${q50[@]}")
  [ "$conns" -eq 1 ] && c1_rate=$(median "${wr[@]}")
  printf '   %d connection(s): p50 wrk %7.1f us   qualify %7.1f us   qualify/wrk = %s (goal 0.90-1.10); req/s wrk %.0f, qualify %.0f\n' \
    "$conns" "$(python3 -c "print($wm*1e6)")" "$(python3 -c "print($qm*1e6)")" "$(ratio "$qm" "$wm")" \
    "$(median "${wr[@]}")" "$(median "${qr[@]}")"
done
half=$(python3 -c "print(max(1, round($c1_rate / 2)))")
set -- $(q_run "$(open_plan "$half" "$SECS")")
printf '   open model at %s req/s (half of wrk'"'"'s 1-connection rate): achieved %.0f, p50 corrected %.1f us, uncorrected %.1f us, saturated %s\n' \
  "$half" "$1" "$(python3 -c "print($2*1e6)")" "$(python3 -c "print($3*1e6)")" "$5"
echo
echo "3. Memory: open model at $RSS_RATE req/s for $RSS_SECS s"
set -- $(q_run "$(open_plan "$RSS_RATE" "$RSS_SECS")")
printf '   achieved %.0f req/s, generator CPU %.1f s, saturated %s, peak RSS %.1f MiB (goal <= 64 MiB)\n' \
  "$1" "$4" "$5" "$(python3 -c "print($6/1048576)")"
