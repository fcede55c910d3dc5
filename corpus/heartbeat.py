#!/usr/bin/env python3
"""heartbeat: drives `livelock` under --progress heartbeat.

Usage: heartbeat.py [BEATS] [INTERVAL_SECONDS]

Appends one line to the file named by $QUALIFY_HEARTBEAT every INTERVAL_SECONDS (default 0.2),
BEATS times (default 5), while staying busy in between; then keeps spinning on the CPU forever
without another heartbeat. A prober watching the heartbeat sees progress stop while the CPU
stays busy. Exits 2 if QUALIFY_HEARTBEAT is not set.
"""
import os
import sys
import time

def main():
    path = os.environ.get("QUALIFY_HEARTBEAT")
    if not path:
        print("heartbeat: QUALIFY_HEARTBEAT is not set", file=sys.stderr)
        return 2
    beats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    for n in range(beats):
        with open(path, "a") as f:
            f.write(f"beat {n}\n")
        end = time.monotonic() + interval
        while time.monotonic() < end:
            pass
    print(f"heartbeat: {beats} beats sent, now spinning without progress", file=sys.stderr, flush=True)
    x = 0
    while True:
        x += 1

if __name__ == "__main__":
    sys.exit(main())
