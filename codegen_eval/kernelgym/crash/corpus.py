"""Syzkaller's report-parser test corpus (pkg/report/testdata/linux/report/ of a syzkaller
checkout) and how closely our reader agrees with it. Used by benchmarks/crash_parser.py and
by the corpus test; nothing of the corpus is bundled here.

Each file: header lines (TITLE:, ALT:, TYPE:, CORRUPTED: Y, ...), a blank line, the raw
console, and optionally a blank line, "REPORT:" and the expected report.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from codegen_eval.kernelgym.crash import parse_console

CORPUS = Path("pkg/report/testdata/linux/report")


@dataclass(slots=True)
class Case:
    name: str
    log: str
    title: str = ""
    alts: list[str] = field(default_factory=list)
    corrupted: bool = False


def read_case(path: Path) -> Case:
    text = path.read_bytes().decode("utf-8", "replace").replace("\r", "")
    head, _, rest = text.partition("\n\n")
    if not head.strip() or not any(
        head.startswith(k) for k in ("TITLE", "ALT", "TYPE", "CORR", "#", "FRAME", "SUPP", "PANI")
    ):
        # No header at all: the file starts with its blank line.
        head, rest = "", text[1:] if text.startswith("\n") else text
    log, sep, _ = rest.partition("\n\nREPORT:\n")
    case = Case(path.name, log + ("\n" if sep else ""))
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        if key == "TITLE":
            case.title = value
        elif key == "ALT":
            case.alts.append(value)
        elif key == "CORRUPTED":
            case.corrupted = value == "Y"
    return case


def load_corpus(root: Path) -> list[Case]:
    folder = root / CORPUS
    if not folder.is_dir():
        raise SystemExit(
            f"{folder}: no such directory (SYZKALLER_ROOT must be a syzkaller checkout)"
        )
    return [read_case(p) for p in sorted(folder.iterdir(), key=lambda p: p.name) if p.is_file()]


def arch_of(log: str) -> str:
    """The architecture a console comes from, guessed from register and frame formats."""
    if re.search(r"\(\S+\) from \[<|PC is at |^\s*\[<[0-9a-f]{8}>\] \(", log, re.M):
        return "arm32"
    if re.search(r"^\s*(?:\[[^\]]*\]\s*)*(?:pc : |lr : )|el0_svc|el1h_64|do_el0_svc", log, re.M):
        return "arm64"
    if re.search(r"\bNIP[: ]|Krnl PSW|riscv|sepc:|epc : |s390|LR = ", log):
        return "other"
    return "x86-64"


_FAMILIES = [
    ("KASAN", r"^KASAN:"),
    ("KMSAN", r"^KMSAN"),
    ("KCSAN", r"^KCSAN"),
    ("KFENCE", r"^KFENCE"),
    ("UBSAN", r"^UBSAN"),
    (
        "lockdep",
        r"possible deadlock|inconsistent lock state|locking bug|lock held|bad unlock"
        r"|held lock|locks held|suspicious RCU|non-static key|nested lock",
    ),
    ("WARNING", r"^WARNING"),
    ("hang", r"^INFO: task"),
    ("stall", r"rcu detected stall|soft lockup|stall in"),
    (
        "bad-access",
        r"^(general protection|BUG: unable to handle|Unable to handle|Internal error"
        r"|Unhandled fault|stack segment)",
    ),
    ("kernel BUG", r"^kernel BUG|corrupted list|bad usercopy"),
    ("leak", r"^memory leak"),
    ("panic", r"^kernel panic|kernel stack overflow|stack guard page|double fault"),
    ("BUG other", r"^BUG"),
]


def family(title: str) -> str:
    for name, pattern in _FAMILIES:
        if re.search(pattern, title):
            return name
    return "other"


@dataclass(slots=True)
class Row:
    logs: int = 0
    detected: int = 0
    title: int = 0
    exact: int = 0
    corrupted: int = 0


@dataclass(slots=True)
class Agreement:
    by_kind: dict[str, Row] = field(default_factory=lambda: defaultdict(Row))
    by_arch: dict[str, Row] = field(default_factory=lambda: defaultdict(Row))
    clean: int = 0  # logs without a crash
    false_positives: int = 0  # ... in which we found one
    misses: list[str] = field(default_factory=list)  # disagreements, `show` per kind


def evaluate(cases: list[Case], show: int = 0) -> Agreement:
    out = Agreement()
    shown: Counter[str] = Counter()
    for case in cases:
        reports = parse_console(case.log)
        rep = reports[0] if reports else None
        if not case.title:
            out.clean += 1
            if rep is not None:
                out.false_positives += 1
                out.misses.append(f"FALSE POSITIVE {case.name}: {rep.title}")
            continue
        # Our title is one of syzkaller's titles for the bug, or syzkaller's title is one of
        # ours (shared generic ALTs such as "bad-access in f" alone do not count).
        same_bug = bool(
            rep and (rep.title in {case.title, *case.alts} or case.title in rep.alt_titles)
        )
        corrupted = rep.corrupted if rep else None
        kind, arch = family(case.title), arch_of(case.log)
        for row in (out.by_kind[kind], out.by_arch[arch]):
            row.logs += 1
            row.detected += rep is not None
            row.title += same_bug
            row.exact += bool(rep and rep.title == case.title)
            row.corrupted += corrupted == case.corrupted
        if not same_bug and shown[kind] < show:
            shown[kind] += 1
            got = f"{rep.title!r} corrupted={corrupted}" if rep else "nothing"
            out.misses.append(f"MISS {case.name} [{arch}]: want {case.title!r} got {got}")
    return out
