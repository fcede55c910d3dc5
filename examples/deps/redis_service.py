#!/usr/bin/env python3
"""redis_service.py: an HTTP service in front of Redis through redis-py, the client library most
Python services use (Debian's python3-redis), to show what a client's timeouts decide.

    redis_service.py --port PORT --redis HOST:PORT [--timeouts none|SECONDS]

Every request (`GET` on any path but /healthz) runs `INCR hits` with one shared
`redis.Redis` client (its own connection pool) and answers 200 with the count, or 503 with the
error when redis-py raised. `--timeouts none` keeps redis-py's defaults: no socket timeout and no
connect timeout, so a request whose reply never comes waits for ever (its thread with it);
`--timeouts 0.2` sets `socket_timeout` and `socket_connect_timeout` to 0.2 s, so it fails in
0.2 s instead.
"""
import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--redis", required=True)
p.add_argument("--timeouts", default="none")
args = p.parse_args()
host, port = args.redis.rsplit(":", 1)
timeout = None if args.timeouts == "none" else float(args.timeouts)
client = redis.Redis(
    host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=timeout
)


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
            self.answer(200, b"%d\n" % client.incr("hits"))
        except redis.RedisError as e:
            self.answer(503, ("redis: %s\n" % e).encode())


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
