"""A fake clock for tests where timing is the subject (see appl/clock.py for the seam).

Its time moves only when the test says so: `advance(s)` jumps and wakes every sleeper whose
deadline has come, `jump_to_next()` waits (in real time, bounded) until some task sleeps and
jumps to its deadline, and `autojump()` keeps doing that in the background, so a program full
of backoffs and rate-limit waits runs at once and its schedule is exact. Sleeps are recorded
in `sleeps`, the durations asked for, in order.

Like trio's MockClock, it jumps rather than ticks; unlike it, asyncio cannot tell us when
every task is blocked, so `settle()` yields to the event loop a fixed number of times before
a jump: enough for tasks woken by the previous jump to reach their next sleep, as long as
they do not wait on real I/O in between. Call it from the event loop's thread; threads that
wait through `wait()` are released by `advance` from any thread.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

SETTLE_YIELDS = 20  # loop iterations granted to woken tasks before the next jump
POLL_S = 0.002  # real seconds between looks for a sleeper (jump_to_next) or a set event


class FakeClock:
    """Virtual monotonic time, starting at `start` and moved only by the test."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._moved = threading.Condition(self._lock)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []  # a heap
        self._order = itertools.count()
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), waiter))
        await waiter  # a cancelled sleeper's future is done: advance() skips it

    def wait(self, event: threading.Event, timeout: float) -> bool:
        with self._moved:
            deadline = self._now + max(0.0, timeout)
            while not event.is_set() and self._now < deadline:
                # an Event cannot notify our condition: look at it again every POLL_S
                self._moved.wait(POLL_S)
        return event.is_set()

    @property
    def pending(self) -> list[float]:
        """Deadlines of the tasks sleeping now, earliest first."""
        with self._lock:
            return sorted(d for d, _, w in self._sleepers if not w.done())

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds` and wake every sleeper whose deadline has come."""
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back ({seconds} s)")
        with self._moved:
            self._now += seconds
            due: list[asyncio.Future[None]] = []
            while self._sleepers and self._sleepers[0][0] <= self._now:
                due.append(heapq.heappop(self._sleepers)[2])
            self._moved.notify_all()
        for waiter in due:
            if not waiter.done():
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    async def settle(self) -> None:
        """Let tasks that are ready run until they block again (on this clock or a lock)."""
        for _ in range(SETTLE_YIELDS):
            await asyncio.sleep(0)

    async def jump_to_next(self, real_timeout_s: float = 30.0) -> float:
        """Wait until a task sleeps on this clock, then jump to the earliest deadline and
        wake it; return the seconds jumped. Real time bounds the wait (a task may be in real
        I/O first), and TimeoutError says nobody slept."""
        deadline = time.monotonic() + real_timeout_s
        await self.settle()
        while not self.pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no task slept on the fake clock within {real_timeout_s} s")
            await asyncio.sleep(POLL_S)  # real time: the sleeper may be waiting on I/O
            await self.settle()
        step = max(0.0, self.pending[0] - self._now)
        self.advance(step)
        await self.settle()
        return step

    @asynccontextmanager
    async def autojump(self) -> AsyncIterator[FakeClock]:
        """Within the block, whenever tasks sleep on this clock, time jumps to the earliest
        deadline: the block's waits take no real time and happen in deadline order."""

        async def jumper() -> None:
            while True:
                try:
                    await self.jump_to_next(real_timeout_s=3600.0)
                except TimeoutError:
                    continue

        task = asyncio.create_task(jumper())
        try:
            yield self
        finally:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # cancelled meanwhile
        waiter.set_result(None)
