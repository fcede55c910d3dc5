#!/usr/bin/env python3
"""cache_service.py: an HTTP service in front of Redis, to qualify what it does when Redis fails.

    cache_service.py --port PORT --redis HOST:PORT [--pool N] [--retry none|storm|budget]
                     [--op-timeout SECONDS] [--wait SECONDS]

Every request (`GET` or `POST` on any path) takes a connection from a pool of at most N
(waiting up to --wait seconds, default 2, for one: a request that finds none answers 503), and
sends `INCR hits` to
Redis over it (each socket operation bounded by --op-timeout, default 1 s) and answers 200
with the count, or 503 when Redis failed. A connection whose operation failed is closed and
replaced. On a failure:

  none     answer 503 at once;
  storm    reconnect and try again at once, up to 20 attempts, no backoff (a retry storm);
  budget   at most one retry, and only while retries stay under 10% of requests, after 50 ms
           (a retry budget, as tower's Budget or the SRE book's "Handling Overload").

Only the Python standard library (Redis's inline protocol).
"""
import argparse
import queue
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--redis", required=True)
p.add_argument("--pool", type=int, default=4)
p.add_argument("--retry", choices=["none", "storm", "budget"], default="none")
p.add_argument("--op-timeout", type=float, default=1.0)
p.add_argument("--wait", type=float, default=2.0)
args = p.parse_args()
RHOST, RPORT = args.redis.rsplit(":", 1)
RPORT = int(RPORT)

slots = threading.BoundedSemaphore(args.pool)
idle = queue.LifoQueue()
stats_lock = threading.Lock()
requests = 0
retries = 0


def connect():
    s = socket.create_connection((RHOST, RPORT), timeout=args.op_timeout)
    s.settimeout(args.op_timeout)
    return s


def incr(conn):
    conn.sendall(b"INCR hits\r\n")
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = conn.recv(64)
        if not chunk:
            raise ConnectionError("closed")
        reply += chunk
    if not reply.startswith(b":"):
        raise ConnectionError("unexpected reply %r" % reply[:20])
    return int(reply[1:].strip())


def attempt():
    """One operation on a pooled connection; a failed connection is dropped."""
    try:
        conn = idle.get_nowait()
    except queue.Empty:
        conn = connect()
    try:
        n = incr(conn)
    except Exception:
        conn.close()
        raise
    idle.put(conn)
    return n


def operate():
    global requests, retries
    with stats_lock:
        requests += 1
    tries = 20 if args.retry == "storm" else 2 if args.retry == "budget" else 1
    for i in range(tries):
        try:
            return attempt()
        except Exception:
            if i + 1 >= tries:
                raise
            if args.retry == "budget":
                with stats_lock:
                    if retries + 1 > 0.1 * requests:
                        raise
                    retries += 1
                time.sleep(0.05)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle_one(self):
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        if self.path == "/healthz":
            return self.answer(200, b"ok\n")
        if not slots.acquire(timeout=args.wait):
            return self.answer(503, b"no connection\n")
        try:
            n = operate()
            self.answer(200, b"%d\n" % n)
        except Exception as e:
            self.answer(503, ("redis: %s\n" % e).encode())
        finally:
            slots.release()

    def answer(self, code, body):
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = handle_one
    do_POST = handle_one


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
