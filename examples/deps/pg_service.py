#!/usr/bin/env python3
"""pg_service.py: an HTTP service whose every request queries PostgreSQL, through psql.

    pg_service.py --port PORT --pg HOST:PORT

Each request runs `psql -c "select count(*) from pg_stat_activity"` against the database (a
new connection per request: startup, authentication and query are several round trips) and
answers 200 with the result, or 503 when psql failed. Only the Python standard library and
the psql client.
"""
import argparse
import subprocess
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--pg", required=True)
args = p.parse_args()
HOST, PORT = args.pg.rsplit(":", 1)


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
            out = subprocess.run(
                ["psql", "-h", HOST, "-p", PORT, "-U", "postgres", "-d", "postgres", "-tAc",
                 "select count(*) from pg_stat_activity"],
                capture_output=True, timeout=5, check=True)
            self.answer(200, out.stdout)
        except Exception as e:
            self.answer(503, ("postgres: %s\n" % e).encode())


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
