"""How close the appl runtime gets to the ideal schedule, and what it costs per gen.

Runs four workflows against a ScriptedServer (a real HTTP server speaking the OpenAI protocol)
that answers every request after LATENCY seconds, and prints for each:
measured wall time, the ideal time (the critical path of the call graph x LATENCY), the ratio
ideal/measured (1.0 = perfect) and the sequential time (calls x LATENCY).
Then the runtime overhead per gen: 1,000 concurrent gens at zero latency through appl, minus
the same 1,000 requests sent with the raw openai.AsyncOpenAI client, divided by 1,000.

    .venv/bin/python benchmarks/appl_parallel.py [--repeats 3] [--latency 0.2]

The scripted model is configured with max_concurrency=128 so the per-model default (16)
does not cap the fan-out; the output says so. Figures are medians over the repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import openai

from appl import (
    GenFuture,
    GenRequest,
    GenResponse,
    NumberedList,
    Usage,
    close_models,
    configure,
    gen,
    ppl,
    use_model_resolver,
)
from appl.models._http import make_http_client
from appl.testing import ScriptedServer

# Enough for the widest level (64). The model layer keeps at most 100 idle keep-alive
# connections (httpcore's pool checks each idle one whenever a request starts or ends).
WORKFLOW_CONCURRENCY = 128
OVERHEAD_CONCURRENCY = 64

# --- the workflows ------------------------------------------------------------------------


@ppl
async def self_consistency(samples: int) -> str:
    """32 independent samples, then a majority vote (in Python)."""
    "Solve 17*23 and answer with the number only."
    answers = [gen(temperature=1.0) for _ in range(samples)]
    votes = Counter([await a for a in answers])
    return votes.most_common(1)[0][0]


@ppl
async def summarize(chunk: str) -> GenFuture:
    """One chunk summary (returns the future: the caller does not wait)."""
    f"Summarize this chunk: {chunk}"
    return gen(max_tokens=50)


@ppl
async def map_reduce(chunks: int) -> str:
    """64 chunk summaries, then one reduce over all of them."""
    summaries = [await summarize(f"chunk {i}") for i in range(chunks)]
    "Combine these summaries:"
    NumberedList(summaries)  # keeps the pending futures: no blocking here
    return await gen()


@ppl
async def expand(thought: Any, depth: int, branching: int) -> list[GenFuture]:
    """A tree of thoughts: each level's gens depend on the parent's output."""
    f"Given the thought: {thought}\nPropose a next step."
    children = [gen() for _ in range(branching)]
    if depth == 1:
        return children
    leaves: list[GenFuture] = []
    for child in children:
        leaves.extend(await expand(child, depth - 1, branching))
    return leaves


@ppl
async def tree_of_thoughts(depth: int, branching: int) -> int:
    leaves = await expand("the root problem", depth, branching)
    return len([await leaf for leaf in leaves])


@ppl
async def side_question(i: int) -> GenFuture:
    f"Side question {i}"
    return gen()


@ppl
async def chain_with_side_calls(length: int, sides: int) -> list[str]:
    """A chain of dependent calls; independent calls written after its first link."""
    "Step 0 of the chain"
    value = gen()
    side = [await side_question(i) for i in range(sides)]  # must start at once
    for step in range(1, length):
        f"Step {step}, building on: {value}"
        value = gen()
    return [await value, *[await s for s in side]]


@ppl
async def thousand(n: int) -> int:
    """n concurrent gens (for the overhead figure)."""
    "Say ok."
    futures = [gen(max_tokens=5) for _ in range(n)]
    return len([await f for f in futures])


# --- measurement --------------------------------------------------------------------------


async def timed(make: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await make()
    return time.perf_counter() - started


async def median_time(make: Callable[[], Awaitable[Any]], repeats: int) -> tuple[float, float]:
    await make()  # warm-up: connections, client construction
    times = [await timed(make) for _ in range(repeats)]
    return statistics.median(times), (max(times) - min(times))


async def raw_openai(base_url: str, n: int, cap: int | None = None) -> None:
    """n requests straight through openai.AsyncOpenAI. With `cap`, the like-for-like baseline:
    the same HTTP transport appl builds and the same concurrency bound, so the difference to
    appl is appl's own cost (runtime + model layer); without, openai's defaults, uncapped."""
    http_client = None
    if cap is not None:
        timeout = httpx2.Timeout(60.0)
        http_client = make_http_client(
            timeout=timeout, max_connections=max(cap, 100), max_keepalive=min(cap, 100)
        )
    client = openai.AsyncOpenAI(
        base_url=base_url, api_key="test", max_retries=0, timeout=60.0, http_client=http_client
    )
    bound = asyncio.Semaphore(cap or n)
    try:

        async def one() -> str:
            async with bound:
                reply = await client.chat.completions.create(
                    model="scripted",
                    messages=[{"role": "user", "content": "Say ok."}],
                    max_tokens=5,
                )
            return reply.choices[0].message.content or ""

        await asyncio.gather(*(one() for _ in range(n)))
    finally:
        await client.close()


@contextmanager
def server_process(latency: float, reply: str) -> Iterator[str]:
    """A ScriptedServer in a child process, so it does not share the GIL with the client."""
    context = multiprocessing.get_context("spawn")
    urls: Any = context.Queue()
    stop = context.Event()
    process = context.Process(target=_serve, args=(latency, reply, urls, stop), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=30)
    finally:
        stop.set()
        process.join(timeout=10)


def _serve(latency: float, reply: str, urls: Any, stop: Any) -> None:
    with ScriptedServer(default_latency=latency, default_reply=reply) as server:
        urls.put(server.base_url)
        stop.wait()


def configure_scripted(base_url: str, max_concurrency: int) -> None:
    configure(
        models={
            "scripted": {
                "provider": "openai",
                "base_url": base_url,
                "api_key": "test",
                "api_key_env": None,
                "max_concurrency": max_concurrency,
                "timeout_s": 60.0,
            }
        },
        default_model="scripted",
    )


async def main(repeats: int, latency: float) -> None:
    rows: list[tuple[str, int, int]] = [  # name, calls, critical path length (calls)
        ("self-consistency (32 + vote)", 32, 1),
        ("map-reduce (64 + reduce)", 65, 2),
        ("tree of thoughts (3 levels x4)", 4 + 16 + 64, 3),
        ("chain 5 + 10 side calls", 15, 5),
    ]
    programs: list[Callable[[], Awaitable[Any]]] = [
        lambda: self_consistency(32),
        lambda: map_reduce(64),
        lambda: tree_of_thoughts(3, 4),
        lambda: chain_with_side_calls(5, 10),
    ]
    print(f"appl parallel benchmark: scripted server, {latency * 1000:.0f} ms per call, median of")
    print(
        f"{repeats} runs after a warm-up; scripted model max_concurrency={WORKFLOW_CONCURRENCY} "
        "(the default, 16, would cap the fan-out)"
    )
    print()
    header = f"{'workflow':34} {'calls':>5} {'measured':>9} {'ideal':>7} {'ideal/meas':>10} {'sequential':>10} {'speedup':>8}"
    print(header)
    print("-" * len(header))
    with server_process(latency, "42") as base_url:
        configure_scripted(base_url, WORKFLOW_CONCURRENCY)
        for (name, calls, depth), program in zip(rows, programs, strict=True):
            measured, spread = await median_time(program, repeats)
            ideal = depth * latency
            sequential = calls * latency
            print(
                f"{name:34} {calls:5d} {measured:8.3f}s {ideal:6.2f}s {ideal / measured:10.3f} "
                f"{sequential:9.1f}s {sequential / measured:7.1f}x   (spread {spread * 1000:.0f} ms)"
            )
        await close_models()
        floor, _ = await median_time(lambda: raw_openai(base_url, 64), repeats)
        print(
            f"(context: the raw openai client alone needs {floor:.3f}s for 64 concurrent "
            f"requests of {latency * 1000:.0f} ms on this machine)"
        )

    n = 1000
    with server_process(0.0, "ok") as base_url:
        configure_scripted(base_url, OVERHEAD_CONCURRENCY)
        appl_wall, appl_spread = await median_time(lambda: thousand(n), repeats)
        matched_wall, matched_spread = await median_time(
            lambda: raw_openai(base_url, n, cap=OVERHEAD_CONCURRENCY), repeats
        )
        raw_wall, raw_spread = await median_time(lambda: raw_openai(base_url, n), repeats)
        await close_models()
    overhead_ms = (appl_wall - matched_wall) / n * 1000
    print()
    print(
        f"overhead: {n} concurrent gens at zero latency (model max_concurrency="
        f"{OVERHEAD_CONCURRENCY})"
    )
    print(
        f"  appl                                   {appl_wall:.3f}s (spread {appl_spread * 1000:.0f} ms)"
    )
    print(
        f"  raw openai client, same transport + cap {matched_wall:.3f}s "
        f"(spread {matched_spread * 1000:.0f} ms)"
    )
    print(
        f"  raw openai client, its defaults, no cap {raw_wall:.3f}s "
        f"(spread {raw_spread * 1000:.0f} ms)"
    )
    print(
        f"  overhead per gen vs the like-for-like raw client: {overhead_ms:.3f} ms  (target <= 1 ms)"
    )

    # The runtime alone (no HTTP): the same program with an instant in-process model
    # substituted through the resolve_model hook.
    instant = InstantModel()
    with use_model_resolver(lambda alias, identity: instant):
        bare, bare_spread = await median_time(lambda: thousand(n), repeats)
    print(
        f"  runtime alone (instant model via resolve_model): {bare / n * 1000:.3f} ms per gen "
        f"(spread {bare_spread * 1000:.0f} ms)"
    )


class InstantModel:
    name = "instant"

    async def generate(self, request: GenRequest, *, on_text: Any = None) -> GenResponse:
        return GenResponse(text="ok", usage=Usage(5, 1))

    async def aclose(self) -> None:
        return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    asyncio.run(main(args.repeats, args.latency))
