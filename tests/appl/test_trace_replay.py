"""Strict replay: answers come from the trace, matched by call identity, never by order."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pydantic
import pytest

from appl import Event, ReplayMissError, ServerError, gen, listening, ppl
from appl.testing import Rule
from appl.trace import read_trace, recording, replaying

ITEMS = [f"item-{i:02d}" for i in range(6)]


@ppl
async def solve(item: str) -> str:
    """Doc."""
    f"Solve: {item}"
    return await gen()


@ppl
def combine(items: list[str]) -> str:
    """Doc."""
    # sync body: each gen starts at once; the final gen waits on all of them (dataflow)
    parts = [summarize(item) for item in items]
    "Combine these:"
    for part in parts:
        part
    return str(gen())


@ppl
def summarize(item: str):
    """Doc."""
    f"Summarize: {item}"
    return gen()


@ppl
async def program(items: list[str]) -> tuple[list[str], str]:
    """Doc."""
    solved = list(await asyncio.gather(*(solve(item) for item in items)))
    combined = await asyncio.to_thread(combine, items[:3])
    return solved, combined


def random_latency_rules(seed: int) -> list[Rule]:
    rng = random.Random(seed)
    rules = [
        Rule(match=f"Solve: {item}", reply=f"solved {item}", latency=rng.uniform(0.0, 0.08))
        for item in ITEMS
    ]
    rules += [
        Rule(match=f"Summarize: {item}", reply=f"sum {item}", latency=rng.uniform(0.0, 0.08))
        for item in ITEMS
    ]
    rules.append(Rule(match="Combine these:", reply=lambda b: f"combined x{len(b['messages'])}"))
    return rules


async def test_parallel_program_replays_identically_20_times(scripted, tmp_path: Path) -> None:
    server = scripted(random_latency_rules(seed=7))
    trace = tmp_path / "run.jsonl"
    with recording(trace):
        expected = await program(ITEMS)
    assert expected[0] == [f"solved {item}" for item in ITEMS]
    recorded = len(server.requests)
    assert recorded == len(ITEMS) + 3 + 1
    orders: set[tuple[str, ...]] = set()
    for attempt in range(20):
        seen: list[Event] = []
        # jitter: every replayed answer waits a random time, so completion order varies
        with replaying(trace, jitter_s=0.01, seed=attempt) as replayer, listening(seen.append):
            assert await program(ITEMS) == expected
        assert replayer.index.hits == recorded and not replayer.index.misses
        orders.add(tuple(e.call.key for e in seen if e.kind == "gen_response" and e.call))
    assert len(server.requests) == recorded  # zero requests reached the server in replay
    assert len(orders) > 1  # the calls really did finish in different orders


async def test_strict_miss_names_the_call_and_shows_a_diff(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(reply="ok")])
    trace = tmp_path / "run.jsonl"
    with recording(trace):
        await solve("alpha")
    with replaying(trace), pytest.raises(ReplayMissError) as caught:
        await solve("beta")
    message = str(caught.value)
    assert "solve/gen@L" in message and "#0.0" in message
    assert "same call, different request" in message
    assert "-Solve: alpha" in message and "+Solve: beta" in message
    assert len(server.requests) == 1


async def test_lenient_replay_calls_the_model_for_misses_and_records_them(
    scripted, tmp_path: Path
) -> None:
    server = scripted(
        [
            Rule(match="Combine", reply="C"),
            Rule(match="alpha", reply="A"),
            Rule(match="beta", reply="B"),
        ]
    )
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    with recording(first):
        assert await program(["alpha"]) == (["A"], "C")
    before = len(server.requests)
    with replaying(first, mode="lenient", record_to=second) as replayer:
        result = await program(["alpha", "beta"])
    assert result == (["A", "B"], "C")
    new_requests = len(server.requests) - before
    assert new_requests == len(replayer.live_calls) and new_requests >= 1
    # the new trace is complete: it replays strictly with no model calls
    with replaying(second):
        assert await program(["alpha", "beta"]) == result
    assert len(server.requests) == before + new_requests


@ppl
async def streamer() -> list[str]:
    """Doc."""
    "Tell a story"
    fut = gen(stream=True)
    return [chunk async for chunk in fut]


async def test_replay_re_emits_the_recorded_stream_chunks(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(reply="once upon a time there was a trace")])
    trace = tmp_path / "s.jsonl"
    with recording(trace):
        live_chunks = await streamer()
    assert len(live_chunks) > 3
    response = next(r for r in read_trace(trace).records if r["type"] == "gen_response")
    assert response["data"]["chunks"] == live_chunks
    with replaying(trace):
        assert await streamer() == live_chunks
    assert len(server.requests) == 1


class Verdict(pydantic.BaseModel):
    ok: bool
    reason: str


def lookup(name: str) -> str:
    """Look a name up."""
    return f"{name} is a city"


@ppl
async def tool_and_schema() -> tuple[str, Verdict]:
    """Doc."""
    "Where is Paris? go"
    answer = await gen(tools=[lookup], run_tools=True)
    f"Judge: {answer}"
    verdict = await gen(response_format=Verdict)
    return answer, verdict


async def test_replay_keeps_tool_calls_and_structured_output(scripted, tmp_path: Path) -> None:
    server = scripted(
        [
            Rule(match="Judge:", replies=["not json", Verdict(ok=True, reason="fine")]),
            Rule(match=lambda b: b["messages"][-1]["role"] == "tool", reply="Paris is in France"),
            Rule(match="go", tool_calls=[{"name": "lookup", "arguments": {"name": "Paris"}}]),
        ]
    )
    trace = tmp_path / "t.jsonl"
    with recording(trace):
        live = await tool_and_schema()
    assert live[1] == Verdict(ok=True, reason="fine")
    calls = len(server.requests)
    assert calls == 4  # tool round, final answer, bad JSON, retried JSON
    seen: list[Event] = []
    with replaying(trace), listening(seen.append):
        assert await tool_and_schema() == live
    assert len(server.requests) == calls
    assert [e.data["content"] for e in seen if e.kind == "tool_result"] == ["Paris is a city"]
    assert sum(e.kind == "format_retry" for e in seen) == 1


async def test_recorded_model_errors_are_replayed(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(faults=["500"] * 5, reply="never")], model={"max_retries": 0})
    trace = tmp_path / "e.jsonl"
    with recording(trace), pytest.raises(ServerError):
        await solve("x")
    with replaying(trace), pytest.raises(ServerError, match="replayed"):
        await solve("x")
    assert len(server.requests) == 1


async def test_a_truncated_trace_still_replays_its_complete_calls(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(reply="fine")])
    trace = tmp_path / "cut.jsonl"
    with recording(trace):
        await program(ITEMS[:2])
    data = trace.read_bytes()
    cut = tmp_path / "cut2.jsonl"
    cut.write_bytes(data[: len(data) - 17])  # the run_end line is cut mid-way
    read = read_trace(cut)
    assert read.truncated and "truncated" in read.warnings[0]
    before = len(server.requests)
    with replaying(cut):
        assert await program(ITEMS[:2]) == (["fine", "fine"], "fine")
    assert len(server.requests) == before


@ppl
async def two_questions() -> list[str]:
    """Two gens on one line (same path, occurrences 0 and 1): the first fails fast."""
    futures = []
    for i in range(2):
        f"question {i}"
        futures.append(gen())
    results = []
    for future in futures:
        try:
            results.append(await future)
        except ServerError:
            results.append("error")
    return results


async def test_a_recorded_error_is_paired_with_its_own_request(scripted, tmp_path: Path) -> None:
    # gen 0 fails while gen 1 (same path) is still waiting: the error must not be given to
    # gen 1's request, which the path alone cannot tell apart
    server = scripted(
        [
            Rule(match="question 1", reply="slow", latency=0.3),
            Rule(match="question 0", faults=["500"] * 5, reply="never"),
        ],
        model={"max_retries": 0},
    )
    trace = tmp_path / "pair.jsonl"
    with recording(trace):
        assert await two_questions() == ["error", "slow"]
    errors = [r for r in read_trace(trace).records if r.get("type") == "gen_error"]
    assert len(errors) == 1 and errors[0]["call"]["occurrence"] == 0
    with replaying(trace):
        assert await two_questions() == ["error", "slow"]
    assert len(server.requests) == 2


async def test_tool_results_are_replayed_and_pure_tools_run_again(scripted, tmp_path: Path) -> None:
    from appl import tool

    runs = {"deploy": 0, "square": 0}

    def deploy(target: str) -> str:
        """A side effect that must not happen twice."""
        runs["deploy"] += 1
        return f"deployed {target} #{runs['deploy']}"

    @tool(pure=True)
    def square(x: int) -> int:
        """Pure: replay may run it again."""
        runs["square"] += 1
        return x * x

    @ppl
    async def ops() -> str:
        """Doc."""
        "ops go"
        return await gen(tools=[deploy, square], run_tools=True)

    server = scripted(
        [
            Rule(match=lambda b: b["messages"][-1]["role"] == "tool", reply="all done"),
            Rule(
                match="ops go",
                tool_calls=[
                    {"name": "deploy", "arguments": {"target": "prod"}},
                    {"name": "square", "arguments": {"x": 7}},
                ],
            ),
        ]
    )
    trace = tmp_path / "tools.jsonl"
    with recording(trace):
        live = await ops()
    assert runs == {"deploy": 1, "square": 1} and len(server.requests) == 2
    seen: list[Event] = []
    with replaying(trace) as replayer, listening(seen.append):
        assert await ops() == live
    assert runs == {"deploy": 1, "square": 2}  # deploy answered from the trace, square re-ran
    assert len(server.requests) == 2 and replayer.index.tool_hits == 1
    results = {e.data["name"]: e.data for e in seen if e.kind == "tool_result"}
    assert results["deploy"]["content"] == "deployed prod #1" and results["deploy"]["replayed"]
    assert results["square"]["content"] == "49" and "replayed" not in results["square"]
