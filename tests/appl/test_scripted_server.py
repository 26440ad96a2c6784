"""The scripted server itself, driven by the real openai client (no appl layers in between)."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx2
import openai
import pydantic
import pytest

from appl.testing import Reply, Rule, ScriptedServer


def client(server: ScriptedServer, **kw: object) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0, **kw)  # type: ignore[arg-type]


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_substring_regex_and_callable_rules_answer_in_order() -> None:
    rules = [
        Rule(match="capital of France", reply="Paris"),
        Rule(match=re.compile(r"vote \d+"), reply=lambda body: f"A from {body['model']}"),
        Rule(match=lambda body: body.get("temperature") == 0.5, reply="warm"),
    ]
    async with ScriptedServer(rules=rules, default_reply="fallback") as server:
        c = client(server)
        r1 = await c.chat.completions.create(
            model="m1", messages=user("What is the capital of France?")
        )
        r2 = await c.chat.completions.create(model="m2", messages=user("vote 3"))
        r3 = await c.chat.completions.create(model="m", messages=user("hi"), temperature=0.5)
        r4 = await c.chat.completions.create(model="m", messages=user("anything"))
        await c.close()
    assert [r.choices[0].message.content for r in (r1, r2, r3, r4)] == [
        "Paris",
        "A from m2",
        "warm",
        "fallback",
    ]
    assert r1.usage is not None and r1.usage.completion_tokens == 1 and r1.usage.prompt_tokens > 0
    assert [b["model"] for b in server.requests] == ["m1", "m2", "m", "m"]
    assert server.prompts[0] == "What is the capital of France?"
    assert rules[0].hits == 1


async def test_replies_are_consumed_in_order_and_the_last_repeats() -> None:
    async with ScriptedServer(rules=[Rule(replies=["first", "second"])]) as server:
        c = client(server)
        texts = [
            (await c.chat.completions.create(model="m", messages=user("q")))
            .choices[0]
            .message.content
            for _ in range(3)
        ]
        multi = await c.chat.completions.create(model="m", messages=user("q"), n=2)
        await c.close()
    assert texts == ["first", "second", "second"]
    assert [ch.message.content for ch in multi.choices] == ["second", "second"]


async def test_n_choices_and_times() -> None:
    rules = [Rule(match="q", replies=["a", "b", "c"], times=1), Rule(reply="later")]
    async with ScriptedServer(rules=rules) as server:
        c = client(server)
        first = await c.chat.completions.create(model="m", messages=user("q"), n=3)
        second = await c.chat.completions.create(model="m", messages=user("q"))
        await c.close()
    assert [ch.message.content for ch in first.choices] == ["a", "b", "c"]
    assert [ch.index for ch in first.choices] == [0, 1, 2]
    assert second.choices[0].message.content == "later"


class City(pydantic.BaseModel):
    name: str
    population: int


async def test_structured_replies_are_serialized_as_json() -> None:
    rules = [
        Rule(match="city", reply=City(name="Paris", population=2_100_000)),
        Rule(match="dict", reply={"ok": True}),
    ]
    async with ScriptedServer(rules=rules) as server:
        c = client(server)
        fmt = {
            "type": "json_schema",
            "json_schema": {"name": "City", "schema": City.model_json_schema()},
        }
        r1 = await c.chat.completions.create(
            model="m", messages=user("a city"), response_format=fmt
        )  # type: ignore[arg-type]
        r2 = await c.chat.completions.create(model="m", messages=user("a dict"))
        await c.close()
    assert City.model_validate_json(r1.choices[0].message.content or "") == City(
        name="Paris", population=2_100_000
    )
    assert json.loads(r2.choices[0].message.content or "") == {"ok": True}
    assert server.requests[0]["response_format"]["type"] == "json_schema"


async def test_tool_calls_plain_and_streamed() -> None:
    rules = [
        Rule(match="weather", tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}]),
        Rule(
            match="both",
            reply=Reply(
                content="calling", tool_calls=[{"name": "f", "arguments": "{}", "id": "call_x"}]
            ),
        ),
    ]
    async with ScriptedServer(rules=rules) as server:
        c = client(server)
        r = await c.chat.completions.create(model="m", messages=user("weather?"))
        call = r.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "get_weather",
            {"city": "Paris"},
        )
        assert r.choices[0].finish_reason == "tool_calls"
        stream = await c.chat.completions.create(
            model="m", messages=user("both"), stream=True, stream_options={"include_usage": True}
        )
        content, args, ids, usage = [], [], [], None
        async for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                content.append(choice.delta.content or "")
                for tc in choice.delta.tool_calls or ():
                    ids.append(tc.id)
                    args.append(tc.function.arguments or "")  # type: ignore[union-attr]
        await c.close()
    assert "".join(content) == "calling"
    assert "".join(args) == "{}" and "call_x" in ids
    assert usage is not None and usage.completion_tokens >= 2


async def test_streaming_is_paced_by_tokens_per_s() -> None:
    async with ScriptedServer(
        rules=[Rule(reply="one two three four five")], tokens_per_s=50
    ) as server:
        c = client(server)
        started = time.monotonic()
        stream = await c.chat.completions.create(model="m", messages=user("q"), stream=True)
        pieces = [
            ch.choices[0].delta.content
            async for ch in stream
            if ch.choices and ch.choices[0].delta.content
        ]
        elapsed = time.monotonic() - started
        await c.close()
    assert pieces == ["one", " two", " three", " four", " five"]
    assert elapsed >= 5 / 50 * 0.9  # five tokens at 50 tokens/s


async def test_latency_and_max_in_flight_are_recorded() -> None:
    async with ScriptedServer(rules=[Rule(match="slow", reply="ok", latency=0.2)]) as server:
        c = client(server)
        started = time.monotonic()
        await asyncio.gather(
            *(c.chat.completions.create(model="m", messages=user("slow")) for _ in range(5))
        )
        elapsed = time.monotonic() - started
        await c.close()
    assert elapsed >= 0.2  # the latency was applied (a lower bound: load only adds to it)
    assert server.max_in_flight == 5 and server.in_flight == 0  # concurrent, not back to back


async def test_no_matching_rule_without_default_is_a_clear_400() -> None:
    async with ScriptedServer(rules=[Rule(match="known", reply="x")], default_reply=None) as server:
        c = client(server)
        with pytest.raises(
            openai.BadRequestError, match="no rule matched the prompt 'what is this'"
        ):
            await c.chat.completions.create(model="m", messages=user("what is this"))
        await c.close()


def test_sync_use_models_endpoint_and_keep_alive() -> None:
    with (
        ScriptedServer(rules=[Rule(reply="hi")], model_names=["a", "b"]) as server,
        httpx2.Client() as http,
    ):
        models = http.get(f"{server.base_url}/models").json()
        body = {"model": "a", "messages": user("x")}
        answers = [
            http.post(f"{server.base_url}/chat/completions", json=body).json() for _ in range(3)
        ]
        missing = http.get(f"{server.base_url}/nope")
    assert [m["id"] for m in models["data"]] == ["a", "b"]
    assert all(a["choices"][0]["message"]["content"] == "hi" for a in answers)
    assert server.connections_opened == 1  # one keep-alive connection served everything
    assert missing.status_code == 404


def test_bad_rules_are_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        Rule(faults=["418"])
    with pytest.raises(ValueError, match="not both"):
        Rule(reply="a", replies=["b"])
    with pytest.raises(ValueError, match="sequence of replies"):
        Rule(replies="ab")


async def test_stop_releases_hung_requests() -> None:
    server = ScriptedServer(rules=[Rule(faults=["hang"])]).start()
    c = client(server, timeout=120)
    task = asyncio.create_task(c.chat.completions.create(model="m", messages=user("q")))
    while not server.requests:  # noqa: ASYNC110 (the server thread appends; no event to await)
        await asyncio.sleep(0.01)
    started = time.monotonic()
    await asyncio.to_thread(server.stop)
    with pytest.raises(openai.APIConnectionError) as caught:
        await task
    # the connection was closed by the stop, not given up by the client's timeout (its error
    # is a subclass); the real-time cap is half that timeout, far above a loaded machine's lag
    assert not isinstance(caught.value, openai.APITimeoutError), caught.value
    assert time.monotonic() - started < 60
    await c.close()
