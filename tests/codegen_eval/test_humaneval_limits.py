"""HumanEval (trusted checker, real bwrap sandbox): a memory failure is what the sandbox saw.

Before: a Python candidate raising MemoryError itself (inside the limit) was scored
resource_limit:memory, a class it chose; a candidate really killed at the memory cgroup's
limit is still resource_limit:memory (the checker exits 0 after its verdict, so the kill is
the cgroup's OOM count, not the run's status)."""

from __future__ import annotations

import asyncio

import pytest

from codegen_eval.readers import load_humaneval
from codegen_eval.readers.humaneval import HumanEvalScorer
from codegen_eval.types import Candidate, Sample, Score

from .test_humaneval_trusted import FIXTURE

CASES = {
    "raises_memory_error": ("    raise MemoryError('over the limit, honestly')\n", "nonzero_exit"),
    "fake_oom_text_then_wrong": (
        "    import sys\n    print('Killed\\nMemoryError\\nstd::bad_alloc', file=sys.stderr)\n"
        "    return a - b\n",
        "wrong_answer",
    ),
    "really_over_the_limit": (
        "    x = b'1' * (3 << 30)\n    return len(x)\n",
        "resource_limit:memory",
    ),
}


@pytest.fixture(scope="module")
def scores() -> dict[str, Score]:
    sample: Sample = next(s for s in load_humaneval(FIXTURE).dataset if s.id == "HumanEval/0")
    scorer = HumanEvalScorer(wall_s=8.0, call_s=4.0, trusted=True)

    async def all_() -> dict[str, Score]:
        out = {}
        for name, (code, _) in CASES.items():
            out[name] = await scorer.score(sample, Candidate(sample.id, 0, code))
        return out

    return asyncio.run(all_())


@pytest.mark.parametrize("name", list(CASES))
def test_memory_failures_are_classed_by_what_the_sandbox_saw(
    scores: dict[str, Score], name: str
) -> None:
    s = scores[name]
    assert (s.status, s.failure_class) == ("fail", CASES[name][1]), s.explanation
