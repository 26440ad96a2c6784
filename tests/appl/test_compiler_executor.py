"""The executor alone: event-driven dispatch, failure propagation, limits, ordering."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from appl.compiler import Executor, LatencyModel, PlanStep, Ref, tool
from appl.testing import FakeClock

pytestmark = pytest.mark.timeout(20)


def step(sid: int, name: str, args: dict[str, Any], deps: tuple[int, ...] = ()) -> PlanStep:
    return PlanStep(sid, name, args, frozenset(deps))


def make_tools(*tools: Any) -> dict[str, Any]:
    return {t.name: t for t in tools}


async def test_a_raising_tool_skips_its_dependents_transitively_and_nothing_hangs() -> None:
    @tool
    async def boom(x: int) -> int:
        """Fails."""
        raise RuntimeError(f"boom {x}")

    @tool
    async def inc(x: int) -> int:
        """Adds one."""
        return x + 1

    async with Executor(make_tools(boom, inc)) as ex:
        ex.submit(step(1, "boom", {"x": 1}))
        ex.submit(step(2, "inc", {"x": Ref(1)}, (1,)))
        ex.submit(step(3, "inc", {"x": Ref(2)}, (2,)))
        ex.submit(step(4, "inc", {"x": 10}))
        await ex.wait_idle()
        # A step submitted after its dependency failed is skipped at once, not left waiting.
        late = ex.submit(step(5, "inc", {"x": Ref(3)}, (3,)))
        await ex.wait_idle()
    r = ex.records
    assert r[1].status == "failed" and r[1].error == "RuntimeError: boom 1"
    assert r[2].status == "skipped" and "step 1 failed: RuntimeError: boom 1" in r[2].error
    assert (
        r[3].status == "skipped" and "step 2 was skipped" in r[3].error and "boom 1" in r[3].error
    )
    assert r[4].status == "done" and r[4].result == 11
    assert late.status == "skipped" and "boom 1" in late.error


async def test_sync_tools_run_in_threads_and_overlap() -> None:
    both_started = threading.Barrier(2, timeout=5)
    names: list[str] = []

    @tool
    def blocking(x: int) -> int:
        """A blocking call."""
        names.append(threading.current_thread().name)
        both_started.wait()  # only returns if the two calls really run at the same time
        return x

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async with Executor(make_tools(blocking)) as ex, asyncio.TaskGroup() as tg:
        t = tg.create_task(ticker())
        ex.submit(step(1, "blocking", {"x": 1}))
        ex.submit(step(2, "blocking", {"x": 2}))
        await ex.wait_idle()
        t.cancel()
    assert [ex.records[i].result for i in (1, 2)] == [1, 2]
    assert all(n.startswith("appl-tool") for n in names)
    assert ticks > 0  # the loop kept running while the tools blocked


async def test_critical_path_first_under_a_concurrency_limit_of_one() -> None:
    gate = asyncio.Event()
    order: list[str] = []

    @tool(latency_s=0.0)
    async def hold() -> str:
        """Blocks the only slot until released."""
        order.append("hold")
        await gate.wait()
        return "held"

    @tool(latency_s=0.01)
    async def quick(tag: str) -> str:
        """Short."""
        order.append(tag)
        return tag

    @tool(latency_s=5.0)
    async def slow(tag: str) -> str:
        """Declared long (runs fast here: only the estimate matters)."""
        order.append(tag)
        return tag

    async with Executor(make_tools(hold, quick, slow), max_concurrency=1) as ex:
        ex.submit(step(1, "hold", {}))
        ex.submit(step(2, "quick", {"tag": "leaf-a"}))
        ex.submit(step(3, "quick", {"tag": "leaf-b"}))
        ex.submit(step(4, "quick", {"tag": "chain-head"}))
        ex.submit(step(5, "slow", {"tag": "chain-tail"}, (4,)))
        assert ex.rank(4) == pytest.approx(5.01) and ex.rank(2) == pytest.approx(0.01)
        gate.set()
        await ex.wait_idle()
    # FIFO would run leaf-a first; the longest remaining path (4 -> 5) goes first instead.
    assert order == ["hold", "chain-head", "chain-tail", "leaf-a", "leaf-b"]


async def test_per_tool_concurrency_limit() -> None:
    running = peak = 0
    release = asyncio.Event()

    @tool(max_concurrency=2)
    async def limited(i: int) -> int:
        """At most two at once."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 2:
            release.set()
        await release.wait()
        await asyncio.sleep(0)
        running -= 1
        return i

    @tool
    async def free(i: int) -> int:
        """No limit."""
        return i

    async with Executor(make_tools(limited, free)) as ex:
        for i in range(1, 6):
            ex.submit(step(i, "limited", {"i": i}))
        ex.submit(step(6, "free", {"i": 6}))
        assert ex.records[6].status in ("running", "done")  # not held back by the other tool
        await ex.wait_idle()
    assert peak == 2
    assert all(r.status == "done" for r in ex.records.values())


async def test_timeouts_for_async_and_sync_tools() -> None:
    stuck = threading.Event()

    @tool(timeout_s=0.1)
    async def hangs() -> None:
        """Never returns."""
        await asyncio.Event().wait()

    @tool(timeout_s=0.1)
    def hangs_in_a_thread() -> None:
        """Blocks its thread."""
        stuck.wait(10)

    try:
        async with Executor(make_tools(hangs, hangs_in_a_thread)) as ex:
            ex.submit(step(1, "hangs", {}))
            ex.submit(step(2, "hangs_in_a_thread", {}))
            await ex.wait_idle()
    finally:
        stuck.set()  # let the abandoned thread end
    assert ex.records[1].error == "TimeoutError: hangs timed out after 0.1s"
    assert ex.records[2].error == "TimeoutError: hangs_in_a_thread timed out after 0.1s"


async def test_retries_per_tool_policy() -> None:
    calls = {"a": 0, "b": 0}

    def flaky_factory(key: str, retries: int) -> Any:
        async def flaky() -> str:
            """Fails twice."""
            calls[key] += 1
            if calls[key] <= 2:
                raise ConnectionError(f"try {calls[key]}")
            return "ok"

        return tool(flaky, name=f"flaky_{key}", retries=retries)

    async with Executor(make_tools(flaky_factory("a", 2), flaky_factory("b", 1))) as ex:
        ex.submit(step(1, "flaky_a", {}))
        ex.submit(step(2, "flaky_b", {}))
        await ex.wait_idle()
    assert ex.records[1].status == "done" and ex.records[1].attempts == 3
    assert ex.records[2].status == "failed" and ex.records[2].attempts == 2
    assert ex.records[2].error == "ConnectionError: try 2"
    assert [e.kind for e in ex.timeline if e.step_id == 1].count("retry") == 2


async def test_bad_field_reference_fails_the_step_with_the_available_keys() -> None:
    @tool
    async def lookup() -> dict[str, int]:
        """A record."""
        return {"cost": 3}

    @tool
    async def use(x: int) -> int:
        """Uses x."""
        return x

    async with Executor(make_tools(lookup, use)) as ex:
        ex.submit(step(1, "lookup", {}))
        ex.submit(step(2, "use", {"x": Ref(1, ("price",))}, (1,)))
        ex.submit(step(3, "use", {"x": Ref(1, ("cost",))}, (1,)))
        await ex.wait_idle()
    assert ex.records[2].status == "failed" and "'price'" in ex.records[2].error
    assert "cost" in ex.records[2].error
    assert ex.records[3].result == 3


async def test_cancellation_reaches_running_tools() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def forever() -> None:
        """Runs until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def body() -> None:
        async with Executor(make_tools(forever)) as ex:
            ex.submit(step(1, "forever", {}))
            await ex.wait_idle()

    task = asyncio.create_task(body())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


def test_latency_model_learns_an_ewma() -> None:
    @tool(latency_s=1.0)
    def declared() -> None:
        """d"""

    @tool
    def unknown() -> None:
        """u"""

    model = LatencyModel(default_s=0.5, alpha=0.5)
    assert model.estimate(declared) == 1.0 and model.estimate(unknown) == 0.5
    model.observe(declared, 3.0)
    model.observe(unknown, 2.0)
    assert model.estimate(declared) == pytest.approx(2.0)  # blends with the declared value
    assert model.estimate(unknown) == pytest.approx(2.0)  # first observation replaces a guess
    model.observe(unknown, 4.0)
    assert model.estimate(unknown) == pytest.approx(3.0)


async def test_observed_durations_update_estimates_during_a_run() -> None:
    clock = FakeClock()  # the executor's clock: the observed duration is exactly the nap

    @tool
    async def nap() -> None:
        """Sleeps briefly."""
        await clock.sleep(0.05)

    latency = LatencyModel(default_s=10.0)
    async with (
        clock.autojump(),
        Executor(make_tools(nap), latency=latency, clock=clock.monotonic) as ex,
    ):
        ex.submit(step(1, "nap", {}))
        await ex.wait_idle()
    assert latency.estimate(nap) == pytest.approx(0.05) and latency.observations["nap"] == 1
    rec = ex.records[1]
    assert rec.ready_at is not None and rec.started_at is not None and rec.finished_at is not None
    assert rec.emitted_at <= rec.ready_at <= rec.started_at < rec.finished_at
