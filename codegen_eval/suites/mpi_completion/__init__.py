"""mpi-completion: put the missing MPI calls back into a program (MPIrigen-style task).

    task = get_suite("mpi-completion", problems=["ring_*"], limit=3)

Each problem (see `problems/`, docs/suite-mpi-completion.md) is one of our MPI programs with
every MPI call except Init/Finalize/Comm_rank/Comm_size deleted. The answer is one
`N: MPI_Call(args);` line per missing call. The scorer measures location, function and
arguments (metrics) and runs the completed program with mpirun at np=2, 3 and 4 against the
reference program's output (Score.value).
"""

from __future__ import annotations

from collections.abc import Sequence

from codegen_eval.registry import register_suite
from codegen_eval.suites._select import select_problems
from codegen_eval.types import Sample, Task

from .problems import (
    KEPT_CALLS,
    MissingCall,
    MpiProblem,
    RequiredCall,
    all_problems,
    insert_calls,
)
from .scorer import MpiAnswer, MpiCompletionScorer, compare_calls, parse_answer

SUITE = "mpi-completion"
SYSTEM_PROMPT = (
    "You are an expert MPI programmer. Answer only with lines of the form "
    "`N: MPI_Function(arguments);`."
)


def numbered(src: str) -> str:
    return "\n".join(f"{k:3d}| {line}" for k, line in enumerate(src.splitlines(), start=1))


def build_prompt(problem: MpiProblem) -> str:
    kept = ", ".join(sorted(KEPT_CALLS))
    return (
        "The C program below had MPI calls removed: every call statement except "
        f"{kept} was deleted together with its line, so the program no longer "
        "communicates. Lines are numbered (`N| `), the numbers are not part of the code.\n\n"
        f"```c\n{numbered(problem.stripped)}\n```\n\n"
        "Give the missing MPI calls so that the program computes what it was written for, "
        "with any number of processes. Answer format: one call per line,\n"
        "    N: MPI_Function(arg1, arg2, ...);\n"
        "where N is the number of the line AFTER which the call is inserted (0 = before "
        "line 1); several calls after the same line are inserted in the order you give "
        "them. No other text is needed; a fenced block is accepted.\n"
    )


def make_sample(problem: MpiProblem) -> Sample:
    return Sample(
        id=f"{SUITE}/{problem.name}",
        input=build_prompt(problem),
        target=problem.target,
        metadata={
            "language": "mpi",
            "suite": SUITE,
            "problem": problem.name,
            "category": problem.category,
            "removed_lines": [c.text for c in problem.missing],
            "removed_after": [c.after_line for c in problem.missing],
            "kept_calls": sorted(KEPT_CALLS),
            # calls the output cannot show, required by the scorer: [call, lo, hi]
            "required_calls": [[r.text, r.lo, r.hi] for r in problem.required],
            "system_prompt": SYSTEM_PROMPT,
        },
        files={"program.c": problem.stripped},
    )


def select(
    problems: Sequence[str] | str | None = None,
    categories: Sequence[str] | str | None = None,
    limit: int | None = None,
) -> list[MpiProblem]:
    """Problems by name glob and category, in name order, first `limit`."""
    return select_problems(
        all_problems().values(), problems, categories, limit,
        suite="mpi-completion", names=lambda p: (p.name,),
    )  # fmt: skip


@register_suite(SUITE, "Restore the removed MPI calls of a program; mpirun np=2,3,4 run check")
def mpi_completion_task(
    problems: Sequence[str] | str | None = None,
    categories: Sequence[str] | str | None = None,
    limit: int | None = None,
    *,
    backend: str | None = None,
    nps: Sequence[int] = (2, 3, 4),
    line_tolerance: int = 1,
    run_timeout_s: float = 20.0,
    epochs: int = 1,
) -> Task:
    chosen = select(problems, categories, limit)
    scorer = MpiCompletionScorer(
        backend=backend, nps=tuple(nps), line_tolerance=line_tolerance,
        run_timeout_s=run_timeout_s,
    )  # fmt: skip
    return Task(
        name=SUITE,
        dataset=[make_sample(p) for p in chosen],
        scorer=scorer,
        epochs=epochs,
        metadata={"language": "mpi", "problems": len(chosen), "nps": list(nps)},
    )


__all__ = [
    "KEPT_CALLS",
    "SYSTEM_PROMPT",
    "MissingCall",
    "MpiAnswer",
    "MpiCompletionScorer",
    "MpiProblem",
    "RequiredCall",
    "all_problems",
    "build_prompt",
    "compare_calls",
    "insert_calls",
    "make_sample",
    "mpi_completion_task",
    "numbered",
    "parse_answer",
    "select",
]
