"""run_compiler / run_react end to end: the planner and joiner are played by the real scripted
HTTP server through the real openai client (the `scripted` fixture configures the alias)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from appl.compiler import RoundLimitError, run_compiler, run_react, summarize, tool
from appl.errors import ModelError
from appl.testing import Reply, Rule

pytestmark = pytest.mark.timeout(30)

PLANNER = "You are the planner"
JOINER = "You are the joiner"
REACT = "You answer questions using tools"


def finish(answer: str) -> str:
    return f"Thought: I have what I need.\nAction: Finish({answer})"


class Calls:
    """Records every tool call (name, args) so tests can see what ran and how often."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> list[Any]:
        log = self.log

        @tool(latency_s=0.05)
        async def search(query: str) -> str:
            """Search the web."""
            log.append(("search", {"query": query}))
            if "explode" in query:
                raise RuntimeError("search backend down")
            return {"Barack Obama age": "62", "Michelle Obama age": "60"}.get(
                query, f"about {query}"
            )

        @tool
        def math(expression: str) -> float:
            """Evaluate `a - b` or `a + b`."""
            log.append(("math", {"expression": expression}))
            for op in ("-", "+"):
                if op in expression:
                    a, b = expression.split(op)
                    return float(a) - float(b) if op == "-" else float(a) + float(b)
            raise ValueError(f"cannot evaluate {expression!r}")

        @tool
        async def shop(item: str, note: str) -> dict[str, Any]:
            """Look up an item; returns a record."""
            log.append(("shop", {"item": item, "note": note}))
            return {"item": item, "price": 12, "note": note}

        return [search, math, shop]

    def names(self) -> list[str]:
        return [n for n, _ in self.log]


async def test_a_ready_step_starts_while_the_plan_is_still_streaming(scripted) -> None:
    # 20 tokens/s and ~40 tokens after step 1's line: the plan takes 2+ s to arrive.
    padding = "\n".join(f"Thought: considering angle number {i} of the question" for i in range(6))
    plan = f'1. search("Barack Obama age")\n{padding}\n2. search("Michelle Obama age")\n3. join()\n'
    server = scripted(
        [Rule(match=JOINER, reply=finish("62")), Rule(match=PLANNER, reply=plan)], tokens_per_s=20
    )
    calls = Calls()
    result = await run_compiler("How old is Barack Obama?", calls.tools(), model="scripted")
    plan_round = result.plans[0]
    step1 = result.step(1)
    assert plan_round.last_text_at is not None and step1.started_at is not None
    # The step ran and FINISHED before the final chunk of the plan arrived (a system that
    # waits for the next line, or the whole plan, could not do this).
    assert step1.finished_at < plan_round.last_text_at - 1.0
    assert result.step(2).started_at >= step1.emitted_at
    assert result.answer == "62" and server.requests[0]["stream"] is True


async def test_a_raising_tool_skips_dependents_and_the_joiner_sees_the_error(scripted) -> None:
    plan = (
        '1. search("explode please")\n'
        '2. search("Michelle Obama age")\n'
        '3. math("${1} - ${2}")\n'
        "4. join()\n"
    )
    server = scripted(
        [Rule(match=JOINER, reply=finish("unknown")), Rule(match=PLANNER, reply=plan)]
    )
    result = await run_compiler("q", Calls().tools(), model="scripted")
    assert [s.status for s in result.steps] == ["failed", "done", "skipped"]
    assert result.step(1).error == "RuntimeError: search backend down"
    assert "step 1 failed: RuntimeError: search backend down" in result.step(3).error
    joiner_prompt = server.requests[-1]["messages"][-1]["content"]
    assert "FAILED: RuntimeError: search backend down" in joiner_prompt
    assert "SKIPPED: skipped because step 1 failed" in joiner_prompt
    assert "-> 60" in joiner_prompt
    assert result.answer == "unknown"


async def test_a_malformed_line_is_reported_and_the_rest_of_the_plan_runs(scripted) -> None:
    plan = (
        '1. search("Barack Obama age")\n'
        '2. search("Michelle Obama age)\n'  # unterminated string
        "3. math(${1} minus 2)\n"  # not an argument list
        '4. search("Michelle Obama age")\n'
        '5. math("${1} - ${4}")\n'
        "join()\n"
    )
    server = scripted([Rule(match=JOINER, reply=finish("2")), Rule(match=PLANNER, reply=plan)])
    calls = Calls()
    result = await run_compiler("q", calls.tools(), model="scripted")
    assert [s.id for s in result.steps] == [1, 4, 5]
    assert result.step(5).result == 2.0
    rejected = {i.step_id: i for i in result.issues if i.kind == "syntax"}
    assert set(rejected) == {2, 3} and "unterminated string" in rejected[2].message
    joiner_prompt = server.requests[-1]["messages"][-1]["content"]
    assert "step 2 (rejected): unterminated string" in joiner_prompt
    assert 'search("Michelle Obama age)' in joiner_prompt  # the offending line is quoted


async def test_a_literal_dollar_amount_in_a_string_is_not_a_reference(scripted) -> None:
    # Ten steps exist, so a "$10" that was taken as a reference would resolve to step 10.
    lines = [f'{i}. search("item {i}")' for i in range(1, 11)]
    lines.append('11. shop(item="lamp", note="budget $10, or $1 per day")')
    lines.append('12. shop(item="${10}", note="same budget: $10")')
    server = scripted(
        [Rule(match=JOINER, reply=finish("ok")), Rule(match=PLANNER, reply="\n".join(lines))]
    )
    calls = Calls()
    result = await run_compiler("q", calls.tools(), model="scripted")
    shops = [args for name, args in calls.log if name == "shop"]
    assert {"item": "lamp", "note": "budget $10, or $1 per day"} in shops
    assert {"item": "about item 10", "note": "same budget: $10"} in shops
    assert result.step(12).step.deps == {10} and result.step(11).step.deps == frozenset()
    assert len(server.requests) == 2


async def test_validation_errors_reach_the_joiner_and_valid_steps_still_run(scripted) -> None:
    plan = (
        '1. browse("x")\n'  # unknown tool
        '2. math("${3} - 1")\n'  # forward reference
        "3. search(42)\n"  # schema: query must be a string
        "4. search($4)\n"  # cycle
        '5. search("Barack Obama age")\n'
        '5. search("again")\n'  # duplicate id
    )
    server = scripted([Rule(match=JOINER, reply=finish("62")), Rule(match=PLANNER, reply=plan)])
    result = await run_compiler("q", Calls().tools(), model="scripted")
    assert [s.id for s in result.steps] == [5] and result.step(5).result == "62"
    messages = {i.step_id: i.message for i in result.issues}
    assert "unknown tool 'browse'" in messages[1]
    assert "forward reference" in messages[2]
    assert "expected string, got integer" in messages[3]
    assert "cycle" in messages[4]
    assert "duplicate step id 5" in messages[5]
    joiner_prompt = server.requests[-1]["messages"][-1]["content"]
    assert joiner_prompt.count("(rejected)") == 5


async def test_replan_keeps_results_and_numbering(scripted) -> None:
    round1 = (
        '1. search("Barack Obama age")\n'
        '2. search("explode: Michelle Obama age")\n'
        '3. math("${1} - ${2}")\n'
        "4. join()\n"
    )
    round2 = '4. search("Michelle Obama age")\n5. math("${1} - ${4}")\n6. join()\n'
    server = scripted(
        [
            Rule(
                match=JOINER,
                replies=[
                    "Thought: step 2 failed.\nAction: Replan(retry the age of Michelle)",
                    finish("2 years"),
                ],
            ),
            Rule(match=PLANNER, replies=[round1, round2]),
        ]
    )
    calls = Calls()
    result = await run_compiler("How much older is Barack?", calls.tools(), model="scripted")
    assert result.answer == "2 years" and result.rounds == 2
    assert [s.id for s in result.steps] == [1, 2, 3, 4, 5]
    assert [s.step.round for s in result.steps] == [1, 1, 1, 2, 2]
    assert result.step(5).result == 2.0 and result.step(5).step.deps == {1, 4}
    # Step 1's result was reused, not recomputed.
    assert [a["query"] for n, a in calls.log if n == "search"].count("Barack Obama age") == 1
    second_planner = [r for r in server.requests if PLANNER in r["messages"][0]["content"]][1]
    msgs = second_planner["messages"]
    assert msgs[2] == {"role": "assistant", "content": round1}
    assert "Number new steps from 4" in msgs[-1]["content"]
    assert "-> 62" in msgs[-1]["content"] and "retry the age of Michelle" in msgs[-1]["content"]
    assert [p.step_ids for p in result.plans] == [[1, 2, 3], [4, 5]]


async def test_round_limit_is_a_clear_error_with_the_partial_result(scripted) -> None:
    scripted(
        [
            Rule(match=JOINER, reply="Thought: not enough.\nAction: Replan(need more)"),
            Rule(match=PLANNER, replies=['1. search("a")\n', '2. search("b")\n']),
        ]
    )
    with pytest.raises(RoundLimitError, match="after 2 round") as info:
        await run_compiler("q", Calls().tools(), model="scripted", max_rounds=2)
    partial = info.value.result
    assert partial.rounds == 2 and [s.status for s in partial.steps] == ["done", "done"]
    assert partial.answer is None and "need more" in str(info.value)


async def test_json_plan_format(scripted) -> None:
    plan = {
        "thought": "two lookups then arithmetic",
        "steps": [
            {"id": 1, "tool": "search", "args": {"query": "Barack Obama age"}},
            {"id": 2, "tool": "search", "args": {"query": "Michelle Obama age"}},
            {"id": 3, "tool": "shop", "args": {"item": {"$ref": "1"}, "note": "costs $10"}},
            {"id": 4, "tool": "math", "args": {"expression": "${3.price} - ${2}"}},
        ],
    }
    server = scripted([Rule(match=JOINER, reply=finish("-48")), Rule(match=PLANNER, reply=plan)])
    result = await run_compiler("q", Calls().tools(), model="scripted", plan_format="json")
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert result.step(3).args == {"item": "62", "note": "costs $10"}
    assert result.step(4).result == -48.0 and result.answer == "-48"
    assert result.plans[0].thoughts == ["two lookups then arithmetic"]


async def test_plan_tool_call_format(scripted) -> None:
    steps = [
        {"id": 1, "tool": "search", "args": {"query": "Barack Obama age"}},
        {"id": 2, "tool": "nope", "args": {}},
        {"id": 3, "tool": "math", "args": {"expression": "${1} + 1"}},
    ]
    server = scripted(
        [
            Rule(match=JOINER, reply=finish("63")),
            Rule(
                match=PLANNER,
                reply=Reply(tool_calls=[{"name": "make_plan", "arguments": {"steps": steps}}]),
            ),
        ]
    )
    result = await run_compiler("q", Calls().tools(), model="scripted", plan_format="tool")
    body = server.requests[0]
    assert body["tool_choice"]["function"]["name"] == "make_plan"
    assert result.step(3).result == 63.0
    assert [i.step_id for i in result.issues] == [2]


async def test_result_reports_usage_and_a_summary(scripted) -> None:
    scripted(
        [
            Rule(match=JOINER, reply=finish("62")),
            Rule(match=PLANNER, reply='1. search("Barack Obama age")\n'),
        ]
    )
    result = await run_compiler("q", Calls().tools(), model="scripted")
    assert result.llm_calls == 2 and result.usage.completion_tokens > 0
    assert 'search(query="Barack Obama age")' in summarize(result)


async def test_react_baseline_end_to_end(scripted) -> None:
    turns = [
        'Thought: I need Barack\'s age first.\nAction: search("Barack Obama age")',
        'Thought: Try a tool that does not exist.\nAction: browse("x")',
        'Thought: Now Michelle.\nAction: search(query="Michelle Obama age")',
        'Thought: Subtract.\nAction: math("62 - 60")',
        "Thought: Done.\nAction: Finish(2 years)",
    ]
    server = scripted([Rule(match=REACT, replies=turns)])
    calls = Calls()
    result = await run_react("How much older is Barack?", calls.tools(), model="scripted")
    assert result.answer == "2 years" and result.llm_calls == 5
    assert calls.names() == ["search", "search", "math"]
    assert [t.action for t in result.turns] == ["search", "browse", "search", "math", "Finish"]
    assert not result.turns[1].ok and "unknown tool 'browse'" in result.turns[1].observation
    # Each turn's prompt carries the previous observations; the model never writes them.
    last_prompt = server.requests[-1]["messages"]
    assert last_prompt[-1] == {"role": "user", "content": "Observation: 2.0"}
    assert server.requests[0]["stop"] == ["Observation:"]


async def test_react_with_native_tool_calls(scripted) -> None:
    server = scripted(
        [
            Rule(
                match=lambda body: not any(m["role"] == "tool" for m in body["messages"]),
                reply=Reply(
                    tool_calls=[{"name": "search", "arguments": {"query": "Barack Obama age"}}]
                ),
            ),
            Rule(reply="He is 62."),
        ]
    )
    result = await run_react("q", Calls().tools(), model="scripted", mode="tools")
    assert result.answer == "He is 62." and result.turns[0].observation == "62"
    assert server.requests[1]["messages"][-1]["role"] == "tool"
    assert json.loads(json.dumps(server.requests[0]["tools"]))[0]["function"]["name"] == "search"


async def test_react_turn_limit(scripted) -> None:
    scripted([Rule(match=REACT, reply='Thought: again.\nAction: search("a")')])
    with pytest.raises(RoundLimitError) as info:
        await run_react("q", Calls().tools(), model="scripted", max_turns=3)
    assert len(info.value.result.turns) == 3


async def test_cancelling_a_run_cancels_running_steps(scripted) -> None:
    """Structured concurrency: cancelling run_compiler mid-plan cancels the started steps."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def forever(x: str) -> None:
        """Never ends."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    plan = '1. forever("a")\n' + "Thought: more words here\n" * 40
    scripted([Rule(match=PLANNER, reply=plan)], tokens_per_s=20)
    task = asyncio.create_task(run_compiler("q", [forever], model="scripted"))
    await started.wait()  # the step runs while the plan is still streaming
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_a_broken_planner_stream_raises_the_model_error_itself(scripted) -> None:
    plan = '1. search("a")\n2. search("b")\n'
    scripted([Rule(match=PLANNER, reply=plan, faults=["drop_stream"])])
    with pytest.raises(ModelError):  # not wrapped in an ExceptionGroup
        await run_compiler("q", Calls().tools(), model="scripted")
