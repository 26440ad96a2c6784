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

# A source position as the symbolizer writes it: a path, or "??" when it knows none.
_SRC = r"(?:[\w/.+\-]+|\?\?):(?:\d+|\?)"
# `g file.h:12 [inline]`: a frame that exists only after symbolizing. The marker ends the
# line, or comes before what followed the offset on the printed line (" at addr ...", "()",
# " [module]"); a report symbolized twice has a second position after it.
_INLINE = rf" {_SRC} \[inline\](?: {_SRC})*"
_INLINE_LINE = re.compile(rf"{_INLINE}(?:$|[ (])")
# `f+0x12/0x34 file.c:56`: the position appended to a printed frame (old kernels print
# `f+0x12/0x34()` in WARNING headlines and `[<addr>] f+0x12/0x34` in traces; a module frame
# keeps its ` [module]` between offset and position).
_OFFSET = r"\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[[\w.\-]+\])?"
_APPENDED = re.compile(rf"({_OFFSET})(?: {_SRC})+(?= |\(|$)")
# One scan over the whole console says whether anything here was symbolized.
_ANY = re.compile(rf"{_OFFSET} {_SRC}|{_INLINE}")


def is_symbolized(text: str) -> bool:
    return _ANY.search(text) is not None


def unsymbolize_line(line: str) -> str | None:
    """The line as the kernel printed it, or None when symbolizing added the whole line."""
    if "[inline]" in line and _INLINE_LINE.search(line):
        return None
    if ":" in line and "/0x" in line:
        return _APPENDED.sub(r"\1", line)
    return line


def unsymbolize(lines: list[str]) -> tuple[list[str], list[int]]:
    """The console lines as printed, and for each the index of the line it came from."""
    out: list[str] = []
    origin: list[int] = []
    for i, line in enumerate(lines):
        plain = unsymbolize_line(line)
        if plain is not None:
            out.append(plain)
            origin.append(i)
    return out, origin
