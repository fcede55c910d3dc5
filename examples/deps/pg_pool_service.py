#!/usr/bin/env python3
"""pg_pool_service.py: an HTTP service in front of PostgreSQL through psycopg2's connection pool
(Debian's python3-psycopg2), a pool that raises when it is exhausted instead of waiting.

    pg_pool_service.py --port PORT --pg HOST:PORT [--pool-max N] [--pool-min M]

Every request (`GET` on any path but /healthz) takes a connection from a
`psycopg2.pool.ThreadedConnectionPool(N, N)` and runs `select 1`; it answers 200, or 503 when
the pool is exhausted (`PoolError`: all N connections are in use — the pool raises at once,
it never waits) or the query failed (the connection is then discarded). The N connections are
opened at start: psycopg2 opens a missing one while it holds the pool's lock, so with a slow
database every other request would wait for that connect (try `--pool-min 1`).
"""
import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2
import psycopg2.pool

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--pg", required=True)
p.add_argument("--pool-max", type=int, default=4)
p.add_argument("--pool-min", type=int)
args = p.parse_args()
host, port = args.pg.rsplit(":", 1)
pool = psycopg2.pool.ThreadedConnectionPool(
    args.pool_min or args.pool_max, args.pool_max, host=host, port=int(port), user="postgres", dbname="postgres",
    connect_timeout=2,
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
            conn = pool.getconn()
        except psycopg2.pool.PoolError as e:
            return self.answer(503, ("pool: %s\n" % e).encode())
        broken = False
        try:
            conn.autocommit = True  # one round trip per query: no BEGIN, no ROLLBACK
            with conn.cursor() as cur:
                cur.execute("select 1")
                cur.fetchone()
            self.answer(200, b"ok\n")
        except psycopg2.Error as e:
            broken = True
            self.answer(503, ("postgres: %s\n" % e).encode())
        finally:
            pool.putconn(conn, close=broken)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.serve_forever()
