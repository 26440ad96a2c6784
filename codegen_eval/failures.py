"""Shared failure classifiers: compiler output and sandbox results -> `FailureClass` strings.

Suites call these so that every report speaks one vocabulary (see `types.FailureClass`):

    classify_compile(stderr)        -> "compile_error:syntax" | ... | "link_error"
    classify_exec(result)           -> None (ran fine) | "runtime_crash:SIGSEGV" | "timeout:wall"
                                       | "resource_limit:memory" | "sanitizer:asan" | ...
    classify_compile_result(result) -> for a failed compile *step* (limits count too)

The patterns cover GCC/G++/Clang (C, C++, OpenMP, mpicc wrappers), nvcc, Icarus Verilog and
Verilator. GCC quotes identifiers with ‘’ in a UTF-8 locale and '' in the C locale: both match.
"""

from __future__ import annotations

import re
import signal as _signal

from codegen_eval.types import FailureClass
from sandboxes.types import ExecResult, ExecStatus

# Checked in this order: the first category with a matching line wins, so a missing header
# (which makes everything after it undeclared) is reported as the cause.
_COMPILE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "missing_include",
        re.compile(
            r"fatal error: .*: No such file or directory|"
            r"fatal error: '[^']+' file not found|cannot open source file|"
            r"Include file .* not found|Cannot find include file",
            re.IGNORECASE,
        ),
    ),
    (
        "syntax",
        re.compile(
            r"error: expected |error: stray |syntax error|error: missing terminating|"
            r"error: unterminated|expected an expression|error: expected$|"
            r"error: extended character|error: invalid preprocessing directive|"
            r"Syntax in assignment statement|error: #error",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "undeclared",
        re.compile(
            r"undeclared|was not declared in this scope|use of undeclared identifier|"
            r"implicit declaration of function|is undefined|Unable to bind|"
            r"Unknown module type|not declared|does not name a type|has not been declared|"
            r"Can't find definition|Cannot find file containing module|unknown type name",
            re.IGNORECASE,
        ),
    ),
    (
        "type",
        re.compile(
            r"incompatible type|invalid conversion|cannot convert|no matching function|"
            r"invalid operands|conflicting types|too (few|many) arguments|request for member|"
            r"has no member named|lvalue required|is not a member of|no match for|"
            r"cannot be used as a function|invalid use of|subscripted value|invalid initializer|"
            r"incompatible pointer|Width mismatch|Port .* is not|declared with a different type|"
            r"makes (pointer|integer) from (integer|pointer) without a cast",
            re.IGNORECASE,
        ),
    ),
]
_LINK = re.compile(
    r"undefined reference to|multiple definition of|ld returned \d+ exit status|"
    r"collect2: error|ld: cannot find|Undefined symbols for architecture|unresolved external",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(r"(error|Error)[:\s]")

_SANITIZERS: list[tuple[str, re.Pattern[str]]] = [
    ("asan", re.compile(r"ERROR: AddressSanitizer|SUMMARY: AddressSanitizer")),
    ("lsan", re.compile(r"ERROR: LeakSanitizer|SUMMARY: LeakSanitizer")),
    ("tsan", re.compile(r"WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer")),
    ("msan", re.compile(r"WARNING: MemorySanitizer|SUMMARY: MemorySanitizer")),
    (
        "ubsan",
        re.compile(
            r"SUMMARY: UndefinedBehaviorSanitizer|runtime error: |UndefinedBehaviorSanitizer"
        ),
    ),
]

_RESOURCE_DETAIL: dict[ExecStatus, str] = {
    ExecStatus.MEMORY_LIMIT: "memory",
    ExecStatus.OUTPUT_LIMIT: "output",
    ExecStatus.FILE_SIZE_LIMIT: "file_size",
    ExecStatus.PIDS_LIMIT: "pids",
}


def classify_compile(stderr: str, stdout: str = "") -> str:
    """Classify the output of a failed compile (or compile+link) step."""
    text = f"{stderr}\n{stdout}"
    # The linker only runs when compilation succeeded, so its messages mean a link error even
    # if warnings precede them; but a compile error line takes priority when both appear.
    error_lines = [
        ln for ln in text.splitlines() if _ERROR_LINE.search(ln) and not _LINK.search(ln)
    ]
    if _LINK.search(text) and not any(
        p.search(ln) for ln in error_lines for _, p in _COMPILE_PATTERNS
    ):
        return FailureClass.LINK_ERROR
    scope = "\n".join(error_lines) or text
    for detail, pattern in _COMPILE_PATTERNS:
        if pattern.search(scope):
            return FailureClass.with_detail(FailureClass.COMPILE_ERROR, detail)
    return FailureClass.with_detail(FailureClass.COMPILE_ERROR, "other")


def detect_sanitizer(text: str) -> str | None:
    """The sanitizer that reported in `text` (asan, lsan, tsan, msan, ubsan), or None."""
    for name, pattern in _SANITIZERS:
        if pattern.search(text):
            return name
    return None


_MPIRUN_SIGNAL = re.compile(r"exited on signal (\d+)")
# What the sandbox's limits send; reported by the program itself they prove nothing.
_LIMIT_SIGNALS = frozenset({_signal.SIGXCPU, _signal.SIGXFSZ, _signal.SIGKILL})


def signal_name(signum: int | None) -> str:
    if signum is None:
        return "unknown"
    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"SIG{signum}"


def classify_exec(result: ExecResult, *, check_sanitizers: bool = True) -> str | None:
    """Failure class of a program run, or None when it exited 0 within its limits.

    Whether the OUTPUT is right is the scorer's business (wrong_answer); this only says how
    the process ended. Limits are reported before crashes: a process killed for memory also
    shows a signal, and the limit is the cause.

    A limit class comes only from what the sandbox observed (its status, or an OOM kill it
    counted in a program that then failed), never from the program's own text or exit code:
    a payload prints "MemoryError" or "Killed", exits 152, or raises SIGXCPU as it likes.
    The sandbox reports SIGXCPU/SIGXFSZ as `signal` only when its own limit was not reached.
    """
    status = ExecStatus(result.status)
    if status is ExecStatus.OK:
        if check_sanitizers and (name := detect_sanitizer(result.stderr)):
            return FailureClass.with_detail(FailureClass.SANITIZER, name)  # halt_on_error=0
        return None
    if status is ExecStatus.SKIPPED_NO_GPU:
        return FailureClass.SKIPPED_NO_GPU
    if status is ExecStatus.WALL_TIMEOUT:
        return FailureClass.with_detail(FailureClass.TIMEOUT, "wall")
    if status is ExecStatus.CPU_LIMIT:
        return FailureClass.with_detail(FailureClass.TIMEOUT, "cpu")
    if status in _RESOURCE_DETAIL:
        return FailureClass.with_detail(FailureClass.RESOURCE_LIMIT, _RESOURCE_DETAIL[status])
    text = f"{result.stderr}\n{result.stdout}"
    if check_sanitizers and (name := detect_sanitizer(text)):
        return FailureClass.with_detail(FailureClass.SANITIZER, name)
    if result.oom_killed:
        # a process of the program was killed for memory and the program failed: observed
        return FailureClass.with_detail(FailureClass.RESOURCE_LIMIT, "memory")
    if status is ExecStatus.SIGNAL:
        return FailureClass.with_detail(FailureClass.RUNTIME_CRASH, signal_name(result.signal))
    # mpirun reports a rank killed by a signal as its own nonzero exit plus a message, and
    # shells a child killed by signal N as exit status 128+N: the program's own account, so
    # a detail of runtime_crash at most, never a limit's signal (the sandbox saw no limit).
    sig = None
    if m := _MPIRUN_SIGNAL.search(text):
        sig = int(m.group(1))
    elif result.exit_code is not None and 128 < result.exit_code < 128 + 65:
        sig = result.exit_code - 128
    if sig is not None and sig not in _LIMIT_SIGNALS:
        return FailureClass.with_detail(FailureClass.RUNTIME_CRASH, signal_name(sig))
    return FailureClass.NONZERO_EXIT


def classify_compile_result(result: ExecResult) -> str | None:
    """Failure class of a compile step run in the sandbox; None if it succeeded. A compiler that
    runs out of time or memory is a limit, not a compile error."""
    status = ExecStatus(result.status)
    if status is ExecStatus.OK:
        return None
    if status is ExecStatus.NONZERO_EXIT:
        return classify_compile(result.stderr, result.stdout)
    return classify_exec(result, check_sanitizers=False)


def short_log(text: str, limit: int = 2000) -> str:
    """The first error lines of a diagnostic, for Score.explanation (logs stay small)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    picked = [ln for ln in lines if _ERROR_LINE.search(ln) or _LINK.search(ln)] or lines
    out = "\n".join(picked)
    return out if len(out) <= limit else out[: limit - 3] + "..."
