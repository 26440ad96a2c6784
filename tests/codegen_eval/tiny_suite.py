"""A tiny C suite for the runner's tests: "sum of an array" with a driver, scored for real
(gcc + the sandbox). Importing this module registers the suite "tiny-c"; the CLI loads it with
`--plugin tests.codegen_eval.tiny_suite`. $TINY_COPIES sets how many copies of the problem
the suite has (default 3) so that resume tests have a run long enough to interrupt.
"""

from __future__ import annotations

import os
import random

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.registry import register_suite
from codegen_eval.types import Candidate, FailureClass, Sample, Score, Task

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
long sum_array(const int *a, int n);
int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 3;
    int *a = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) if (scanf("%d", &a[i]) != 1) return 3;
    printf("%ld\n", sum_array(a, n));
    free(a);
    return 0;
}
"""

REFERENCE = """long sum_array(const int *a, int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}
"""

PROMPT = "Write a C function `long sum_array(const int *a, int n)` returning the sum of a[0..n-1]."

BROKEN = {
    "syntax": "long sum_array(const int *a, int n) { long s = 0 return s; }\n",
    "undeclared": "long sum_array(const int *a, int n) { return total + n; }\n",
    "type": "struct P { int x; };\nlong sum_array(const int *a, int n) { struct P p = a; return p.x; }\n",
    "missing_include": '#include "nonexistent_header.h"\nlong sum_array(const int *a, int n) { return 0; }\n',
    "link": "long helper(int);\nlong sum_array(const int *a, int n) { return helper(n); }\n",
    "segfault": "long sum_array(const int *a, int n) { volatile int *p = 0; *p = 1; return 0; }\n",
    "wrong": "long sum_array(const int *a, int n) { return 0; }\n",
    "loop": "long sum_array(const int *a, int n) { volatile long s = 0; for (;;) s++; return s; }\n",
    "memory": (
        "#include <stdlib.h>\n#include <string.h>\n"
        "long sum_array(const int *a, int n) {\n"
        "  for (;;) { char *p = malloc(1 << 24); if (!p) return -1; memset(p, 1, 1 << 24); }\n}\n"
    ),
}


class TinyScorer:
    """Compile driver + candidate, feed a random array on stdin, compare the printed sum with
    the sum computed here (outside the sandbox)."""

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        from sandboxes import Limits, open_sandbox

        if not candidate.code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE)
        rng = random.Random()
        values = [rng.randint(-1000, 1000) for _ in range(50)]
        async with open_sandbox() as sb:
            c = await sb.exec(
                ["gcc", "-O1", "-o", "prog", "driver.c", "cand.c"],
                files={"driver.c": DRIVER, "cand.c": candidate.code},
                limits=Limits(wall_s=60, memory_mb=1024),
            )
            if (fc := classify_compile_result(c)) is not None:
                return Score(0.0, "fail", fc, explanation=short_log(c.stderr))
            r = await sb.exec(
                ["./prog"],
                stdin=f"{len(values)} " + " ".join(map(str, values)),
                limits=Limits(wall_s=2, cpu_s=2, memory_mb=128),
            )
        if (fc := classify_exec(r)) is not None:
            return Score(0.0, "fail", fc, explanation=short_log(r.stderr))
        if r.stdout.strip() != str(sum(values)):
            return Score(0.0, "fail", FailureClass.WRONG_ANSWER, explanation=r.stdout[:200])
        # A constant speedup of 1.0 for passes only exercises the speedup columns.
        return Score(1.0, "pass", metrics={"runtime_s": r.wall_s, "speedup": 1.0, "resources": 1})


def tiny_task(copies: int | None = None) -> Task:
    copies = copies if copies is not None else int(os.environ.get("TINY_COPIES", "3"))
    samples = [
        Sample(
            id=f"sum-{i:02d}",
            input=PROMPT,
            target=REFERENCE,
            metadata={"language": "c", "variant": "serial" if i % 2 == 0 else "alt"},
        )
        for i in range(copies)
    ]
    return Task(
        name="tiny-c",
        dataset=samples,
        scorer=TinyScorer(),
        excluded={"sum-broken": "known-bad: driver reads past the input"},
    )


@register_suite("tiny-c", "Test-only C suite: sum of an array")
def _factory(**options: object) -> Task:
    return tiny_task()


class _BrokenHarness:
    """A scorer whose harness always fails (as a sandbox that died mid-run would)."""

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        raise RuntimeError("harness broke: /nonexistent/driver missing")


@register_suite("tiny-broken-harness", "Test-only: a suite whose harness always fails")
def _broken_factory(**options: object) -> Task:
    task = tiny_task(2)
    return Task(name="tiny-broken-harness", dataset=task.dataset, scorer=_BrokenHarness())


def rescored(task: Task, **options: object) -> Task:
    """A solver factory that also brings its own scorer (test-only): the reference solver
    and the broken harness in place of the suite's scorer."""
    from codegen_eval.solvers import ReferenceSolver

    return Task(name=task.name, dataset=task.dataset, scorer=_BrokenHarness(),
                solver=ReferenceSolver())  # fmt: skip
