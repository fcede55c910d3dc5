#!/usr/bin/env python3
"""pg_store.py: an HTTP service that keeps its items in PostgreSQL.

    pg_store.py --port PORT --pg HOST:PORT [--pool N]

`PUT /items/N` inserts row N (`INSERT INTO items VALUES (N)`, its own transaction) and
answers 200 once PostgreSQL committed it; `GET /items/N` answers 200 when the row is there,
404 when it is not; either answers 503 when PostgreSQL failed (the failed connection is
dropped and the next request connects again). The service keeps nothing itself: what
survives is what PostgreSQL kept. psycopg2 (Debian's python3-psycopg2).
"""
import argparse
import queue
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--pg", required=True)
args = p.parse_args()
HOST, PORT = args.pg.rsplit(":", 1)
idle = queue.LifoQueue()


def connect():
    conn = psycopg2.connect(host=HOST, port=PORT, user="postgres", dbname="postgres",
                            connect_timeout=2)
    conn.autocommit = True
    return conn


def run(sql, *params):
    """One statement on a pooled connection: its first row (None without one)."""
    try:
        conn = idle.get_nowait()
    except queue.Empty:
        conn = connect()
    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            row = cur.fetchone() if cur.description else None
    except Exception:
        conn.close()
        raise
    idle.put(conn)
    return row


run("CREATE TABLE IF NOT EXISTS items (id bigint PRIMARY KEY)")


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
        try:
            return int(self.path.rsplit("/", 1)[1])
        except ValueError:
            self.answer(404)
            return None

    def do_PUT(self):
        n = self.item()
        if n is None:
            return
        try:
            run("INSERT INTO items VALUES (%s) ON CONFLICT DO NOTHING", n)
        except Exception as e:
            return self.answer(503, ("postgres: %s\n" % e).encode())
        self.answer(200)

    def do_GET(self):
        n = self.item()
        if n is None:
            return
        try:
            found = run("SELECT 1 FROM items WHERE id = %s", n) is not None
        except Exception as e:
            return self.answer(503, ("postgres: %s\n" % e).encode())
        self.answer(200 if found else 404)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
