#!/usr/bin/env bash
# Benchmark for schedule perturbation (not a test): prints, per program of corpus/perturb/ (our
# own programs of SCTBench's bug classes — lock-order deadlock with a narrow window, atomicity
# violation, order violation, lost wake-up — their correct twins, and correct concurrent
# programs: bounded queue, barrier phases, condition-variable and semaphore handoffs):
#   1. the bare failure rate over N runs (`qualify probe --repeat N`, no perturbation);
#   2. per mode (pct, noise, sched): the perturbed failure rate over N runs and the runs to the
#      first failure (`qualify probe --perturb --mode M --runs N`);
#   3. runs per second, bare and per mode, side by side;
#   4. the closing line: every buggy program found within N perturbed runs where bare runs
#      found it in fewer than half, and no correct program ever failed.
#
# Usage: bench/perturb.sh                 (N=1000 runs per program and mode)
#        N=200 bench/perturb.sh
#        PROGRAMS="lock_order atomicity" N=300 bench/perturb.sh
#        QUALIFY=/path/to/qualify bench/perturb.sh   (measure that binary, skip the build)
# Needs: cargo, cc, python3. Builds with `cargo build --release`; honours CARGO_TARGET_DIR.
# A deadlocked run costs the stall window (STALL, default 300ms) before its verdict.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${N:-1000}"
STALL="${STALL:-300ms}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

# Not under /tmp: the sandbox gives every cell a private /tmp.
WORK="$(mktemp -d -p /var/tmp qualify-perturb-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
for src in "$ROOT"/corpus/perturb/*.c; do
    cc -g -O1 -pthread -o "$WORK/$(basename "${src%.c}")" "$src"
done

python3 - "$QUALIFY" "$WORK" "$N" "$STALL" "${PROGRAMS:-}" <<'PY'
import json, os, subprocess, sys, time

qualify, work, n, stall, only = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
buggy = ["lock_order", "atomicity", "order_violation", "lost_wakeup"]
correct = ["lock_order_ok", "atomicity_ok", "order_violation_ok", "lost_wakeup_ok",
           "bounded_queue", "barrier_phases", "handoff"]
programs = [p for p in buggy + correct if not only or p in only]
modes = ["pct", "noise", "sched"]
common = ["--stall", stall, "--timeout", "20s", "--json"]

def probe(args):
    t = time.perf_counter()
    p = subprocess.run([qualify, "probe", *args], cwd=work, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    try:
        return json.loads(p.stdout), dt
    except ValueError:
        sys.exit(f"qualify probe {' '.join(args)}: no JSON (exit {p.returncode})")

def bare(prog):
    r, dt = probe(common + ["--repeat", str(n), "--", f"./{prog}"])
    runs = r.get("runs") or [r]
    failed = [i for i, x in enumerate(runs) if x["outcome"] != "ok"]
    return len(failed), len(runs), (failed[0] + 1 if failed else None), len(runs) / dt

def perturbed(prog, mode):
    r, dt = probe(common + ["--perturb", "--mode", mode, "--runs", str(n), "--replays", "0",
                            "--no-minimise", "--", f"./{prog}"])
    p = r["perturb"]
    failed = sum(f["count"] for f in p["failures"])
    first = min((f["first_run"] + 1 for f in p["failures"]), default=None)
    kinds = ",".join(sorted({f["outcome"] for f in p["failures"]}))
    return failed, p["runs"], first, p["runs_per_second"], kinds, p.get("slowed", 0)

def pct(a, b):
    return f"{100.0 * a / b:5.1f}%" if b else "    -"

print(f"host: {os.cpu_count()} cpus, {os.uname().release}; N={n} runs per program and mode; stall {stall}")
print()
hdr = f"{'program':<20}{'bare fail':>11}{'1st':>6}" + "".join(f"{m + ' fail':>13}{'1st':>6}" for m in modes) + "  outcomes"
print(hdr)
rates = {}
closing = []
for prog in programs:
    bf, bn, bfirst, brps = bare(prog)
    row = f"{prog:<20}{pct(bf, bn):>11}{str(bfirst or '-'):>6}"
    kinds = set()
    found_within = None
    rps = {"bare": brps}
    slowed = 0
    for m in modes:
        f, runs, first, r_s, k, sl = perturbed(prog, m)
        rps[m] = r_s
        slowed += sl
        if k:
            kinds.update(k.split(","))
        if first is not None:
            found_within = first if found_within is None else min(found_within, first)
        row += f"{pct(f, runs):>13}{str(first or '-'):>6}"
    print(row + "  " + (",".join(sorted(kinds)) or "ok") + (f" ({slowed} slowed)" if slowed else ""))
    rates[prog] = rps
    closing.append((prog, prog in buggy, bf / bn if bn else 0.0, found_within, kinds))

print()
print("runs per second (bare = `--repeat`, perturbed = the campaign's own count)")
print(f"{'program':<20}{'bare':>9}" + "".join(f"{m:>9}" for m in modes))
for prog in programs:
    r = rates[prog]
    print(f"{prog:<20}{r['bare']:9.1f}" + "".join(f"{r[m]:9.1f}" for m in modes))

print()
bugs_ok = [p for p, b, rate, first, _ in closing if b and first is not None and rate < 0.5]
bugs = [p for p, b, *_ in closing if b]
false_alarms = [p for p, b, _, first, _ in closing if not b and first is not None]
print(f"closing: {len(bugs_ok)} of {len(bugs)} buggy programs found within {n} perturbed runs "
      f"with a bare failure rate below 50% ({', '.join(bugs_ok) or 'none'}); "
      f"false alarms on correct programs: {len(false_alarms)} ({', '.join(false_alarms) or 'none'})")
PY
