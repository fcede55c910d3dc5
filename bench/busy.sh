#!/usr/bin/env bash
# Do service and fault verdicts hold on a busy machine? Runs the service and fault test suites
# twice side by side in one session: once on the machine as it is, once with a busy neighbour
# (SPINNERS processes spinning at nice 0, default 2: every core taken), N times each, and prints
# per test how often it passed quiet vs busy. A verdict that flips only under the neighbour is a
# defect of the verdict (issue 30, 36): the product should measure again or say "too noisy to
# judge", not decide differently.
#
# Usage: bench/busy.sh [N] [TEST_BINARY...]   (default N=2; binaries: faults_cli service_cli
#        depfaults_cli). Needs what .ci/run installs (redis-server, PostgreSQL, python3-redis…).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-2}
shift || true
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(faults_cli service_cli depfaults_cli)
spinners=${SPINNERS:-2}
cargo test -q -p qualify --no-run "${suites[@]/#/--test=}" >/dev/null 2>&1
log=$(mktemp -d /var/tmp/qualify-busy.XXXXXX)
declare -A passed
pids=()
stop_spinners() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop_spinners; rm -rf "$log"' EXIT
for mode in quiet busy; do
  if [ "$mode" = busy ]; then
    for _ in $(seq 1 "$spinners"); do nice -n 0 sh -c 'while :; do :; done' & pids+=($!); done
  fi
  for i in $(seq 1 "$n"); do
    for suite in "${suites[@]}"; do
      out="$log/$suite-$mode-$i"
      cargo test -p qualify --test "$suite" --no-fail-fast -- --test-threads=1 >"$out" 2>&1 || true
      while read -r t; do
        passed["$suite::$t|$mode"]=$(( ${passed["$suite::$t|$mode"]:-0} + 1 ))
      done < <(sed -n 's/^test \([a-z_0-9]*\) \.\.\. ok$/\1/p' "$out")
      while read -r t; do
        passed["$suite::$t|$mode"]=${passed["$suite::$t|$mode"]:-0}
      done < <(sed -n 's/^test \([a-z_0-9]*\) \.\.\. FAILED$/\1/p' "$out")
    done
  done
  stop_spinners
done
printf '%-100s %6s %6s\n' "test (passed of $n)" quiet busy
for key in $(printf '%s\n' "${!passed[@]}" | sed 's/|.*//' | sort -u); do
  printf '%-100s %6s %6s\n' "$key" "${passed["$key|quiet"]:-0}" "${passed["$key|busy"]:-0}"
done
