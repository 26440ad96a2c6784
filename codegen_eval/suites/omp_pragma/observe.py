"""Observed parallelism: which threads ran the marked loop's iterations, measured by our
observer (observer.c) instead of read from the pragma's text.

    src = instrument(masked, marker_line, indent, pragma_lines)   # our hooks, our program
    trace = parse_trace(text_of_the_trace_file)
    problem = judge_run(serial_trace, trace, threads=4, timing_dependent=False)

`instrument` inserts `__cge_omp_encounter();` where the marker was (serial code, once per
time the construct is reached), the screened pragma lines after it (`#line` keeps the
compiler's line numbers those of the program the model saw), and `__cge_omp_iter();` as the
first statement of the body of the loop at the answer's collapse depth (so the collapsed
loops still form a perfect nest, and an iteration is one of the construct's). The serial
build carries the same hooks, at the same depth, without OpenMP: its trace says how many
iterations each encounter must run.

`judge_run` decides, for one run at `threads` threads, against the serial trace:
- every encounter ran exactly the serial iteration count: more means replicated work (a bare
  `parallel`, or `parallel` + `critical`: every thread runs the whole loop), fewer means
  skipped work;
- at threads >= 2, every encounter ran in a team of at least two threads (`if(1-1)`,
  `num_threads(2-1)`, an orphaned `for`, `simd` alone all give a team of one);
- at threads >= 2, the iterations were shared: with a static worksharing loop (deterministic:
  which thread runs which iteration depends only on the team size) no thread ran more than
  BUSIEST_SHARE (3/4) of any encounter of two or more iterations (`schedule(static, 1 << 30)`
  and `parallel` + `single`/`master` give all to one thread, `schedule(static, N - 1)` all but
  one iteration). With a timing-dependent schedule (dynamic, guided, taskloop, ...) the
  shares say more about the machine than about the answer: one busy thread may take most
  chunks while the others wait for a core (measured at load 3 on 2 cores: the reference of
  schedule_dynamic_triangle gave its busiest thread 73-83% of the rows at 2 threads;
  `schedule(dynamic, 1024)` on reduction_max_rows, 64 encounters of 65536 cheap iterations,
  ran every encounter on one thread at 4 threads and 65-76% at 2). So there `shared` (two
  threads ran iterations) must hold in at least one run at threads >= 2, and what the clauses
  hand out is bounded instead: `handed_share`, the largest piece (chunk or task) that one
  thread can be given at 2 threads, as libgomp cuts the loop, computed from the screened
  constants and the serial iteration counts, must be at most BUSIEST_SHARE of the loop
  (`schedule(dynamic, N - 1)`, `grainsize(strict: N - 1)` are refused).

Why 3/4: an even split gives 1/2 at two threads; a static split of n >= 2 equal iterations
(or chunks) over two threads gives at most ceil(n/2)/n <= 2/3 (collapse_grid's three planes
without collapse: 2/3), and a default taskloop gives ceil(n/2)/n; the answers this refuses
hand one thread (n - 1)/n. Iterations are the construct's own: the per-iteration hook is the
first statement of the body at the answer's collapse depth.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from codegen_eval.suites._csource import parse as ts_parse
from codegen_eval.types import FailureClass

from .screen import ScreenedPragma

__all__ = [
    "BUSIEST_SHARE",
    "LINK_FLAGS",
    "OBSERVER_FILE",
    "TRACE_ENV",
    "Encounter",
    "Trace",
    "busiest_share",
    "handed_share",
    "instrument",
    "judge_run",
    "observer_source",
    "parse_trace",
    "shared",
]

TRACE_ENV = "CGE_OMP_TRACE"
# The most of an encounter's iterations one thread may run for the work to count as shared
# (the module docstring says why 3/4).
BUSIEST_SHARE = 0.75
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


def _loop_body(src: bytes, marker_line: int, depth: int):
    """The body of the `depth`-th loop of the perfectly nested loop nest that follows the
    marker (or of the innermost one, when the nest is shallower)."""
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
    for _ in range(depth - 1):
        if body is None:
            break
        inner = body
        if body.type == "compound_statement":
            named = [c for c in body.named_children if c.type != "comment"]
            inner = named[0] if len(named) == 1 else body
        if inner.type != "for_statement":
            break
        body = inner.child_by_field_name("body")
    if body is None:
        raise ValueError("the marked loop has no body")
    return body


def instrument(
    masked: str, marker_line: int, indent: str, pragma_lines: Sequence[str] = (), depth: int = 1
) -> str:
    """Our program with the observer's hooks and `pragma_lines` (already screened) in place
    of the marker; the per-iteration hook opens the body of the `depth`-th nested loop (the
    answer's collapse), so it counts the construct's own iterations and the loops the
    construct collapses stay perfectly nested. Line numbers of the result, as the compiler
    reports them, are those of `masked` (the pragma takes the marker's line)."""
    data = masked.encode()
    body = _loop_body(data, marker_line, depth)
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
    busiest: int  # the most iterations one thread ran

    def lopsided(self) -> bool:
        """Two or more iterations, and one thread ran more than BUSIEST_SHARE of them."""
        return self.iterations >= 2 and self.busiest > BUSIEST_SHARE * self.iterations


@dataclass(frozen=True, slots=True)
class Trace:
    encounters: tuple[Encounter, ...]
    overflow: bool  # more threads or encounters than the observer records
    unseen: bool = False  # iterations ran on a thread the observer did not see start


_HEADER = re.compile(r"cge-omp-trace 3 encounters (\d+) overflow (\d+) unseen (-?\d+)")


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
        if len(parts) != 6 or not all(p.isdigit() for p in parts) or int(parts[0]) != k:
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
        return None  # judged over all runs (`shared`) and from the clauses (`handed_share`)
    for k, e in enumerate(run.encounters):
        if e.lopsided():
            where = f"encounter {k + 1} of {total}" if total > 1 else "the loop"
            if e.workers < 2:
                what = f"all {e.iterations} iterations of {where} ran on one thread"
            else:
                what = (f"one thread ran {e.busiest} of the {e.iterations} iterations of "
                        f"{where} ({e.busiest / e.iterations:.1%})")  # fmt: skip
            return (f"{wrong}:not_parallel", f"{at}, {what} of a team of {e.team_max}: the "
                    f"work was not shared (at most {BUSIEST_SHARE:.0%} on one thread)")  # fmt: skip
    return None


def busiest_share(run: Trace) -> float:
    """The share of the loop's iterations (over every encounter of two or more) that the
    busiest thread of their encounter ran; 0.0 when no encounter had two to share."""
    shareable = [e for e in run.encounters if e.iterations >= 2]
    total = sum(e.iterations for e in shareable)
    return sum(e.busiest for e in shareable) / total if total else 0.0


def shared(run: Trace) -> bool:
    """Whether two or more threads ran iterations of one encounter in this run (or no
    encounter had two iterations to share)."""
    shareable = [e for e in run.encounters if e.iterations >= 2]
    return not shareable or any(e.workers >= 2 for e in shareable)


def _taskloop_cut(n: int, screened: ScreenedPragma) -> tuple[int, int]:
    """The fewest and the most of an encounter's n iterations that one task of a taskloop
    holds at 2 threads, as libgomp 12 cuts it (taskloop.c)."""
    if (g := screened.constant("grainsize")) is not None:
        g = max(1, g)
        if screened.constant("strict"):
            return min(g, n), min(g, n)  # tasks of exactly g, the remainder in one more
        tasks = max(1, n // g)  # n // g tasks (at least one), evenly cut
    else:
        k = screened.constant("num_tasks")
        tasks = min(2 if k is None else max(1, k), n)  # default: one task per thread
    return n // tasks, -(-n // tasks)


def _largest_piece(n: int, screened: ScreenedPragma) -> int:
    """The most of an encounter's n iterations that one chunk or task holds at 2 threads, as
    libgomp 12 cuts the loop (loop.c, iter.c, taskloop.c). gcc takes a chunk, grainsize or
    task count below 1 as 1 (with a warning)."""
    words = screened.words
    if "taskloop" in words:
        return _taskloop_cut(n, screened)[1]
    if "for" in words and screened.schedule_kind in ("dynamic", "guided"):
        chunk = max(1, screened.constant("chunk") or 1)
        if screened.schedule_kind == "guided":  # the first chunk: n / threads, at least chunk
            return min(n, max(chunk, -(-n // 2)))
        return min(n, chunk)
    return -(-n // 2)  # static, auto, runtime, loop: at most an even split


def _smallest_piece(n: int, screened: ScreenedPragma) -> int:
    """The fewest of an encounter's n iterations that one chunk or task holds (the last,
    shorter remainder aside), as _largest_piece cuts the loop. `for simd` and `taskloop simd`
    vectorise inside one chunk or task only."""
    words = screened.words
    if screened.constant("simd_schedule"):
        return n  # schedule(simd: ...) rounds every chunk up to the vector length
    if "taskloop" in words:
        return _taskloop_cut(n, screened)[0]
    kind = screened.schedule_kind
    if "for" in words and kind in ("static", "dynamic"):
        chunk = screened.constant("chunk")
        if chunk is not None or kind == "dynamic":  # dynamic's default chunk is 1
            return min(n, max(1, chunk or 1))
    if "for" in words:
        return n // 2  # an even split, or guided's first chunks
    return n


def smallest_piece(serial: Trace, screened: ScreenedPragma) -> int:
    """The fewest iterations a chunk or task holds, over the serial trace's encounters of two
    or more (0 when there is none)."""
    pieces = [_smallest_piece(e.iterations, screened) for e in serial.encounters
              if e.iterations >= 2]  # fmt: skip
    return min(pieces, default=0)


def handed_share(serial: Trace, screened: ScreenedPragma) -> float:
    """The share of the loop's iterations (over the serial trace's encounters of two or
    more) that the largest piece the clauses cut holds: what one thread is handed however
    fast the others start. Weighted by iterations, as busiest_share."""
    sizes = [e.iterations for e in serial.encounters if e.iterations >= 2]
    total = sum(sizes)
    return sum(_largest_piece(n, screened) for n in sizes) / total if total else 0.0
