"""What the trusted HumanEval checker costs per sample, against the old in-process verdict.

Scores the canonical solution of every problem in a HumanEval-style file (default: the test
fixture, Python, C++ and C problems) in both modes, interleaved (trusted, in-process,
trusted, ...) so machine noise hits both alike, one sample at a time, and prints per
language: pass counts and the median and spread of the wall time per sample in each mode.
The first round warms the caches (guard, runners, precompiled header, one compiled checker
per C/C++ problem) and is not counted.

    .venv/bin/python benchmarks/humaneval_trusted.py [--file problems.jsonl] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from pathlib import Path

from codegen_eval.readers import load_humaneval
from codegen_eval.readers.humaneval import HumanEvalScorer
from codegen_eval.types import Candidate, Sample

DEFAULT = Path(__file__).parent.parent / "tests/codegen_eval/humaneval_fixture/problems.jsonl"


async def _one(scorer: HumanEvalScorer, s: Sample) -> tuple[float, bool]:
    t0 = time.monotonic()
    score = await scorer.score(s, Candidate(s.id, 0, s.target))
    return time.monotonic() - t0, score.status == "pass"


async def main(path: Path, repeats: int) -> None:
    samples = load_humaneval(path).dataset
    modes = {"trusted": HumanEvalScorer(), "in-process": HumanEvalScorer(trusted=False)}
    for s in samples:  # warm-up round
        for scorer in modes.values():
            await _one(scorer, s)
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    passed: dict[tuple[str, str], int] = defaultdict(int)
    for _ in range(repeats):
        for s in samples:
            lang = str(s.metadata["language"])
            for mode, scorer in modes.items():
                dt, ok = await _one(scorer, s)
                times[lang, mode].append(dt)
                passed[lang, mode] += ok
    print(f"{len(samples)} problems from {path}, {repeats} repeats, one sample at a time")
    print(f"{'language':9} {'mode':11} {'passed':>9} {'median s':>9} {'min s':>7} {'max s':>7}")
    for (lang, mode), ts in sorted(times.items()):
        print(
            f"{lang:9} {mode:11} {passed[lang, mode]:>4}/{len(ts):<4} "
            f"{statistics.median(ts):9.3f} {min(ts):7.3f} {max(ts):7.3f}"
        )
    for lang in sorted({k[0] for k in times}):
        ratio = statistics.median(times[lang, "trusted"]) / statistics.median(
            times[lang, "in-process"]
        )
        print(f"{lang}: trusted / in-process median time per sample = {ratio:.2f}x")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    asyncio.run(main(args.file, args.repeats))
