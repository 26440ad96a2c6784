"""Where candidates are scored. `local` (the default, no executor object): in this process,
bounded by --max-sandboxes. `slurm`: as batched jobs on a Slurm cluster
(`codegen_eval.executors.slurm`). An executor meets `codegen_eval.types.Executor`: an async
context manager with

    async def score(task, sample, cand, key) -> (Score, info)   # info lands in the record
    def status_line() -> str                                     # for the progress display
    on_status: Callable[[str], None] | None                      # set by the runner
"""

from __future__ import annotations

__all__ = ["EXECUTORS"]

EXECUTORS = ("local", "slurm")
