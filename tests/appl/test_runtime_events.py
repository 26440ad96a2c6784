"""Events, deterministic call identities and the model-resolution hook."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from appl import (
    BudgetExceededError,
    Event,
    GenRequest,
    GenResponse,
    ServerError,
    add_listener,
    budget,
    gen,
    listening,
    ppl,
    remove_listener,
    use_model_resolver,
)
from appl.identity import CallSite, compute_call_identity
from appl.runtime import current_run_id
from appl.testing import Rule
from appl.types import Message, ToolCall


@ppl
async def solve(question: str) -> str:
    """Doc."""
    f"Solve: {question}"
    return await gen()


@ppl
async def main_program(latencies_reversed: bool) -> list[str]:
    """Doc."""
    return list(await asyncio.gather(*(solve(f"q{i}") for i in range(3))))


async def test_events_cover_calls_gens_and_carry_identities(scripted) -> None:
    scripted([Rule(match="q0", reply="a0", latency=0.2), Rule(match="q", reply="a")])
    events: list[Event] = []
    with listening(events.append):
        assert await main_program(False) == ["a0", "a", "a"]
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("call") == kinds.count("return") == 4
    requests = [e for e in events if e.kind == "gen_request"]
    responses = [e for e in events if e.kind == "gen_response"]
    assert len(requests) == len(responses) == 3
    paths = sorted(e.call.path for e in requests if e.call)
    assert paths == [
        f"main_program/solve[{i}]/gen@L{solve.original.__code__.co_firstlineno + 4}"
        for i in range(3)
    ]
    first = next(e for e in requests if e.call and e.call.path.startswith("main_program/solve[0]"))
    assert first.data["request"]["messages"] == [{"role": "user", "content": "Solve: q0"}]
    assert first.call is not None and first.call.site.endswith(
        f"test_runtime_events.py:{solve.original.__code__.co_firstlineno + 4}"
    )
    response = next(e for e in responses if e.call == first.call)
    assert response.data["text"] == "a0"
    assert response.data["usage"]["completion_tokens"] > 0
    assert response.data["latency_s"] >= 0.15
    # a second run gives the same identities, whatever the completion order
    again: list[Event] = []
    with listening(again.append):
        await main_program(True)
    assert sorted(e.call.key for e in again if e.call and e.kind == "gen_request") == sorted(
        e.call.key for e in requests if e.call
    )


async def test_occurrence_counts_repeats_of_one_gen_line(scripted) -> None:
    scripted()
    seen: list[Event] = []

    @ppl
    async def loop() -> None:
        """Doc."""
        "x"
        for _ in range(3):
            _ = gen()  # assigned: a bare gen() statement would add its reply to the prompt

    add_listener(seen.append)
    try:
        await loop()
    finally:
        remove_listener(seen.append)
    calls = [e.call for e in seen if e.kind == "gen_request" and e.call]
    assert sorted(c.occurrence for c in calls) == [0, 1, 2]
    assert len({c.path for c in calls}) == 1
    assert len({c.request_hash for c in calls}) == 1  # same request, told apart by occurrence


async def test_tool_and_format_retry_events(scripted) -> None:
    scripted(
        [
            Rule(match=lambda b: any(m["role"] == "tool" for m in b["messages"]), reply="done"),
            Rule(match="go", tool_calls=[{"name": "ping", "arguments": {}, "id": "t1"}]),
        ]
    )
    events: list[Event] = []

    def ping() -> str:
        return "pong"

    @ppl
    async def program() -> str:
        """Doc."""
        "go"
        return await gen(tools=[ping], run_tools=True)

    with listening(events.append):
        assert await program() == "done"
    tool_events = [e for e in events if e.kind in ("tool_call", "tool_result")]
    assert [e.kind for e in tool_events] == ["tool_call", "tool_result"]
    assert tool_events[1].data["content"] == "pong" and tool_events[1].data["ok"]
    steps = [e.call.step for e in events if e.kind == "gen_request" and e.call]
    assert steps == [0, 1]


def test_identity_is_computed_in_one_function_and_hashes_the_request() -> None:
    site = CallSite("prog.py", 14, "main/solve[2]/gen@L14", 0)
    request = GenRequest(model="m", messages=[Message("user", "hi")])
    same = GenRequest(model="m", messages=[Message("user", "hi")])
    other = GenRequest(model="m", messages=[Message("user", "hello")])
    identity = compute_call_identity(site, request)
    assert identity.site == "prog.py:14"
    assert identity.key == "main/solve[2]/gen@L14#0.0"
    assert identity.request_hash == compute_call_identity(site, same).request_hash
    assert identity.request_hash != compute_call_identity(site, other).request_hash


class FakeReplayModel:
    """A ModelAPI that answers from a table keyed by call path (what a replay layer does)."""

    name = "replay"

    def __init__(self, answers: dict[str, str]):
        self.answers = answers
        self.seen: list[str] = []

    async def generate(self, request: GenRequest, *, on_text: Any = None) -> GenResponse:
        text = self.answers[request.messages[-1].content or ""]
        return GenResponse(text=text, tool_calls=(ToolCall("x", "y", "{}"),)[:0])

    async def aclose(self) -> None:
        return None


async def test_the_model_resolver_hook_can_substitute_the_model(scripted) -> None:
    server = scripted()
    replay = FakeReplayModel({"Solve: q0": "r0", "Solve: q1": "r1", "Solve: q2": "r2"})
    identities: list[str] = []

    def resolver(alias: str | None, identity: Any) -> Any:
        identities.append(identity.path)
        return replay

    with use_model_resolver(resolver):
        assert await main_program(False) == ["r0", "r1", "r2"]
    assert len(identities) == 3 and not server.requests


async def test_budget_stop_is_an_event_and_an_error(scripted) -> None:
    scripted()
    events: list[Event] = []

    @ppl
    async def program() -> list[str]:
        """Doc."""
        "x"
        first = await gen()
        second = await gen()
        return [first, second]

    with listening(events.append), budget(max_calls=1), pytest.raises(BudgetExceededError):
        await program()
    assert [e.kind for e in events].count("budget_stop") == 1


def test_a_failing_listener_warns_but_does_not_break_the_program() -> None:
    from appl import events as events_module

    def broken(event: Event) -> None:
        raise RuntimeError("listener bug")

    with listening(broken), pytest.warns(RuntimeWarning, match="listener bug"):
        events_module.emit("run_start", "r", {})


async def test_gen_error_carries_the_identity_of_the_failed_request(scripted) -> None:
    scripted([Rule(match="bad", faults=["500"] * 5, reply="never")], model={"max_retries": 0})
    events: list[Event] = []
    run_ids: list[str | None] = []

    @ppl
    async def program() -> None:
        """Doc."""
        run_ids.append(current_run_id())
        "bad"
        first = gen()
        f"then {first}"
        second = gen()  # fails without a request: its input failed
        with pytest.raises(ServerError):
            await second
        with pytest.raises(ServerError):
            await first

    with listening(events.append):
        await program()
    request = next(e for e in events if e.kind == "gen_request")
    failed = [e for e in events if e.kind == "gen_error"]
    assert len(failed) == 2
    assert failed[0].call == request.call and failed[0].data["path"] == request.call.path
    assert failed[1].call is None
    assert run_ids == [request.run_id] and current_run_id() is None
