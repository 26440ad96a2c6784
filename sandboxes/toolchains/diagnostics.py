"""Compiler diagnostics parsed from gcc/g++ (and nvcc's host pass), nvcc's device front end,
Icarus Verilog and Verilator output into one shape."""

from __future__ import annotations

import re
from dataclasses import dataclass


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


_GCC = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? "
    r"(?P<sev>fatal error|error|warning|note): (?P<msg>.*?)(?: \[(?P<code>-W[^\]]+)\])?$"
)
_NVCC = re.compile(
    r"^(?P<file>[^\n(]+)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark)"
    r"(?: #(?P<code>\w+)(?:-D)?)?: (?P<msg>.*)$"
)
_IVERILOG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+): (?:(?P<sev>error|warning|sorry|syntax error)\b:?\s*)?(?P<msg>.*)$"
)
_VERILATOR = re.compile(
    r"^%(?P<sev>Error|Warning)(?:-(?P<code>[A-Z0-9_]+))?: (?P<file>[^:\n]+):(?P<line>\d+):"
    r"(?:(?P<col>\d+):)? (?P<msg>.*)$"
)


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


def parse_gcc(text: str) -> list[Diagnostic]:
    """gcc, g++, clang, mpicc (a gcc wrapper) and nvcc's host compiler pass."""
    out: list[Diagnostic] = []
    for line in text.splitlines():
        m = _GCC.match(line)
        if m:
            code = m.group("code")
            out.append(
                Diagnostic(m["file"], int(m["line"]), _col(m), _sev(m["sev"]), m["msg"], code)
            )
    return out


def parse_nvcc(text: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for line in text.splitlines():
        m = _NVCC.match(line)
        if m:
            out.append(
                Diagnostic(m["file"], int(m["line"]), None, _sev(m["sev"]), m["msg"], m["code"])
            )
    return out + parse_gcc(text)


def parse_iverilog(text: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for line in text.splitlines():
        m = _IVERILOG.match(line)
        if not m:
            continue
        sev = m["sev"]
        msg = m["msg"].strip()
        if sev is None:
            # "file:12: Unknown module type: foo" (an error), "file:3:      : ..." (context)
            low = msg.lower()
            if not msg or msg.startswith(":"):
                continue
            sev = "warning" if low.startswith("warning") else "error"
        elif sev == "syntax error":
            msg = msg or "syntax error"
        code = None
        if sev == "sorry":
            # "sorry:" is iverilog saying the construct is valid but unsupported: an error
            # whose wording must survive (callers classify it as compile_error:unsupported).
            msg, code = f"sorry: {msg}", "sorry"
        out.append(Diagnostic(m["file"], int(m["line"]), None, _sev(sev), msg, code))
    return out


def parse_verilator(text: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for line in text.splitlines():
        m = _VERILATOR.match(line)
        if m:
            out.append(
                Diagnostic(m["file"], int(m["line"]), _col(m), _sev(m["sev"]), m["msg"], m["code"])
            )
    return out


PARSERS = {
    "gcc": parse_gcc,
    "nvcc": parse_nvcc,
    "iverilog": parse_iverilog,
    "verilator": parse_verilator,
}
