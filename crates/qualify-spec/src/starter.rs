//! [`STARTER_SPEC`]: the commented `qualify.toml` that `qualify init` writes, and
//! [`SERVICE_STARTER_SPEC`], its counterpart for a service (`[service]`, `[load]`, `[[slo]]`,
//! a boundary search over the offered load, and commented `[[dependency]]`, `[faults]`, a fault
//! axis with `expect`, an objective for the fault window and `[recovery]`). Each has a
//! functional check, explains the claimed region (`[target]`) in a comment and every key, and
//! is itself a valid spec; each comes with its own example program ([`STARTER_PROGRAM`],
//! [`SERVICE_STARTER_PROGRAM`]) that `qualify init` writes beside it, so the first `qualify run`
//! passes before the user points the spec at their own (tests hold them to that).

/// A commented starter `qualify.toml`; edit the artifact's command and the axes to fit.
pub const STARTER_SPEC: &str = r#"# qualify.toml: what to qualify, the claim to make, and the region to examine.
# `qualify run` reads this file; `qualify gate RECEIPT --claim LEVEL` checks the receipt it writes.

[artifact]
# A name for the receipt and reports.
name = "my-program"
# The command each cell runs. A string runs via /bin/sh -c; an array runs directly, e.g.
#   command = ["./my-program", "--threads", "{threads}"]
# {name} is replaced by the value of the axis called `name` in each cell; every placeholder
# needs an axis and every axis needs a placeholder (except kind = "memory", see below).
# Write {{ and }} for literal braces (e.g. ${{HOME}} for a shell variable).
# `qualify init` wrote ./my-program, a stand-in that sums 1..n: the first `qualify run` passes
# with it. Then put your own program here.
command = "./my-program --threads {threads} --size {n}"
# Where the commands run, relative to this file's directory.
workdir = "."
# Optional: run once before anything else (string or array; taken literally).
# build = "make"

# Optional: extra environment for every cell; values may use placeholders too.
# [artifact.env]
# OMP_NUM_THREADS = "{threads}"

[claim]
# functional: correct results for the admitted inputs.
# trial:      ran without deadlock, crash, OOM or timeout across the examined region.
# production: qualified for the [target] below: needs [target], and every gap between target
#             and tested region closed or waived.
level = "trial"

# The environment the claim is about; required for level = "production". The receipt lists
# each fact the tested region did not reach as a gap.
#
# It also sets the claimed region: the claim covers an axis only up to the target's value for
# it (workload = { n = 10000 }: sizes up to 10000). Cells beyond it are explored to map where
# the program breaks: a failure there is a boundary, stated with its headroom over the target,
# not a refusal of the claim; a failure inside the region refuses it. Axes the target names no
# value for are claimed over their whole domain.
[target]
workload = { n = 10000 }
# cores = 192
# nodes = 2
# memory = "768GiB"

# The tests that must pass before any operational probing (string or array, run once in
# workdir, taken literally). Here: the stand-in's sum of 1..5 is 15.
[functional]
command = "test \"$(./my-program --threads 2 --size 5)\" = 'sum 15'"
# junit = "build/junit.xml"      # optional: JUnit XML it writes, relative to workdir

# Ceilings and watch windows for every cell; same meaning as `qualify probe`'s flags.
[limits]
memory = "2GiB"      # memory ceiling for the whole process tree: 512M, 2GiB, 1.5G, or bytes
# cpus = 2           # CPU ceiling in cores (fractions allowed)
# pids = 512         # most processes + threads in the tree
timeout = "60s"      # wall-clock limit per cell: 30s, 2m, 1h30m, 500ms
stall = "5s"         # no CPU and no progress for this long counts as a deadlock
progress = "none"    # progress signal: none | output | heartbeat ($QUALIFY_HEARTBEAT file)

# Axes: the dimensions of the operating region. Cells are their cartesian product.
# kind: workload | concurrency | memory | topology | custom | load (a service's offered load)
# Either values = [...] (integers, floats or strings; sizes like "512MiB" for kind = "memory")
# or range = [lo, hi] (numbers; sizes for kind = "memory").
# A range is swept on a lattice: scale = "linear" adds step (default 1 for integer bounds),
# scale = "log" multiplies by step (default 2); hi is always included.
# search = "boundary" (numeric axes only) finds the largest passing and smallest failing value
# by galloping and bisection instead of running every point; step is then the resolution.

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2]

[[axis]]
name = "n"
kind = "workload"
range = [256, 65536]
scale = "log"
search = "boundary"

# An axis of kind "memory" sets each cell's memory ceiling and needs no placeholder:
# [[axis]]
# name = "mem"
# kind = "memory"
# values = ["256MiB", "1GiB", "4GiB"]

# Accept a target gap by name, with the reason (production claims only):
# [[waiver]]
# gap = "nodes"
# reason = "single-node build; multi-node runs are covered by the cluster acceptance suite"
"#;

/// A commented starter `qualify.toml` for a service: started per cell, made ready, loaded at
/// each offered rate, judged by SLOs, stopped.
pub const SERVICE_STARTER_SPEC: &str = r#"# qualify.toml for a service: each cell starts it fresh, waits until it is ready, drives it
# with load at the cell's offered rate, judges the SLOs below, then stops it.

[artifact]
name = "my-service"
# `qualify init --service` wrote my_service.py, a stand-in (4 workers × 10 ms: about 400
# orders/s): the first `qualify run` passes with it. Then put your own service here.
# {port} is a free loopback port qualify assigns each cell (also exported as PORT). A service
# that takes neither may listen on a fixed port: say so with port = N under [service].
command = ["python3", "my_service.py", "--port", "{port}", "--workers", "{workers}"]
workdir = "."

[claim]
level = "trial"

# The claimed region: the load the service must carry. The claim covers the load axis only up
# to this rate; cells above it are explored to find where the service stops keeping up — a
# failure there is the boundary (its capacity, with the headroom over the target), not a
# refusal of the claim. A failure at or below it refuses the claim.
[target]
rate = 50
# The target's dependencies (with [[dependency]] below): a production claim needs each examined
# with a fault, or a [[waiver]] with gap = "faults.db".
# dependencies = ["db"]

# Checked once before any load: the service answers one order (string or array, run in
# workdir, taken literally). Without a functional check, trial is refused.
[functional]
command = ["python3", "my_service.py", "--self-test"]

[limits]
memory = "1GiB"      # the service's whole process tree
timeout = "120s"     # per cell, start to stop

[service]
# Ready when GET {path} answers 2xx; or { tcp = true } (the port accepts); or
# { command = "…" } (exits 0). Not ready within `within`: the cell is `unavailable`.
ready = { http = "/healthz", within = "20s" }
# After the load: this signal, then SIGKILL if still running after `grace` (flag slow_shutdown).
stop = { signal = "SIGTERM", grace = "5s" }

[load]
model = "open"       # open: arrivals at `rate` per second whatever the answers; closed: `users` loops
rate = "{rps}"       # a number, or one placeholder naming a kind = "load" axis
# users = "{users}"  # closed model instead of rate
duration = "5s"      # measured (quick runs: qualify run --set load.duration=2s)
warmup = "1s"        # sent, not measured
timeout = "2s"       # per request; past it: an error of class `timeout`
max_in_flight = 256  # outstanding requests; later arrivals wait (the wait counts in the latency)
# threads = 2        # generator event loops (default 1: some 20-40 thousand requests/s each)

# One or more; chosen by weight (default 1). {seq}: the request's sequence number;
# {pad:N}: N filler bytes; other braces are literal.
[[load.request]]
method = "POST"
path = "/orders/{seq}"
body = '{"id": {seq}}'
headers = { "content-type" = "application/json" }
expect_status = [201]   # default: 200–399
# A line protocol over TCP instead (all requests of a load are HTTP or all tcp):
# tcp = { send = "SET k{seq} {pad:1024}\r\n", expect = "+OK" }

# Objectives: latency_p50 | latency_p90 | latency_p99 | latency_p999 | latency_max (measured
# from each request's intended start; a timed-out request counts at its timeout), error_rate,
# dropped_rate (max, as 0.01 or "1%"), throughput (successful requests/s; min). Durations carry
# their unit ("200ms"); a bare number is refused. Without an error_rate objective, 1% applies.
[[slo]]
metric = "latency_p99"
max = "200ms"

[[slo]]
metric = "error_rate"
max = "1%"

[[axis]]
name = "workers"
kind = "concurrency"
values = [4]         # more values compare them: one capacity per value

# The offered load, searched for the capacity: search = "boundary" gallops and bisects for the
# highest rate that holds the objectives, repeats the two rates at the edge, and states the
# capacity in one sentence with its interval. A log range is coarse and quick; for a finer
# edge give a linear range (range = [200, 800], search = "boundary": steps of 1 req/s).
[[axis]]
name = "rps"
kind = "load"
range = [25, 1600]
scale = "log"
step = 2
search = "boundary"

# Dependencies: what the service talks to (database, cache, queue). qualify puts a fault proxy
# on loopback in front of each and gives the service the proxy's address through env.
# [[dependency]]
# name = "db"        # faults.db is the gap when no fault examined it
# start = ["redis-server", "--port", "{dep_port}", "--save", ""]  # fresh per cell; {dep_port} (also DEP_PORT)
# # upstream = "127.0.0.1:6379"                                   # or an endpoint that already runs
# ready = { tcp = true, within = "10s" }                            # or { command = "…", within = … }
# env = { REDIS_URL = "redis://127.0.0.1:{proxy_port}" }            # {proxy_port}: the proxy in front of db
# stop = { signal = "SIGTERM", grace = "5s" }                       # how it is stopped (the restart fault, the cell's end)
# # protocol = "http"                                               # an HTTP API: the proxy relays HTTP (status/throttle/http_delay)

# When, within the measured load (offsets after the warmup), the faults are active; after the
# window the SLOs must hold again within recover_within (else the cell is not_recovered).
# [faults]
# window = ["1s", "3s"]
# recover_within = "2s"
# # writes = { … }   # the write check after the window (as [recovery]'s below; one of the two)

# A fault axis needs no placeholder: each value is put on the dependency during the window.
# Faults on the wire: none | latency(200ms[, jitter 50ms]) | down | reset | blackhole
# | bandwidth(16KiB/s) | slow_close(1s) | fail_first(N), optionally @upstream / @downstream and a
# toxicity ×0.5; on the dependency's processes: kill | pause | restart; on an HTTP dependency:
# status(503[, ×0.3]) | throttle(429[, retry_after 1s]) | http_delay(200ms).
# none is the control: no fault verdict; its variation is the noise floor of the others.
# expect: the behaviours the claim accepts (loses_writes retry_storm stops unaffected
# degrades hangs recovers_late fails_fast recovers); a cell outside it is unexpected_behaviour.
# Without it, trial accepts what happened; production refuses hangs, retry_storm, loses_writes,
# stops and recovers_late.
# [[axis]]
# name = "db_fault"
# kind = "fault"
# values = ["none", "latency(200ms)", "down", "reset", "kill"]
# dependency = "db"
# expect = { "latency(200ms)" = ["unaffected", "degrades", "fails_fast"], down = ["fails_fast"], reset = ["fails_fast"] }

# An objective for the fault window only (the steady ones are judged outside it): every request
# answered within 500 ms, error or not.
# [[slo]]
# metric = "latency_p99"
# max = "500ms"
# phase = "fault"

# Kill the service during the load and restart it (does it come back? are acknowledged writes
# still there?). writes: the load's writes carry {seq}; afterwards each is read back (HTTP, or
# a line protocol: request = { tcp = { send = "SET k{seq} v{seq}\r\n", expect = "+OK" } }, read
# = { tcp = { send = "GET k{seq}\r\n", expect = "v{seq}" } }), and an optional checker = ["…",
# "{history}"] judges the history of every write (exit 0 valid, 1 invalid).
# [recovery]
# signal = "SIGKILL"   # default SIGKILL; the names stop takes
# at = "2s"            # offset within the measured load
# ready_within = "20s" # the restarted service must be ready within this
# writes = { request = { method = "PUT", path = "/items/{seq}" }, read = { method = "GET", path = "/items/{seq}", expect_status = [200] } }
"#;

/// The stand-in program `qualify init` writes beside [`STARTER_SPEC`] (as `my-program`): sums
/// 1..n, so the starter's functional check and every cell pass.
pub const STARTER_PROGRAM: &str = r#"#!/bin/sh
# my-program: a stand-in written by `qualify init` so that the starter spec's first run passes.
# It sums 1..SIZE. Point [artifact] command in qualify.toml at your own program instead.
threads=1
size=100
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    *) echo "my-program: unknown argument $1" >&2; exit 2 ;;
  esac
done
seq "$size" | awk -v t="$threads" '{ s += $1 } END { print "sum", s }'
"#;

/// The stand-in service `qualify init --service` writes beside [`SERVICE_STARTER_SPEC`] (as
/// `my_service.py`): an HTTP/1.1 server whose `--workers` each take 10 ms per order, so its
/// capacity is `workers / 0.01` orders per second.
pub const SERVICE_STARTER_PROGRAM: &str = r#"#!/usr/bin/env python3
"""my_service: a stand-in written by `qualify init --service` so that the starter spec's first
run passes. Point [artifact] command in qualify.toml at your own service instead.

    POST /orders/<id>  201 {"id": "<id>"} after a 10 ms service time on one of --workers workers
    GET  /healthz      200 {"ok": true}

Its capacity is workers / 0.01 orders per second (4 workers: 400/s). --self-test starts it on
a free port, places one order and checks the answer (the starter's functional check).
"""
import argparse
import http.server
import json
import os
import socketserver
import sys
import threading
import time
import urllib.request


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            self.reply(200, {"ok": True})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.startswith("/orders/"):
            self.reply(404, {"error": "not found"})
            return
        with self.server.workers:
            time.sleep(self.server.service_time)
        self.reply(201, {"id": self.path.rsplit("/", 1)[-1]})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


def serve(port, workers):
    server = Server(("127.0.0.1", port), Handler)
    server.workers = threading.BoundedSemaphore(workers)
    server.service_time = 0.01
    return server


def self_test():
    server = serve(0, 1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/orders/7" % server.server_address[1]
    request = urllib.request.Request(url, data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=5) as answer:
        body = json.load(answer)
        ok = answer.status == 201 and body == {"id": "7"}
    server.shutdown()
    print("self-test", "ok" if ok else "FAILED: %s" % body)
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    server = serve(args.port, args.workers)
    print("my_service: listening on 127.0.0.1:%d with %d workers"
          % (server.server_address[1], args.workers), flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
"#;
