"""Shorthands for the regular expressions that describe kernel console lines.

Kind tables write `<FN>` for "a function name followed by its offset or clone suffix" (the
name is captured), `<PC>` for a bracketed code address, `<SRC>` for a captured `file.c:123`,
`<HEX>` for a hexadecimal number and `<TASK>` for a short, lazily matched task description.
A run of lines between two parts of a report, `(?:.*\n)+?`, is bounded to 60 lines: the
console comes from a guest running untrusted code, and an unbounded run retried from each of
thousands of look-alike headlines would make the search quadratic.
"""

from __future__ import annotations

import re
from functools import cache

_TOKENS = {
    "<FN>": r"([a-zA-Z0-9_]+)(?:\.|\+)",
    "<PC>": r"\[<?(?:0x)?[0-9a-f]+>?\]",
    "<SRC>": r"([a-zA-Z0-9\-_/.]+\.[a-z]+:[0-9]+)",
    "<HEX>": r"0x[0-9a-f]+",
    "<TASK>": r"[\s\S]{0,100}?",
}


@cache
def rx(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` with the shorthands above expanded."""
    for token, expansion in _TOKENS.items():
        pattern = pattern.replace(token, expansion)
    return re.compile(pattern.replace(r"(?:.*\n)+?", r"(?:.*\n){1,60}?"))


# A line that is one frame of a stack trace. x86/arm64/powerpc print "func+0x1/0x2" (an
# address or two may come first); arm32 prints "[<pc>] (callee) from [<pc>] (caller+0x..)",
# and both names count, because the topmost function only appears on such lines.
FRAME_LINES = (
    rx(r"^ *(?:<PC> ){0,2}<FN>"),
    rx(r"^ *<PC> \(([a-zA-Z0-9_.]+)\) from <PC> \(<FN>"),
)

# The line naming where the CPU was: x86 "RIP: 0010:f+0x1/0x2", powerpc "NIP", arm64
# "pc : f+0x..", arm32 "PC is at f+0x..". Only the first form captures a name; the others
# (a raw address, "(null)") are recognised so that they do not count as a frame.
IP_LINE = rx(
    r"(?:IP|NIP|pc |PC is at):? (?:(?:[0-9]+:)?(?:<PC> +){0,2}<FN>|(?:[0-9]+:)?<HEX>"
    r"|(?:[0-9]+:)?<PC> +\[< *\(null\)>\] +\(null\)|[0-9]+: +\(null\))"
)
CALL_TRACE = rx(r"Call [Tt]race:|Backtrace:")

# Lines after which a new stack trace starts (and the current one ends).
TRACE_STARTS = (
    re.compile(r"Call [Tt]race"),
    re.compile(r"Allocated:|Allocated by task \d+:"),
    re.compile(r"Freed:|Freed by task \d+:"),
    re.compile(r"[^k] backtrace(?: \(crc [0-9a-fA-F]*\))?:"),  # not kmemleak's "stack backtrace:"
    re.compile(r"Backtrace:"),
    re.compile(r"Uninit was stored to memory at"),
    # RISC-V prints its stack without a heading, right after this register line.
    re.compile(r"status: [0-9a-f]{16} badaddr: [0-9a-f]{16} cause: [0-9a-f]{16}"),
)
RISCV_TRACE_START = TRACE_STARTS[-1]
ANY_TRACE_START = re.compile("|".join(f"(?:{p.pattern})" for p in TRACE_STARTS))
# Every heading contains one of these: checking them first spares the regex on most lines.
_HEADING_WORDS = ("race", "llocated", "Freed", "Uninit", "badaddr")


def is_trace_start(line: str) -> bool:
    return any(w in line for w in _HEADING_WORDS) and ANY_TRACE_START.search(line) is not None


# A fault-injection stack mixed into a report makes its frames untrustworthy.
FAULT_INJECTION_FRAME = rx(r"^( \[<?(?:0x)?[0-9a-f]+>?\])? should_fail(slab)?(\.[a-z0-9.]+)?\+0x")


def any_match(line: str, patterns: tuple[re.Pattern[str], ...] | list[re.Pattern[str]]) -> bool:
    return any(p.search(line) for p in patterns)
