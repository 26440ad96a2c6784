"""The frames of a report's first call trace, with file, line, module and inline marks, for
agents that read the code a crash went through (titles use stack.py, not this)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen_eval.kernelgym.crash.patterns import is_trace_start

_FRAME = re.compile(
    r"^\s*(?P<unreliable>\?\s+)?(?P<func>[A-Za-z_][\w.$]*)"
    r"(?:\+(?P<off>0x[0-9a-f]+)/0x[0-9a-f]+)?"
    r"(?:\s+\[(?P<module>[\w-]+)\])?"
    r"(?:\s+(?P<file>[\w/.+\-]+\.[chS]):(?P<line>\d+))?"
    r"(?P<inline>\s+\[inline\])?\s*$"
)
_ADDR = re.compile(r"^\s*\[<[0-9a-f]+>\]")  # kmemleak's "[<ffffffff81234567>] f+0x1/0x2"
_ARM32 = re.compile(r"^\s*\[<[0-9a-f]+>\] \((?P<func>[\w.]+)\) from \[<[0-9a-f]+>\]")
_MARKS = {"<TASK>", "</TASK>", "<IRQ>", "</IRQ>", "<NMI>", "</NMI>", "<EOI>"}


@dataclass(slots=True)
class Frame:
    func: str
    offset: str | None = None
    module: str | None = None
    file: str | None = None
    line: int | None = None
    inline: bool = False


def parse_frames(lines: list[str]) -> list[Frame]:
    """Reliable frames of the first call trace in `lines` (lines starting with '? ' dropped)."""
    frames: list[Frame] = []
    in_trace = False
    for line in lines:
        s = line.strip()
        if s.startswith(("Call Trace:", "Call trace:", "backtrace:", "Backtrace:")):
            if in_trace and frames:
                break
            in_trace = True
            continue
        if not in_trace or s in _MARKS:
            continue
        if frames and is_trace_start(line):
            break  # "Allocated by task", "Freed by task": stacks of other events
        if arm := _ARM32.match(line):
            frames.append(Frame(func=arm["func"]))
            continue
        m = _FRAME.match(_ADDR.sub("", line))
        if not m or not (m["off"] or m["file"]):
            if frames and not s:
                break
            if frames and (s.startswith(("RIP:", "Modules linked in", "---[")) or "=" * 5 in s):
                break
            continue
        if m["unreliable"]:
            continue
        frames.append(
            Frame(
                func=m["func"],
                offset=m["off"],
                module=m["module"],
                file=m["file"],
                line=int(m["line"]) if m["line"] else None,
                inline=bool(m["inline"]),
            )
        )
    return frames
