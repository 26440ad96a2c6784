"""Wall time to score every reference of the verilog suite (what a CI run pays for it).

    .venv/bin/python benchmarks/verilog_references.py [--reps 3] [--concurrency 4]

Moved out of tests/codegen_eval/suites/test_verilog_problems.py, which asserted "< 120 s":
a performance figure, not a property; on this shared 2-core machine it depends on the load,
so it is measured and reported here (median and spread, with the load average) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from codegen_eval.suites.verilog import ALL_PROBLEMS, VerilogScorer, problem_sample
from codegen_eval.types import Candidate


async def score_all(concurrency: int) -> tuple[float, int]:
    """Seconds to score every reference, and how many passed."""
    scorer, gate = VerilogScorer(lint=False), asyncio.Semaphore(concurrency)

    async def one(index: int) -> bool:
        problem = ALL_PROBLEMS[index]
        sample = problem_sample(problem)
        async with gate:
            score = await scorer.score(sample, Candidate(problem.id, 0, sample.target))
        return score.status == "pass"

    started = time.perf_counter()
    passed = await asyncio.gather(*(one(i) for i in range(len(ALL_PROBLEMS))))
    return time.perf_counter() - started, sum(passed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    times = []
    for _ in range(args.reps):
        seconds, passed = asyncio.run(score_all(args.concurrency))
        times.append(seconds)
        print(f"{len(ALL_PROBLEMS)} references, {passed} pass: {seconds:.1f} s", flush=True)
    print(
        f"median {statistics.median(times):.1f} s (min {min(times):.1f}, max {max(times):.1f}) "
        f"over {args.reps} runs, concurrency {args.concurrency}, load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
