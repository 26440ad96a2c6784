"""The clock our code reads when time decides something: rate limits, backoff, heartbeats.

Code that spaces requests or waits before a retry takes a `Clock` (default: `SYSTEM_CLOCK`,
the real one). Tests pass `appl.testing.FakeClock`, whose time moves only when the test
moves it, so a test of "one request every 0.1 s" checks the schedule exactly instead of
timing a loaded machine. Durations that merely report (a call's latency in a log) may use
the clock too; limits enforced by the kernel or a socket (a sandbox's wall limit, an HTTP
read timeout) are real and stay outside it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time in seconds, and the two ways of waiting on it."""

    def monotonic(self) -> float:
        """Seconds since an arbitrary origin; never goes backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for `seconds` of this clock's time (<= 0: just yield)."""
        ...

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Block the calling *thread* until `event` is set or `timeout` seconds of this
        clock's time passed; return whether the event is set (as `Event.wait` does). For
        code that runs in its own thread, such as a progress heartbeat."""
        ...


class SystemClock:
    """The real clock: `time.monotonic`, `asyncio.sleep`, `threading.Event.wait`."""

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(max(0.0, timeout))


SYSTEM_CLOCK: Clock = SystemClock()
