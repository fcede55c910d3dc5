#!/usr/bin/env python3
"""store.py: a tiny key store over HTTP, to qualify whether acknowledged writes survive a kill.

    store.py --port PORT --data FILE --mode buffered|fsync

`PUT /items/N` stores item N and answers 201; `GET /items/N` answers 200 when N is stored,
404 otherwise; `GET /healthz` answers 200. The items live in FILE (one id per line), read
back at start. The two modes differ only in when a write reaches the disk:

  buffered   acknowledge at once, append to FILE from a background thread every second (a
             write acknowledged less than a second before a SIGKILL is lost);
  fsync      append to FILE, flush and fsync it, then acknowledge (nothing acknowledged is lost).

Only the Python standard library.
"""
import argparse
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--data", required=True)
p.add_argument("--mode", choices=["buffered", "fsync"], required=True)
args = p.parse_args()

lock = threading.Lock()
items = set()
pending = []
if os.path.exists(args.data):
    with open(args.data) as f:
        items.update(int(line) for line in f if line.strip().isdigit())
out = open(args.data, "a")


def flusher():
    while True:
        time.sleep(1.0)
        with lock:
            batch, pending[:] = list(pending), []
        if batch:
            out.write("".join("%d\n" % n for n in batch))
            out.flush()


if args.mode == "buffered":
    threading.Thread(target=flusher, daemon=True).start()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code):
        body = b"%d\n" % code
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def item(self):
        tail = self.path.rsplit("/", 1)[-1]
        return int(tail) if tail.isdigit() else None

    def do_PUT(self):
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        n = self.item()
        if n is None:
            return self.answer(400)
        with lock:
            items.add(n)
            if args.mode == "buffered":
                pending.append(n)
            else:
                out.write("%d\n" % n)
                out.flush()
                os.fsync(out.fileno())
        self.answer(201)

    def do_GET(self):
        if self.path == "/healthz":
            return self.answer(200)
        n = self.item()
        with lock:
            found = n in items
        self.answer(200 if found else 404)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
