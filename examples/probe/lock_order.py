"""Two workers take the same two locks in opposite order: a classic lock-order deadlock.

`qualify probe --stall 2s -- python3 examples/probe/lock_order.py` calls it a deadlock after the
2-second stall window (not at the timeout), names the futex waits and dumps the stacks.
"""
import threading
import time

a, b = threading.Lock(), threading.Lock()


def worker(first, second, name):
    with first:
        time.sleep(0.2)  # let the other worker take its first lock
        with second:
            print(f"{name} done")


threads = [
    threading.Thread(target=worker, args=(a, b, "left")),
    threading.Thread(target=worker, args=(b, a, "right")),
]
for t in threads:
    t.start()
for t in threads:
    t.join()
