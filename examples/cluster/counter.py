#!/usr/bin/env python3
"""counter.py: a tiny HTTP service in front of Redis, for qualify's cluster walk-through.

Listens on $HOST:$PORT (qualify exports both: on a cluster HOST is the service node's address,
locally 127.0.0.1) and answers `GET /hit/N` by `INCR hits` on the
Redis at $REDIS_ADDR (host:port, the fault proxy in front of it), with a 0.2 s socket timeout so
a Redis that stops answering makes requests fail fast (503) instead of hanging. `GET /healthz`
answers 200 without touching Redis. Only the standard library: one Redis connection per thread,
reconnected after an error.
"""
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = os.environ.get("HOST", "127.0.0.1")
PORT = int(os.environ["PORT"])
REDIS_HOST, REDIS_PORT = os.environ["REDIS_ADDR"].rsplit(":", 1)
TIMEOUT = 0.2
local = threading.local()


def incr():
    conn = getattr(local, "conn", None)
    if conn is None:
        conn = socket.create_connection((REDIS_HOST, int(REDIS_PORT)), timeout=TIMEOUT)
        local.conn = conn
    try:
        conn.sendall(b"*2\r\n$4\r\nINCR\r\n$4\r\nhits\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = conn.recv(64)
            if not chunk:
                raise OSError("redis closed the connection")
            reply += chunk
    except OSError:
        local.conn = None
        conn.close()
        raise
    if not reply.startswith(b":"):
        raise OSError("redis answered %r" % reply)
    return int(reply[1:].strip())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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
        try:
            self.answer(200, b"%d\n" % incr())
        except OSError as e:
            self.answer(503, ("redis: %s\n" % e).encode())


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer((HOST, PORT), Handler).serve_forever()
