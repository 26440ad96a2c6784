"""Find kernel crash reports in a console log and describe each the way syzkaller does.

Titles, ALT titles and the corrupted flag follow syzkaller's report reader (checked against
its public test corpus by benchmarks/crash_parser.py), so the titles of bundled bugs, of
kBench records and of syzbot bugs compare directly. Our own tables: kinds.py / kinds_other.py
/ table.py (markers, title templates, frame choice), stack.py (frames to skip, stall and hang
buckets), reader.py (report extent, corruption), titles.py (run-specific parts, same-bug),
demangle.py (C++ and Rust symbol names), corpus.py (syzkaller's corpus format, agreement).
"""

from __future__ import annotations

import re
from array import array
from dataclasses import asdict, dataclass, field

from codegen_eval.kernelgym.crash.frames import Frame, parse_frames
from codegen_eval.kernelgym.crash.reader import (
    MAX_LINE,
    MAX_REPORT_LINES,
    PLAIN,
    UNTAGGED,
    corruption,
    describe,
    family_of,
    marker_lines,
    read_extent,
    sanitize_all,
    split_line,
)
from codegen_eval.kernelgym.crash.symbolized import is_symbolized, unsymbolize
from codegen_eval.kernelgym.crash.titles import (
    generic_titles,
    normalize_title,
    same_bug,
    titles_match,
)

__all__ = [
    "MAX_REPORTS",
    "CrashReport",
    "Frame",
    "first_crash",
    "generic_titles",
    "normalize_title",
    "parse_console",
    "parse_frames",
    "same_bug",
    "title_of_report",
    "titles_match",
]

_RIP = re.compile(
    r"(?:RIP: [0-9a-f]{4}:|pc : |PC is at )(?P<func>[A-Za-z_][\w.$]*)\+0x[0-9a-f]+/0x[0-9a-f]+"
)
_HANGUP = "serialport: VM disconnected."
# Bounds against a hostile guest's console (a 4 MiB console can be one line, or 100,000
# look-alike headers): lines are cut at MAX_LINE (reader.py), and the gym needs the first
# report, rarely more than a few.
MAX_REPORTS = 20


@dataclass(slots=True)
class _Console:
    """A console's lines as the kernel printed them (`lines`), and, when the text came
    symbolized (a syzbot report), the lines as given and where each printed line came from."""

    lines: list[str]
    hangup: bool
    given: list[str] | None = None
    origin: array[int] | None = None

    def given_text(self, start: int, last: int) -> list[str]:
        """The report lines start..last as given: with the file:line annotations and the
        inlined frames (and the copies of the headline) that symbolizing added."""
        if self.given is None or self.origin is None:
            return []
        first = self.origin[start - 1] + 1 if start > 0 else 0
        lines = [split_line(x) for x in self.given[first : self.origin[last] + 1]]
        # As in the report itself: other tasks' lines (when tagged) and "? f+0x" frames out.
        head = split_line(self.lines[start]).origin
        tagged = head not in (UNTAGGED, PLAIN)
        return [x.text for x in lines if not x.unreliable and (not tagged or x.origin == head)]


def _read(console: str) -> _Console:
    lines = [line[:MAX_LINE] for line in console.replace("\r", "").split("\n")]
    hangup = _HANGUP in console
    if not is_symbolized(console):
        return _Console(lines, hangup)
    plain, origin = unsymbolize(lines)
    return _Console(plain, hangup, lines, origin)


# Coarse kinds for agents and logs, from the title's wording (first match wins).
_KINDS = (
    ("KASAN", "KASAN:"), ("KMSAN", "KMSAN"), ("KCSAN", "KCSAN"), ("KFENCE", "KFENCE"),
    ("UBSAN", "UBSAN"), ("LEAK", "memory leak"), ("HUNG", "INFO: task"),
    ("STALL", "INFO: rcu detected stall"), ("LOCKUP", "BUG: soft lockup"),
    ("LOCKDEP", "possible deadlock"), ("LOCKDEP", "inconsistent lock state"),
    ("LOCKDEP", "WARNING: locking bug"), ("LOCKDEP", "suspicious RCU usage"),
    ("GPF", "general protection fault"), ("WARNING", "WARNING"), ("PANIC", "kernel panic"),
)  # fmt: skip


def kind_of(title: str) -> str:
    for kind, needle in _KINDS:
        if needle in title:
            return kind
    return "BUG"


@dataclass(slots=True)
class CrashReport:
    title: str
    kind: str  # KASAN, BUG, WARNING, GPF, PANIC, HUNG, LOCKUP, STALL, UBSAN, LOCKDEP, ...
    frames: list[Frame] = field(default_factory=list)
    report: str = ""  # the report's lines, timestamps removed
    rip: str | None = None
    start_line: int = 0
    alt_titles: list[str] = field(default_factory=list)  # other titles of the same bug
    corrupted: bool = False  # the console mangled the report: its title is unreliable
    corrupted_reason: str = ""
    guilty: str | None = None  # the function the title names

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def all_titles(self) -> list[str]:
        return [self.title, *self.alt_titles]

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(f.file for f in self.frames if f.file))

    @property
    def functions(self) -> list[str]:
        return list(dict.fromkeys(f.func for f in self.frames))

    def same_bug(self, expected: str) -> bool:
        """Is this report the bug titled `expected` (never, when corrupted)?"""
        return same_bug([self.title, *self.alt_titles], expected, corrupted=self.corrupted)


def _report_at(con: _Console, start: int, markers: set[int]) -> tuple[CrashReport, int | None]:
    lines = con.lines
    family = family_of(lines, start)
    assert family is not None
    extent = read_extent(lines, start, markers)
    text = "".join(f"{line}\n" for line in extent.lines[: extent.title_lines])
    desc = describe(text, family)
    title, alts = sanitize_all(desc)
    why = desc.corrupted or corruption(
        desc.title, "".join(f"{x}\n" for x in extent.lines), desc.shape
    )
    if con.hangup and not why:
        why = "the console connection dropped"
    if not why and extent.endless:
        why = f"no end within {MAX_REPORT_LINES} lines: a flood, not a kernel's report"
    if not why and extent.cut_line:
        why = f"a line longer than {MAX_LINE} characters: the kernel prints none"
    body = extent.lines[: extent.title_lines]
    rip = next((m["func"] for m in map(_RIP.search, body) if m), None)
    # Agents read the report with its source positions when it came with them.
    body = con.given_text(start, extent.last) or body
    report = CrashReport(
        title=title,
        kind=kind_of(title),
        frames=parse_frames(body),
        report="\n".join(body),
        rip=rip.split(".")[0] if rip else None,
        start_line=start,
        alt_titles=alts,
        corrupted=bool(why),
        corrupted_reason=why,
        guilty=desc.frames[0].name if desc.frames else None,
    )
    return report, extent.next_start


def parse_console(console: str) -> list[CrashReport]:
    """Every crash report in the console, in order. The panic that follows a report
    (panic_on_warn, oops=panic, fatal exception) is part of that report, not a new crash."""
    con = _read(console)
    markers = marker_lines(con.lines)
    marker_set = set(markers)
    reports: list[CrashReport] = []
    resume = 0
    for i in markers:
        if i < resume or family_of(con.lines, i) is None:
            continue
        report, next_start = _report_at(con, i, marker_set)
        reports.append(report)
        if next_start is None or len(reports) == MAX_REPORTS:
            break
        resume = next_start
    return reports


def first_crash(console: str) -> CrashReport | None:
    """The first report only (what syzkaller's Parse returns)."""
    con = _read(console)
    markers = marker_lines(con.lines)
    for i in markers:
        if family_of(con.lines, i) is not None:
            return _report_at(con, i, set(markers))[0]
    return None


def title_of_report(report: str) -> CrashReport | None:
    """A published crash report titled the way the gym titles a console: a kBench or syzbot
    record's own report (the raw console, or the report as syzbot links it: symbolized,
    headline repeated per inlined function) gives the title its crash has on a console
    today, which is what a run is compared with (the record's stored title may be older
    wording). None when no crash is found; check `corrupted` before trusting the title."""
    return first_crash(report)
