#!/usr/bin/env bash
# Benchmark for `qualify probe` (not a test): prints, side by side in one run,
#   1. probe overhead: `qualify probe -- /bin/true` against a bare fork/exec of /bin/true,
#      interleaved run by run so machine noise hits both alike (mean and median ms, ratio);
#   2. time to verdict for the lock-order deadlock (corpus/lockorder.c) against the stall window
#      (1 s, 2 s, 4 s): verdict time and its ratio to the window.
# Each on every backend this host offers (auto, cgroup2, cgroup1, rlimit).
#
# Usage: bench/probe.sh            (ITER=50 iterations for overhead, REPS=3 per stall window)
#        ITER=200 REPS=5 bench/probe.sh
#        QUALIFY=/path/to/qualify bench/probe.sh   (measure that binary, skip the build)
# Needs: cargo, cc, python3. Builds with `cargo build --release`; honours CARGO_TARGET_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ITER="${ITER:-50}"
REPS="${REPS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cc -O1 -pthread -o "$WORK/lockorder" "$ROOT/corpus/lockorder.c"

BACKENDS=()
for b in cgroup2 cgroup1 rlimit; do
    if "$QUALIFY" probe --backend "$b" --json -- /bin/true >/dev/null 2>&1; then
        BACKENDS+=("$b")
    else
        echo "backend $b unavailable on this host: skipped" >&2
    fi
done

python3 - "$QUALIFY" "$WORK/lockorder" "$ITER" "$REPS" "${BACKENDS[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time

qualify, lockorder, iters, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
backends = sys.argv[5:]
devnull = subprocess.DEVNULL

def timed(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=devnull)
    return time.perf_counter() - t, p

def ms(x):
    return f"{x * 1000:8.2f}"

print(f"host: {os.cpu_count()} cpus, {os.uname().release}; {iters} iterations, interleaved")
print()
print("1. probe overhead (fork/exec of /bin/true)")
print(f"   {'variant':<32}{'mean ms':>9}{'median ms':>11}{'min ms':>9}{'ratio (mean)':>14}")
def resolved(b):
    """The backend `--backend b` actually ran on (auto resolves to the strongest)."""
    p = subprocess.run([qualify, "probe", "--backend", b, "--json", "--", "/bin/true"],
                       stdout=subprocess.PIPE, stderr=devnull)
    try:
        return json.loads(p.stdout)["enforcement"]["backend"]
    except (ValueError, KeyError):
        return "?"

labels = {b: (f"auto={resolved(b)}" if b == "auto" else b) for b in ["auto"] + backends}
variants = [("bare fork/exec", ["/bin/true"])]
for b in ["auto"] + backends:
    variants.append((f"qualify probe ({labels[b]})", [qualify, "probe", "--backend", b, "--json", "--", "/bin/true"]))
samples = {name: [] for name, _ in variants}
for _ in range(2):  # warm-up: page cache, binary loading
    for _, argv in variants:
        timed(argv)
for _ in range(iters):
    for name, argv in variants:
        dt, p = timed(argv)
        if p.returncode != 0:
            sys.exit(f"{name}: exit {p.returncode}")
        samples[name].append(dt)
base = statistics.mean(samples["bare fork/exec"])
for name, _ in variants:
    s = samples[name]
    mean = statistics.mean(s)
    print(f"   {name:<32}{ms(mean):>9}{ms(statistics.median(s)):>11}{ms(min(s)):>9}{mean / base:>13.1f}x")

print()
print("2. time to verdict, lock-order deadlock (timeout 120 s)")
print(f"   {'backend':<15}{'stall s':>8}{'verdict s (ext)':>17}{'wall_seconds':>14}{'verdict/stall':>15}  outcome")
for b in ["auto"] + backends:
    for stall in (1, 2, 4):
        ext, wall, outcomes = [], [], set()
        for _ in range(reps):
            dt, p = timed([qualify, "probe", "--backend", b, "--json", "--stall", f"{stall}s",
                           "--readable", os.path.dirname(lockorder),
                           "--timeout", "120s", "--", lockorder])
            try:
                r = json.loads(p.stdout)
                outcomes.add(r["outcome"])
                wall.append(r["wall_seconds"])
            except (ValueError, KeyError):
                outcomes.add(f"no JSON (exit {p.returncode})")
            ext.append(dt)
        m = statistics.mean(ext)
        w = f"{statistics.mean(wall):14.2f}" if wall else f"{'-':>14}"
        print(f"   {labels[b]:<15}{stall:>8}{m:>17.2f}{w}{m / stall:>14.2f}x  {','.join(sorted(outcomes))}")
PY
