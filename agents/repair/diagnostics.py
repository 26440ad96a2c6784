"""What a compiler's or simulator's message means, in a sentence a small model can act on.

The repair prompt carries the raw report, but a 0.5B model does not act on it: told
`TopModule.sv:10: syntax error` on `reg [1:0] y_and = '0';` it rewrote the module and added
errors, and 37 of its 88 Verilog repair rounds wrote the failing code again. Most of those
failures are the same few habits (logs of `benchmarks/repair_budget.py`, Verilog and
hpc-kernels at 0.5B): VHDL spelled inside Verilog (`'1'`, `--` comments, `elsif`, `:=`), an
output port declared a second time, statements outside an always block, a `main()` beside the
harness's own, MPI calls with arguments missing, `cudaMalloc(d_x, ...)`, a name used before its
declaration.

So each reading here is keyed on what the report or the quoted line says, never on a
problem's name, and states the rule the code broke - the same reading a reviewer who knows the
language would give any program with that message. The model still writes the fix.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["MPI_SIGNATURES", "diagnostic_hints"]

# The C bindings of the MPI calls generated code uses most, for "too few arguments to
# function 'MPI_Send'": gcc's own note points into mpi.h, which the model cannot see.
MPI_SIGNATURES: dict[str, str] = {
    "MPI_Init": "MPI_Init(&argc, &argv) or MPI_Init(NULL, NULL)",
    "MPI_Comm_rank": "MPI_Comm_rank(MPI_Comm comm, int *rank)",
    "MPI_Comm_size": "MPI_Comm_size(MPI_Comm comm, int *size)",
    "MPI_Send": "MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, "
    "MPI_Comm comm)",
    "MPI_Recv": "MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, "
    "MPI_Comm comm, MPI_Status *status)  (pass MPI_STATUS_IGNORE)",
    "MPI_Bcast": "MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)",
    "MPI_Reduce": "MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, "
    "MPI_Op op, int root, MPI_Comm comm)",
    "MPI_Allreduce": "MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, "
    "MPI_Datatype type, MPI_Op op, MPI_Comm comm)",
    "MPI_Scatter": "MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, "
    "void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "MPI_Gather": "MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, "
    "void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "MPI_Allgather": "MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, "
    "void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "MPI_Scatterv": "MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int "
    "displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, "
    "int root, MPI_Comm comm)",
    "MPI_Gatherv": "MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, "
    "void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, "
    "int root, MPI_Comm comm)",
    "MPI_Allgatherv": "MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype "
    "sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype "
    "recvtype, MPI_Comm comm)",
    "MPI_Barrier": "MPI_Barrier(MPI_Comm comm)",
    "MPI_Abort": "MPI_Abort(MPI_Comm comm, int errorcode)  (the harness forbids it: return "
    "instead)",
    "MPI_Sendrecv": "MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, "
    "int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, "
    "int recvtag, MPI_Comm comm, MPI_Status *status)",
}

_ARGUMENT_COUNT = re.compile(r"too (?:few|many) arguments to function [‘'`\"](MPI_\w+)")

# (where to look, pattern, reading). "report": the grader's report; "verilog" / "c": the
# candidate's code, when it is in that language (family), without its `//` and `/* */`
# comments (a `--` line stays: it is the habit being named). Each reading counts once; the
# order is the order of the hints.
_Reading = tuple[str, re.Pattern[str], str]


def _rule(where: str, pattern: str, reading: str) -> _Reading:
    return (where, re.compile(pattern), reading)


_REDUCTION_OF_AN_ARRAY = (
    "`reduction(op: x)` combines what every iteration adds into the same variable (a sum, a "
    "minimum); on a pointer or `*p` it does not compile. A loop in which iteration `i` "
    "writes only its own element `y[i]` needs no reduction clause: "
    "`#pragma omp parallel for` alone is correct there."
)
_C_FAMILY = ("c", "c++", "cpp", "openmp", "mpi", "cuda")

_READINGS: tuple[_Reading, ...] = (
    # -- Verilog written as VHDL
    _rule(
        "verilog",
        r"(?<![\w'])'[01xXzZ]'",
        "`'1'` and `'0'` are VHDL. In Verilog a one-bit constant is `1'b1` / `1'b0` (and "
        "`'0` with no closing quote fills a vector with zeros).",
    ),
    _rule(
        "verilog",
        r"(?m)^\s*--|;\s*--\s",
        "`--` does not start a comment in Verilog: write `//`.",
    ),
    _rule("verilog", r"\belsif\b", "`elsif` is VHDL: Verilog writes `else if`."),
    _rule(
        "verilog",
        r"\bend\s+if\b|\bthen\b|\bprocess\b|\bend\s+case\b",
        "`then`, `end if`, `end case` and `process` are VHDL: Verilog writes "
        "`if (...) begin ... end`, `case (...) ... endcase` and `always @(...) begin ... end`.",
    ),
    _rule(
        "verilog",
        r"\w\s*:=",
        "`:=` is VHDL: Verilog assigns with `=` (blocking) or `<=` (non-blocking).",
    ),
    # -- Verilog structure, from Icarus Verilog's own messages
    _rule(
        "report",
        r"[‘'`](\w+)[’'`]? has already been declared in this scope",
        "A name is declared twice. If it is a port of the module, do not declare it again "
        "inside the module: give the port its type in the header (`output reg q`, "
        "`output logic q`) and drive it from one place.",
    ),
    _rule(
        "report",
        r"Unable to assign to unresolved wires|Cannot perform procedural assignment to",
        "A signal assigned inside an always block must be a `reg` or `logic`, not a `wire`, "
        "and each signal must be driven from one place only (one always block or one "
        "`assign`).",
    ),
    _rule(
        "report",
        r"Invalid module instantiation|invalid module item",
        "Only declarations, `assign`, `always`/`initial` blocks and instances may stand "
        "directly in a module: `if`, `case`, `for` and `x <= ...;` must be inside an "
        "`always` block, and a port's default value cannot be given in its declaration.",
    ),
    _rule(
        "report",
        r"syntax error in continuous assignment",
        "`assign` takes one expression: no `if` or `case` inside it (use `cond ? a : b`, or "
        "an `always @(*)` block).",
    ),
    # -- C, OpenMP, MPI
    _rule(
        "report",
        r"multiple definition of [`‘']main",
        "Delete your `main()` function: the harness has its own main, which calls yours.",
    ),
    _rule(
        "report",
        r"set-up is part of the program and never removed",  # the screen's own reason
        "Leave out `MPI_Init`, `MPI_Comm_rank`, `MPI_Comm_size` and `MPI_Finalize`: the "
        "program keeps its own, and an answer that repeats one is refused whole. Do not copy "
        "the program's other lines either: answer only with the calls that were removed, one "
        "per line (`N: MPI_Bcast(...);`).",
    ),
    _rule(
        "report",
        r"would be outside any function|would be the body of an? `\w+`",
        "In `N: MPI_...(...);`, N is the number of the program's line after which the call "
        "goes, not a count of your answer's lines: pick a line inside `main`'s braces that "
        "ends a statement (not line 0, not a line above `main`, not an `if (...)` or "
        "`for (...)` header without braces).",
    ),
    _rule(
        "report",
        r"is not a variable or constant of this program",
        "Name only the program's own variables and macros, spelled as in the listing: a name "
        "the program does not have is refused.",
    ),
    # OpenMP's reduction on the output array of an elementwise loop, as the 1.5B model wrote
    # it for axpy, gemv and gemm (`reduction(+:y)`, `(+:*y)`, `(+:C[0:0])`: 5 of its first 27
    # hpc-kernels samples) and kept through its repair rounds
    _rule(
        "report",
        r"user defined reduction not found for|zero length array section in .reduction",
        _REDUCTION_OF_AN_ARRAY,
    ),
    _rule("c", r"\breduction\s*\([^:()]*:\s*\*", _REDUCTION_OF_AN_ARRAY),
    _rule(
        "report",
        r"struct ompi_communicator_t|incomplete type.*MPI_Comm",
        "`MPI_Comm` is an opaque handle with no fields: get the rank and the number of "
        "processes with `MPI_Comm_rank(comm, &rank)` and `MPI_Comm_size(comm, &size)`.",
    ),
    _rule(
        "report",
        r"invalid storage class for function",
        "A function is defined inside another function's body: a closing `}` is missing "
        "above it. In C every function stands at the top level of the file.",
    ),
    _rule(
        "report",
        r"variable-sized object may not be initialized",
        "An array whose length is a variable (`double t[n]`) cannot have an initializer "
        "(`= {0}`): allocate it with `calloc(n, sizeof *t)` (and `free` it), or fill it in a "
        "loop.",
    ),
    _rule(
        "report",
        r"assignment of read-only location|assignment of read-only parameter",
        "An input declared `const` was written to: write only to the output argument.",
    ),
    _rule(
        "report",
        r"[‘'](true|false|bool)[’'] undeclared",
        "`bool`, `true` and `false` need `#include <stdbool.h>` in C.",
    ),
    # -- CUDA
    _rule(
        "report",
        r'no instance of overloaded function "cudaMalloc"',
        "`cudaMalloc` takes the address of the device pointer: "
        "`cudaMalloc((void **)&d_x, n * sizeof(double))`.",
    ),
    _rule(
        "report",
        r"a __global__ function call must be configured",
        "Launch a `__global__` kernel with a configuration: `kernel<<<blocks, threads>>>(args)`.",
    ),
)

MAX_HINTS = 4
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _mpi_signatures(report: str) -> list[str]:
    names = list(dict.fromkeys(_ARGUMENT_COUNT.findall(report)))
    known = [n for n in names if n in MPI_SIGNATURES]
    if not known:
        return []
    lines = "\n".join(f"    {MPI_SIGNATURES[n]}" for n in known)
    return [f"An MPI call has the wrong number of arguments. The C signatures:\n{lines}"]


_UNDEFINED_MPI = re.compile(r"undefined reference to [`‘'](MPI_\w+)")


def _unknown_mpi(report: str) -> list[str]:
    """The linker's "undefined reference to `MPI_rank'": a function MPI does not have (gcc
    only warns about the implicit declaration). Named with the closest real call."""
    out = []
    by_stem = {k[4:].lower(): k for k in MPI_SIGNATURES}  # compared without the MPI_ prefix
    for name in list(dict.fromkeys(_UNDEFINED_MPI.findall(report)))[:2]:
        close = difflib.get_close_matches(name[4:].lower(), by_stem, n=1, cutoff=0.6)
        hint = f" Did you mean {MPI_SIGNATURES[by_stem[close[0]]]}?" if close else (
            " Use only the functions of the MPI standard."
        )  # fmt: skip
        out.append(f"`{name}` is not a function of MPI: the linker found none.{hint}")
    return out


_UNDECLARED = re.compile(r"[‘'`\"](\w+)[’'`\"] undeclared")


def _undeclared(report: str, *, whole_file: bool, language: str) -> list[str]:
    """gcc's "'x' undeclared". A whole file may declare the name. A line-oriented answer
    (pragmas, call lines) cannot: the name must go. Told only "declare it above its first
    use" about `reduction(+:check)` (a variable the omp-pragma program declares after the
    loop, 15 of 69 1.5B samples), the 1.5B model kept the name in 7 of the 14 repair rounds
    that followed and declared it in 6 (`long long check = 0;` as the whole answer)."""
    names = list(dict.fromkeys(_UNDECLARED.findall(report)))[:3]
    if not names:
        return []
    listed = ", ".join(f"`{n}`" for n in names)
    one = len(names) == 1
    if whole_file:
        return [
            f"{listed} {'is' if one else 'are'} not declared at the line that uses "
            f"{'it' if one else 'them'}: in C a variable must be declared above its "
            "first use, in an enclosing scope. Use only names declared before that line."
        ]
    reading = (
        f"{listed} {'does' if one else 'do'} not exist where your line stands: the program "
        f"declares {'it' if one else 'them'} further down, inside a loop, or nowhere. Take "
        f"{listed} out of your answer and name only variables declared above that line. "
        "Your answer is only the lines the task asks for: it cannot declare variables."
    )
    if language.lower() == "openmp":
        # the two places the 1.5B model took its undeclared names from
        reading += (
            " A variable declared inside the loop is already private to each thread; one "
            "declared after the loop is not touched by it."
        )
    return [reading]


def diagnostic_hints(
    report: str, code: str, *, language: str = "", whole_file: bool = True
) -> list[str]:
    """Readings of this failure's report and code, most specific first, at most MAX_HINTS.

    `language` ("verilog", "c", "cuda", ...) keeps the code readings to the language they
    are about: `--` or `:=` in C is not a VHDL habit. `whole_file` False: the answer is a few
    lines (pragmas, calls) that cannot declare anything, so an undeclared name must go."""
    lang = language.lower()
    family = "verilog" if lang in ("verilog", "systemverilog", "sv") else (
        "c" if lang in _C_FAMILY else ""
    )  # fmt: skip
    # `// then latch it` is prose, not VHDL (`--` lines are not `//` comments: they stay)
    code = _COMMENTS.sub(" ", code or "")
    report = report or ""
    hints = _mpi_signatures(report) + _unknown_mpi(report)
    hints += _undeclared(report, whole_file=whole_file, language=language)
    for where, pattern, reading in _READINGS:
        if where == "report":
            if not pattern.search(report):
                continue
        elif where != family or not pattern.search(code):
            continue
        hints.append(reading)
    return list(dict.fromkeys(hints))[:MAX_HINTS]
