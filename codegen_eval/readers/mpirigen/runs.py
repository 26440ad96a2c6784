"""Our run-based verdict on MPIrigen programs, where a program can be built and run.

MPIrigen's programs are main() alone, every MPI call removed. To run one we need its whole
reference: the label's calls put back after their lines, behind a preamble of the standard
headers and mpi.h (the dataset keeps no #include lines). What stands in the way is measured per
program (`survey`, `codegen-eval mpirigen-survey`) and named by `Blocker` classes:

- expression_call: a group with COL 0, a call whose value was used in an expression
  (`t = MPI_Wtime();`): the label keeps the call but not where its value went;
- unparsed_label: a group this reader cannot read as one call;
- outside_names: the build fails on names defined outside main() (helper functions, globals,
  types, macros of the original file), which the dataset dropped;
- compile_error: any other build failure of the reference;
- run_failed / run_timeout: the reference, built, exits 0 at none of np=2, 3, 4 with no
  arguments, no input and no files (it wants arguments, input files, stdin), or blocks;
The rest runs. The label itself is then judged as an answer, twice (task.py), and a program
whose own label does not pass is not used to judge others: reference_forbidden_construct (a
call the mpi-completion screen does not accept in an answer: MPI_Wtime, MPI_Abort,
one-sided, I/O, a string argument ...), reference_wrong_answer (its ranks print in a
different order from run to run, or differently at np=3 or 4), only_setup_calls (nothing
but Init/Finalize/Comm_rank/Comm_size to restore). What passes is judged by the mpi-completion suite's scorer (codegen_eval/suites/mpi_completion):
the reference's set-up calls (Init, Finalize, Comm_rank, Comm_size, the ones that suite keeps)
stay in the program, the candidate's other groups are screened, inserted, built with mpicc and
run at np=2, 3, 4 in the sandbox, and must print what the reference prints.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from codegen_eval.failures import classify_exec
from codegen_eval.suites.mpi_completion import KEPT_CALLS, MissingCall, insert_calls
from codegen_eval.suites.mpi_completion.scorer import STRICT_FLAGS
from sandboxes import Limits, open_sandbox, toolchains

from .data import LabelCall, RigenProgram, label_calls
from .metrics import parse_groups

_HEADERS = "mpi stdio stdlib string math time unistd stdbool stdint limits float ctype assert"
PREAMBLE = "\n".join(f"#include <{h}.h>" for h in _HEADERS.split())
PREAMBLE_LINES = PREAMBLE.count("\n") + 1
BLOCKERS = ("expression_call", "unparsed_label", "outside_names", "compile_error",
            "run_failed", "run_timeout")  # fmt: skip
_OUTSIDE = re.compile(
    r"undeclared|implicit declaration of function|unknown type name|"
    r"undefined reference to|storage size of .* isn't known|incomplete type|has no member",
)
_CALL_NAME = re.compile(r"^(MPI_\w*)")
_GROUP_START = re.compile(r"\(\d+ \d+,")


def _name(text: str) -> str:
    m = _CALL_NAME.match(text)
    return m[1] if m else ""


def static_blocker(program: RigenProgram) -> str | None:
    """What keeps the program's reference from being rebuilt, found without building it."""
    calls = label_calls(program.label)
    if any(c.order == 0 for c in calls):
        return "expression_call"
    if not calls or len(calls) != len(_GROUP_START.findall(program.label)):
        return "unparsed_label"
    return None


def _with_calls(program: RigenProgram, calls: Sequence[LabelCall]) -> str:
    """Preamble + code, `calls` put back after their lines (in COL order)."""
    ordered = sorted(calls, key=lambda c: (c.after_line, c.order))
    body = "\n".join(program.code_lines)
    moved = [MissingCall(c.after_line + PREAMBLE_LINES, c.text) for c in ordered]
    return insert_calls(PREAMBLE + "\n" + body, moved)


def reference_source(program: RigenProgram) -> str:
    return _with_calls(program, label_calls(program.label))


@dataclass(frozen=True, slots=True)
class RunSetup:
    """A runnable program in the mpi-completion scorer's terms."""

    stripped: str  # preamble + code + the reference's set-up calls
    target: str  # the reference's other calls, "N: call" lines of `stripped`
    kept_after: tuple[tuple[int, int], ...]  # (code line, set-up calls after it)

    def map_line(self, after_line: int) -> int:
        """A code line of the numbered program -> its line in `stripped` (after any set-up
        calls the reference puts after that line)."""
        shift = sum(n for line, n in self.kept_after if line <= after_line)
        return PREAMBLE_LINES + after_line + shift


def run_setup(program: RigenProgram) -> RunSetup:
    calls = label_calls(program.label)
    kept = [c for c in calls if _name(c.text) in KEPT_CALLS]
    counts = Counter(c.after_line for c in kept)
    setup = RunSetup(_with_calls(program, kept), "", tuple(sorted(counts.items())))
    others = sorted((c for c in calls if _name(c.text) not in KEPT_CALLS),
                    key=lambda c: (c.after_line, c.order))  # fmt: skip
    target = "\n".join(f"{setup.map_line(c.after_line)}: {c.text}" for c in others)
    return RunSetup(setup.stripped, target, setup.kept_after)


def candidate_answer(setup: RunSetup, answer: str) -> str:
    """The candidate's groups other than the set-up calls, as "N: call" lines of `stripped`."""
    lines = []
    for c in label_calls(answer):
        if _name(c.text) not in KEPT_CALLS and c.order > 0:
            # one line per call: a newline inside a group must not start an answer line
            # with a line number of the answer's choosing (it would skip map_line)
            lines.append(f"{setup.map_line(c.after_line)}: {' '.join(c.text.split())}")
    return "\n".join(lines)


def answer_has_groups(text: str) -> bool:
    return bool(parse_groups(text, 0))


async def build_and_run(
    program: RigenProgram,
    backend: str | None = None,
    timeout_s: float = 10.0,
    nps: Sequence[int] = (2, 3, 4),
) -> tuple[str | None, str]:
    """(blocker or None, detail) for the reference, built, then run at each of `nps` until
    one run exits 0 (some programs insist on a process count)."""
    if why := static_blocker(program):
        return why, ""
    mpi = toolchains.get("mpi")
    async with open_sandbox(backend) as sb:
        build = await mpi.compile(
            sb, {"reference.c": reference_source(program)}, output="reference",
            extra_flags=list(STRICT_FLAGS), limits=Limits(wall_s=60, memory_mb=2048, pids=128),
        )  # fmt: skip
        if not build.ok:
            log = build.exec_result.stderr
            first = next((ln for ln in log.splitlines() if "error" in ln), log[:200])
            return ("outside_names" if _OUTSIDE.search(log) else "compile_error"), first[:200]
        first = ""
        for np in nps:
            r = await mpi.run(sb, "reference", np=np, stdin=b"",
                              limits=Limits(wall_s=timeout_s, memory_mb=2048, pids=256))  # fmt: skip
            if (cls := classify_exec(r)) is None:
                return None, ""
            first = first or f"np={np}: {cls}: {r.stderr.strip()[-200:]}"
        return ("run_timeout" if "timeout" in first.split(":", 2)[1] else "run_failed"), first
