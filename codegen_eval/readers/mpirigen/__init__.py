"""MPIrigen (Scientific-Computing-Lab/MPI-rigen) from a user's checkout: its programs,
prompts and metrics as upstream has them, its table reproduced, and our run-based verdict
where a program can be built and run. See docs/codegen-eval.md, "MPIrigen"."""

from typing import Any

from .data import MpirigenFormatError, RigenProgram, load_programs
from .metrics import compare_tables, read_predictions, read_table, score_program, table

# The task and its scorer import the sandbox and the mpi-completion suite: loaded when asked
# for, so that `codegen-eval --help` and the table command stay light.
_LAZY = {"MpirigenScorer", "mpirigen_task"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import task

        return getattr(task, name)
    raise AttributeError(name)


__all__ = [
    "MpirigenFormatError",
    "MpirigenScorer",
    "RigenProgram",
    "compare_tables",
    "load_programs",
    "mpirigen_task",
    "read_predictions",
    "read_table",
    "score_program",
    "table",
]
