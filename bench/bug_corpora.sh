#!/usr/bin/env bash
# Benchmark on public concurrency-bug corpora nobody here wrote (not a test): how many of the
# failures that manifest get the right verdict from `qualify probe`.
#
#   GoBench's GoKer blocking kernels (timmyyuan/gobench, gobench/goker/blocking: bugs extracted
#   from Docker, Kubernetes, etcd, gRPC, CockroachDB, …), each built with `go test -c` and run
#   REPS times as `qualify probe --stall 2s --timeout 30s -- ./k.test -test.count 1`. What the
#   program did decides whether the bug manifested, independently of qualify's verdict:
#     - Go's runtime printed "all goroutines are asleep" (a global deadlock): right if `deadlock`;
#     - the program did not end by itself (a hang): right if `deadlock`; a timeout whose detail
#       names the blocked goroutines (the dump at the deadline) is counted apart as "named";
#     - it passed, and its own execution trace shows goroutines left blocked (a leak): right if
#       flagged `leaked_threads`;
#     - it passed with nothing left blocked: the bug did not manifest in that run.
#     - it passed with goroutines alive but not blocked (created, never run before the end):
#       counted apart (in the evidence, not flagged).
#   A leak is seen only through the test binary's own trace, which qualify reads: its figure says
#   that each one seen is flagged and named, not how many leaks a run could hide.
#   JaConTeBe's lock deadlocks (DBCP, Log4j, Pool; jacontebe/{lib,dbcp,log4j,pool}), compiled
#   with their own jars and run REPS times the same way with the suite's own deadlock monitor
#   off (`-mo`: it would end the program itself): a run that does not end by itself manifested;
#   right if `deadlock`, with the time to the verdict.
#
# Usage: bench/bug_corpora.sh GOBENCH_DIR [JACONTEBE_DIR]
#   GOBENCH_DIR    a checkout of timmyyuan/gobench (holding gobench/goker/blocking)
#   JACONTEBE_DIR  a checkout holding jacontebe/ (ChopinLi-cp/JaConTeBe_TSVD); optional
#   REPS=3 runs per case; ONLY=go|java one corpus; WORK=/var/tmp/qualify-bug-corpora for builds (never the repository);
#   QUALIFY=/path/to/qualify to measure that binary (else `cargo build --release`).
# Needs: go (golang-go), javac/java/jcmd (default-jdk-headless). Fetches nothing: the corpora are
# given as directories (e.g. from `git clone`, or a snapshot of the repositories).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOBENCH=${1:?usage: bench/bug_corpora.sh GOBENCH_DIR [JACONTEBE_DIR]}
JACONTEBE=${2:-}
REPS=${REPS:-3}
WORK=${WORK:-/var/tmp/qualify-bug-corpora}
case "$WORK" in /tmp/*) echo "WORK must be outside /tmp (the sandbox makes /tmp private)" >&2; exit 2 ;; esac
[ -d "$GOBENCH/gobench/goker/blocking" ] || { echo "$GOBENCH has no gobench/goker/blocking" >&2; exit 2; }
if [ -z "${QUALIFY:-}" ]; then
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="${CARGO_TARGET_DIR:-$ROOT/target}/release/qualify"
fi
mkdir -p "$WORK/go" "$WORK/java"

# GoKer kernels: package directories of the standard library only (GOPATH mode, offline).
export GOCACHE="$WORK/gocache" GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GO111MODULE=off
built=0; failed=0
for dir in "$GOBENCH"/gobench/goker/blocking/*/*/; do
    name="$(basename "$(dirname "$dir")")_$(basename "$dir")"
    [ -x "$WORK/go/$name.test" ] && { built=$((built + 1)); continue; }
    if (cd "$dir" && go test -c -o "$WORK/go/$name.test" . >/dev/null 2>&1); then
        built=$((built + 1))
    else
        failed=$((failed + 1)); echo "go: $name does not build offline" >&2
    fi
done
echo "GoKer blocking kernels built: $built (not built: $failed)"

# JaConTeBe deadlocks: each test's script names its sources, main class and jars.
jbugs=()
if [ -n "$JACONTEBE" ]; then
    for bug in dbcp/270 dbcp/65 log4j/38137 log4j/41214 log4j/50463 pool/146 pool/149 pool/162; do
        project=${bug%/*}; id=${bug#*/}
        script="$JACONTEBE/jacontebe/$project/scripts/$id.sh"
        [ -f "$script" ] || { echo "jacontebe: no $script" >&2; continue; }
        classes=$(sed -n 's/^classes_to_compile=//p' "$script" | tr -d '"')
        main=$(sed -n 's/^class_to_run=//p' "$script")
        deps=$(sed -n 's/^compile_dependencies=//p' "$script")
        deps=${deps:-lib/*:../lib/*}
        out="$WORK/java/$project-$id"
        mkdir -p "$out"
        cp="$(cd "$JACONTEBE/jacontebe/$project" && echo "$deps" | tr ':' '\n' | sed "s|^|$PWD/|" | paste -sd:)"
        if (cd "$JACONTEBE/jacontebe/$project" && javac -nowarn -cp "$cp" -d "$out" $classes >/dev/null 2>&1); then
            jbugs+=("$project-$id|$main|$cp:$out")
        else
            echo "jacontebe: $bug does not build" >&2
        fi
    done
    echo "JaConTeBe deadlocks built: ${#jbugs[@]}"
fi

python3 - "$QUALIFY" "$WORK" "$REPS" "${ONLY:-}" "${jbugs[@]}" <<'PY'
import json, os, subprocess, sys

qualify, work, reps, only, jbugs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]

def probe(cmd):
    p = subprocess.run([qualify, "probe", "--json", "--stall", "2s", "--timeout", "30s", "--", *cmd],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work)
    if not p.stdout.strip():
        sys.exit(f"qualify probe gave no result (exit {p.returncode}): {p.stderr.decode(errors='replace').strip()}")
    return json.loads(p.stdout)

def manifested(r):
    ev = r["evidence"]
    said = (ev.get("runtime_report") or {}).get("said", "") + r.get("stderr_tail", "")
    if "all goroutines are asleep" in said:
        return "global deadlock"
    decided = (ev.get("runtime_report") or {}).get("decided", False)
    if r["outcome"] in ("timeout", "livelock") or (r["outcome"] == "deadlock" and not decided):
        return "hang"  # qualify ended it: it did not end by itself
    leaks = ev.get("leaks") or {}
    if r["exit_code"] == 0 and leaks.get("blocked", 0) > 0:
        return "leak"
    if r["exit_code"] == 0 and leaks.get("also_alive", 0) > 0:
        return "left alive"
    if r["exit_code"] == 0:
        return "none"
    return "other failure"

def right(kind, r):
    if kind in ("global deadlock", "hang"):
        return r["outcome"] == "deadlock"
    if kind == "leak":
        return "leaked_threads" in r["flags"]
    return None

def named(r):
    return any(a.get("runtime") == "Go" and "blocked:" in a.get("said", "")
               for a in r["evidence"].get("at_end", []))

kinds = ["global deadlock", "hang", "leak", "left alive", "other failure", "none"]
tot = {k: [0, 0, 0] for k in kinds}  # runs, right, named at the deadline
per = []
go = [] if only == "java" else sorted(f for f in os.listdir(f"{work}/go") if f.endswith(".test"))
print(f"host: {os.cpu_count()} cpus; {reps} runs per case; qualify probe --stall 2s --timeout 30s")
if go:
    print(f"\nGoKer blocking kernels ({len(go)}):")
    print(f"   {'kernel':<24} outcomes (manifestation → verdict)")
    for t in go:
        row = []
        for _ in range(reps):
            r = probe([f"{work}/go/{t}", "-test.count", "1"])
            k = manifested(r)
            tot[k][0] += 1
            ok = right(k, r)
            if ok:
                tot[k][1] += 1
            if k == "hang" and r["outcome"] == "timeout" and named(r):
                tot[k][2] += 1
            mark = "" if ok is None else (" ✓" if ok else " ✗")
            row.append(f"{k}→{r['outcome']}{'+leak' if 'leaked_threads' in r['flags'] else ''}"
                       f" {r['wall_seconds']:.1f}s{mark}")
        print(f"   {t[:-5]:<24} {'; '.join(row)}")
    print("\n   manifestation      runs  right verdict")
    for k in kinds:
        n, ok, nm = tot[k]
        extra = f"  ({nm} more timed out naming the blocked goroutines)" if k == "hang" and nm else ""
        verdict = "-" if k in ("none", "other failure", "left alive") else f"{ok}/{n}"
        print(f"   {k:<18} {n:>5}  {verdict}{extra}")
    manifest = sum(tot[k][0] for k in ("global deadlock", "hang", "leak"))
    rights = sum(tot[k][1] for k in ("global deadlock", "hang", "leak"))
    print(f"   manifesting runs with the right verdict: {rights}/{manifest}")

if jbugs and only != "go":
    print(f"\nJaConTeBe lock deadlocks ({len(jbugs)}):")
    jt = [0, 0]
    for spec in jbugs:
        name, main, cp = spec.split("|")
        row = []
        for _ in range(reps):
            # Mockito 1.9's cglib needs java.lang opened on JDK 9+ (as a user running it would).
            r = probe(["java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-cp", cp, main, "-mo"])
            hung = r["outcome"] in ("timeout", "deadlock", "livelock")
            if hung:
                jt[0] += 1
                jt[1] += r["outcome"] == "deadlock"
            row.append(f"{'hang' if hung else 'ended'}→{r['outcome']} {r['evidence']['verdict_seconds']:.1f}s"
                       f"{(' ✓' if r['outcome'] == 'deadlock' else ' ✗') if hung else ''}")
        print(f"   {name:<14} {'; '.join(row)}")
    print(f"   manifesting runs (hangs) called deadlock: {jt[1]}/{jt[0]}")
PY
