"""Per-model limits: concurrency measured at the real server; requests/min, tokens/min and
the waits between retries decided on a fake clock (appl.testing.FakeClock), so the schedule
is checked exactly and a loaded machine cannot make it pass or fail."""

from __future__ import annotations

import asyncio

import pytest

from appl.models import TokenBucket, get_model
from appl.testing import FakeClock, Rule
from appl.testing.pytest_plugin import MakeScripted
from appl.types import GenRequest, Message
from tests.appl.helpers_clock import on_fake_clock


def ask(text: str = "q", **kw: object) -> GenRequest:
    return GenRequest(model="scripted", messages=[Message("user", text)], **kw)  # type: ignore[arg-type]


async def test_max_concurrency_bounds_requests_in_flight(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="ok", latency=0.05)], model={"max_concurrency": 3})
    responses = await asyncio.gather(*(get_model().generate(ask()) for _ in range(12)))
    assert all(r.text == "ok" for r in responses)
    assert server.max_in_flight == 3  # reached, never exceeded
    assert len(server.requests) == 12


async def test_unlimited_enough_concurrency_runs_all_at_once(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="ok", latency=0.2)], model={"max_concurrency": 50})
    await asyncio.gather(*(get_model().generate(ask()) for _ in range(20)))
    assert server.max_in_flight == 20


async def test_rpm_spaces_requests(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="ok")], model={"rpm": 600})  # one request every 0.1 s
    clock = FakeClock(start=100.0)
    model, departures = on_fake_clock(clock)
    async with clock.autojump():
        responses = await asyncio.gather(*(model.generate(ask()) for _ in range(5)))
    assert [r.text for r in responses] == ["ok"] * 5 and len(server.requests) == 5
    # the first leaves at once, each next one 0.1 s after the previous: never earlier
    assert departures.times == pytest.approx([100.0, 100.1, 100.2, 100.3, 100.4])
    assert clock.sleeps == pytest.approx([0.1, 0.2, 0.3, 0.4])


async def test_token_bucket_waits_for_refill_and_corrects() -> None:
    clock = FakeClock()
    bucket = TokenBucket(tpm=6000, clock=clock)  # 100 tokens/s, 6000 capacity
    assert await bucket.acquire(6000) == 6000
    taking = asyncio.create_task(bucket.acquire(20))  # empty: 20 tokens take 0.2 s to refill
    await clock.settle()
    clock.advance(0.15)
    await clock.settle()
    assert not taking.done()  # 15 tokens are not enough
    waited = 0.15
    while not taking.done():
        waited += await clock.jump_to_next()
    assert await taking == 20 and waited == pytest.approx(0.2)
    bucket.correct(+100)  # the call used 100 more tokens than estimated: we owe them
    assert bucket.level == pytest.approx(-100)


async def test_tpm_limit_delays_the_second_call(scripted: MakeScripted) -> None:
    scripted([Rule(reply="ok")], model={"tpm": 600})  # 10 tokens/s
    clock = FakeClock()
    model, departures = on_fake_clock(clock)
    # 600 words: the server reports ~600 prompt tokens, so the correction empties the bucket
    first = await model.generate(ask("word " * 600, max_tokens=100))
    assert clock.sleeps == [] and first.usage.total_tokens > 600
    second = ask("y", max_tokens=2)
    async with clock.autojump():
        await model.generate(second)
    # the bucket owed what the first call used beyond the 600 tokens it holds; the second
    # left once its own estimate was refilled on top of that, at 10 tokens/s
    need = sum(model.estimate(second))
    assert departures.times[1] == pytest.approx((first.usage.total_tokens - 600 + need) / 10)


async def test_backoff_grows_exponentially_under_its_ceiling(scripted: MakeScripted) -> None:
    # full jitter: each wait is uniform(0, min(max, base * 2**k)); 4 failures, then an answer
    scripted(
        [Rule(faults=["503"] * 4, reply="ok")],
        model={"max_retries": 4, "backoff_base_s": 1.0, "backoff_max_s": 5.0},
    )
    clock = FakeClock()
    model, departures = on_fake_clock(clock)
    async with clock.autojump():
        assert (await model.generate(ask("q"))).retries == 4
    ceilings = [1.0, 2.0, 4.0, 5.0]
    assert len(clock.sleeps) == 4
    assert all(0 <= s <= c for s, c in zip(clock.sleeps, ceilings, strict=True)), clock.sleeps
    assert departures.times[-1] == pytest.approx(sum(clock.sleeps))
