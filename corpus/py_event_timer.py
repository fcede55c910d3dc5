#!/usr/bin/env python3
"""py_event_timer: never a deadlock - the main thread waits on a threading.Event without a
timeout (an untimed lock wait) that a threading.Timer sets after SECONDS; a daemon thread ticks
meanwhile. Ends `ok`.

Usage: py_event_timer.py SECONDS
"""
import sys
import threading
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0


def tick():
    while True:
        time.sleep(0.1)


threading.Thread(target=tick, daemon=True).start()
done = threading.Event()
threading.Timer(seconds, done.set).start()
done.wait()
print(f"set after {seconds:.1f} s")
