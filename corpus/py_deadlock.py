#!/usr/bin/env python3
"""py_deadlock: drives `deadlock` in an interpreter: two Python threads take two
threading.Lock objects in opposite order.

Usage: py_deadlock.py

A barrier makes sure each thread holds its first lock before reaching for the second; the main
thread then waits in join(). All threads end in untimed lock acquisitions (sem_wait / futex
without timeout) with the GIL released. Never exits.
"""
import sys
import threading

a = threading.Lock()
b = threading.Lock()
both_hold_first = threading.Barrier(2)

def worker(first, second):
    with first:
        both_hold_first.wait()
        with second:
            pass

def main():
    t1 = threading.Thread(target=worker, args=(a, b))
    t2 = threading.Thread(target=worker, args=(b, a))
    t1.start()
    t2.start()
    print("py_deadlock: two threads taking a/b in opposite order", file=sys.stderr, flush=True)
    t1.join()
    t2.join()
    print("unreachable: no deadlock")

if __name__ == "__main__":
    main()
