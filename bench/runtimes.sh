#!/usr/bin/env bash
# Benchmark for partial deadlocks in real runtimes (not a test): prints, side by side, for each
# deadlock of corpus/ and corpus/runtimes/ at stall windows of 1 s and 2 s,
#   - the time to verdict (evidence.verdict_seconds: the program's start to the verdict, the
#     runtime's own start-up included), and
#   - its excess over the stall window (goal: at most 2 s, the runtime's report — jcmd, py-spy,
#     Go's own "all goroutines are asleep" — included), with how the verdict was decided;
# and for the twins that only look stuck (released after 3 s) the outcome, which must be `ok`.
#
# Usage: bench/runtimes.sh                   (REPS=3 runs per case and window)
#        REPS=5 bench/runtimes.sh
#        QUALIFY=/path/to/qualify bench/runtimes.sh   (measure that binary, skip the build)
# Needs: cargo, cc, python3, java/javac/jcmd (default-jdk-headless), go (golang-go), py-spy
# (pip install py-spy). Builds with `cargo build --release`; honours CARGO_TARGET_DIR. The
# programs are built into a directory beside the target directory (the sandbox hides /tmp).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS="${REPS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

for tool in cc python3 javac java jcmd go py-spy; do
    command -v "$tool" >/dev/null || { echo "bench/runtimes.sh needs $tool on PATH" >&2; exit 2; }
done
if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

WORK="$TARGET/bench-runtimes"
mkdir -p "$WORK"
cc -O1 -pthread -o "$WORK/lockorder_ticker" "$ROOT/corpus/lockorder_ticker.c"
cc -O1 -pthread -o "$WORK/cond_release" "$ROOT/corpus/cond_release.c"
cp "$ROOT"/corpus/py_locks_ticker.py "$ROOT"/corpus/py_asyncio.py "$ROOT"/corpus/py_event_timer.py "$WORK/"
javac -d "$WORK" "$ROOT/corpus/runtimes/Deadlock.java" "$ROOT/corpus/runtimes/Latch.java"
(cd "$ROOT/corpus/runtimes/go" && GOCACHE="$WORK/gocache" GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local \
    go build -o "$WORK/gostall" .)

python3 - "$QUALIFY" "$WORK" "$REPS" <<'PY'
import json, os, statistics, subprocess, sys

qualify, work, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadlocks = [
    ("C mutexes + ticker", [f"{work}/lockorder_ticker", "normal"]),
    ("C robust + ticker", [f"{work}/lockorder_ticker", "robust"]),
    ("C PI + ticker", [f"{work}/lockorder_ticker", "pi"]),
    ("Python RLocks", ["python3", f"{work}/py_locks_ticker.py", "rlock"]),
    ("asyncio Locks", ["python3", f"{work}/py_asyncio.py", "deadlock"]),
    ("Java monitors", ["java", "-cp", work, "Deadlock", "monitors"]),
    ("Java ReentrantLocks", ["java", "-cp", work, "Deadlock", "locks"]),
    ("Java locks + ticker", ["java", "-cp", work, "Deadlock", "ticking"]),
    ("Go all asleep", [f"{work}/gostall", "asleep"]),
]
twins = [
    ("C condvar, timed release", [f"{work}/cond_release", "3"]),
    ("Python Event + Timer", ["python3", f"{work}/py_event_timer.py", "3"]),
    ("asyncio call_later", ["python3", f"{work}/py_asyncio.py", "later", "3"]),
    ("Java latch + scheduler", ["java", "-cp", work, "Latch", "3"]),
    ("Go chan after Sleep", [f"{work}/gostall", "sleep", "3"]),
    ("Go chan after AfterFunc", [f"{work}/gostall", "timer", "3"]),
    ("Go chan after 30 ticks", [f"{work}/gostall", "ticks", "3"]),
]

def probe(stall, cmd, timeout="60s"):
    p = subprocess.run([qualify, "probe", "--json", "--stall", f"{stall}s", "--timeout", timeout,
                        "--", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not p.stdout.strip():
        sys.exit(f"qualify probe gave no result (exit {p.returncode}): {p.stderr.decode(errors='replace').strip()}")
    return json.loads(p.stdout)

print(f"host: {os.cpu_count()} cpus, {os.uname().release}; {reps} runs per case and stall window")
print(f"   {'deadlock':<22}{'stall s':>8}{'verdict s':>11}{'excess s':>10}{'max':>7}  {'≤ 2 s':<6} decided by")
for label, cmd in deadlocks:
    for stall in (1, 2):
        runs = [probe(stall, cmd) for _ in range(reps)]
        bad = [r for r in runs if r["outcome"] != "deadlock"]
        if bad:
            print(f"   {label:<22}{stall:>8}  NOT A DEADLOCK: {bad[0]['outcome']}: {bad[0]['detail'][:120]}")
            continue
        v = [r["evidence"]["verdict_seconds"] for r in runs]
        excess = [x - stall for x in v]
        ev = runs[-1]["evidence"]
        how = ev.get("wait_for", {}).get("decided_by") or (
            f"the runtime's report ({ev['runtime_report']['report']})" if "runtime_report" in ev
            else "all threads blocked")
        print(f"   {label:<22}{stall:>8}{statistics.median(v):>11.2f}{statistics.median(excess):>10.2f}"
              f"{max(excess):>7.2f}  {'yes' if max(excess) <= 2.0 else 'NO':<6} {how[:70]}")
print()
print(f"   {'twin (released at 3 s)':<26}{'stall s':>8}  outcomes")
for label, cmd in twins:
    outs = [probe(1, cmd)["outcome"] for _ in range(reps)]
    print(f"   {label:<26}{1:>8}  {', '.join(outs)}{'' if set(outs) == {'ok'} else '   <- NOT ALL ok'}")
PY
