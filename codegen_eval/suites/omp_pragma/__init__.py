"""omp-pragma: give the OpenMP pragma of a loop (or say it must stay serial).

    task = get_suite("omp-pragma", problems=["reduction_*"], limit=5)

Each problem (see `problems/`, docs/suite-omp-pragma.md) is one of our C programs with one
pragma replaced by a marker line. The answer is the pragma line(s) or `none`. The scorer
compares clauses (metrics) and runs the program with gcc -fopenmp at several thread counts
against the serial program's output (Score.value).
"""

from __future__ import annotations

from collections.abc import Sequence

from codegen_eval.registry import register_suite
from codegen_eval.suites._select import select_problems
from codegen_eval.types import Sample, Task

from .pragma import OmpPragma, PragmaSyntaxError, compare, parse_pragma
from .problems import MARKER, OmpProblem, all_problems
from .scorer import OmpAnswer, OmpPragmaScorer, parse_answer

SUITE = "omp-pragma"
SYSTEM_PROMPT = (
    "You are an expert in OpenMP. Answer with the OpenMP pragma line(s) only, or the single "
    "word none."
)


def build_prompt(problem: OmpProblem) -> str:
    return (
        "The C program below had one OpenMP pragma removed; the line\n"
        f"    {MARKER}\n"
        "marks where it was (it applies to the statement that follows the marker). Give the "
        "pragma that makes that statement run correctly in parallel, with every clause it "
        "needs (data-sharing, reductions, schedule, collapse, ...). If the loop after the "
        "marker cannot be parallelised safely (a loop-carried dependence, an early exit), "
        "answer `none`.\n\n"
        # No concrete example pragma here: small models copied one verbatim (measured: the
        # 0.5B local model answered `private(t)`, a variable in no program, on 18 of 23).
        "Answer format: only the pragma line(s), each starting with `#pragma omp`, naming "
        "only variables of this program; or the single word `none`. A ```c fenced block is "
        "accepted.\n\n"
        f"```c\n{problem.masked}```\n"
    )


def make_sample(problem: OmpProblem) -> Sample:
    return Sample(
        id=f"{SUITE}/{problem.name}",
        input=build_prompt(problem),
        target=problem.target,
        metadata={
            "language": "openmp",
            "suite": SUITE,
            "problem": problem.name,
            "category": problem.category,
            "marker_line": problem.marker_line,
            "indent": problem.indent,
            "removed_lines": problem.target.splitlines() if problem.target != "none" else [],
            "loop_vars": list(problem.loop_vars),
            "system_prompt": SYSTEM_PROMPT,
        },
        files={"program.c": problem.masked},
    )


def select(
    problems: Sequence[str] | str | None = None,
    categories: Sequence[str] | str | None = None,
    limit: int | None = None,
) -> list[OmpProblem]:
    """Problems by name glob (`reduction_*`) and category, in name order, first `limit`."""
    return select_problems(
        all_problems().values(), problems, categories, limit,
        suite="omp-pragma", names=lambda p: (p.name,),
    )  # fmt: skip


@register_suite(SUITE, "Predict the OpenMP pragma of a loop (or none); gcc -fopenmp run check")
def omp_pragma_task(
    problems: Sequence[str] | str | None = None,
    categories: Sequence[str] | str | None = None,
    limit: int | None = None,
    *,
    backend: str | None = None,
    threads: Sequence[int] = (1, 2, 4, 2),
    run_timeout_s: float = 20.0,
    epochs: int = 1,
) -> Task:
    chosen = select(problems, categories, limit)
    scorer = OmpPragmaScorer(backend=backend, threads=tuple(threads), run_timeout_s=run_timeout_s)
    return Task(
        name=SUITE,
        dataset=[make_sample(p) for p in chosen],
        scorer=scorer,
        epochs=epochs,
        metadata={"language": "openmp", "problems": len(chosen), "threads": list(threads)},
    )


__all__ = [
    "MARKER",
    "SYSTEM_PROMPT",
    "OmpAnswer",
    "OmpPragma",
    "OmpPragmaScorer",
    "OmpProblem",
    "PragmaSyntaxError",
    "all_problems",
    "build_prompt",
    "compare",
    "make_sample",
    "omp_pragma_task",
    "parse_answer",
    "parse_pragma",
    "select",
]
