"""Tools: specs from hints and docstrings, parallel execution, errors as tool messages, the
auto loop; structured output with validation retries."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Literal

import pydantic
import pytest

from appl import StructuredOutputError, Tool, ToolError, gen, ppl, tool
from appl.testing import Rule
from appl.tools import parse_docstring


def get_weather(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> str:
    """Look up the weather forecast.

    Args:
        city: The city to look up,
            for example "Paris".
        unit: Temperature unit.
        days (int): How many days ahead.
    """
    return f"{city}: sunny, 20{unit} for {days} day(s)"


def test_tool_spec_comes_from_hints_and_docstring() -> None:
    spec = Tool(get_weather).spec
    assert spec.name == "get_weather"
    assert spec.description == "Look up the weather forecast."
    params = spec.parameters
    assert params["required"] == ["city"]
    assert params["properties"]["city"] == {
        "type": "string",
        "description": 'The city to look up, for example "Paris".',
    }
    assert params["properties"]["unit"]["enum"] == ["c", "f"]
    assert params["properties"]["unit"]["default"] == "c"
    assert params["properties"]["days"]["type"] == "integer"
    assert params["properties"]["days"]["description"] == "How many days ahead."


def test_sphinx_docstrings_and_bad_tools() -> None:
    description, args = parse_docstring("Add numbers.\n\n:param a: first\n:param b: second\n")
    assert description == "Add numbers." and args == {"a": "first", "b": "second"}

    def varargs(*items: int) -> int:
        return sum(items)

    with pytest.raises(TypeError, match=r"\*args"):
        Tool(varargs)
    with pytest.raises(TypeError, match="callable"):
        Tool("not a function")  # type: ignore[arg-type]

    @tool(name="renamed", description="custom")
    def original(x: int) -> int:
        return x

    assert (original.name, original.spec.description) == ("renamed", "custom")


def tool_call(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": call_id}


def has_tool_results(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "tool" for m in body["messages"])


async def test_tool_calls_run_in_parallel_and_errors_become_tool_messages(scripted) -> None:
    server = scripted(
        [
            Rule(match=has_tool_results, reply="final answer"),
            Rule(
                match="weather",
                tool_calls=[
                    tool_call("slow_lookup", {"key": "a"}, "c1"),
                    tool_call("slow_lookup", {"key": "b"}, "c2"),
                    tool_call("async_lookup", {"key": "c"}, "c3"),
                    tool_call("explode", {}, "c4"),
                    tool_call("slow_lookup", "{not json", "c5"),
                    tool_call("missing_tool", {}, "c6"),
                    tool_call("slow_lookup", {"wrong": 1}, "c7"),
                ],
            ),
        ]
    )
    threads: set[str] = set()
    # Parallelism without a clock: each sync call waits for the other (a barrier), and the
    # async call waits until both are inside; run one after another, they would break the
    # barrier at its (generous) timeout and fail.
    both_in = threading.Barrier(2, timeout=30)
    inside = threading.Event()

    def slow_lookup(key: str) -> dict[str, str]:
        """Look something up slowly."""
        threads.add(threading.current_thread().name)
        both_in.wait()
        inside.set()
        return {"key": key}

    async def async_lookup(key: str) -> str:
        assert await asyncio.to_thread(inside.wait, 30)
        return f"async {key}"

    def explode() -> str:
        raise RuntimeError("disk on fire")

    @ppl
    async def program() -> Any:
        """Doc."""
        "What is the weather?"
        reply = gen(tools=[slow_lookup, async_lookup, explode], run_tools=True)
        return await reply.result()

    result = await program()
    assert result.value == "final answer"
    assert len(threads) == 2 and threading.main_thread().name not in threads
    contents = {r.call.id: r.content for r in result.tool_results}
    assert json.loads(contents["c1"]) == {"key": "a"}
    assert contents["c3"] == "async c"
    assert contents["c4"] == "Error: RuntimeError: disk on fire"
    assert contents["c5"].startswith("Error: arguments are not valid JSON")
    assert "unknown tool 'missing_tool'" in contents["c6"]
    assert "invalid arguments for slow_lookup" in contents["c7"]
    assert [r.ok for r in result.tool_results] == [True, True, True, False, False, False, False]
    # the second request carried the assistant's tool calls and one tool message per call
    second = server.requests[1]["messages"]
    assert second[1]["role"] == "assistant" and len(second[1]["tool_calls"]) == 7
    tool_messages = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [f"c{i}" for i in range(1, 8)]
    assert tool_messages[3]["content"] == "Error: RuntimeError: disk on fire"
    tools_sent = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert tools_sent == {"slow_lookup", "async_lookup", "explode"}
    assert result.rounds == 2


async def test_without_run_tools_the_tools_run_once_and_no_second_request(scripted) -> None:
    server = scripted([Rule(match="add", tool_calls=[tool_call("add", {"a": 2, "b": 3}, "x")])])

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @ppl
    async def program() -> Any:
        """Doc."""
        "add 2 and 3"
        return await gen(tools=[add]).result()

    result = await program()
    assert len(server.requests) == 1
    assert [(r.value, r.content) for r in result.tool_results] == [(5, "5")]
    assert [m.role for m in result.messages] == ["assistant", "tool"]


async def test_the_tool_loop_is_bounded_by_max_rounds(scripted) -> None:
    server = scripted([Rule(match="loop", tool_calls=[tool_call("noop", {}, "n")])])

    def noop() -> str:
        return "done"

    @ppl
    async def program() -> str:
        """Doc."""
        "loop forever"
        return await gen(tools=[noop], run_tools=True, max_rounds=3)

    with pytest.raises(ToolError, match="max_rounds=3") as caught:
        await program()
    assert len(server.requests) == 3
    # what the loop did is kept on the error, not lost
    assert [r.content for r in caught.value.tool_results] == ["done"] * 3
    assert [m.role for m in caught.value.messages].count("tool") == 3


async def test_final_answer_asks_for_text_after_the_last_round(scripted) -> None:
    server = scripted(
        [
            Rule(match=lambda body: body.get("tool_choice") == "none", reply="the answer: done"),
            Rule(match="loop", tool_calls=[tool_call("noop", {}, "n")]),
        ]
    )

    def noop() -> str:
        return "done"

    @ppl
    async def program() -> str:
        """Doc."""
        "loop forever"
        return await gen(tools=[noop], run_tools=True, max_rounds=2, final_answer=True)

    assert await program() == "the answer: done"
    assert [r.get("tool_choice") for r in server.requests] == [None, None, "none"]
    assert all(r.get("tools") for r in server.requests)  # the transcript stays valid


class Answer(pydantic.BaseModel):
    city: str
    population: int


async def test_structured_output_valid(scripted) -> None:
    server = scripted(
        [Rule(match="city", reply='```json\n{"city": "Paris", "population": 2}\n```')]
    )

    @ppl
    async def program() -> Answer:
        """Doc."""
        "Which city?"
        return await gen(response_format=Answer)

    answer = await program()
    assert answer == Answer(city="Paris", population=2)
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["required"] == ["city", "population"]


async def test_structured_output_invalid_then_valid_feeds_the_error_back(scripted) -> None:
    server = scripted(
        [
            Rule(
                match="city",
                replies=[
                    '{"city": "Paris", "population": "many"}',
                    '{"city": "Paris", "population": 3}',
                ],
            )
        ]
    )

    @ppl
    async def program() -> Answer:
        """Doc."""
        "Which city?"
        return await gen(response_format=Answer)

    assert await program() == Answer(city="Paris", population=3)
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"city": "Paris", "population": "many"}'}
    assert retry[-1]["role"] == "user" and "population" in retry[-1]["content"]


async def test_structured_output_always_invalid_raises_with_raw_text(scripted) -> None:
    server = scripted([Rule(match="city", reply="I think it is Paris")])

    @ppl
    async def program() -> Answer:
        """Doc."""
        "Which city?"
        return await gen(response_format=Answer, format_retries=1)

    with pytest.raises(StructuredOutputError) as info:
        await program()
    assert info.value.raw_text == "I think it is Paris"
    assert info.value.attempts == 2
    assert "Answer" in str(info.value)
    assert len(server.requests) == 2


async def test_a_structured_value_is_written_into_prompts_as_json(scripted) -> None:
    server = scripted(
        [
            Rule(match="summarise", reply="fine"),
            Rule(match="city", reply='{"city": "Rome", "population": 4}'),
        ]
    )

    @ppl
    async def program() -> str:
        """Doc."""
        "Which city?"
        answer = gen(response_format=Answer)
        f"Please summarise {answer}"
        return await gen()

    assert await program() == "fine"
    assert server.requests[1]["messages"][0]["content"].endswith(
        'Please summarise {"city":"Rome","population":4}'
    )


def test_bad_response_format_fails_at_the_call_site() -> None:
    from tests.appl.helpers_lang import sync_server

    with sync_server([]):

        @ppl
        def program() -> None:
            """Doc."""
            "x"
            gen(response_format=int)

        with pytest.raises(TypeError, match="response_format must be"):
            program()
