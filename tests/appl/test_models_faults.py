"""Each scripted fault, seen through get_model(): a clear error or a successful retry, no hang."""

from __future__ import annotations

import asyncio
import time

import pytest

from appl.errors import (
    BadResponseError,
    ClientRequestError,
    ModelConnectionError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from appl.models import get_model
from appl.testing import FakeClock, Rule
from appl.testing.pytest_plugin import MakeScripted
from appl.types import GenRequest, Message
from tests.appl.helpers_clock import on_fake_clock


def ask(text: str, **kw: object) -> GenRequest:
    return GenRequest(model="scripted", messages=[Message("user", text)], **kw)  # type: ignore[arg-type]


async def test_429_honours_retry_after_then_succeeds(scripted: MakeScripted) -> None:
    server = scripted([Rule(faults=["429"], retry_after=1, reply="ok")])
    clock = FakeClock()
    model, departures = on_fake_clock(clock)
    async with clock.autojump():
        response = await model.generate(ask("q"))
    assert response.text == "ok" and response.retries == 1 and len(server.requests) == 2
    assert clock.sleeps == [1.0]  # the Retry-After second, not the 10 ms backoff
    assert departures.times == [0.0, 1.0]


async def test_429_retry_after_is_capped(scripted: MakeScripted) -> None:
    scripted([Rule(faults=["429"], retry_after=3600, reply="ok")], model={"retry_after_cap_s": 0.1})
    clock = FakeClock()
    model, _ = on_fake_clock(clock)
    async with clock.autojump():
        assert (await model.generate(ask("q"))).text == "ok"
    assert clock.sleeps == [0.1]  # not the hour the server asked for


async def test_500_then_success(scripted: MakeScripted) -> None:
    server = scripted([Rule(faults=["500", "503"], reply="fine")])
    response = await get_model().generate(ask("q"))
    assert response.text == "fine" and response.retries == 2 and len(server.requests) == 3


async def test_persistent_500_gives_up_with_a_clear_message(scripted: MakeScripted) -> None:
    server = scripted([Rule(faults=["500"] * 10, reply="never")])
    with pytest.raises(ServerError) as info:
        await get_model().generate(ask("q"))
    assert str(info.value).startswith(
        "model 'scripted': HTTP 500 on 4 attempts (last: Internal Server Error"
    )
    assert (info.value.attempts, info.value.status_code, info.value.model) == (4, 500, "scripted")
    assert len(server.requests) == 4


async def test_persistent_429_raises_rate_limit_error(scripted: MakeScripted) -> None:
    scripted([Rule(faults=["429"] * 5, retry_after=0)], model={"max_retries": 1})
    with pytest.raises(RateLimitError, match=r"HTTP 429 on 2 attempts"):
        await get_model().generate(ask("q"))


async def test_other_4xx_is_never_retried(scripted: MakeScripted) -> None:
    server = scripted([Rule(match="known", reply="x")], default_reply=None)
    with pytest.raises(ClientRequestError, match=r"HTTP 400 on 1 attempt .*no rule matched"):
        await get_model().generate(ask("something else"))
    assert len(server.requests) == 1


async def test_hang_fires_the_timeout(scripted: MakeScripted) -> None:
    server = scripted([Rule(faults=["hang"] * 5)], model={"timeout_s": 0.3, "max_retries": 1})
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match=r"timeout \(0.3s\) on 2 attempts"):
        await get_model().generate(ask("q"))
    # the timeout is the HTTP client's, on the real clock: a hang holds until the server
    # stops, so ending at all proves it fired; the cap is 50x the 0.6 s expected, for load
    assert time.monotonic() - started < 30.0
    assert len(server.requests) == 2


async def test_hang_then_answer_is_retried(scripted: MakeScripted) -> None:
    scripted([Rule(faults=["hang"], reply="late but fine")], model={"timeout_s": 0.3})
    assert (await get_model().generate(ask("q"))).text == "late but fine"


async def test_drop_is_retried_and_persistent_drop_is_a_connection_error(
    scripted: MakeScripted,
) -> None:
    scripted(
        [
            Rule(match="once", faults=["drop"], reply="back"),
            Rule(match="always", faults=["drop"] * 9),
        ]
    )
    assert (await get_model().generate(ask("once"))).text == "back"
    with pytest.raises(ModelConnectionError, match=r"connection error on 4 attempts"):
        await get_model().generate(ask("always"))


async def test_malformed_json_is_retried_then_bad_response(scripted: MakeScripted) -> None:
    scripted(
        [
            Rule(match="once", faults=["malformed"], reply="good"),
            Rule(match="always", faults=["malformed"] * 9),
        ]
    )
    assert (await get_model().generate(ask("once"))).text == "good"
    with pytest.raises(BadResponseError, match=r"malformed response on 4 attempts"):
        await get_model().generate(ask("always"))


async def test_drop_stream_before_any_text_is_retried(scripted: MakeScripted) -> None:
    # A tool-call-only reply carries no text: the cut comes before anything reached on_text.
    scripted([Rule(faults=["drop_stream"], tool_calls=[{"name": "f", "arguments": {}}])])
    seen: list[str] = []
    response = await get_model().generate(ask("q", stream=True), on_text=seen.append)
    assert response.tool_calls[0].name == "f" and response.retries == 1 and seen == []


async def test_drop_stream_after_text_raises_without_duplicating(scripted: MakeScripted) -> None:
    server = scripted([Rule(faults=["drop_stream"], reply="one two three")])
    seen: list[str] = []
    with pytest.raises(ModelConnectionError, match="not retried, to avoid duplicate text") as info:
        await get_model().generate(ask("q", stream=True), on_text=seen.append)
    assert seen == ["one"] and info.value.attempts == 1 and len(server.requests) == 1


async def test_cancellation_is_not_retried_and_leaves_no_task(scripted: MakeScripted) -> None:
    server = scripted([Rule(latency=5.0, reply="too late")])
    before = asyncio.all_tasks()
    task = asyncio.create_task(get_model().generate(ask("q")))
    while not server.requests:  # noqa: ASYNC110 (the server thread appends; no event to await)
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert len(server.requests) == 1  # not retried
    assert asyncio.all_tasks() - before == set()
    assert get_model().in_flight == 0
