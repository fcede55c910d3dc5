#!/usr/bin/env bash
# What the ledger costs: `qualify run` of a one-cell spec with and without the ledger (side by
# side, mean wall time over N runs, and the ratio), then the time per receipt of appending
# receipts with many cells, and of `ledger verify` and `ledger stats` over them.
# Usage: bench/ledger.sh [QUALIFY_BINARY] [N]
set -euo pipefail
QUALIFY=${1:-target/release/qualify}
N=${2:-20}
[ -x "$QUALIFY" ] || { echo "build first: cargo build --release (or pass the binary)" >&2; exit 2; }
QUALIFY=$(realpath "$QUALIFY")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > qualify.toml <<'TOML'
[artifact]
name = "echoer"
command = "echo {n}"

[claim]
level = "trial"

[functional]
command = "true"

[[axis]]
name = "n"
kind = "workload"
values = [1]
TOML

mean_ms() { # command... ; prints the mean wall time of N runs in ms
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$N"); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  echo $(( (end - start) / N / 1000000 ))
}

without=$(mean_ms "$QUALIFY" run --no-ledger --receipt r.json)
with=$(mean_ms "$QUALIFY" run --receipt r.json)
printf '%-34s %10s %10s %8s\n' "qualify run (1 cell), mean of $N" "no ledger" "ledger" "ratio"
printf '%-34s %8sms %8sms %8s\n' "" "$without" "$with" "$(awk -v a="$with" -v b="$without" 'BEGIN{printf "%.2f", (b>0?a/b:0)}')"

# Appending receipts of 150 cells each.
python3 - <<'PY'
import json
for i in range(200):
    cells=[{"params":{"threads":j%8,"n":j},"result":{"outcome":"deadlock" if j%3==0 else "ok","limits":{"timeout_seconds":30.0}}} for j in range(150)]
    json.dump({"predicate":{"claim":{"level":"trial","supported":False},"cells":cells,"run":{"artifact":{"name":"a%d"%(i%5)},"started":str(i)}}},open("f%03d.json"%i,"w"),indent=2)
PY
t0=$(date +%s%N); "$QUALIFY" ledger --ledger big.sqlite append f*.json; t1=$(date +%s%N)
"$QUALIFY" ledger --ledger big.sqlite verify >/dev/null; t2=$(date +%s%N)
"$QUALIFY" ledger --ledger big.sqlite stats --json >/dev/null; t3=$(date +%s%N)
printf '\n%-40s %10s\n' "200 receipts x 150 cells" "wall"
printf '%-40s %8sms  (%s ms/receipt)\n' "ledger append (one process)" $(( (t1-t0)/1000000 )) "$(awk -v t=$(( (t1-t0)/1000 )) 'BEGIN{printf "%.2f", t/200/1000}')"
printf '%-40s %8sms\n' "ledger verify" $(( (t2-t1)/1000000 ))
printf '%-40s %8sms\n' "ledger stats" $(( (t3-t2)/1000000 ))
printf '%-40s %8s\n' "ledger size" "$(du -h big.sqlite | cut -f1)"
