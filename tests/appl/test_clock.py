"""The clock seam (appl.clock) and the fake clock tests use (appl.testing.FakeClock)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from appl.clock import SYSTEM_CLOCK
from appl.testing import FakeClock


async def test_sleepers_wake_only_when_time_reaches_their_deadline() -> None:
    clock = FakeClock(start=10.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.monotonic()))

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("late", 2.0), ("early", 1.0))]
    await clock.settle()
    assert clock.pending == [11.0, 12.0] and woke == []
    clock.advance(0.5)
    await clock.settle()
    assert woke == []  # real time passing does nothing, and 0.5 s is not enough
    clock.advance(0.5)
    await clock.settle()
    assert woke == [("early", 11.0)]
    assert await clock.jump_to_next() == pytest.approx(1.0)
    assert woke == [("early", 11.0), ("late", 12.0)]
    await asyncio.gather(*tasks)
    assert clock.sleeps == [2.0, 1.0]


async def test_a_cancelled_sleeper_is_not_woken_and_time_cannot_go_back() -> None:
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.pending == []
    clock.advance(10)  # its spent future is skipped without error
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance(-1)


async def test_jump_to_next_says_when_nobody_sleeps() -> None:
    with pytest.raises(TimeoutError, match="no task slept"):
        await FakeClock().jump_to_next(real_timeout_s=0.05)


async def test_autojump_runs_waits_in_deadline_order_without_real_time() -> None:
    clock = FakeClock()
    order: list[tuple[int, float]] = []

    async def worker(k: int) -> None:
        for _ in range(3):
            await clock.sleep(k)
            order.append((k, clock.monotonic()))

    started = time.monotonic()
    async with clock.autojump():
        await asyncio.gather(worker(3), worker(2))
    assert order == [(2, 2), (3, 3), (2, 4), (3, 6), (2, 6), (3, 9)]
    assert time.monotonic() - started < 60  # 25 fake seconds; the cap only catches a hang


def test_a_thread_waits_on_fake_time() -> None:
    clock, stop = FakeClock(), threading.Event()
    results: list[bool] = []
    waiter = threading.Thread(target=lambda: results.append(clock.wait(stop, 30)))
    waiter.start()
    clock.advance(29)
    waiter.join(0.2)
    assert waiter.is_alive()  # 29 of 30 fake seconds: still waiting
    clock.advance(1)
    waiter.join(30)
    assert results == [False]  # timed out, event not set
    stopped = threading.Thread(target=lambda: results.append(clock.wait(stop, 30)))
    stopped.start()
    stop.set()
    stopped.join(30)
    assert results == [False, True]


async def test_the_system_clock_is_the_real_one() -> None:
    before = time.monotonic()
    await SYSTEM_CLOCK.sleep(0.01)
    assert SYSTEM_CLOCK.monotonic() - before >= 0.009  # asyncio may wake a hair early
    assert SYSTEM_CLOCK.wait(threading.Event(), 0.0) is False
