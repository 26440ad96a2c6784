"""The first prompt of every model-driven solver: one system prompt per programming model,
and one way to take the answer out of the reply.

`generate` and the repair agent's first round both use `system_prompt(sample)` and
`answer_code(sample, reply)`, so a repair run's round 1 is exactly a plain generation (same
messages, seed, temperature and extraction) and the two can be compared at equal budget.

A prompt has two parts: the *expertise* for the language (what good MPI/OpenMP/CUDA/Verilog
looks like and the mistakes models make most often), and the *answer format*. A sample that
brings its own `system_prompt` (mpi-completion, omp-pragma: answers that are not whole files)
keeps its format; only the expertise is ours.
"""

from __future__ import annotations

from codegen_eval.extract import extract_code
from codegen_eval.types import Sample

__all__ = [
    "EXPERTISE",
    "answer_code",
    "fence_tag",
    "program_model",
    "system_prompt",
    "wants_whole_file",
]

EXPERTISE: dict[str, str] = {
    "mpi": (
        "You are an expert MPI programmer writing C. MPI is already initialised by the caller: "
        "never call MPI_Init or MPI_Finalize, and use only the communicator you are given. "
        "Follow the stated data distribution exactly (which rank owns which block, where the "
        "result must end up). Every rank must reach every collective in the same order, "
        "message tags and counts must match on both sides, and non-blocking requests must be "
        "completed before their buffers are reused."
    ),
    "mpi+openmp": (
        "You are an expert in hybrid MPI + OpenMP programming in C. MPI is already initialised "
        "by the caller: never call MPI_Init or MPI_Finalize. Distribute data across ranks as "
        "stated, parallelise each rank's local work with OpenMP, and make MPI calls only from "
        "outside parallel regions (or from a single thread)."
    ),
    "openmp": (
        # <var> stands for one of the program's own variables. With real-looking names
        # (`sum`, `t`) the 1.5B model wrote `reduction(+:sum) private(t)` into programs
        # that have neither: 23 of 69 omp-pragma samples and 14 of 28 repair rounds. A
        # copied `<var>` fails too, but never names a variable the program happens to have.
        "You are an expert OpenMP programmer writing C. Parallelise the hot loops with "
        "`#pragma omp parallel for` and the right clauses, each naming the program's own "
        "variables: `reduction(+:<var>)` for a sum, `reduction(min:<var>)` or "
        "`reduction(max:<var>)` for a minimum or maximum, `private(<var>)` for "
        "per-iteration temporaries, `schedule(dynamic)` for irregular work. Avoid "
        "data races (a shared accumulator without a reduction or atomic is a bug) and keep "
        "the result identical to the sequential one where the spec demands exact answers."
    ),
    "cuda": (
        "You are an expert CUDA programmer. Write __global__ kernels with a grid-stride loop or "
        "an explicit bounds check, launch them from the host function with a sensible block "
        "size, and synchronise (cudaDeviceSynchronize) before returning when the caller reads "
        "the results. Pointers you are given are device pointers unless the spec says "
        "otherwise; include <cuda_runtime.h>. It is compiled with nvcc."
    ),
    "verilog": (
        "You are an expert hardware designer writing synthesizable Verilog/SystemVerilog for "
        "Icarus Verilog. Use always @(posedge clk) with non-blocking assignments for "
        "registers and always @(*) / assign for combinational logic, give every combinational "
        "output a value on every path (no latches), respect the stated reset polarity and "
        "whether it is synchronous or asynchronous, and keep the port list exactly as given."
    ),
    "c": (
        "You are an expert C programmer writing fast, correct numerical code. Follow the given "
        "signature exactly, include the headers you use, and do not write main()."
    ),
}

FENCED_FORMAT = (
    "Answer with exactly one fenced code block (```{fence} ... ```) containing the complete "
    "source file, and no other code blocks."
)


def program_model(sample: Sample) -> str:
    """The key into EXPERTISE: mpi, mpi+openmp, openmp, cuda, verilog or c."""
    meta = sample.metadata
    for value in (meta.get("parallel_model"), meta.get("language"), meta.get("variant")):
        key = str(value or "").lower().replace("-", "+")
        if key in ("mpi+openmp", "hybrid"):
            return "mpi+openmp"
        if key in EXPERTISE and key != "c":
            return key
        if key in ("systemverilog", "sv"):
            return "verilog"
        if key in ("omp",):
            return "openmp"
        if key in ("cu",):
            return "cuda"
    return "c"


def fence_tag(sample: Sample) -> str:
    """The fence info string we ask for (and the language given to extract_code)."""
    model = program_model(sample)
    if model == "verilog":
        return "verilog"
    if model == "cuda":
        return "cuda"
    return str(sample.metadata.get("language") or "c")


def own_format(sample: Sample) -> str | None:
    """The sample's own answer-format instruction, if its suite defines one."""
    value = sample.metadata.get("system_prompt")
    return str(value) if value else None


def wants_whole_file(sample: Sample) -> bool:
    """True when answers are fenced source files (False: suites with line-oriented answers,
    whose raw reply is passed to the scorer when it holds no fence)."""
    fmt = own_format(sample)
    return fmt is None or "```" in fmt


def system_prompt(sample: Sample) -> str:
    model = program_model(sample)
    fmt = own_format(sample) or FENCED_FORMAT.format(fence=fence_tag(sample))
    extra = ""
    if model == "cuda":
        extra = (
            " The grader may have no GPU: your code is always compiled, so it must compile "
            "cleanly with nvcc."
        )
    return f"{EXPERTISE[model]}{extra}\n\n{fmt}"


def answer_code(sample: Sample, reply: str) -> tuple[str, str]:
    """(code, how it was found) from a model reply: the fenced block in the language asked
    for; for suites with line-oriented answers (mpi-completion, omp-pragma) a reply without a
    fence is itself the answer. Empty code means nothing usable (the method says why)."""
    extraction = extract_code(reply, fence_tag(sample))
    code, method = extraction.code, extraction.method or extraction.reason
    if not extraction.ok and not wants_whole_file(sample) and reply.strip():
        code, method = reply.strip() + "\n", "raw"
    return code, method
