"""What tracing costs per gen: off, recording to a JSONL file, and replaying from it.

A program of N concurrent gens (plus a few @ppl calls) runs against an in-process model
that answers at once (installed with `use_model_resolver`), so the figures are the runtime's
own cost per gen and the tracing layer's share of it, with no network noise. Then the same
against the real ScriptedServer over HTTP, to put the tracing cost next to a model round trip.

    .venv/bin/python benchmarks/trace_overhead.py [--gens 500] [--repeats 5]

Figures are medians over the repeats, in microseconds per gen.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from appl import close_models, configure, gen, ppl, use_model_resolver
from appl.testing import ScriptedServer
from appl.trace import recording, replaying
from appl.types import GenRequest, GenResponse, Usage


class InstantModel:
    name = "instant"

    async def generate(self, request: GenRequest, *, on_text: Any = None) -> GenResponse:
        return GenResponse(
            text="ok " + (request.messages[-1].content or "")[-8:], usage=Usage(5, 2)
        )

    async def aclose(self) -> None:
        return None


@ppl
async def one(i: int) -> str:
    """Doc."""
    f"Item number {i}: answer briefly."
    return await gen()


@ppl
async def program(n: int) -> list[str]:
    """Doc."""
    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def timed(n: int, scope: Callable[[], AbstractContextManager[Any]]) -> float:
    with scope():
        start = time.perf_counter()
        await program(n)
        return time.perf_counter() - start


def median_us(samples: list[float], n: int) -> float:
    return statistics.median(samples) / n * 1e6


async def measure(n: int, repeats: int, live: Callable[[], AbstractContextManager[Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        with live():
            await timed(
                n, lambda: recording(path, overwrite=True)
            )  # a trace to replay, and a warm-up
            off: list[float] = []
            on: list[float] = []
            for _ in range(repeats):  # interleaved, so drift (warm-up, noise) hits both alike
                off.append(await timed(n, nullcontext))
                on.append(await timed(n, lambda: recording(path, overwrite=True)))
        replay = [await timed(n, lambda: replaying(path)) for _ in range(repeats)]
        size = path.stat().st_size
    base = median_us(off, n)
    print(f"  tracing off     {base:8.1f} us/gen")
    print(
        f"  recording       {median_us(on, n):8.1f} us/gen  (+{median_us(on, n) - base:.1f})"
        f"   {size / n:.0f} bytes/gen on disk"
    )
    print(f"  replay (strict) {median_us(replay, n):8.1f} us/gen  (no model calls)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gens", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.gens} concurrent gens, median of {args.repeats}")
    print("in-process instant model:")
    await measure(args.gens, args.repeats, lambda: use_model_resolver(lambda a, i: InstantModel()))
    print("real ScriptedServer over HTTP (max_concurrency=64):")
    with ScriptedServer() as server:
        configure(
            models={"s": {"provider": "openai", "base_url": server.base_url, "api_key": "k",
                          "api_key_env": None, "max_concurrency": 64}},
            default_model="s",
        )  # fmt: skip
        await measure(args.gens, args.repeats, nullcontext)
        await close_models()


if __name__ == "__main__":
    asyncio.run(main())
