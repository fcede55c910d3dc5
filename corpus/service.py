#!/usr/bin/env python3
"""A small HTTP service with one failure mode each, for `qualify run` service cells.

    service.py PORT MODE [ARG]

MODE:
  ok              answer every GET/POST with 200 after ARG ms (default 1)
  never-ready     never listen (readiness times out: `unavailable`)
  crash-after     answer ARG requests, then abort() (SIGABRT: `crash` during the load)
  ignore-term     like ok, but ignore SIGTERM (the stop's grace runs out: `slow_shutdown`)
  leak            like ok, but keep ARG KiB per request forever (default 64: memory grows
                  with the requests served, so a smaller ceiling is reached at a lower load)
  refuse-after    answer ARG requests, then close the listening socket but stay alive
                  (connections refused while the process lives: `unavailable`)
"""
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
MODE = sys.argv[2] if len(sys.argv) > 2 else "ok"
ARG = int(sys.argv[3]) if len(sys.argv) > 3 else None

served = 0
kept = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self):
        global served
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        with lock:
            served += 1
            n = served
        if MODE == "crash-after" and n > (ARG or 10):
            os.abort()
        closing = MODE == "refuse-after" and n >= (ARG or 10)
        if closing and n == (ARG or 10):
            threading.Thread(target=server.socket.close, daemon=True).start()
        if MODE == "leak":
            # Touched, so the pages are really resident.
            kept.append(bytearray(b"x" * ((ARG or 64) * 1024)))
        if MODE in ("ok", "ignore-term", "leak"):
            time.sleep((ARG or 1) / 1000.0 if MODE != "leak" else 0.001)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        if MODE == "refuse-after" and closing:
            # Keep-alive connections end too: clients must reconnect, and are refused.
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    do_GET = answer
    do_POST = answer


if MODE == "never-ready":
    while True:
        time.sleep(1)
if MODE == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
server.serve_forever()
