"""The embedded local model: speed, and the overhead of appl's layer over the raw server.

For each round, the same requests go (a) straight to the llama.cpp server with the raw
`openai` client and (b) through appl (`@ppl` + `gen(stream=True)` -> model layer with limits,
retries, accounting): interleaved, so load drift on this noisy machine hits both alike.
Prints medians: prompt tokens/s (a long prompt, 1 output token), generation tokens/s, time to
first token, and the latency of a 100-token answer; then appl's overhead in percent.

    .venv/bin/python benchmarks/local_model.py [--rounds 3] [--model qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import openai

from appl import close_models, configure, gen, ppl
from appl.local.server import shared_server

ANSWER_PROMPT = "Write a C function that multiplies two N x N matrices, with comments."
LONG_PROMPT = "Summarise this code in one word.\n" + "\n".join(
    f"int f{i}(int x) {{ return x * {i} + {i % 7}; }}" for i in range(60)
)


@ppl
async def ask(prompt: str, max_tokens: int, start: float) -> tuple[float, int]:
    # The stream is read inside the @ppl function: a top-level call returns only when every
    # gen of its run is done (structured concurrency), so chunks never reach an outer caller
    # live.
    prompt
    first = 0.0
    fut = gen(model="local", temperature=0, seed=1, max_tokens=max_tokens, stream=True)
    deltas = 0
    async for _chunk in fut:
        deltas += 1
        if not first:
            first = time.perf_counter() - start
    return first, deltas


async def through_appl(prompt: str, max_tokens: int) -> tuple[float, float, int]:
    start = time.perf_counter()
    first, deltas = await ask(prompt, max_tokens, start)
    return first, time.perf_counter() - start, deltas


async def direct(
    client: openai.AsyncOpenAI, prompt: str, max_tokens: int
) -> tuple[float, float, int]:
    start = time.perf_counter()
    first = 0.0
    tokens = 0
    stream = await client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": prompt}], temperature=0, seed=1,
        max_tokens=max_tokens, stream=True,
    )  # fmt: skip
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            tokens += 1  # llama.cpp sends one token per delta (and no usage on streams)
            if not first:
                first = time.perf_counter() - start
    return first, time.perf_counter() - start, tokens


async def main(rounds: int, model: str) -> None:
    configure(
        models={"local": {"provider": "local", "options": {"local_model": model, "model": model}}}
    )
    server = shared_server(model)
    url = await asyncio.to_thread(server.start)
    client = openai.AsyncOpenAI(base_url=url, api_key="local", max_retries=0, timeout=600)
    exact = await client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": LONG_PROMPT}], max_tokens=1
    )
    prompt_tokens = exact.usage.prompt_tokens if exact.usage else len(LONG_PROMPT) // 4
    rows: dict[str, dict[str, list[float]]] = {"direct": {}, "appl": {}}
    try:
        for _ in range(rounds):
            for name in ("direct", "appl"):
                run = (lambda p, n: direct(client, p, n)) if name == "direct" else through_appl
                _, prefill, _ = await run(LONG_PROMPT, 1)
                ttft, total, ntok = await run(ANSWER_PROMPT, 100)
                r = rows[name]
                r.setdefault("prompt_tok_s", []).append(prompt_tokens / prefill)
                r.setdefault("gen_tok_s", []).append((ntok - 1) / max(total - ttft, 1e-9))
                r.setdefault("ttft_s", []).append(ttft)
                r.setdefault("latency_100_s", []).append(total)
                r.setdefault("tokens", []).append(ntok)
    finally:
        await client.close()
        await close_models()
        server.stop()
    print(f"model {model}, {rounds} interleaved rounds, n_threads={server.flags.n_threads or 'auto'}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    print(f"{'metric':<16}{'direct':>12}{'appl':>12}{'appl/direct':>14}")
    for metric in ("prompt_tok_s", "gen_tok_s", "ttft_s", "latency_100_s", "tokens"):
        d = statistics.median(rows["direct"][metric])
        a = statistics.median(rows["appl"][metric])
        print(f"{metric:<16}{d:>12.2f}{a:>12.2f}{a / d:>14.3f}")
    d = statistics.median(rows["direct"]["latency_100_s"])
    a = statistics.median(rows["appl"]["latency_100_s"])
    print(f"appl overhead on a 100-token answer: {100 * (a - d) / d:+.1f}% (target: within 5%)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    args = ap.parse_args()
    asyncio.run(main(args.rounds, args.model))
