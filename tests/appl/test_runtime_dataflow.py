"""The dataflow runtime against a real OpenAI-protocol server: parallelism, non-blocking
dependencies, streaming, sync programs, cancellation and error propagation."""

from __future__ import annotations

import asyncio

import pytest

from appl import ApplError, GenFuture, ServerError, gen, ppl
from appl.testing import Rule
from tests.appl.helpers_lang import Arrivals, sync_server


async def test_independent_gens_run_in_parallel(scripted) -> None:
    server = scripted(default_latency=0.3, model={"max_concurrency": 32})

    @ppl
    async def fan_out() -> list[str]:
        """A test program."""
        "Say something."
        futures = [gen() for _ in range(10)]
        return [await f for f in futures]

    answers = await fan_out()
    assert answers == ["ok"] * 10
    assert len(server.requests) == 10
    # the server saw them overlap: an observation, where a bound on the wall time (< 1.5 s)
    # was a guess that a loaded machine could break (serialized, the most in flight is 1)
    assert server.max_in_flight >= 8


async def test_gen_waiting_on_a_pending_future_does_not_block_later_gens(scripted) -> None:
    arrivals = Arrivals()
    scripted(
        [
            arrivals.rule(),
            Rule(match="Now use alpha", reply="beta", latency=0.1),
            Rule(match="FIRST", reply="alpha", latency=0.6),
            Rule(match="SIDE", reply="side", latency=0.1),
        ]
    )

    @ppl
    async def program() -> tuple[str, str, str, bool]:
        """A test program."""
        "FIRST question"
        first = gen()
        f"Now use {first}"  # a pending future inside an f-string stays a future
        dependent = gen()
        assert not dependent.done()  # gen() returned at once although its input is pending
        side_answer = await side()  # written after the dependent gen, must not wait for it
        chain_pending = not first.done()
        return await dependent, await first, side_answer, chain_pending

    @ppl
    async def side() -> str:
        """A test program."""
        "SIDE question"
        return await gen()

    dependent, first, side_answer, chain_pending = await program()
    assert (dependent, first, side_answer) == ("beta", "alpha", "side")
    assert chain_pending, "the independent gen waited for the chain"  # SIDE 0.1 s, FIRST 0.6 s
    # the dependent request left only after FIRST was answered, with FIRST's text in it
    assert arrivals.first("Now use alpha") >= arrivals.first("FIRST") + 0.55
    assert arrivals.first("SIDE") < arrivals.first("Now use alpha")


async def test_side_calls_written_after_a_chain_start_at_once(scripted) -> None:
    arrivals = Arrivals()
    scripted([arrivals.rule()], default_latency=0.2, model={"max_concurrency": 32})

    @ppl
    async def program() -> list[str]:
        """A test program."""
        "step 0"
        value = gen()
        for i in range(1, 3):
            f"step {i} after {value}"
            value = gen()
        sides = []
        for j in range(4):
            sides.append(side(j))
        results = await asyncio.gather(*sides)
        return [await value, *results]

    @ppl
    async def side(j: int) -> str:
        """A test program."""
        f"side {j}"
        return await gen()

    out = await program()
    assert out == ["ok"] * 5
    chain_second = arrivals.first("step 1")
    for j in range(4):
        assert arrivals.first(f"side {j}") < chain_second


def test_sync_program_runs_the_loop_and_blocks_only_on_use() -> None:
    with sync_server([Rule(match="capital", reply="Paris", latency=0.2)]) as server:

        @ppl
        def program(question: str) -> tuple[str, list[GenFuture]]:
            """A test program."""
            f"Question: {question}"
            first = gen()
            more = [gen() for _ in range(4)]
            return str(first), more

        answer, more = program("capital of France?")
        assert answer == "Paris"
        assert [m.value() for m in more] == ["Paris"] * 4  # resolved: the run waited for them
        assert len(server.requests) == 5
        assert server.max_in_flight >= 2, "gens were serialized"  # 0.2 s each: they overlap
        assert server.requests[0]["messages"] == [
            {"role": "user", "content": "Question: capital of France?"}
        ]


def test_sync_program_called_twice_gets_fresh_runs() -> None:
    with sync_server([Rule(match="n=", reply=lambda body: body["messages"][-1]["content"])]):

        @ppl
        def echo(n: int) -> str:
            """A test program."""
            f"n={n}"
            return str(gen())

        assert [echo(1), echo(2)] == ["n=1", "n=2"]


async def test_sync_ppl_function_from_async_code_is_awaitable(scripted) -> None:
    scripted([Rule(match="hi", reply="hello")])

    @ppl
    def blocking_style() -> str:
        """A test program."""
        "hi"
        return str(gen())  # blocks a worker thread, never the loop

    assert await blocking_style() == "hello"


async def test_streaming_yields_chunks_and_resolves_to_full_text(scripted) -> None:
    scripted([Rule(match="stream", reply="one two three four")], tokens_per_s=200)

    @ppl
    async def program() -> tuple[list[str], str]:
        """A test program."""
        "stream please"
        reply = gen(stream=True)
        chunks = [chunk async for chunk in reply]
        return chunks, await reply

    chunks, text = await program()
    assert len(chunks) > 1
    assert "".join(chunks) == text == "one two three four"


def test_sync_streaming() -> None:
    with sync_server([Rule(match="stream", reply="a b c")], tokens_per_s=100):

        @ppl
        def program() -> list[str]:
            """A test program."""
            "stream please"
            return list(gen(stream=True))

        assert "".join(program()) == "a b c"


async def test_cancelling_a_program_cancels_its_gens_and_leaves_no_tasks(scripted) -> None:
    server = scripted(default_latency=5.0, model={"max_concurrency": 32})
    futures: list[GenFuture] = []

    @ppl
    async def slow() -> list[str]:
        """A test program."""
        "slow"
        futures.extend(gen() for _ in range(5))
        return [await f for f in futures]

    before = asyncio.all_tasks()
    task = asyncio.create_task(slow())
    for _ in range(100):
        await asyncio.sleep(0.02)
        if server.in_flight == 5:
            break
    assert server.in_flight == 5
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    leftovers = asyncio.all_tasks() - before - {asyncio.current_task()}
    assert not leftovers, leftovers
    assert all(f.done() for f in futures)
    with pytest.raises(asyncio.CancelledError):
        await futures[0]


async def test_model_errors_reach_the_reader_with_a_clear_message(scripted) -> None:
    scripted([Rule(match="broken", faults=["500"] * 10)], model={"max_retries": 1})

    @ppl
    async def program() -> str:
        """A test program."""
        "broken"
        return await gen()

    with pytest.raises(ServerError) as info:
        await program()
    assert "scripted" in str(info.value)  # names the model alias
    assert info.value.attempts == 2


async def test_error_of_an_input_gen_propagates_to_dependent_gens(scripted) -> None:
    server = scripted([Rule(match="broken", faults=["500"] * 10)], model={"max_retries": 0})

    @ppl
    async def program() -> str:
        """A test program."""
        "broken"
        first = gen()
        f"then {first}"
        return await gen()

    with pytest.raises(ServerError):
        await program()
    assert len(server.requests) == 1  # the dependent gen never sent a request


async def test_unread_gen_errors_are_raised_at_the_end_of_the_run(scripted) -> None:
    scripted([Rule(match="broken", faults=["500"] * 10)], model={"max_retries": 0})

    @ppl
    async def fire_and_forget() -> str:
        """A test program."""
        "broken"
        gen()
        return "returned normally"

    with pytest.raises(ServerError):
        await fire_and_forget()


async def test_blocking_on_a_pending_gen_inside_async_code_is_refused(scripted) -> None:
    scripted(default_latency=0.2)

    @ppl
    async def program() -> str:
        """A test program."""
        "hi"
        reply = gen()
        return str(reply)  # would deadlock the loop

    with pytest.raises(ApplError, match="use `await`"):
        await program()


async def test_gen_outside_ppl_is_a_clear_error() -> None:
    with pytest.raises(ApplError, match="inside a @ppl function"):
        gen()


async def test_empty_prompt_is_a_clear_error(scripted) -> None:
    scripted()

    @ppl
    async def program() -> str:
        return await gen()

    with pytest.raises(ApplError, match="empty prompt"):
        await program()
