#!/usr/bin/env bash
# Benchmark for the sandbox (not a test): prints, side by side in one run,
#   1. the added cost per probe: `qualify probe -- /bin/true` with `--sandbox on` and
#      `--sandbox off`, interleaved run by run (median and mean ms, and the median difference;
#      the goal is <= 3 ms), on every backend this host offers; plus `on` with each mechanism
#      turned off, to show what each layer costs;
#   2. a 100-cell `qualify run` of a short program, sandbox on vs off (wall seconds, per cell);
#   3. a service cell under the sandbox (its own network namespace, qualify's load generator
#      joined to it) vs `network = "host"`: time to ready and the load's p50/p99.
#
# Usage: bench/sandbox.sh            (ITER=60 probes per mode, CELLS=100)
#        ITER=200 CELLS=200 bench/sandbox.sh
#        QUALIFY=/path/to/qualify bench/sandbox.sh   (measure that binary, skip the build)
# Needs: cargo, python3. Builds with `cargo build --release`; honours CARGO_TARGET_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ITER="${ITER:-60}"
CELLS="${CELLS:-100}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

BACKENDS=()
for b in cgroup2 cgroup1 rlimit; do
    if "$QUALIFY" probe --backend "$b" --json -- /bin/true >/dev/null 2>&1; then
        BACKENDS+=("$b")
    else
        echo "backend $b unavailable on this host: skipped" >&2
    fi
done

python3 - "$QUALIFY" "$WORK" "$ITER" "$CELLS" "$ROOT" "${BACKENDS[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time

qualify, work, iters, cells, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
backends = sys.argv[6:]

inner = {}

def probe_ms(backend, mode, missing=""):
    """Wall ms of the whole qualify process; records the probe's own launch + cleanup ms."""
    env = dict(os.environ)
    if missing:
        env["QUALIFY_SIMULATE_MISSING"] = missing
    t = time.perf_counter()
    out = subprocess.run([qualify, "probe", "--backend", backend, "--sandbox", mode, "--json", "--", "/bin/true"],
                         check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=work, env=env)
    wall = (time.perf_counter() - t) * 1000
    e = json.loads(out.stdout)["evidence"]
    inner.setdefault((backend, mode, missing), []).append((e["launch_seconds"] + e["cleanup_seconds"]) * 1000)
    return wall

print("1. added cost per probe: qualify probe -- /bin/true (wall of the whole qualify process, ms)")
print(f"   {iters} runs per mode, interleaved")
variants = [("off", "off", ""), ("on", "on", "")]
layers = [("on without landlock", "on", "landlock"), ("on without seccomp", "on", "seccomp"),
          ("on without netns", "on", "netns"), ("on without mountns", "on", "mountns")]
for b in backends:
    res = {name: [] for name, _, _ in variants + layers}
    for _ in range(3):  # warm-up
        for _, mode, missing in variants:
            probe_ms(b, mode, missing)
    for i in range(iters):
        for name, mode, missing in variants:
            res[name].append(probe_ms(b, mode, missing))
        if i < max(10, iters // 3):
            for name, mode, missing in layers:
                res[name].append(probe_ms(b, mode, missing))
    off = statistics.median(res["off"])
    print(f"   backend {b}:")
    keys = {name: (b, mode, missing) for name, mode, missing in variants + layers}
    off_in = statistics.median(inner[keys["off"]])
    print(f"     {'variant':<24} {'median':>8} {'mean':>8} {'added':>8}   {'launch+cleanup':>14} {'added':>8}")
    for name in res:
        m = statistics.median(res[name])
        i = statistics.median(inner[keys[name]])
        print(f"     {name:<24} {m:8.2f} {statistics.mean(res[name]):8.2f} {m - off:+8.2f}   {i:14.2f} {i - off_in:+8.2f}")
    print("     (launch+cleanup: the probe's own figures from its evidence, without process start-up noise)")

print()
print(f"2. a {cells}-cell run of a short program (sh -c 'echo {{n}}'), auto backend")
spec = f'''[artifact]
name = "short"
command = "echo {{n}}"
[claim]
level = "trial"
[[axis]]
name = "n"
kind = "workload"
values = [{", ".join(str(i) for i in range(cells))}]
'''
for mode in ["off", "on", "off", "on"]:
    d = os.path.join(work, f"run-{mode}-{time.time_ns()}")
    os.makedirs(d)
    with open(os.path.join(d, "qualify.toml"), "w") as f:
        f.write(spec + f'[sandbox]\nmode = "{mode}"\n')
    t = time.perf_counter()
    subprocess.run([qualify, "run", "--no-ledger", "--receipt", "r.json", "--json"], cwd=d,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r = json.load(open(os.path.join(d, "r.json")))
    ok = sum(1 for c in r["predicate"]["cells"] if c["result"]["outcome"] == "ok")
    print(f"   sandbox {mode:<3}: {wall:6.2f} s for {ok}/{cells} ok cells, {wall / cells * 1000:6.1f} ms per cell")

print()
print("3. a service cell (corpus/service.py, 200 req/s for 5 s): own network namespace vs host")
for network in ["host", "loopback", "host", "loopback"]:
    d = os.path.join(work, f"svc-{network}-{time.time_ns()}")
    os.makedirs(d)
    with open(os.path.join(d, "qualify.toml"), "w") as f:
        f.write(f'''[artifact]
name = "svc"
command = ["/usr/bin/python3", "{root}/corpus/service.py", "{{port}}", "ok", "1"]
[claim]
level = "trial"
[service]
ready = {{ http = "/", within = "20s" }}
stop = {{ signal = "SIGTERM", grace = "2s" }}
[load]
rate = 200
duration = "5s"
timeout = "1s"
[[load.request]]
path = "/x/{{seq}}"
[sandbox]
network = "{network}"
''')
    subprocess.run([qualify, "run", "--no-ledger", "--receipt", "r.json", "--json"], cwd=d,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.load(open(os.path.join(d, "r.json")))
    c = r["predicate"]["cells"][0]["result"]
    load = c.get("load") or {}
    lat = (load.get("latency") or {}).get("corrected") or {}
    net = c["enforcement"].get("sandbox", {}).get("network", {}).get("mechanisms", ["(host)"])
    p50 = (lat.get("p50") or 0) * 1000
    p99 = (lat.get("p99") or 0) * 1000
    print(f"   network {network:<8}: outcome {c['outcome']}, ready after {load.get('ready_seconds', 0):.3f} s, "
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms  ({net[0][:60]})")
PY
