"""The response cache: a repeated deterministic request is answered from memory, with the
usage it cost; anything else goes to the server. Real HTTP to the scripted server."""

from __future__ import annotations

from appl import gen, ppl, runtime
from appl.cache import response_cache
from appl.testing import Rule
from appl.testing.pytest_plugin import MakeScripted


@ppl
async def ask(item: str, seed: int | None = None, temperature: float = 0.8) -> str:
    """Doc."""
    f"Solve: {item}"
    return await gen(seed=seed, temperature=temperature)


@ppl
async def ask_result(item: str, seed: int | None = None):
    """Doc."""
    f"Solve: {item}"
    return await gen(seed=seed, temperature=0.8).result()


def _texts(server_requests: list[dict]) -> list[str]:
    return [r["messages"][-1]["content"] for r in server_requests]


async def test_a_seeded_request_asked_twice_reaches_the_server_once(
    scripted: MakeScripted,
) -> None:
    server = scripted([Rule(reply="answer")])
    with response_cache() as cache:
        first = await ask("a", seed=3)
        second = await ask("a", seed=3)  # the same request from another call: a hit
        other_seed = await ask("a", seed=4)
        other_prompt = await ask("b", seed=3)
    assert first == second == other_seed == other_prompt == "answer"
    assert _texts(server.requests) == ["Solve: a", "Solve: a", "Solve: b"]
    assert (cache.hits, cache.misses) == (1, 3)
    assert runtime._global_resolver is None  # the previous resolver is back after the block


async def test_sampled_requests_are_never_cached(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="x")])
    with response_cache() as cache:
        await ask("a")
        await ask("a")
        await ask("a", temperature=0)  # greedy: pinned, cached from here on
        await ask("a", temperature=0)
    assert len(server.requests) == 3
    assert (cache.hits, cache.misses) == (1, 1)


async def test_a_hit_is_the_first_answer_with_its_usage(scripted: MakeScripted) -> None:
    count = iter(range(100))
    scripted([Rule(reply=lambda body: f"answer {next(count)}")])
    with response_cache():
        first = await ask_result("a", seed=5)
        second = await ask_result("a", seed=5)
    assert first.text == second.text == "answer 0"
    assert second.response is not None and first.response is not None
    assert second.response.usage == first.response.usage  # what the request cost
    assert second.response.usage.completion_tokens > 0
