"""How fast is the scripted server, and what does each client layer cost on top of it?

    .venv/bin/python benchmarks/scripted_server.py [--requests 1000] [--rounds 3]

Prints requests/s for N concurrent zero-latency chat requests through, side by side in one
run: raw HTTP/1.1 over 50 keep-alive sockets (the server's own ceiling), the openai client
(the floor any appl runtime pays per call), and appl's get_model() wrapper (limits, retries,
accounting) with max_concurrency=N. Medians of the rounds; the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import openai

from appl import config
from appl.models import close_models, get_model
from appl.testing import Rule, ScriptedServer
from appl.types import GenRequest, Message

BODY = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}).encode()


async def raw_http(port: int, total: int, sockets: int = 50) -> float:
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
        % (
            len(BODY),
            BODY,
        )
    )

    async def worker(count: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(count):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(total // sockets) for _ in range(sockets)))
    return (total // sockets * sockets) / (time.perf_counter() - started)


async def openai_client(base_url: str, total: int) -> float:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "hi"}]
    await client.chat.completions.create(model="scripted", messages=messages)  # type: ignore[arg-type]
    started = time.perf_counter()
    await asyncio.gather(
        *(client.chat.completions.create(model="scripted", messages=messages) for _ in range(total))
    )  # type: ignore[arg-type]
    rate = total / (time.perf_counter() - started)
    await client.close()
    return rate


async def managed(base_url: str, total: int, concurrency: int) -> float:
    config.configure(
        models={
            "bench": {"base_url": base_url, "api_key": "bench", "max_concurrency": concurrency}
        },
        budget={},
    )
    model = get_model("bench")
    request = GenRequest(model="bench", messages=[Message("user", "hi")])
    await model.generate(request)
    started = time.perf_counter()
    await asyncio.gather(*(model.generate(request) for _ in range(total)))
    rate = total / (time.perf_counter() - started)
    await close_models()
    return rate


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {
        "raw HTTP (50 keep-alive sockets)": [],
        "openai.AsyncOpenAI": [],
        "appl get_model()": [],
        "appl get_model(), max_concurrency=64": [],
    }
    async with ScriptedServer(rules=[Rule(reply="ok")]) as server:
        for _ in range(args.rounds):
            results["raw HTTP (50 keep-alive sockets)"].append(
                await raw_http(server.port, args.requests)
            )
            results["openai.AsyncOpenAI"].append(
                await openai_client(server.base_url, args.requests)
            )
            results["appl get_model()"].append(
                await managed(server.base_url, args.requests, args.requests)
            )
            results["appl get_model(), max_concurrency=64"].append(
                await managed(server.base_url, args.requests, 64)
            )
    print(
        f"{args.requests} concurrent zero-latency chat requests, {args.rounds} rounds (median, min-max):"
    )
    for name, rates in results.items():
        med = statistics.median(rates)
        print(
            f"  {name:34s} {med:8.0f} req/s  ({min(rates):.0f}-{max(rates):.0f})  = {1000 / med:.3f} ms/request"
        )
    base = statistics.median(results["openai.AsyncOpenAI"])
    wrapped = statistics.median(results["appl get_model()"])
    print(
        f"  get_model() overhead over the bare openai client: {1000 / wrapped - 1000 / base:+.3f} ms/request"
    )


if __name__ == "__main__":
    asyncio.run(main())
