#!/usr/bin/env bash
# Benchmark (not a test): qualify's measurements against hyperfine's on the same commands, side
# by side in one run. For each command, ROUNDS rounds alternate the two tools (hyperfine first in
# odd rounds, qualify first in even ones) so machine noise hits both alike; each round measures
# RUNS runs per tool:
#   hyperfine --shell=none --warmup 1 --runs RUNS --export-json …  COMMAND
#   qualify probe --repeat RUNS --json -- COMMAND        (per-run wall_seconds from `runs`)
# Printed per command:
#   - the mean and standard deviation of the per-run wall time each tool reports, and their
#     ratios qualify/hyperfine (mean ratio > 1: qualify's supervision adds that much to a run;
#     stddev ratio: how much noisier qualify's figure is);
#   - the cost per measured run: the tool's whole invocation time divided by the runs it measured
#     (what the measurement costs, including qualify's cgroup setup and /proc sampling).
#
# Usage: bench/hyperfine.sh                 (RUNS=20 ROUNDS=3)
#        RUNS=50 ROUNDS=5 bench/hyperfine.sh
#        QUALIFY=/path/to/qualify bench/hyperfine.sh   (measure that binary, skip the build)
#        BACKEND=rlimit bench/hyperfine.sh             (qualify probe --backend; default auto)
# Needs: hyperfine (Debian package `hyperfine`), cc, python3, and cargo unless QUALIFY is set.
# Installs nothing: it names what is missing and exits 2.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-20}"
BACKEND="${BACKEND:-auto}"
ROUNDS="${ROUNDS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

missing=()
command -v hyperfine >/dev/null || missing+=("hyperfine (apt-get install hyperfine)")
command -v cc >/dev/null || missing+=("cc (apt-get install gcc libc6-dev)")
command -v python3 >/dev/null || missing+=("python3 (apt-get install python3)")
if [[ -z "${QUALIFY:-}" ]]; then
    command -v cargo >/dev/null || missing+=("cargo (or set QUALIFY=/path/to/qualify)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "bench/hyperfine.sh: missing: ${missing[*]}" >&2
    echo "install them and run again; this script installs nothing" >&2
    exit 2
fi

if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi
if [[ ! -x "$QUALIFY" ]]; then
    echo "bench/hyperfine.sh: $QUALIFY is not an executable qualify binary" >&2
    exit 2
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# A short CPU-bound loop (about 30 ms at -O1 on a current core), no I/O, no sleeping.
cat >"$WORK/spin.c" <<'C'
#include <stdio.h>
int main(void) {
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 60000000UL; i++) x += i ^ (x >> 3);
    return (int)(x & 0);
}
C
cc -O1 -o "$WORK/spin" "$WORK/spin.c"

python3 - "$QUALIFY" "$WORK" "$RUNS" "$ROUNDS" "$BACKEND" <<'PY'
import json, os, statistics, subprocess, sys, time

qualify, work, runs, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
backend_flag = sys.argv[5]
commands = [
    ("/bin/true", ["/bin/true"]),
    ("sleep 0.05", ["sleep", "0.05"]),
    ("cpu loop (spin.c)", [os.path.join(work, "spin")]),
]

def hyperfine(argv):
    out = os.path.join(work, "hf.json")
    cmd = " ".join(argv)
    t = time.perf_counter()
    subprocess.run(["hyperfine", "--shell=none", "--warmup", "1", "--runs", str(runs),
                    "--style", "none", "--export-json", out, cmd],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cost = time.perf_counter() - t
    with open(out) as f:
        return json.load(f)["results"][0]["times"], cost / (runs + 1)

def probe(argv):
    t = time.perf_counter()
    # spin lives in `work`, under /tmp, which the sandbox makes private: readable there.
    p = subprocess.run([qualify, "probe", "--backend", backend_flag, "--repeat", str(runs), "--json",
                        "--readable", work, "--"] + argv,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    cost = time.perf_counter() - t
    d = json.loads(p.stdout)
    if d.get("outcome") != "ok":
        sys.exit(f"qualify probe did not end ok on {argv}: {d.get('detail')}")
    return [r["wall_seconds"] for r in d["runs"]], cost / runs, d["enforcement"]["backend"]

backend = "?"
print(f"host: {os.cpu_count()} cpus, {os.uname().release}; "
      f"{rounds} rounds x {runs} runs per tool and command, alternating")
print(f"hyperfine: {subprocess.run(['hyperfine', '--version'], capture_output=True, text=True).stdout.strip()}"
      f" (--shell=none, 1 warm-up run)")
rows = []
for label, argv in commands:
    hf, q, hf_cost, q_cost = [], [], [], []
    for r in range(rounds):
        order = ["h", "q"] if r % 2 == 0 else ["q", "h"]
        for tool in order:
            if tool == "h":
                times, cost = hyperfine(argv)
                hf += times
                hf_cost.append(cost)
            else:
                times, cost, backend = probe(argv)
                q += times
                q_cost.append(cost)
    rows.append((label, hf, q, statistics.mean(hf_cost), statistics.mean(q_cost)))
print(f"qualify: {qualify} (backend {backend})")
print()
ms = lambda x: f"{x * 1000:9.2f}"
print(f"{'command':<20}{'':>2}{'mean ms':>9}{'sd ms':>9}{'min ms':>9}{'cost/run ms':>13}")
for label, hf, q, hc, qc in rows:
    for name, xs, cost in (("hyperfine", hf, hc), ("qualify", q, qc)):
        print(f"{label if name == 'hyperfine' else '':<20}{name[0]:>2}{ms(statistics.mean(xs))}"
              f"{ms(statistics.stdev(xs))}{ms(min(xs))}{ms(cost):>13}")
print()
print("ratios qualify / hyperfine")
print(f"{'command':<20}{'mean':>9}{'stddev':>9}{'cost/run':>10}{'mean diff ms':>14}")
for label, hf, q, hc, qc in rows:
    mh, mq = statistics.mean(hf), statistics.mean(q)
    sh, sq = statistics.stdev(hf), statistics.stdev(q)
    print(f"{label:<20}{mq / mh:9.2f}{(sq / sh if sh > 0 else float('inf')):9.2f}"
          f"{qc / hc:10.2f}{(mq - mh) * 1000:14.2f}")
print()
print("h = hyperfine, q = qualify probe. mean/sd/min: the per-run wall time each tool reports;")
print("cost/run: the tool's whole invocation time / runs measured (hyperfine counts its warm-up).")
PY
