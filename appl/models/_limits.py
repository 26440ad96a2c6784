"""Rate limiters for one model: requests per minute and tokens per minute.

Both are O(1) per request and wake each waiter exactly once (asyncio-throttle polls every
10 ms per waiter, which costs too much with a thousand queued calls). Both read time from a
`Clock` (the real one by default), so tests check their schedule on a fake clock.
"""

from __future__ import annotations

import asyncio

from appl.clock import SYSTEM_CLOCK, Clock


class RequestRateLimiter:
    """Spaces requests evenly: at most `rpm` per minute, one every 60/rpm seconds (FIFO)."""

    def __init__(self, rpm: float, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.interval = 60.0 / rpm
        self.clock = clock
        self._next = 0.0

    async def acquire(self) -> None:
        now = self.clock.monotonic()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            await self.clock.sleep(slot - now)


class TokenBucket:
    """Tokens per minute: a bucket of `tpm` tokens refilled continuously.

    A request takes its estimated tokens up front; `correct(delta)` settles the difference
    once the real usage is known (the level may go negative, which delays later requests).
    """

    def __init__(self, tpm: float, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.capacity = tpm
        self.rate = tpm / 60.0  # tokens per second
        self.level = tpm
        self.clock = clock
        self._stamp = clock.monotonic()
        self._lock = asyncio.Lock()  # FIFO: a big request is not starved by small ones

    def _refill(self) -> None:
        now = self.clock.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, tokens: int) -> int:
        """Wait until `tokens` (capped at the capacity) are available, take them, return them."""
        need = min(float(tokens), self.capacity)
        async with self._lock:
            self._refill()
            while self.level < need:
                await self.clock.sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= need
        return int(need)

    def correct(self, delta: int) -> None:
        self._refill()
        self.level = min(self.capacity, self.level - delta)
