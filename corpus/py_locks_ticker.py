#!/usr/bin/env python3
"""py_locks_ticker: a lock-order deadlock of two Python threads while a daemon thread keeps
ticking in time.sleep, so the process is never entirely asleep.

Usage: py_locks_ticker.py rlock|lock [late]

rlock: threading.RLock, which records its owner: qualify reads the owners from the process's
memory and names the wait-for cycle -> `deadlock`.
lock:  threading.Lock, which records none: no cycle can be proven while the ticker could in
principle release them -> a `timeout` (ambiguous_wait) naming the stuck threads' lines (py-spy).
With `late`, each worker sleeps 0.3 s between its locks instead of meeting at a barrier, as
real code works between them: the workers enter their last waits after the process went quiet.
Never exits.
"""
import sys
import threading
import time

kind = sys.argv[1] if len(sys.argv) > 1 else "rlock"
late = len(sys.argv) > 2 and sys.argv[2] == "late"
make = {"rlock": threading.RLock, "lock": threading.Lock}[kind]
a = make()
b = make()
both_hold_first = threading.Barrier(2)


def worker(first, second):
    with first:
        if late:
            time.sleep(0.3)
        else:
            both_hold_first.wait()
        with second:
            pass


def tick():
    while True:
        time.sleep(0.1)


def main():
    threading.Thread(target=tick, name="ticker", daemon=True).start()
    t1 = threading.Thread(target=worker, args=(a, b), name="worker-ab")
    t2 = threading.Thread(target=worker, args=(b, a), name="worker-ba")
    t1.start()
    t2.start()
    print(f"py_locks_ticker: two threads taking {kind}s a/b in opposite order", file=sys.stderr, flush=True)
    t1.join()
    print("unreachable: no deadlock")


if __name__ == "__main__":
    main()
