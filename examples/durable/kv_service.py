#!/usr/bin/env python3
"""kv_service.py: an HTTP service that keeps its items in Redis.

    kv_service.py --port PORT --redis HOST:PORT [--pool N]

`PUT /items/N` stores item N (`SET item:N 1`) and answers 200 once Redis said OK; `GET
/items/N` answers 200 when Redis has it, 404 when it has not; either answers 503 when Redis
failed (a failed connection is dropped and the next request connects again). The service
keeps nothing itself: what survives is what Redis kept. Only the Python standard library
(Redis's protocol by hand).
"""
import argparse
import queue
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--redis", required=True)
p.add_argument("--pool", type=int, default=8)
args = p.parse_args()
HOST, PORT = args.redis.rsplit(":", 1)
PORT = int(PORT)
idle = queue.LifoQueue()


def command(*words):
    """Send one command on a pooled connection; its reply line (a bulk reply's payload)."""
    try:
        conn = idle.get_nowait()
    except queue.Empty:
        conn = socket.create_connection((HOST, PORT), timeout=1.0)
        conn.settimeout(1.0)
        conn = conn.makefile("rwb")
    try:
        out = b"*%d\r\n" % len(words)
        for w in words:
            out += b"$%d\r\n%s\r\n" % (len(w), w)
        conn.write(out)
        conn.flush()
        line = conn.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("closed")
        if line.startswith(b"-"):
            raise ConnectionError(line.strip().decode())
        if line.startswith(b"$") and int(line[1:]) >= 0:
            line = conn.read(int(line[1:]) + 2)
    except Exception:
        conn.close()
        raise
    idle.put(conn)
    return line.strip()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def answer(self, code, body=b""):
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def item(self):
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        if self.path == "/healthz":
            self.answer(200, b"ok\n")
            return None
        if not self.path.startswith("/items/"):
            self.answer(404)
            return None
        return b"item:" + self.path[len("/items/"):].encode()

    def do_PUT(self):
        key = self.item()
        if key is None:
            return
        try:
            ok = command(b"SET", key, b"1") == b"+OK"
        except Exception as e:
            return self.answer(503, ("redis: %s\n" % e).encode())
        self.answer(200 if ok else 503)

    def do_GET(self):
        key = self.item()
        if key is None:
            return
        try:
            found = command(b"EXISTS", key) == b":1"
        except Exception as e:
            return self.answer(503, ("redis: %s\n" % e).encode())
        self.answer(200 if found else 404)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
