#!/usr/bin/env bash
# Benchmark of the workdir's private layer (not a test): what one cell pays for writing through
# an overlay instead of the workdir itself, side by side in one run, in a small workdir and in a
# large one (FILES files, MIB MiB in all), against what a fresh copy of the workdir would cost:
#   - `qualify probe --private-workdir -- /bin/true` vs `qualify probe -- /bin/true`, interleaved
#     (median ms of the probe's own launch + cleanup, and of the whole process);
#   - the same with a program that rewrites one 1 MiB file of the workdir (a copy-up);
#   - `cp -a` of the workdir (what a fresh copy per cell would cost).
#
# Usage: bench/layer.sh                    (ITER=40 FILES=20000 MIB=200)
#        QUALIFY=/path/to/qualify bench/layer.sh
# Needs: cargo, python3. Run as root (the mount layer). Builds with `cargo build --release`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ITER="${ITER:-40}"
FILES="${FILES:-20000}"
MIB="${MIB:-200}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

# Not under /tmp: a cell sees its own /tmp.
WORK="$(mktemp -d -p "$TARGET" bench-layer.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

python3 - "$QUALIFY" "$WORK" "$ITER" "$FILES" "$MIB" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time

qualify, work, iters, files, mib = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def make(dir, n, total_mib):
    os.makedirs(dir)
    size = max(1, total_mib * 1024 * 1024 // max(1, n))
    blob = os.urandom(size)
    for i in range(n):
        sub = os.path.join(dir, f"d{i // 1000}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i}"), "wb") as f:
            f.write(blob)
    with open(os.path.join(dir, "data.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))

small = os.path.join(work, "small"); make(small, 10, 1)
large = os.path.join(work, "large"); make(large, files, mib)

def probe(dir, layer, cmd):
    args = [qualify, "probe", "--json"] + (["--private-workdir"] if layer else []) + ["--"] + cmd
    t = time.perf_counter()
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=dir)
    wall = (time.perf_counter() - t) * 1000
    e = json.loads(out.stdout)["evidence"]
    return wall, (e["launch_seconds"] + e["cleanup_seconds"]) * 1000

rewrite = ["sh", "-c", "dd if=/dev/zero of=data.bin bs=1M count=1 conv=notrunc status=none"]
print(f"the workdir's private layer: {iters} probes per variant, interleaved (median ms)")
print(f"   small workdir: 11 files, 2 MiB; large workdir: {files + 1} files, {mib + 1} MiB")
print(f"   {'workdir':8} {'program':18} {'in place':>10} {'layer':>10} {'added':>8}   (launch+cleanup: in place / layer)")
for name, dir in (("small", small), ("large", large)):
    for pname, cmd in (("/bin/true", ["/bin/true"]), ("rewrite 1 MiB", rewrite)):
        res = {False: [], True: []}
        inner = {False: [], True: []}
        for _ in range(3):
            probe(dir, False, cmd); probe(dir, True, cmd)
        for _ in range(iters):
            for layer in (False, True):
                w, i = probe(dir, layer, cmd)
                res[layer].append(w); inner[layer].append(i)
        a, b = statistics.median(res[False]), statistics.median(res[True])
        ia, ib = statistics.median(inner[False]), statistics.median(inner[True])
        print(f"   {name:8} {pname:18} {a:10.1f} {b:10.1f} {b - a:+8.1f}   ({ia:.1f} / {ib:.1f})")

copies = []
for _ in range(3):
    t = time.perf_counter()
    shutil.copytree(large, os.path.join(work, "copy"), symlinks=True)
    copies.append((time.perf_counter() - t) * 1000)
    shutil.rmtree(os.path.join(work, "copy"))
print(f"   a fresh copy of the large workdir per cell instead (cp -a): {statistics.median(copies):.0f} ms")
PY
