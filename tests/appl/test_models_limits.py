"""Per-model limits, measured at the real server: concurrency, requests/min, tokens/min."""

from __future__ import annotations

import asyncio
import itertools
import time

from appl.models import TokenBucket, get_model
from appl.testing import Rule
from appl.testing.pytest_plugin import MakeScripted
from appl.types import GenRequest, Message


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
    arrivals: list[float] = []
    original = server.requests

    class Recording(list):  # type: ignore[type-arg]
        def append(self, item: object) -> None:
            arrivals.append(time.monotonic())
            super().append(item)

    server.requests = Recording(original)
    await asyncio.gather(*(get_model().generate(ask()) for _ in range(5)))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 5
    assert all(gap >= 0.06 for gap in gaps), gaps  # 0.1 s apart, minus scheduling slack
    assert arrivals[-1] - arrivals[0] >= 0.38


async def test_token_bucket_waits_for_refill_and_corrects() -> None:
    bucket = TokenBucket(tpm=6000)  # 100 tokens/s, 6000 capacity
    assert await bucket.acquire(6000) == 6000
    started = time.monotonic()
    await bucket.acquire(20)  # empty bucket: 20 tokens take ~0.2 s to refill
    assert time.monotonic() - started >= 0.15
    bucket.correct(+100)  # the call used 100 more tokens than estimated: we owe them
    assert bucket.level < 0


async def test_tpm_limit_delays_the_second_call(scripted: MakeScripted) -> None:
    scripted([Rule(reply="ok")], model={"tpm": 600})  # 10 tokens/s
    model = get_model()
    # 600 words: the server reports ~600 prompt tokens, so the correction keeps the bucket empty
    await model.generate(ask("word " * 600, max_tokens=100))
    started = time.monotonic()
    await model.generate(ask("y", max_tokens=2))  # needs a few tokens refilled (~0.5 s)
    assert time.monotonic() - started >= 0.2
