"""Emulated tool choice for models whose server never returns tool calls on "auto"."""

from __future__ import annotations

import json

import pytest

from appl.errors import BadResponseError
from appl.models import get_model
from appl.testing import Rule
from appl.types import GenRequest, Message, ToolCall, ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
NO_AUTO = {"capabilities": {"auto_tool_choice": False}}


def _request(text: str, **kw: object) -> GenRequest:
    return GenRequest(model="scripted", messages=[Message("user", text)], tools=[WEATHER], **kw)  # type: ignore[arg-type]


async def test_a_tool_choice_comes_back_as_a_tool_call(scripted) -> None:
    server = scripted(
        [Rule(match="Paris", reply='{"tool": "get_weather", "arguments": {"city": "Paris"}}')],
        model=NO_AUTO,
    )
    response = await get_model().generate(_request("Weather in Paris?"))
    assert response.text == "" and response.finish_reason == "tool_calls"
    (call,) = response.tool_calls
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    sent = server.requests[0]
    assert "tools" not in sent  # the server was asked for grammar-constrained JSON instead
    schema = sent["response_format"]["json_schema"]["schema"]
    assert {o["properties"].get("tool", {}).get("const") for o in schema["oneOf"]} >= {
        "get_weather"
    }
    assert any("answer" in o["properties"] for o in schema["oneOf"])


async def test_an_answer_comes_back_as_text_and_is_streamed(scripted) -> None:
    scripted([Rule(reply='{"answer": "no tool needed"}')], model=NO_AUTO)
    chunks: list[str] = []
    response = await get_model().generate(_request("Say hi", stream=True), on_text=chunks.append)
    assert response.text == "no tool needed" and not response.tool_calls
    assert "".join(chunks) == "no tool needed"


async def test_required_offers_no_answer_option(scripted) -> None:
    server = scripted(
        [Rule(reply='{"tool": "get_weather", "arguments": {"city": "Oslo"}}')], model=NO_AUTO
    )
    await get_model().generate(_request("Oslo", tool_choice="required"))
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tool"]["const"] == "get_weather"  # one tool, no answer branch


async def test_earlier_tool_turns_are_sent_as_text(scripted) -> None:
    server = scripted([Rule(reply='{"answer": "sunny"}')], model=NO_AUTO)
    history = [
        Message("user", "Weather in Rome?"),
        Message("assistant", None, tool_calls=(ToolCall("c1", "get_weather", '{"city": "Rome"}'),)),
        Message("tool", "sunny, 24C", tool_call_id="c1"),
    ]
    response = await get_model().generate(
        GenRequest(model="scripted", messages=history, tools=[WEATHER])
    )
    assert response.text == "sunny"
    roles = [m["role"] for m in server.requests[0]["messages"]]
    assert "tool" not in roles and roles[0] == "system"  # the instruction leads: cacheable
    assert "You can call these tools" in server.requests[0]["messages"][0]["content"]
    assert "sunny, 24C" in server.requests[0]["messages"][3]["content"]


async def test_a_forced_function_is_emulated_with_only_that_tool(scripted) -> None:
    # emulated (not the server's own tool template) so the prompt keeps the same prefix as
    # the conversation's other calls; the grammar admits only the named tool
    reply = {"tool": "get_weather", "arguments": {"city": "Lima"}}
    server = scripted([Rule(reply=json.dumps(reply))], model=NO_AUTO)
    forced = {"type": "function", "function": {"name": "get_weather"}}
    response = await get_model().generate(_request("Lima", tool_choice=forced))
    assert response.tool_calls[0].name == "get_weather"
    body = server.requests[0]
    assert "tools" not in body and "tool_choice" not in body
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tool"]["const"] == "get_weather"  # no answer branch
    auto = _request("Lima")
    await get_model().generate(auto)
    # the instruction (first system message) is the same text with or without the choice
    assert server.requests[1]["messages"][0] == body["messages"][0]


async def test_tool_choice_none_keeps_the_prefix_and_frees_the_answer(scripted) -> None:
    # code with quotes, as a small model writes it: no grammar, so nothing cuts it at a quote
    code = '```c\nvoid f(void)\n{\n\tpr_info("x");\n}\n```'
    server = scripted(
        [
            Rule(match=lambda b: "response_format" not in b, reply=code),
            Rule(reply='{"answer": "a"}'),
        ],
        model=NO_AUTO,
    )
    auto = await get_model().generate(_request("Lima"))
    free = await get_model().generate(_request("Lima", tool_choice="none"))
    assert auto.text == "a" and free.text == code and not free.tool_calls
    grammar, plain = server.requests
    assert "response_format" in grammar and "tools" not in plain and "tool_choice" not in plain
    assert plain["messages"][0] == grammar["messages"][0]  # the same prefix: cache reused
    # a model that wrote the JSON answer anyway is unwrapped
    server.rules.insert(0, Rule(reply='{"answer": "unwrapped"}'))
    again = await get_model().generate(_request("Lima", tool_choice="none"))
    assert again.text == "unwrapped"


async def test_a_reply_that_is_neither_is_a_clear_error(scripted) -> None:
    scripted([Rule(reply='{"something": "else"}')], model={**NO_AUTO, "max_retries": 0})
    with pytest.raises(BadResponseError, match="emulated tool choice"):
        await get_model().generate(_request("x"))


async def test_models_with_auto_tool_choice_are_untouched(scripted) -> None:
    server = scripted([Rule(tool_calls=[{"name": "get_weather", "arguments": {"city": "Bern"}}])])
    response = await get_model().generate(_request("Bern"))
    assert response.tool_calls and server.requests[0]["tools"]
