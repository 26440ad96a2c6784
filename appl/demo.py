"""A small appl program that shows parallel gens: `python -m appl.demo` or `appl demo`.

It starts its own ScriptedServer (a real OpenAI-protocol HTTP server with scripted replies,
each taking `--latency` seconds), points the default model at it, and runs a sync @ppl
program: three independent questions, a fan-out of drafts, and a judge whose prompt holds
the drafts while they are still pending. The printed timings show the calls overlapping.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from appl.config import configure, get_config, reset_config
from appl.core import gen, ppl, role
from appl.future import GenFuture
from appl.prompt import NumberedList
from appl.testing import Rule, ScriptedServer


@ppl
def ask(question: str) -> GenFuture:
    """One question, one gen (returned as a future: the caller does not wait)."""
    with role("system"):
        "You answer in one short sentence."
    question
    answer: GenFuture = gen(max_tokens=40)
    return answer


@ppl
def draft_and_judge(topic: str, drafts: int) -> tuple[list[GenFuture], GenFuture]:
    """Several drafts in parallel, then a judge that depends on all of them."""
    f"Write a one-line slogan about {topic}."
    candidates = [gen(temperature=1.0) for _ in range(drafts)]
    "Pick the best slogan from this list and repeat it:"
    NumberedList(candidates)  # the drafts are still pending here; nothing blocks
    return candidates, gen()


@ppl
def demo(drafts: int) -> dict[str, Any]:
    """The whole program: plain sync Python; every gen runs as soon as its inputs are ready."""
    questions = ["What is a GPU warp?", "What does MPI_Allreduce do?", "What is a FIFO?"]
    answers = [ask(q) for q in questions]
    candidates, best = draft_and_judge("parallel programming", drafts)
    return {
        "answers": dict(zip(questions, [str(a) for a in answers], strict=True)),
        "drafts": [str(c) for c in candidates],
        "best": str(best),
    }


def _rules() -> list[Rule]:
    counter = iter(range(1, 1_000_000))

    def slogan(_body: dict[str, Any]) -> str:
        return f"Slogan #{next(counter)}: many cores, one goal."

    return [
        Rule(match="Pick the best", reply="Slogan #1: many cores, one goal."),
        Rule(match="slogan", reply=slogan),
        Rule(match="warp", reply="A warp is 32 GPU threads that execute in lockstep."),
        Rule(match="Allreduce", reply="It reduces values from all ranks and shares the result."),
        Rule(match="FIFO", reply="A first-in, first-out queue."),
    ]


def run_demo(latency: float = 0.5, drafts: int = 8, echo: Callable[[str], None] = print) -> int:
    saved = get_config()
    with ScriptedServer(_rules(), default_latency=latency) as server:
        configure(
            models={
                "demo": {
                    "provider": "openai",
                    "base_url": server.base_url,
                    "api_key": "demo",
                    "api_key_env": None,
                    "max_concurrency": 64,
                }
            },
            default_model="demo",
        )
        try:
            started = time.perf_counter()
            result = demo(drafts)
            elapsed = time.perf_counter() - started
        finally:
            reset_config(saved)
        calls = len(server.requests)
    for question, answer in result["answers"].items():
        echo(f"Q: {question}\nA: {answer}")
    echo("Drafts:\n" + "\n".join(f"  {d}" for d in result["drafts"]))
    echo(f"Judge picked: {result['best']}")
    critical = 2 * latency  # the judge waits for the drafts; everything else runs alongside
    echo(
        f"\n{calls} model calls of {latency:.2f}s each took {elapsed:.2f}s "
        f"(one after another: {calls * latency:.2f}s; critical path: {critical:.2f}s)"
    )
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    parser.add_argument("--drafts", type=int, default=8, help="parallel drafts to judge")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m appl.demo", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run_demo(args.latency, args.drafts)


if __name__ == "__main__":
    raise SystemExit(main())
