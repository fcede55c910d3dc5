#!/usr/bin/env bash
# Benchmark for spin-wait deadlocks (not a test): prints, side by side,
#   1. time to verdict for the MPI send-send exchange deadlock (corpus/mpi/exchange.c, 2 ranks,
#      10 MB, Open MPI's shared-memory transport) against the stall window (1 s, 2 s, 4 s):
#      the whole run, the time from the tree going still to the verdict, and how far that is
#      beyond the window (goal: at most 2 s, stack samples included);
#   2. the same at a 2 s stall window for every spin-wait deadlock of the corpus (mismatched
#      collectives, wrong source, OpenMP barrier and lock order with OMP_WAIT_POLICY=active, a
#      spin lock), with the call each verdict names;
#   3. the cost of one stack sample of mpirun + 2 ranks with eu-stack and with gdb, and of one
#      digest of their shared memory and program data (two digests are taken per sample).
#
# Usage: bench/spin.sh                 (REPS=3 runs per stall window)
#        REPS=5 bench/spin.sh
#        QUALIFY=/path/to/qualify bench/spin.sh   (measure that binary, skip the build)
# Needs: cargo, mpicc/mpirun (openmpi-bin, libopenmpi-dev), cc, python3, eu-stack (elfutils)
# and gdb. Builds with `cargo build --release`; honours CARGO_TARGET_DIR. As root, Open MPI is
# allowed to run through OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS="${REPS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

for tool in mpicc mpirun eu-stack gdb python3; do
    command -v "$tool" >/dev/null || { echo "bench/spin.sh needs $tool on PATH" >&2; exit 2; }
done
if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for p in exchange mismatch wrong_source; do mpicc -O1 -o "$WORK/$p" "$ROOT/corpus/mpi/$p.c"; done
for p in omp_barrier omp_lockorder; do cc -O1 -fopenmp -o "$WORK/$p" "$ROOT/corpus/openmp/$p.c"; done
cc -O1 -pthread -o "$WORK/spinlock" "$ROOT/corpus/spinlock.c"
# A PATH with gdb but without eu-stack, to measure gdb as the sampler.
mkdir -p "$WORK/gdb-path"
for f in /usr/bin/* /usr/sbin/*; do
    [[ "$(basename "$f")" == eu-stack ]] || ln -sf "$f" "$WORK/gdb-path/$(basename "$f")"
done
mkdir -p "$WORK/shm"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_backing_directory="$WORK/shm" OMPI_MCA_orte_tmpdir_base="$WORK"

python3 - "$QUALIFY" "$WORK" "$REPS" <<'PY'
import json, os, statistics, subprocess, sys

qualify, work, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
exchange = [ "mpirun", "--oversubscribe", "-n", "2", f"{work}/exchange", "10000000"]
spinlock = [f"{work}/spinlock"]

def probe(stall, cmd, env=None):
    # The programs and Open MPI's session files live in `work` (under /tmp, which the sandbox
    # makes private): the probe gets it writable.
    p = subprocess.run([qualify, "probe", "--json", "--writable", work, "--stall", f"{stall}s",
                        "--timeout", "120s", "--", *cmd],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if not p.stdout.strip():
        sys.exit(f"qualify probe gave no result (exit {p.returncode}): {p.stderr.decode(errors='replace').strip()}")
    r = json.loads(p.stdout)
    if r["outcome"] != "deadlock":
        sys.exit(f"expected a deadlock, got {r['outcome']}: {r['detail']}")
    return r

def med(xs):
    return statistics.median(xs) if xs else float("nan")

print(f"host: {os.cpu_count()} cpus, {os.uname().release}; {reps} runs per stall window")
backend = probe(1, spinlock)["enforcement"]["backend"]
def row(label, stall, runs):
    wall = med([r["wall_seconds"] for r in runs])
    still = [r["evidence"]["spin"]["still_seconds"] for r in runs]
    beyond = [x - stall for x in still]
    worst = max(beyond)
    print(f"   {label:<16}{stall:>8}{wall:>9.2f}{med(still):>17.2f}{med(beyond):>17.2f}{med(still) / stall:>8.2f}"
          f"   {('yes' if worst <= 2.0 else 'NO') + f' (max {worst:.2f})'}")
    return runs[-1]

header = f"   {'program':<16}{'stall s':>8}{'wall s':>9}{'still→verdict s':>17}{'beyond window s':>17}{'ratio':>8}   goal ≤ +2 s"
print()
print(f"1. MPI exchange deadlock, 2 ranks, 10 MB (mpirun + 2 ranks); backend {backend}, sampler eu-stack")
print(header)
for stall in (1, 2, 4):
    row("exchange", stall, [probe(stall, exchange) for _ in range(reps)])

print()
print("2. every spin-wait deadlock of the corpus at a 2 s stall window")
print(header)
mpi = lambda p: ["mpirun", "--oversubscribe", "-n", "2", f"{work}/{p}"]
active = dict(os.environ, OMP_WAIT_POLICY="active")
named = []
for label, cmd, env in [("mismatch", mpi("mismatch"), None), ("wrong_source", mpi("wrong_source"), None),
                        ("omp_barrier", [f"{work}/omp_barrier"], active),
                        ("omp_lockorder", [f"{work}/omp_lockorder"], active), ("spinlock", spinlock, None)]:
    last = row(label, 2, [probe(2, cmd, env) for _ in range(reps)])
    named.append((label, last["detail"].split(";")[0]))
for label, head in named:
    print(f"   {label}: {head}")

print()
print("3. cost of one sample of mpirun + 2 ranks (median / max over all samples, ms), stall 2 s")
print(f"   {'sampler':<10}{'stack median':>14}{'stack max':>11}{'memory digest':>15}{'digested':>11}{'beyond window s':>17}")
gdb_env = dict(os.environ, PATH=f"{work}/gdb-path")
for name, env in [("eu-stack", None), ("gdb", gdb_env)]:
    stack, mem, size, beyond = [], [], [], []
    for _ in range(reps):
        s = probe(2, exchange, env)["evidence"]["spin"]
        if s["tool"] != name:
            sys.exit(f"expected {name} as the sampler, got {s['tool']}")
        stack += s["sample_seconds"]
        mem += s["memory_seconds"]
        size.append(s["memory"]["compared_bytes"])
        beyond.append(s["still_seconds"] - 2)
    print(f"   {name:<10}{med(stack) * 1000:>14.1f}{max(stack) * 1000:>11.1f}{med(mem) * 1000:>15.1f}"
          f"{med(size) / 2**20:>7.1f} MiB{med(beyond):>17.2f}")
PY
