"""Reports as syzbot publishes them: symbolized, read back to the console the kernel printed.

Before a report is published, every line holding a frame (`f+0x12/0x34`: stack frames, the
RIP/pc line, the headline of KASAN/WARNING/... reports) gets the source line of its address
appended, and an address inside code inlined into `f` becomes several lines: one per inlined
function, `g file.h:12 [inline]`, innermost first, then the line the kernel printed with its
own `file.c:34`. So a headline is repeated, each copy naming another function:

    BUG: KASAN: use-after-free in memcpy include/linux/string.h:352 [inline]
    BUG: KASAN: use-after-free in foo+0x1a/0x40 fs/foo.c:123

Titles are syzkaller's titles of the console (symbolization comes after titling), so such a
report is titled after undoing it: the `[inline]` lines dropped, the `file:line` after each
offset removed. The kernel itself never prints either, so a console that has neither is left
exactly as it is (one scan of the text decides).
"""

from __future__ import annotations

import re
from array import array

# A source position as the symbolizer writes it: a path, or "??" when it knows none.
_SRC = r"(?:[\w/.+\-]+|\?\?):(?:\d+|\?)"
# `g file.h:12 [inline]`: a frame that exists only after symbolizing. The marker ends the
# line, or comes before what followed the offset on the printed line (" at addr ...", "()",
# " [module]", arm32's ")" of "from [<pc>] (f+0x1/0x2)"); a report symbolized twice has a
# second position after it.
_INLINE = rf" {_SRC} \[inline\](?: {_SRC})*"
_INLINE_LINE = re.compile(rf"(\S+){_INLINE}(?:$|[ ()])")
# `f+0x12/0x34 file.c:56`: the position appended to a printed frame (old kernels print
# `f+0x12/0x34()` in WARNING headlines and `[<addr>] f+0x12/0x34` in traces; a module frame
# keeps its ` [module]` between offset and position).
_OFFSET = r"\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[[\w.\-]+\])?"
_APPENDED = re.compile(rf"{_OFFSET}((?: {_SRC})+)(?=[ ()]|$)")
_PRINTED_FRAME = re.compile(r"[^\s+]+\+0x[0-9a-f]+/0x")
# Scans of the whole console say whether anything here was symbolized (each starts with a
# literal, which the regex engine finds fast: a raw console costs ~1 us per KiB).
_POSITIONED = re.compile(rf"{_OFFSET} {_SRC}")
_INLINE_ANYWHERE = re.compile(rf"\S{_INLINE}")


def is_symbolized(text: str) -> bool:
    if "[inline]" in text and _INLINE_ANYWHERE.search(text):
        return True
    return _POSITIONED.search(text) is not None


def strip_positions(line: str) -> str:
    """The line without the source positions appended after its frames' offsets."""
    if "/0x" not in line or ":" not in line:
        return line
    m = _APPENDED.search(line)
    while m is not None:
        line = line[: m.start(1)] + line[m.end(1) :]
        m = _APPENDED.search(line, m.start(1))
    return line


def unsymbolize(lines: list[str]) -> tuple[list[str], array[int]]:
    """The console lines as printed, and for each the index of the line it came from.

    Inlined-frame lines are dropped only as the symbolizer writes them: a run of them that
    shares its prefix (the text before the function: a headline's wording, "RIP: 0010:", a
    frame's indentation and address) with the printed line right after it. A lone one, or one
    before an unrelated line, is kept: the kernel does not write such lines, so whoever did
    is not to be trusted to make a headline disappear."""
    out: list[str] = []
    origin: array[int] = array("l")
    pending: list[int] = []
    prefix = ""

    def keep_pending() -> None:
        for j in pending:
            out.append(lines[j])
            origin.append(j)
        pending.clear()

    for i, line in enumerate(lines):
        m = _INLINE_LINE.search(line) if "[inline]" in line else None
        if m is not None:
            if pending and line[: m.start(1)] != prefix:
                keep_pending()
            prefix = line[: m.start(1)]
            pending.append(i)
            continue
        if pending:
            if line.startswith(prefix) and _PRINTED_FRAME.match(line, len(prefix)):
                pending.clear()
            else:
                keep_pending()
        out.append(strip_positions(line))
        origin.append(i)
    keep_pending()
    return out, origin
