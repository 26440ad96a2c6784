"""The "openai" provider through get_model(): request mapping, streaming, tools, n, usage."""

from __future__ import annotations

import json

import pydantic

from appl.accounting import current_usage
from appl.models import get_model
from appl.testing import Rule
from appl.testing.pytest_plugin import MakeScripted
from appl.types import GenRequest, Message, ToolSpec


def ask(text: str, **kw: object) -> GenRequest:
    return GenRequest(
        model="scripted", messages=[Message("system", "be brief"), Message("user", text)], **kw
    )  # type: ignore[arg-type]


async def test_plain_reply_and_request_mapping(scripted: MakeScripted) -> None:
    server = scripted([Rule(match="capital of France", reply="Paris")])
    response = await get_model().generate(
        ask(
            "capital of France?",
            temperature=0.2,
            max_tokens=5,
            stop=["\n"],
            seed=7,
            extra={"top_k": 3},
        )
    )
    assert response.text == "Paris" and response.finish_reason == "stop"
    assert response.usage.completion_tokens == 1 and response.retries == 0
    body = server.requests[0]
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert (body["temperature"], body["max_tokens"], body["stop"], body["seed"], body["top_k"]) == (
        0.2,
        5,
        ["\n"],
        7,
        3,
    )
    assert "n" not in body and "tools" not in body


async def test_streaming_delivers_deltas_and_usage(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="alpha beta gamma")])
    seen: list[str] = []

    async def on_text(delta: str) -> None:
        seen.append(delta)

    response = await get_model().generate(ask("q", stream=True), on_text=on_text)
    assert seen == ["alpha", " beta", " gamma"]
    assert response.text == "alpha beta gamma"
    assert response.usage.completion_tokens == 3 and response.usage.prompt_tokens > 0
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_tool_calls_plain_and_streamed(scripted: MakeScripted) -> None:
    scripted(
        [
            Rule(
                match="weather",
                tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
            )
        ]
    )
    tool = ToolSpec(
        "get_weather",
        "weather for a city",
        {"type": "object", "properties": {"city": {"type": "string"}}},
    )
    for stream in (False, True):
        response = await get_model().generate(
            ask("weather?", tools=[tool], tool_choice="auto", stream=stream)
        )
        assert len(response.tool_calls) == 1, stream
        call = response.tool_calls[0]
        assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
        assert call.id.startswith("call_") and response.finish_reason == "tool_calls"


class Answer(pydantic.BaseModel):
    value: int


async def test_response_format_passes_through(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply=Answer(value=42))])
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": Answer.model_json_schema()},
    }
    response = await get_model().generate(ask("17+25", response_format=fmt))
    assert Answer.model_validate_json(response.text).value == 42
    assert server.requests[0]["response_format"] == fmt


async def test_n_native_and_emulated(scripted: MakeScripted) -> None:
    server = scripted([Rule(replies=["a", "b", "c", "d", "e", "f"])])
    native = await get_model().generate(ask("q", n=3))
    assert [c.text for c in native.choices] == ["a", "b", "c"] and native.text == "a"
    assert len(server.requests) == 1 and server.requests[0]["n"] == 3

    server = scripted([Rule(replies=["x", "y", "z"])], model={"capabilities": {"n": False}})
    emulated = await get_model().generate(ask("q", n=3))
    assert sorted(c.text for c in emulated.choices) == ["x", "y", "z"]
    assert len(server.requests) == 3 and all("n" not in b for b in server.requests)
    assert emulated.usage.completion_tokens == 3


async def test_usage_and_cost_are_accounted(scripted: MakeScripted) -> None:
    scripted(
        [Rule(reply="one two three four")],
        model={"price_input_per_mtok": 2.0, "price_output_per_mtok": 10.0},
    )
    first = await get_model().generate(ask("q"))
    second = await get_model("scripted").generate(ask("q"))
    expected = (first.usage.prompt_tokens * 2.0 + first.usage.completion_tokens * 10.0) / 1e6
    assert first.cost_usd == expected > 0
    totals = current_usage()
    assert totals.calls == 2
    assert totals.completion_tokens == 8
    assert totals.prompt_tokens == first.usage.prompt_tokens + second.usage.prompt_tokens
    assert abs(totals.cost_usd - 2 * expected) < 1e-12
    assert totals.by_model["scripted"].calls == 2


async def test_get_model_is_cached_per_alias_and_refreshed_on_config_change(
    scripted: MakeScripted,
) -> None:
    scripted([Rule(reply="one")])
    assert get_model() is get_model("scripted")
    first = get_model()
    server = scripted([Rule(reply="two")])
    second = get_model()
    assert second is not first and second.config.base_url == server.base_url
    assert (await second.generate(ask("q"))).text == "two"


async def test_a_stream_without_usage_is_estimated_not_free(scripted) -> None:
    """llama.cpp's server sends no usage on streams: the call must not count as 0 tokens."""
    from appl.models import get_model as _get_model
    from appl.types import GenRequest as _Req
    from appl.types import Message as _Msg

    scripted(
        [Rule(reply="one two three four five")], model={"capabilities": {"stream_usage": False}}
    )
    chunks: list[str] = []
    response = await _get_model().generate(
        _Req(model="scripted", messages=[_Msg("user", "count to five please")], stream=True),
        on_text=chunks.append,
    )
    assert response.usage_estimated
    assert response.usage.completion_tokens == len(chunks) > 1
    assert response.usage.prompt_tokens > 0


async def test_a_stream_with_usage_reports_it_exactly(scripted) -> None:
    from appl.models import get_model as _get_model
    from appl.types import GenRequest as _Req
    from appl.types import Message as _Msg

    scripted([Rule(reply="one two three")])
    response = await _get_model().generate(
        _Req(model="scripted", messages=[_Msg("user", "hi")], stream=True)
    )
    assert not response.usage_estimated and response.usage.completion_tokens > 0


async def test_concurrent_first_calls_build_one_client(scripted) -> None:
    """A provider whose base URL resolves slowly (the local server starting) must not build a
    client per concurrent first caller: all but one would leak their connection pools."""
    import asyncio

    from appl.config import get_config
    from appl.models import OpenAIModel
    from appl.types import GenRequest as _Req
    from appl.types import Message as _Msg

    server = scripted([Rule(reply="ok")])
    resolved: list[int] = []

    async def slow_base_url() -> str:
        resolved.append(1)
        await asyncio.sleep(0.2)
        return server.base_url

    model = OpenAIModel(get_config().model("scripted"), base_url=slow_base_url)
    try:
        replies = await asyncio.gather(
            *(
                model.generate(_Req(model="scripted", messages=[_Msg("user", f"hi {i}")]))
                for i in range(5)
            )
        )
    finally:
        await model.aclose()
    assert [r.text for r in replies] == ["ok"] * 5
    assert len(resolved) == 1


async def test_a_404_from_a_base_url_without_v1_suggests_it(scripted) -> None:
    import pytest

    from appl.errors import ClientRequestError

    server = scripted()
    scripted_url = server.base_url
    scripted(model={"base_url": scripted_url.removesuffix("/v1")})  # the same server, no /v1
    with pytest.raises(ClientRequestError) as info:
        await get_model().generate(ask("hi"))
    message = str(info.value)
    assert "HTTP 404" in message and "try base_url ending in /v1" in message
    assert "'scripted' is configured in configure()" in message


def test_first_plain_call_does_not_import_openai(tmp_path) -> None:
    """The openai package costs most of a process's first call to import; a plain (not
    streamed) chat request must not need it (checked in a fresh interpreter)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    program = tmp_path / "first.py"
    program.write_text(
        "import asyncio, sys\n"
        "from appl import configure\n"
        "from appl.models import get_model, close_models\n"
        "from appl.testing import ScriptedServer, Rule\n"
        "from appl.types import GenRequest, Message\n"
        "server = ScriptedServer([Rule(reply='ok')]).start()\n"
        "configure(models={'m': {'provider': 'openai', 'api_key': 'k', 'api_key_env': None,\n"
        "                        'base_url': server.base_url}}, default_model='m')\n"
        "async def main():\n"
        "    r = await get_model().generate(GenRequest(model='m', messages=[Message('user', 'hi')]))\n"
        "    await close_models()\n"
        "    return r.text\n"
        "print(asyncio.run(main()), 'openai' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.split() == ["ok", "False"], done.stdout + done.stderr[-2000:]


async def test_a_proxy_in_the_environment_keeps_the_openai_client(scripted, monkeypatch) -> None:
    from appl.config import get_config
    from appl.models import OpenAIModel

    scripted([Rule(reply="via openai")])
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # ...and localhost bypasses it
    model = OpenAIModel(get_config().model("scripted"))
    try:
        assert not model._use_direct
        assert (await model.generate(ask("hi"))).text == "via openai"
    finally:
        await model.aclose()
