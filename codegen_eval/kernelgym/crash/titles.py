"""Title clean-up and "is this the same bug" decisions.

Titles must not depend on the run: addresses, pids, line numbers, CPU numbers and other
numbers are replaced by placeholders before titles are compared, the way syzbot files bugs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Applied in order, each until the title stops changing (overlapping matches such as "0,1,2").
_RUN_SPECIFIC: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.ASCII), r)
    for p, r in (
        (r"syz-executor\.?[0-9]+((/|:)[0-9]+)?", "syz-executor"),  # per-process names
        (r"syzkaller[0-9]+((/|:)[0-9]+)?", "syzkaller"),
        (r"([^a-zA-Z0-9])(?:0x)?[0-9a-f]{6,}", r"\1ADDR"),  # anything that looks like an address
        (r"([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})", "IP"),
        (r"(\.\w+)(:[0-9]+)+", r"\1:LINE"),  # file.c:123
        (r"([a-zA-Z][a-zA-Z0-9_.]+)\+0x[0-9a-z]+/0x[0-9a-z]+", r"\1"),  # f+0x12/0x40 -> f
        (r"CPU#[0-9]+", "CPU"),
        (r"(\W)(\d+)(\W|$)", r"\1NUM\3"),  # decimal numbers, but not inside names (nl80211)
        (r"(\d+){7,}", "NUM"),  # ... unless the digits are too long to be part of a name
    )
)
_MAX_TITLE = 120


def sanitize(title: str) -> str:
    for pattern, repl in _RUN_SPECIFIC:
        while True:
            new = pattern.sub(repl, title)
            if new == title:
                break
            title = new
    out: list[str] = []
    for ch in title.encode("utf-8", "replace")[:_MAX_TITLE].decode("latin-1"):
        if ch == "\t":
            ch = " "
        elif ch < " " or ch >= "\x7f":
            continue
        if ch == " " and (not out or out[-1] == " "):
            continue
        out.append(ch)
    return "".join(out).strip()


# syzbot's prefix for a crash while booting or in its own smoke test, before the crash's
# title: "upstream boot error: WARNING in f", "linux-next test error: ...".
_SYZBOT_STAGE = re.compile(r"^[\w./-]+ (?:boot|test) error: (?=\S)")


def normalize_title(title: str) -> str:
    """Compare titles loosely: syzbot's numbering suffix " (2)", its boot/test error prefix
    and clone suffixes dropped."""
    title = _SYZBOT_STAGE.sub("", re.sub(r"\s+\(\d+\)$", "", title.strip()))
    return re.sub(r"\b([A-Za-z_]\w*)\.(?:cold|isra|constprop|part)(?:\.\d+)*\b", r"\1", title)


def titles_match(a: str, b: str) -> bool:
    return normalize_title(a) == normalize_title(b)


# The kind-independent names syzbot also files a bug under, so that one bug seen as a KASAN
# report on one run and as a general protection fault on another is still one bug.
_GENERIC = (
    (re.compile(r"^KASAN: (?:double-free|invalid-free)\b.* in (\S+)$"), "invalid-free in {}"),
    (re.compile(r"^KFENCE: invalid free in (\S+)$"), "invalid-free in {}"),
    (
        re.compile(
            r"^(?:KASAN: [\w-]+ (?:Read|Write)|KFENCE: (?:use-after-free|out-of-bounds|invalid) "
            r"(?:read|write)|KMSAN: (?!kernel-usb-infoleak)[\w-]+|general protection fault"
            r"|BUG: unable to handle kernel [\w ]+|Internal error|Unhandled fault"
            r"|BUG: corrupted list|UBSAN: array-index-out-of-bounds) in (\S+)$"
        ),
        "bad-access in {}",
    ),
    (re.compile(r"^(?:BUG: soft lockup|INFO: rcu detected stall) in (\S+)$"), "stall in {}"),
    (re.compile(r"^INFO: task (?:hung|can't die) in (\S+)$"), "hang in {}"),
    (
        re.compile(
            r"^(?:BUG: stack guard page was hit|kernel panic: corrupted stack end"
            r"|kernel stack overflow) in (\S+)$"
        ),
        "stack-overflow in {}",
    ),
)


def generic_titles(title: str) -> list[str]:
    """The kind-independent titles of `title` ("bad-access in f" for a KASAN report in f)."""
    out = []
    for pattern, template in _GENERIC:
        if m := pattern.match(title):
            out.append(template.format(m.group(1)))
    return out


def same_bug(seen: Iterable[str], expected: str, *, corrupted: bool = False) -> bool:
    """True when a report with titles `seen` (its title and ALT titles) is the bug titled
    `expected`. A corrupted report never is: its title may name the wrong function."""
    if corrupted:
        return False
    seen_set = {normalize_title(t) for t in seen}
    wanted = {normalize_title(t) for t in (expected, *generic_titles(normalize_title(expected)))}
    return bool(seen_set & wanted)
