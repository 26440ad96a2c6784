"""Cut a console into crash reports and describe each: title, ALT titles, corrupted or not.

A console line starts a report when it contains a family's marker (and is not one of that
family's benign look-alikes). The report is then read the way the kernel wrote it:
- lines of other tasks/CPUs are left out when the console tags lines with their origin
  (CONFIG_PRINTK_CALLER, "[  T123]"), unreliable "? f+0x.." frames always;
- the panic that panic_on_warn/oops=panic prints after a long enough report, and what follows
  it, is not part of the report (its stack repeats the report's; a short report that only has
  its stack after the panic keeps it);
- on an untagged console the report ends where another report starts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from codegen_eval.kernelgym.crash.kinds import Family, Shape
from codegen_eval.kernelgym.crash.patterns import (
    FRAME_LINES,
    RISCV_TRACE_START,
    TRACE_STARTS,
    is_trace_start,
)
from codegen_eval.kernelgym.crash.stack import SYSCALL_PREFIXES, Chosen, walk
from codegen_eval.kernelgym.crash.table import CONTINUES_REPORT, FAMILIES, FOREIGN_STACKS
from codegen_eval.kernelgym.crash.titles import sanitize

_PREFIX = re.compile(
    r"^(?:\*\* [0-9]+ printk messages dropped \*\* )?(?:.* login: )?(?:<[0-9]+>)?"
    r"\[ *[0-9]+\.[0-9]+\](\[ *(?:C|T)[0-9]+\])? "
)
# The same without the rare lead-ins, which make every non-matching line cost a full scan.
_SHORT_PREFIX = re.compile(r"(?:<[0-9]+>)?\[ *[0-9]+\.[0-9]+\](\[ *(?:C|T)[0-9]+\])? ")
_UNRELIABLE = re.compile(r"(\[<[0-9a-f]+>\])? \? ")
_MARKERS = tuple(dict.fromkeys(f.marker for f in FAMILIES))
_CPU_TAG = re.compile(r"\[ *C[0-9]+\]")
_REPLAYED = "** replaying previous printk message **"
_TIMESTAMP_IN_TITLE = re.compile(r"\[ *[0-9]+\.[0-9]+\]")
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
UNTAGGED, PLAIN = "", "console"  # origins of lines without a timestamp / without a caller tag


@dataclass(slots=True)
class Line:
    origin: str  # "[  T12]" / "[  C1]" tag, PLAIN, or UNTAGGED
    text: str  # without the timestamp and tag
    unreliable: bool


def split_line(raw: str) -> Line:
    m = (_PREFIX if "login: " in raw or raw.startswith("**") else _SHORT_PREFIX).match(raw)
    if m is None:
        return Line(UNTAGGED, raw, False)
    origin = m.group(1) or PLAIN
    text = raw[raw.index("] ") + 2 :]
    if "<EOI>" not in text:
        if " ? " in text and _UNRELIABLE.search(text):
            return Line(origin, text[text.index(" ? ") + 2 :], True)
        if text.endswith(" (unreliable)"):  # powerpc
            return Line(origin, text[: -len(" (unreliable)")], True)
    return Line(origin, text, False)


def marker_lines(lines: list[str]) -> list[int]:
    """Indices of the lines that contain some family's marker. One str.find pass per marker
    over the whole text: far cheaper than a regex alternation tried at every position."""
    text = "\n".join(lines)
    hits: list[int] = []
    for marker in _MARKERS:
        pos = text.find(marker)
        while pos >= 0:
            hits.append(pos)
            pos = text.find(marker, pos + 1)
    if not hits:
        return []
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    return sorted({bisect_right(starts, pos) - 1 for pos in hits})


def family_of(lines: list[str], i: int) -> Family | None:
    """The family whose report starts on line i, if any."""
    line = lines[i]
    for family in FAMILIES:
        if family.marker not in line or any(p.search(line) for p in family.not_crash):
            continue
        # A line the kernel will print again in full right after is not the report yet.
        if i + 1 < len(lines) and _REPLAYED in lines[i + 1]:
            continue
        return family
    return None


@dataclass(slots=True)
class Extent:
    lines: list[str]  # the report's lines (prefix-free)
    title_lines: int  # how many of them the title may be taken from
    next_start: int | None  # line index where the next report starts
    last: int  # console index of the last line kept within title_lines
    endless: bool  # still going after MAX_REPORT_LINES: no kernel report is that long
    cut_line: bool  # one of its lines was cut at MAX_LINE: the kernel prints none that long


# Real reports stay under ~1,200 lines (the longest in syzkaller's corpus: NMI backtraces).
MAX_REPORT_LINES = 2000
# The kernel never prints a line over 1 KiB: longer ones are cut to this when read.
MAX_LINE = 2048


def read_extent(lines: list[str], start: int, markers: set[int]) -> Extent:
    origin = split_line(lines[start]).origin
    tagged = origin not in (UNTAGGED, PLAIN)
    # KMSAN reports have no "Call Trace:" heading and fewer lines before a panic.
    min_lines = 16 if "BUG: KMSAN:" in lines[start] else 22
    body: list[str] = []
    title_lines = 0
    next_start: int | None = None
    counted = 0
    last = start
    cut_line = False
    cut = all_cpus = False
    for i in range(start, min(len(lines), start + MAX_REPORT_LINES)):
        raw = lines[i]
        first = i == start
        if not first and next_start is None:
            fam = family_of(lines, i) if i in markers else None
            if (fam is not None and not any(p.search(raw) for p in CONTINUES_REPORT)) or (
                ("fail" in raw or "FAULT" in raw) and any(s in raw for s in FOREIGN_STACKS)
            ):
                next_start = i
        if cut and not first:
            if next_start is not None:
                break
            continue  # nothing after the panic_on_warn cut is kept; only next_start matters
        line = split_line(raw)
        if not first and (
            line.unreliable
            or (line.origin != origin and not (all_cpus and _CPU_TAG.match(line.origin)))
        ):
            continue
        counted += 1
        drop = cut
        if "Disabling lock debugging due to kernel taint" in raw:
            drop = True
        elif "Sending NMI from CPU" in raw:
            all_cpus = True  # the other CPUs' backtraces belong to this report
        elif counted > min_lines and (
            "Kernel panic - not syncing" in raw
            or "WARNING: possible circular locking dependency detected" in raw
        ):
            cut = drop = True
        if not first and drop:
            continue
        body.append(line.text)
        if next_start is None or tagged:
            title_lines = len(body)
            last = i
            cut_line = cut_line or len(raw) >= MAX_LINE
    end = start + MAX_REPORT_LINES
    endless = next_start is None and not cut and end < len(lines)
    return Extent(body, title_lines, next_start, last, endless, cut_line)


def _fill(template: str, args: list[str]) -> str:
    def arg(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return args[n - 1] if 0 < n <= len(args) else "%!v(BADINDEX)"

    return _PLACEHOLDER.sub(arg, template)


# A detail line follows its headline closely (KASAN's "Read of size" comes within a few lines,
# lockdep's "at:" within a few dozen): looking further would only let a flood of headlines
# make every search scan the whole report.
_DETAIL_WINDOW_LINES = 120


def _detail(pattern: re.Pattern[str], text: str, start: int) -> re.Match[str] | None:
    end = start
    for _ in range(_DETAIL_WINDOW_LINES):
        end = text.find("\n", end) + 1
        if end == 0:
            end = len(text)
            break
    return pattern.search(text, start, end)


@dataclass(slots=True)
class Description:
    title: str
    alt_titles: list[str]
    corrupted: str  # why the report is corrupted, "" when it is not
    shape: Shape | None
    frames: list[Chosen]


def describe(text: str, family: Family) -> Description:
    """Title the report `text` (lines joined, each ending in a newline) of `family`: the shape
    whose headline comes first wins."""
    best = len(text)
    found = Description("", [], "", None, [])
    headline_seen = False
    for shape in family.shapes:
        m = shape.headline.search(text)
        if m is None or m.start() > best or (m.start() == best and found.title):
            continue
        if m.start() < best:
            found.title, found.shape, best = "", None, m.start()
        headline_seen = True
        if shape.detail is not None and (m := _detail(shape.detail, text, m.start())) is None:
            continue
        args = [g or "" for g in m.groups()]
        chosen: list[Chosen] = []
        found.corrupted = ""
        if shape.walk is not None:
            chosen, ok = walk(shape.walk, text[m.start() :])
            if not ok:
                found.corrupted = "no usable frame"
        found.title = _fill(shape.title, args + [c.name for c in chosen])
        alts = [_fill(a, args + [c.name for c in chosen]) for a in shape.alts]
        # The frames as printed, and with each syscall prefix removed, are ALT titles too.
        variants = [[c.raw for c in chosen]]
        for prefix in SYSCALL_PREFIXES:
            trimmed = [c.raw.removeprefix(prefix) for c in chosen]
            if trimmed != variants[0]:
                variants.append(trimmed)
        for names in variants:
            alts.append(_fill(shape.title, args + names))
            alts.extend(_fill(a, args + names) for a in shape.alts)
        found.alt_titles.extend(a for a in alts if a != found.title)
        found.shape, found.frames = shape, chosen
    if not found.title:
        if headline_seen:
            found.corrupted = "headline without the lines it needs"
        pos = text.find(family.marker)
        if pos >= 0:
            end = text.find("\n", pos)
            found.title = text[pos : end if end >= 0 else len(text)]
    if not found.corrupted and found.shape is not None and found.shape.broken:
        found.corrupted = "a fragment of a report"
    return found


def corruption(title: str, text: str, shape: Shape | None) -> str:
    """Why a titled report is corrupted ("" if it is not): a stray timestamp in the title, or
    a report that should have a stack trace but has a trace heading with no frames below it,
    or no trace at all."""
    if _TIMESTAMP_IN_TITLE.search(title):
        return "timestamp inside the title"
    if shape is None or not shape.has_trace:
        return ""
    has_frames = False
    for heading in TRACE_STARTS:
        m = heading.search(text)
        if m is None:
            continue
        after = text[m.start() :].split("\n")
        if len(after) < 4:
            return "the call trace is cut off"
        empty = True
        for line in after[1:16]:
            if is_trace_start(line):
                break
            if "(stack is not available)" in line or any(f.match(line) for f in FRAME_LINES):
                has_frames, empty = True, False
                break
        if empty and heading is not RISCV_TRACE_START:
            return "a trace heading without frames"
    return "" if has_frames else "no stack trace"


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def sanitize_all(desc: Description) -> tuple[str, list[str]]:
    title = sanitize(desc.title)
    alts = unique([sanitize(a) for a in desc.alt_titles])
    return title, [a for a in alts if a != title]
