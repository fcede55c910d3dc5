#!/usr/bin/env bash
# Benchmark for schedule perturbation (not a test): prints, side by side in one run,
#   0. the fixed cost of one run of `/bin/true`: a bare fork/exec (a C loop), one probe inside a
#      `qualify probe --repeat` (sandbox on and off: no qualify start-up), and one perturbed run
#      per mode — microseconds per run, runs per second, and the ratio to fork/exec;
# then, per program of corpus/perturb/ (our
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
cat > "$WORK/forkexec.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
/* forkexec N PROGRAM: fork/exec/wait PROGRAM N times; prints microseconds per run. */
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            execv(argv[2], argv + 2);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3) / n);
    return 0;
}
C
cc -O2 -o "$WORK/forkexec" "$WORK/forkexec.c"

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

# 0. Fixed cost per run, interleaved rounds so machine noise hits every variant alike.
def per_run_us(variant, runs):
    if variant == "fork/exec":
        out = subprocess.run([os.path.join(work, "forkexec"), str(runs), "/bin/true"],
                             stdout=subprocess.PIPE, check=True).stdout
        return float(out)
    sandbox, mode = variant
    base = ["--sandbox", sandbox, "--json"]
    if mode is None:
        # A run's cost inside one qualify process: (N+1 runs) − (1 run), over N.
        _, one = probe(base + ["--", "/bin/true"])
        _, many = probe(base + ["--repeat", str(runs + 1), "--", "/bin/true"])
        return (many - one) / runs * 1e6
    _, one = probe(base + ["--perturb", "--mode", mode, "--runs", "1", "--replays", "0", "--", "/bin/true"])
    _, many = probe(base + ["--perturb", "--mode", mode, "--runs", str(runs + 1), "--replays", "0",
                            "--", "/bin/true"])
    return (many - one) / runs * 1e6

variants = ["fork/exec", ("off", None), ("on", None)] + [("on", m) for m in modes]
names = {"fork/exec": "bare fork/exec"}
names.update({v: (f"probe, sandbox {v[0]}" if v[1] is None else f"perturbed {v[1]}, sandbox {v[0]}")
              for v in variants[1:]})
fixed = {v: [] for v in variants}
rounds, per = 3, max(50, min(n, 300))
for _ in range(rounds):
    for v in variants:
        fixed[v].append(per_run_us(v, per))
print(f"0. fixed cost per run of /bin/true ({rounds} interleaved rounds of {per} runs; median)")
print(f"   {'variant':<32}{'µs/run':>9}{'runs/s':>9}{'× fork/exec':>13}")
base = sorted(fixed["fork/exec"])[rounds // 2]
for v in variants:
    m = sorted(fixed[v])[rounds // 2]
    print(f"   {names[v]:<32}{m:9.0f}{1e6 / m:9.0f}{m / base:13.1f}")
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
