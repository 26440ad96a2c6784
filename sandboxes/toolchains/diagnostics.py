"""Compiler diagnostics parsed from gcc/g++ (and nvcc's host pass), nvcc's device front end,
Icarus Verilog and Verilator output into one shape.

The text is a candidate's to shape (`#error` echoes any line it likes), and callers parse it
in the harness's process: every pattern here matches in time linear in the line (anchored,
no nested or adjacent ambiguous quantifiers, the optional `[-Wcode]` split off with string
operations), and the input is bounded (MAX_TEXT, MAX_LINE, MAX_DIAGNOSTICS). The pattern it
replaces backtracked on `#error [-W [-W ...`: 35 s for one 80 KB line."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_TEXT = 1 << 20  # bytes of compiler output read; the rest is not parsed
MAX_LINE = 4096  # characters of one line; a longer message is cut
MAX_DIAGNOSTICS = 2000


@dataclass(frozen=True, slots=True)
class Diagnostic:
    file: str
    line: int
    column: int | None
    severity: str  # "error" | "warning" | "note"
    message: str
    code: str | None = None  # e.g. verilator's WIDTH, nvcc's 20 in "#20-D"

    def __str__(self) -> str:
        col = f":{self.column}" if self.column is not None else ""
        return f"{self.file}:{self.line}{col}: {self.severity}: {self.message}"


# Each pattern is matched at the start of a line only (re.match) and each group is followed
# by a character it cannot contain, so a failed match gives up after one pass.
_GCC = re.compile(
    r"(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? "
    r"(?P<sev>fatal error|error|warning|note): (?P<msg>.*)"
)
_NVCC = re.compile(
    r"(?P<file>[^\n(]+)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark)"
    r"(?: #(?P<code>\w+)(?:-D)?)?: (?P<msg>.*)"
)
_IVERILOG = re.compile(
    r"(?P<file>[^:\n]+):(?P<line>\d+): "
    r"(?:(?P<sev>error|warning|sorry|syntax error)\b:?\s*)?(?P<msg>.*)"
)
_VERILATOR = re.compile(
    r"%(?P<sev>Error|Warning)(?:-(?P<code>[A-Z0-9_]+))?: (?P<file>[^:\n]+):(?P<line>\d+):"
    r"(?:(?P<col>\d+):)? (?P<msg>.*)"
)


def _lines(text: str) -> Iterator[str]:
    """The lines worth parsing: within MAX_TEXT, each cut to MAX_LINE."""
    for line in text[:MAX_TEXT].splitlines():
        yield line[:MAX_LINE]


def _parse(text: str, one: Callable[[str], Diagnostic | None]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for line in _lines(text):
        d = one(line)
        if d is not None:
            out.append(d)
            if len(out) >= MAX_DIAGNOSTICS:
                break
    return out


def _split_code(msg: str) -> tuple[str, str | None]:
    """gcc's trailing ` [-Wname]` (the option that enabled a warning), without a regex."""
    if not msg.endswith("]"):
        return msg, None
    start = msg.rfind(" [-W")
    if start < 0 or "]" in msg[start + 2 : -1]:
        return msg, None
    return msg[:start], msg[start + 2 : -1]


def _sev(raw: str) -> str:
    raw = raw.lower()
    if "error" in raw or raw == "sorry":
        return "error"
    if raw == "remark":
        return "note"
    return raw


def _col(m: re.Match[str]) -> int | None:
    c = m.groupdict().get("col")
    return int(c) if c else None


def _gcc_line(line: str) -> Diagnostic | None:
    m = _GCC.match(line)
    if m is None:
        return None
    msg, code = _split_code(m["msg"])
    return Diagnostic(m["file"], int(m["line"]), _col(m), _sev(m["sev"]), msg, code)


def parse_gcc(text: str) -> list[Diagnostic]:
    """gcc, g++, clang, mpicc (a gcc wrapper) and nvcc's host compiler pass."""
    return _parse(text, _gcc_line)


def _nvcc_line(line: str) -> Diagnostic | None:
    m = _NVCC.match(line)
    if m is None:
        return None
    return Diagnostic(m["file"], int(m["line"]), None, _sev(m["sev"]), m["msg"], m["code"])


def parse_nvcc(text: str) -> list[Diagnostic]:
    return (_parse(text, _nvcc_line) + parse_gcc(text))[:MAX_DIAGNOSTICS]


def _iverilog_line(line: str) -> Diagnostic | None:
    m = _IVERILOG.match(line)
    if not m:
        return None
    sev = m["sev"]
    msg = m["msg"].strip()
    if sev is None:
        # "file:12: Unknown module type: foo" (an error), "file:3:      : ..." (context)
        low = msg.lower()
        if not msg or msg.startswith(":"):
            return None
        sev = "warning" if low.startswith("warning") else "error"
    elif sev == "syntax error":
        msg = msg or "syntax error"
    code = None
    if sev == "sorry":
        # "sorry:" is iverilog saying the construct is valid but unsupported: an error
        # whose wording must survive (callers classify it as compile_error:unsupported).
        msg, code = f"sorry: {msg}", "sorry"
    return Diagnostic(m["file"], int(m["line"]), None, _sev(sev), msg, code)


def parse_iverilog(text: str) -> list[Diagnostic]:
    return _parse(text, _iverilog_line)


def _verilator_line(line: str) -> Diagnostic | None:
    m = _VERILATOR.match(line)
    if m is None:
        return None
    return Diagnostic(m["file"], int(m["line"]), _col(m), _sev(m["sev"]), m["msg"], m["code"])


def parse_verilator(text: str) -> list[Diagnostic]:
    return _parse(text, _verilator_line)


PARSERS = {
    "gcc": parse_gcc,
    "nvcc": parse_nvcc,
    "iverilog": parse_iverilog,
    "verilator": parse_verilator,
}
