#!/usr/bin/env python3
"""py_exhaust: CPython's own fatal reports, and twins that catch the same error and go on.

Usage: py_exhaust.py MODE [N]

  memory            one 2**60-byte bytearray: MemoryError, exit 1 -> out_of_memory
  recover-memory    catches that MemoryError -> ok
  threads N         starts N sleeping daemon threads: under --pids below that, RuntimeError:
                    can't start new thread, exit 1 -> exit_failure naming the pids ceiling;
                    otherwise ok
  threads-wait N    N workers meet at a barrier of N+1 with the main thread; a worker that
                    cannot start leaves the others (non-daemon) waiting at the barrier forever:
                    under --pids a timeout whose detail names the runtime's report
  recursion         unbounded recursion: RecursionError, exit 1 -> crash (stack overflow)
  recover-recursion catches the RecursionError -> ok
  fatal             Py_FatalError through ctypes: "Fatal Python error", abort -> crash
"""
import sys
import threading
import time

mode = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def deep(k):
    return deep(k + 1) + 1


if mode == "memory":
    blob = bytearray(1 << 60)
elif mode == "recover-memory":
    try:
        blob = bytearray(1 << 60)
    except MemoryError:
        print("caught MemoryError, went on")
    print("recovered")
elif mode == "threads":
    for _ in range(n):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    print(f"started {n} threads")
elif mode == "threads-wait":
    barrier = threading.Barrier(n + 1)
    for _ in range(n):
        threading.Thread(target=barrier.wait).start()
    barrier.wait()
    print(f"{n} workers met")
elif mode == "recursion":
    deep(0)
elif mode == "recover-recursion":
    try:
        deep(0)
    except RecursionError:
        print("caught RecursionError, went on")
    print("recovered")
elif mode == "fatal":
    import ctypes

    ctypes.pythonapi.Py_FatalError(b"py_exhaust gave up")
else:
    print(f"py_exhaust: unknown mode {mode}", file=sys.stderr)
    sys.exit(64)
