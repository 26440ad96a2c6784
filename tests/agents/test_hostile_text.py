"""The agents read text a candidate shapes (crash consoles, compiler diagnostics): their scans
are linear in it. Each pattern here used to take seconds on a few KB."""

from __future__ import annotations

import re
import time

import pytest

from agents.kernel.edits import strip_build_paths
from agents.kernel.tools import located
from agents.repair.prompts import quote_diagnosed_lines

# The pattern strip_build_paths replaced: the same answers on ordinary text.
_OLD_BUILD_PREFIX = re.compile(r"(?:/[^\s:'\"`]*)?/kgym-mod-[^/\s]+/src/")


@pytest.mark.parametrize(
    "text",
    [
        "/var/tmp/kgym-mod-ab12/src/kgym_null.c:12",
        "at /tmp/x/kgym-mod-1/src/a.c and /kgym-mod-2/src/b.c:3 'q/kgym-mod-z/src/c.h'",
        "/a/kgym-mod-1/src/x/kgym-mod-2/src/y.c",
        "/a/kgym-mod-/src/x and no/kgym-mod-x/srcq",
        "/kgym-mod-a/kgym-mod-b/src/t",
        "no build path at all",
    ],
)
def test_build_paths_are_stripped_as_before(text: str) -> None:
    assert strip_build_paths(text) == _OLD_BUILD_PREFIX.sub("", text)


@pytest.mark.parametrize(
    "text",
    [
        "/" * 1_000_000,
        "/kgym-mod-" * 100_000,
        "a/kgym-mod-x" * 80_000,
        "x.c" * 300_000,
        "a" * 1_000_000 + ".c:1",
        "// " + ":" * 1_000_000 + "1x",
    ],
)
def test_hostile_text_is_scanned_in_linear_time(text: str) -> None:
    t0 = time.process_time()
    strip_build_paths(text)
    quote_diagnosed_lines(text, "a\nb\n")
    located(text + "\nbody")
    assert time.process_time() - t0 < 1.0


def test_locations_and_headers_still_read() -> None:
    quoted = quote_diagnosed_lines(
        "solution.c:2:5: error: x\nk.cu(1): error\nTop.sv:3: syntax\n.c:1 x.txt:2",
        "l1\nl2\nl3\n",
    )
    assert quoted == "   2 | l2\n   1 | l1\n   3 | l3"
    assert located("// kernel/groups.c:217\nbody") == ("kernel/groups.c", 217, "body")
    assert located("// a:b.c:x\nbody") is None
