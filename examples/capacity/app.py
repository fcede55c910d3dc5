"""capacity: a WSGI app with a capacity you can compute, served by gunicorn as a user would.

    GET /work/<n>   sleeps SERVICE_TIME seconds (default 0.05) in the worker, then answers 200
    GET /hog/<n>    holds HOG_MIB MiB (default 64) in the worker for a moment, then answers 200
    GET /healthz    answers 200 at once

With gunicorn's sync workers each worker serves one request at a time, so W workers complete
at most W / SERVICE_TIME requests per second: 2 workers x 50 ms = 40 req/s. With SLOW_EVERY=N
and SLOW_SECONDS=S, every request whose <n> is a multiple of N sleeps S seconds instead (a
slow share of 1/N: past gunicorn's --timeout the master kills the worker and starts another).

    gunicorn --workers 2 --bind 127.0.0.1:8000 app:app
"""

import os
import time

SERVICE_TIME = float(os.environ.get("SERVICE_TIME", "0.05"))
SLOW_EVERY = int(os.environ.get("SLOW_EVERY", "0"))
SLOW_SECONDS = float(os.environ.get("SLOW_SECONDS", "0"))
HOG_MIB = int(os.environ.get("HOG_MIB", "64"))


def app(environ, start_response):
    path = environ.get("PATH_INFO", "/")
    if path.startswith("/work"):
        tail = path.rsplit("/", 1)[-1]
        n = int(tail) if tail.isdigit() else 1
        slow = SLOW_EVERY > 0 and n % SLOW_EVERY == 0
        time.sleep(SLOW_SECONDS if slow else SERVICE_TIME)
        body = b"done\n"
    elif path.startswith("/hog"):
        held = bytearray(HOG_MIB << 20)  # zero pages, touched below
        for i in range(0, len(held), 4096):
            held[i] = 1
        time.sleep(SERVICE_TIME)
        body = b"held %d MiB\n" % (len(held) >> 20)
    elif path == "/healthz":
        body = b"ok\n"
    else:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
