"""Repair hints per failure class (the first round's prompt is codegen_eval.prompts', the
same as `generate`'s, so round 1 of a repair chain is a plain generation)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

from codegen_eval.prompts import (
    EXPERTISE,
    answer_code,
    fence_tag,
    own_format,
    program_model,
    system_prompt,
    wants_whole_file,
)

__all__ = [
    "EXPERTISE",
    "REPAIR_HINTS",
    "answer_code",
    "fence_tag",
    "own_format",
    "program_model",
    "quote_diagnosed_lines",
    "repair_hint",
    "system_prompt",
    "trim",
    "wants_whole_file",
]

# What to pay attention to in a repair round, by failure class (the part before the colon).
REPAIR_HINTS: dict[str, str] = {
    "no_code": "Your reply contained no code block that could be extracted. Answer with the "
    "complete source in exactly one fenced code block.",
    "compile_error": "The compiler rejected the code. Fix every diagnostic listed (the line "
    "numbers refer to your file), keeping the required interface unchanged.",
    "forbidden_construct": "The grader refused your answer before compiling it: the report "
    "names the line and why. Leave that construct out; the rest of your answer may stay.",
    "link_error": "The code compiled but did not link: the function name or signature does not "
    "match the required one, a symbol is missing, or you defined main(). Match the interface "
    "exactly.",
    "wrong_answer": "The code ran but its results differ from the reference. Re-read the "
    "specification and the data contract, and look for races, off-by-one errors and "
    "uninitialised outputs.",
    "sim_mismatch": "The design simulated but its outputs differ from the reference model. "
    "Check reset behaviour, clock edges, blocking vs non-blocking assignments and the exact "
    "cycle on which outputs change.",
    "timeout": "The program did not finish in time: look for deadlocks (mismatched MPI "
    "sends/receives or collectives), infinite loops, or combinational loops.",
    "runtime_crash": "The program crashed: look for out-of-bounds accesses, wrong buffer sizes "
    "for this rank's block, and NULL pointers on ranks that do not own the data.",
    "nonzero_exit": "The program exited with an error status: do not call exit(), abort() or "
    "MPI_Abort, and do not finalize MPI.",
    "resource_limit": "The program used too much memory or output: do not print, and allocate "
    "only what the problem needs.",
    "sanitizer": "A sanitizer found undefined behaviour or a memory error; fix it.",
    "lint_error": "The linter reported errors; fix them without changing the behaviour.",
}


# A line-oriented suite's answer is not a code block: its own format is restated instead.
NO_ANSWER_HINT = "Your reply held no answer in the format the task asks for."


def repair_hint(failure_class: str | None, *, whole_file: bool = True) -> str:
    head = (failure_class or "").split(":", 1)[0]
    if head == "no_code" and not whole_file:
        return NO_ANSWER_HINT
    return REPAIR_HINTS.get(head, "The code did not pass. Fix the problem described above.")


# `file:LINE` as compilers and simulators write it (gcc `solution.c:12:5: error`, iverilog
# `TopModule.sv:11: syntax error`, nvcc `kernel.cu(12): error`). The diagnostics are the
# candidate's to shape: a file name is a whole run of path characters and the line number
# is matched right after it, in linear time (one regex over both took seconds on a few KB).
_PATH_RUN = re.compile(r"[\w./-]+")
_LINE_AFTER = re.compile(r":(\d+)|\((\d+)\)")
_SOURCE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cu", ".cuh", ".sv", ".v", ".svh", ".vh")


def _locations(text: str) -> Iterator[tuple[str, str]]:
    """(file, line number) for each `file:LINE` / `file(LINE)` in `text`."""
    for m in _PATH_RUN.finditer(text):
        name = m.group()
        if not any(name.endswith(s) and len(name) > len(s) for s in _SOURCE_SUFFIXES):
            continue
        after = _LINE_AFTER.match(text, m.end())
        if after:
            yield name, after.group(1) or after.group(2)


def quote_diagnosed_lines(
    explanation: str, code: str, harness_files: Iterable[str] = (), limit: int = 8
) -> str:
    """The candidate's own lines that the diagnostics name, numbered (`  11 | reg ...`): a
    small model cannot count to line 11 of its answer, so it is shown the line. Locations in
    the harness's files (testbench, reference, driver) are left out: they are not its code."""
    lines = code.splitlines()
    harness = {os.path.basename(f) for f in harness_files}
    seen: list[int] = []
    for name, line in _locations(explanation or ""):
        if os.path.basename(name) in harness:
            continue
        number = int(line)
        if 1 <= number <= len(lines) and number not in seen:
            seen.append(number)
        if len(seen) >= limit:
            break
    return "\n".join(f"{n:>4} | {lines[n - 1]}" for n in seen)


def trim(text: str, limit: int) -> str:
    """Keep the head and the tail of a long diagnostic: the first errors usually name the
    cause, the last lines the summary (mismatch counts, the failing configuration)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head - 30
    return f"{text[:head]}\n... [{len(text) - head - tail} chars cut] ...\n{text[-tail:]}"
