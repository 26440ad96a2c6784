"""The mpi-completion problems: our own MPI programs in `problems/*.c` with their MPI calls
removed, and the answer format the model must use.

Which calls are removed: every statement that is a bare call of an MPI function except the
set-up that every program needs and that fixes the names the rest of the code uses
(KEPT_CALLS: MPI_Init, MPI_Finalize, MPI_Comm_rank, MPI_Comm_size). Calls used inside
expressions (`t0 = MPI_Wtime();`) are not statements and stay. Removed lines are deleted
(no placeholder), so the model must find the places as well as the calls.

Answer format: one call per line, `N: MPI_Name(args);`, meaning "insert this statement
after line N of the program as shown" (N = 0: before the first line). Several calls after the
same line are inserted in the order given.

A problem file starts with `// category: <name>` and may add `// required: MPI_X@lo-hi ...`:
calls whose effect the program's output cannot show (barriers), which the scorer requires
as such, each once, after a line in lo..hi of the stripped program (the places where the
call does its job; the reference's own line must be one of them).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from codegen_eval.suites._csource import call_statements

KEPT_CALLS = frozenset({"MPI_Init", "MPI_Finalize", "MPI_Comm_rank", "MPI_Comm_size"})


@dataclass(frozen=True, slots=True)
class MissingCall:
    after_line: int  # insert after this line of the stripped program (1-based; 0 = top)
    text: str  # the statement, e.g. "MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);"

    def answer_line(self) -> str:
        return f"{self.after_line}: {self.text}"


def insert_calls(stripped: str, calls: list[MissingCall] | tuple[MissingCall, ...]) -> str:
    """Put `calls` back into `stripped`. Indentation copies the next code line (a closing
    brace's line gets one more level), which only matters to human readers."""
    return insert_calls_at(stripped, calls)[0]


def insert_calls_at(
    stripped: str, calls: list[MissingCall] | tuple[MissingCall, ...]
) -> tuple[str, list[int]]:
    """`insert_calls`, and the 1-based line of the result on which each call (in the order
    of `calls`) was put."""
    lines = stripped.splitlines()
    by_line: dict[int, list[int]] = {}
    for k, c in enumerate(calls):
        by_line.setdefault(c.after_line, []).append(k)
    out: list[str] = []
    where = [0] * len(calls)
    for n in range(len(lines) + 1):
        if n:
            out.append(lines[n - 1])
        if n in by_line:
            nxt = next((ln for ln in lines[n:] if ln.strip()), "")
            indent = re.match(r"[ \t]*", nxt).group(0)  # type: ignore[union-attr]
            if nxt.strip().startswith("}"):
                indent += "    "
            for k in by_line[n]:
                out.append(indent + calls[k].text)
                where[k] = len(out)
    return "\n".join(out) + "\n", where


@dataclass(frozen=True, slots=True)
class RequiredCall:
    """A reference call the output cannot show: the answer must make it after a line in
    `lo..hi` (inclusive) of the stripped program."""

    text: str  # the reference's call, e.g. "MPI_Barrier(MPI_COMM_WORLD);"
    lo: int
    hi: int


@dataclass(frozen=True, slots=True)
class MpiProblem:
    name: str
    category: str
    original: str  # the full program (without its header lines)
    stripped: str  # what the model sees
    missing: tuple[MissingCall, ...]
    required: tuple[RequiredCall, ...] = ()

    @property
    def target(self) -> str:
        return "\n".join(c.answer_line() for c in self.missing)

    @property
    def reference_program(self) -> str:
        return insert_calls(self.stripped, self.missing)


_REQUIRED = re.compile(r"(MPI_\w+)@(\d+)(?:-(\d+))?")


def _required(name: str, spec: str, missing: tuple[MissingCall, ...]) -> tuple[RequiredCall, ...]:
    """The `// required:` windows, each matched to the reference call it stands for."""
    out: list[RequiredCall] = []
    free = list(missing)
    for item in spec.split():
        m = _REQUIRED.fullmatch(item)
        if not m:
            raise ValueError(f"{name}: bad required entry {item!r} (MPI_X@lo-hi)")
        lo, hi = int(m[2]), int(m[3] or m[2])
        ref = next((c for c in free if c.text.startswith(m[1] + "(")
                    and lo <= c.after_line <= hi), None)  # fmt: skip
        if ref is None:
            raise ValueError(f"{name}: no removed {m[1]} after a line in {lo}..{hi}")
        free.remove(ref)
        out.append(RequiredCall(ref.text, lo, hi))
    return tuple(out)


def load_problem(name: str, text: str) -> MpiProblem:
    raw = text.splitlines()
    m = re.match(r"//\s*category:\s*(\S+)", raw[0]) if raw else None
    if not m:
        raise ValueError(f"{name}: first line must be '// category: <name>'")
    req = re.match(r"//\s*required:(.*)", raw[1]) if len(raw) > 1 else None
    lines = raw[2:] if req else raw[1:]
    original = "\n".join(lines) + "\n"
    removed: dict[int, str] = {}
    for call in call_statements(original, "MPI_"):
        if call.name in KEPT_CALLS:
            continue
        own_line = lines[call.line - 1].strip()
        if call.line != call.end_line or own_line != call.text:
            raise ValueError(f"{name}:{call.line}: a removed call must be alone on one line")
        removed[call.line] = call.text
    if not removed:
        raise ValueError(f"{name}: no MPI call to remove")
    kept: list[str] = []
    missing: list[MissingCall] = []
    for k, line in enumerate(lines, start=1):
        if k in removed:
            missing.append(MissingCall(len(kept), removed[k]))
        else:
            kept.append(line)
    required = _required(name, req.group(1), tuple(missing)) if req else ()
    return MpiProblem(name, m.group(1), original, "\n".join(kept) + "\n", tuple(missing),
                      required)  # fmt: skip


@functools.cache
def all_problems() -> dict[str, MpiProblem]:
    folder = resources.files(__package__).joinpath("problems")
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".c"):
            out[entry.name[:-2]] = load_problem(entry.name[:-2], entry.read_text())
    return out
