#!/usr/bin/env python3
"""api_service.py: an HTTP service in front of an HTTP API, to qualify how it retries.

    api_service.py --port PORT --api HOST:PORT [--retry storm|budget]

Every request (`GET` on any path) calls `GET /` on the API over a pool of keep-alive
connections (`http.client`) and answers 200 when the API answered 2xx, else 503. When the API
answers 5xx or 429, or the call fails:

  storm    call again at once, up to 10 attempts in all (no backoff, no budget);
  budget   call again at most once, and only while retries stay under 10% of requests (a
           retry budget, as tower's Budget or the SRE book's "Handling Overload").

Only the Python standard library.
"""
import argparse
import http.client
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--api", required=True)
p.add_argument("--retry", choices=["storm", "budget"], default="budget")
args = p.parse_args()
HOST, PORT = args.api.rsplit(":", 1)
PORT = int(PORT)
idle = queue.LifoQueue()
lock = threading.Lock()
requests = 0
retries = 0


def call():
    """One call on a pooled connection: the API's status (a failed connection is dropped)."""
    try:
        conn = idle.get_nowait()
    except queue.Empty:
        conn = http.client.HTTPConnection(HOST, PORT, timeout=1.0)
    try:
        conn.request("GET", "/")
        reply = conn.getresponse()
        reply.read()
    except Exception:
        conn.close()
        raise
    if reply.will_close:
        conn.close()
    else:
        idle.put(conn)
    return reply.status


def serve():
    global requests, retries
    with lock:
        requests += 1
    attempts = 10 if args.retry == "storm" else 2
    for i in range(attempts):
        try:
            status = call()
            if status < 400:
                return True
            if status < 500 and status != 429:
                return False
        except Exception:
            pass
        if i + 1 >= attempts:
            return False
        if args.retry == "budget":
            with lock:
                if retries + 1 > 0.1 * requests:
                    return False
                retries += 1
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def answer(self, code, body):
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/healthz":
            return self.answer(200, b"ok\n")
        if serve():
            self.answer(200, b"ok\n")
        else:
            self.answer(503, b"the API failed\n")


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
