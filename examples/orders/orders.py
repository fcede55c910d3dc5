#!/usr/bin/env python3
"""orders: a worker-pool HTTP/1.1 service with a capacity you can compute.

Every order request holds one of W worker threads for a service time drawn with mean S
(exponential by default, or fixed), so the service completes at most W / S requests per second.
Requests that find every worker busy wait in a queue (unbounded by default; with --queue N a
request finding N waiting is answered 503 at once: the service sheds load).

    GET  /healthz        200 "ok" (answered by the I/O thread, never queued)
    POST /orders/<id>    201 {"id": <id>, "worker": k}   (one service time)
    GET  /orders/<id>    200 {"id": <id>, "worker": k}   (one service time)
    anything else        404

HTTP/1.1 keep-alive (Connection: close honoured), Content-Length bodies, one request at a time
per connection. One I/O thread multiplexes every connection (selectors); the workers only
sleep and answer, so the Python interpreter is not the bottleneck below a few thousand
requests per second.

Usage: orders.py [--port P] [--workers W] [--service-time S] [--distribution exp|fixed]
                 [--queue N] [--seed N]
The port defaults to $PORT, else 0 (any free port). The first line on stdout names the
address: "orders: listening on 127.0.0.1:PORT ...". SIGTERM or SIGINT stops it (exit 0).
"""

import argparse
import collections
import json
import os
import queue
import random
import selectors
import signal
import socket
import sys
import threading
import time

REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found",
           413: "Payload Too Large", 503: "Service Unavailable"}
MAX_HEAD = 16 * 1024
MAX_BODY = 1024 * 1024


def response(status, body, close=False):
    head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % (
        status, REASONS.get(status, "Status"), len(body))
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.busy = False      # a worker owns the request in flight
        self.closed = False


def parse(buf):
    """One complete request from the front of buf: (method, path, close, consumed) or None.
    Raises ValueError on a malformed or oversized request."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise ValueError("header too large")
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ValueError("bad request line")
    length, close = 0, parts[2] == "HTTP/1.0"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == "content-length":
            length = int(value)
            if length < 0 or length > MAX_BODY:
                raise ValueError("bad content-length")
        elif name == "connection":
            close = value == "close" or (close and value != "keep-alive")
        elif name == "transfer-encoding":
            raise ValueError("chunked bodies are not supported")
    total = end + 4 + length
    if len(buf) < total:
        return None
    return parts[0], parts[1], close, total


class Service:
    def __init__(self, args):
        self.args = args
        self.sel = selectors.DefaultSelector()
        self.work = queue.Queue(maxsize=args.queue)
        self.returned = collections.deque()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        self.stopping = False
        self.rng = random.Random(args.seed)
        self.rng_lock = threading.Lock()

    def service_time(self):
        s = self.args.service_time
        if self.args.distribution == "fixed" or s <= 0:
            return s
        with self.rng_lock:
            return self.rng.expovariate(1.0 / s)

    def worker(self, k):
        while True:
            item = self.work.get()
            if item is None:
                return
            conn, method, path, close = item
            time.sleep(self.service_time())
            order = path[len("/orders/"):]
            body = json.dumps({"id": order, "worker": k}).encode()
            self.answer(conn, response(201 if method == "POST" else 200, body, close), close)

    def answer(self, conn, data, close):
        """Send an answer from a worker, then hand the connection back to the I/O thread."""
        try:
            conn.sock.sendall(data)
        except OSError:
            close = True
        self.returned.append((conn, close))
        try:
            os.write(self.wake_w, b"x")
        except BlockingIOError:
            pass

    def close(self, conn):
        if not conn.closed:
            conn.closed = True
            try:
                self.sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            conn.sock.close()

    def serve_buffered(self, conn):
        """Handle complete requests in conn's buffer until one goes to a worker."""
        while not conn.busy and not conn.closed:
            try:
                request = parse(conn.buf)
            except ValueError as e:
                self.send_now(conn, response(400, json.dumps({"error": str(e)}).encode(), True), True)
                return
            if request is None:
                return
            method, path, close, used = request
            del conn.buf[:used]
            if path == "/healthz" and method in ("GET", "HEAD"):
                self.send_now(conn, response(200, b'"ok"', close), close)
            elif path.startswith("/orders/") and method in ("GET", "POST"):
                try:
                    self.work.put_nowait((conn, method, path, close))
                except queue.Full:
                    self.send_now(conn, response(503, b'{"error": "queue full"}', close), close)
                    continue
                conn.busy = True
                self.sel.unregister(conn.sock)
            else:
                self.send_now(conn, response(404, b'{"error": "not found"}', close), close)

    def send_now(self, conn, data, close):
        try:
            conn.sock.sendall(data)
        except OSError:
            close = True
        if close:
            self.close(conn)

    def run(self, listener):
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, "listen")
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        workers = [threading.Thread(target=self.worker, args=(k,), daemon=True)
                   for k in range(self.args.workers)]
        for w in workers:
            w.start()
        while not self.stopping:
            for key, _ in self.sel.select(timeout=0.5):
                if key.data == "listen":
                    while True:
                        try:
                            sock, _ = listener.accept()
                        except (BlockingIOError, InterruptedError):
                            break
                        sock.setblocking(True)
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        conn = Conn(sock)
                        self.sel.register(sock, selectors.EVENT_READ, conn)
                elif key.data == "wake":
                    try:
                        while os.read(self.wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                    while self.returned:
                        conn, close = self.returned.popleft()
                        conn.busy = False
                        if close or conn.closed:
                            # Unregistered while busy: only the socket is left to close.
                            conn.closed = True
                            conn.sock.close()
                            continue
                        self.sel.register(conn.sock, selectors.EVENT_READ, conn)
                        self.serve_buffered(conn)
                else:
                    conn = key.data
                    try:
                        data = conn.sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        self.close(conn)
                        continue
                    conn.buf += data
                    self.serve_buffered(conn)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")))
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--service-time", type=float, default=0.01, help="mean seconds per request")
    p.add_argument("--distribution", choices=["exp", "fixed"], default="exp")
    p.add_argument("--queue", type=int, default=0, help="most waiting requests (0: unbounded)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.workers < 1 or args.service_time < 0:
        p.error("--workers must be at least 1 and --service-time not negative")

    service = Service(args)

    def stop(signum, frame):
        service.stopping = True
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(1024)
    host, port = listener.getsockname()
    capacity = args.workers / args.service_time if args.service_time > 0 else float("inf")
    print("orders: listening on %s:%d with %d workers, %s service time %.4f s (capacity %.0f req/s)"
          % (host, port, args.workers, args.distribution, args.service_time, capacity), flush=True)
    service.run(listener)
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
