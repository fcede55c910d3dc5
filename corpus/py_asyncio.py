#!/usr/bin/env python3
"""py_asyncio: asyncio tasks waiting on each other.

Usage: py_asyncio.py deadlock | later SECONDS

deadlock: two tasks take two asyncio.Locks in opposite order. The event loop then sleeps in
epoll_wait without a timeout, its epoll set holding only its own self-pipe (a socketpair whose
both ends the process holds): nothing outside can wake it -> `deadlock`. Never exits.
later:    a task awaits an asyncio.Event that loop.call_later sets after SECONDS: the loop's
epoll_wait has a timeout (its timer) -> `ok`.
"""
import asyncio
import sys


async def worker(first, second, both):
    async with first:
        both.append(1)
        while len(both) < 2:
            await asyncio.sleep(0.01)
        async with second:
            pass


async def deadlock():
    a, b, both = asyncio.Lock(), asyncio.Lock(), []
    print("py_asyncio: two tasks taking a/b in opposite order", file=sys.stderr, flush=True)
    await asyncio.gather(worker(a, b, both), worker(b, a, both))


async def later(seconds):
    ev = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, ev.set)
    await ev.wait()
    print(f"set after {seconds:.1f} s")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "deadlock"
    if mode == "later":
        asyncio.run(later(float(sys.argv[2]) if len(sys.argv) > 2 else 3.0))
    else:
        asyncio.run(deadlock())
