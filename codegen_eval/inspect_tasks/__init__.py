"""codegen_eval's suites and readers as Inspect AI tasks (`inspect eval codegen_eval/verilog`).

Importing this package registers the tasks with Inspect; the `codegen_eval` entry point's
registry module imports it. It needs `inspect-ai` (`pip install .[inspect]`); nothing else in
codegen_eval imports it. See docs/inspect.md.
"""

from codegen_eval.inspect_tasks.readers import humaneval, pareval, verilogeval
from codegen_eval.inspect_tasks.tasks import (
    build_task,
    hpc_kernels,
    mpi_completion,
    omp_pragma,
    verilog,
)

__all__ = [
    "build_task",
    "hpc_kernels",
    "humaneval",
    "mpi_completion",
    "omp_pragma",
    "pareval",
    "verilog",
    "verilogeval",
]
