"""Observed parallelism: which threads ran the marked loop's iterations, measured by our
observer (observer.c) instead of read from the pragma's text.

    src = instrument(masked, marker_line, indent, pragma_lines)   # our hooks, our program
    trace = parse_trace(text_of_the_trace_file)
    problem = judge_run(serial_trace, trace, threads=4, timing_dependent=False)

`instrument` inserts `__cge_omp_encounter();` where the marker was (serial code, once per
time the construct is reached), the screened pragma lines after it (`#line` keeps the
compiler's line numbers those of the program the model saw), and `__cge_omp_iter();` as the
first statement of the innermost body of the loop nest (so any valid `collapse` still sees
a perfectly nested loop). The serial build carries the same hooks without OpenMP: its trace
says how many iterations each encounter must run.

`judge_run` decides, for one run at `threads` threads, against the serial trace:
- every encounter ran exactly the serial iteration count: more means replicated work (a bare
  `parallel`, or `parallel` + `critical`: every thread runs the whole loop), fewer means
  skipped work;
- at threads >= 2, every encounter ran in a team of at least two threads (`if(1-1)`,
  `num_threads(2-1)`, an orphaned `for`, `simd` alone all give a team of one);
- at threads >= 2, the iterations were shared: with a static worksharing loop (deterministic)
  at least two threads ran iterations in every encounter of two or more iterations
  (`schedule(static, 1 << 30)`, `parallel` + `single`/`master` give all to one thread). With
  a timing-dependent schedule (dynamic, guided, taskloop, ...) one busy thread may take
  every chunk of a short loop while the others wait for a core (measured: 2-3 of 4 threads
  got rows of schedule_dynamic_triangle at load 8 on 2 cores), so `shared` must hold in at
  least one of the runs at threads >= 2: a chunk as large as the loop fails every run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from codegen_eval.suites._csource import parse as ts_parse
from codegen_eval.types import FailureClass

__all__ = [
    "LINK_FLAGS",
    "OBSERVER_FILE",
    "TRACE_ENV",
    "Encounter",
    "Trace",
    "instrument",
    "judge_run",
    "observer_source",
    "parse_trace",
    "shared",
]

TRACE_ENV = "CGE_OMP_TRACE"
OBSERVER_FILE = "cge_omp_observer.c"
# Prepended to the program (then `#line 1`): the hooks' declarations. On x86-64 the
# per-iteration hook is one asm statement with no memory operand or clobber, invisible to the
# optimiser (see observer.c); elsewhere a call, which makes races less likely to show.
_PRELUDE = (
    "void __cge_omp_encounter(void); void __cge_omp_iter(void);\n"
    "#if defined(__x86_64__)\n"
    '#define __CGE_OMP_ITER() __asm__ __volatile__("movq %%fs:__cge_omp_count@tpoff, %%rax'
    '\\n\\tincq (%%rax)" ::: "rax", "cc")\n'
    "#else\n"
    "#define __CGE_OMP_ITER() __cge_omp_iter()\n"
    "#endif"
)
_ITER = "__CGE_OMP_ITER();"
# gcc's entry points into libgomp that start a team, for the constructs the screen accepts;
# the observer wraps each (observer.c) to see every team thread start.
WRAPPED = (
    "GOMP_parallel", "GOMP_parallel_reductions", "GOMP_parallel_loop_static",
    "GOMP_parallel_loop_dynamic", "GOMP_parallel_loop_guided",
    "GOMP_parallel_loop_nonmonotonic_dynamic", "GOMP_parallel_loop_nonmonotonic_guided",
    "GOMP_parallel_loop_runtime", "GOMP_parallel_loop_nonmonotonic_runtime",
    "GOMP_parallel_loop_maybe_nonmonotonic_runtime",
)  # fmt: skip
LINK_FLAGS = ("-Wl," + ",".join(f"--wrap={name}" for name in WRAPPED),)


@functools.cache
def observer_source() -> str:
    return resources.files(__package__).joinpath("observer.c").read_text()


def _loop_body(src: bytes, marker_line: int):
    """The innermost body of the perfectly nested loop nest that follows the marker."""
    root = ts_parse(src.decode()).root_node
    loop = None
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "for_statement" and node.start_point[0] + 1 == marker_line + 1:
            loop = node
    if loop is None:
        raise ValueError(f"no for loop on line {marker_line + 1}, after the marker")
    if loop.parent is None or loop.parent.type != "compound_statement":
        raise ValueError("the marked loop must be a statement of a block")
    body = loop.child_by_field_name("body")
    while body is not None:
        inner = body
        if body.type == "compound_statement":
            named = [c for c in body.named_children if c.type != "comment"]
            inner = named[0] if len(named) == 1 else body
        if inner.type != "for_statement":
            return body
        body = inner.child_by_field_name("body")
    raise ValueError("the marked loop has no body")


def instrument(masked: str, marker_line: int, indent: str, pragma_lines: Sequence[str] = ()) -> str:
    """Our program with the observer's hooks and `pragma_lines` (already screened) in place
    of the marker. Line numbers of the result, as the compiler reports them, are those of
    `masked` (the pragma takes the marker's line)."""
    data = masked.encode()
    body = _loop_body(data, marker_line)
    if body.type == "compound_statement":
        at = body.start_byte + 1  # just after "{"
        data = data[:at] + f" {_ITER}".encode() + data[at:]
    else:
        start, end = body.start_byte, body.end_byte
        data = data[:start] + f"{{ {_ITER} ".encode() + data[start:end] + b" }" + data[end:]
    lines = data.decode().split("\n")
    k = marker_line - 1
    hook = [indent + "__cge_omp_encounter();"]
    if pragma_lines:
        hook += [f"#line {marker_line}", *(indent + ln for ln in pragma_lines)]
    out = [_PRELUDE, "#line 1", *lines[:k], *hook, *lines[k + 1 :]]
    return "\n".join(out)


@dataclass(frozen=True, slots=True)
class Encounter:
    iterations: int
    workers: int  # threads that ran at least one iteration
    team_min: int  # smallest team those threads were in (0: no iteration ran)
    team_max: int


@dataclass(frozen=True, slots=True)
class Trace:
    encounters: tuple[Encounter, ...]
    overflow: bool  # more threads or encounters than the observer records
    unseen: bool = False  # iterations ran on a thread the observer did not see start


_HEADER = re.compile(r"cge-omp-trace 2 encounters (\d+) overflow (\d+) unseen (-?\d+)")


def parse_trace(text: str) -> Trace | None:
    """The observer's report, or None when it is missing or malformed."""
    lines = text.splitlines()
    m = _HEADER.fullmatch(lines[0]) if lines else None
    if not m:
        return None
    n = int(m.group(1))
    encounters = []
    for k, line in enumerate(lines[1:]):
        parts = line.split()
        if len(parts) != 5 or not all(p.isdigit() for p in parts) or int(parts[0]) != k:
            return None
        encounters.append(Encounter(*(int(p) for p in parts[1:])))
    if len(encounters) != min(n, 1024):
        return None
    overflow = m.group(2) != "0" or n > len(encounters)
    return Trace(tuple(encounters), overflow=overflow, unseen=m.group(3) != "0")


def judge_run(
    serial: Trace, run: Trace, *, threads: int, timing_dependent: bool
) -> tuple[str, str] | None:
    """(failure class, explanation) when the run did not do the loop's work in parallel
    as the module docstring defines it; None when it did."""
    wrong = FailureClass.WRONG_ANSWER
    if serial.overflow or run.overflow:
        return (f"{FailureClass.INFRA_ERROR}:observer", "more threads or encounters than "
                "the observer records")  # fmt: skip
    if serial.unseen or run.unseen:
        return (f"{FailureClass.INFRA_ERROR}:observer", "iterations ran on a thread the "
                "observer did not see start (an unwrapped libgomp entry point)")  # fmt: skip
    total = len(serial.encounters)
    if len(run.encounters) != total:
        return (f"{FailureClass.INFRA_ERROR}:observer", f"the loop was reached "
                f"{len(run.encounters)} times, {total} in the serial program")  # fmt: skip
    at = f"at {threads} thread{'s' if threads != 1 else ''}"
    for k, (want, got) in enumerate(zip(serial.encounters, run.encounters, strict=True)):
        where = f"encounter {k + 1} of {total}" if total > 1 else "the loop"
        if got.iterations > want.iterations:
            times = got.iterations / max(want.iterations, 1)
            return (f"{wrong}:replicated_work", f"{at}, {where} ran {got.iterations} "
                    f"iterations, {times:.3g}x the loop's {want.iterations}: threads ran "
                    "the whole loop each instead of sharing it")  # fmt: skip
        if got.iterations < want.iterations:
            return (f"{wrong}:skipped_work", f"{at}, {where} ran {got.iterations} of the "
                    f"loop's {want.iterations} iterations")  # fmt: skip
    if threads < 2:
        return None
    for k, got in enumerate(run.encounters):
        if got.iterations and got.team_min < 2:
            where = f"encounter {k + 1} of {total}" if total > 1 else "the loop"
            return (f"{wrong}:not_parallel", f"{at}, {where} ran on a team of "
                    f"{got.team_min} thread: the region was serialised")  # fmt: skip
    if timing_dependent:
        return None  # sharing is judged over all runs: see `shared` and the scorer
    for k, e in enumerate(run.encounters):
        if e.iterations >= 2 and e.workers < 2:
            where = f"encounter {k + 1} of {total}" if total > 1 else "the loop"
            return (f"{wrong}:not_parallel", f"{at}, all {e.iterations} iterations of {where} "
                    f"ran on one thread of a team of {e.team_max}: the work was not "
                    "shared")  # fmt: skip
    return None


def shared(run: Trace) -> bool:
    """Whether two or more threads ran iterations of one encounter in this run (or no
    encounter had two iterations to share)."""
    shareable = [e for e in run.encounters if e.iterations >= 2]
    return not shareable or any(e.workers >= 2 for e in shareable)
