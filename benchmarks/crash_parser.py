"""How closely our crash-report reader agrees with syzkaller's, on syzkaller's own test corpus.

    SYZKALLER_ROOT=/path/to/syzkaller .venv/bin/python benchmarks/crash_parser.py [--misses N]

Reads every file of `pkg/report/testdata/linux/report/` (a header with TITLE/ALT/TYPE/
CORRUPTED..., a blank line, the raw console, optionally "REPORT:" and the expected report),
parses the console with `codegen_eval.kernelgym.crash.parse_console` and prints, per crash kind
(the family of syzkaller's title) and per architecture (guessed from the console):
- recall: logs with a crash where we find one; false positives: clean logs where we find one;
- title: our title, or one of our ALT titles, equals syzkaller's TITLE or one of its ALTs
  (syzkaller's notion of "the same bug"); exact: our title equals TITLE;
- corrupted: our corrupted flag equals syzkaller's;
- ms per report: parse time per console, best of 3 passes over the corpus.
The figures are this repository's measurement; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def evaluate(cases: list[Case], misses: int) -> tuple[dict[str, Row], dict[str, Row], int, int]:
    by_kind: dict[str, Row] = defaultdict(Row)
    by_arch: dict[str, Row] = defaultdict(Row)
    clean = fp = 0
    shown: Counter[str] = Counter()
    for case in cases:
        reports = parse_console(case.log)
        rep = reports[0] if reports else None
        if not case.title:
            clean += 1
            if rep is not None:
                fp += 1
                if misses:
                    print(f"FALSE POSITIVE {case.name}: {rep.title}")
            continue
        # Our title is one of syzkaller's titles for the bug, or syzkaller's title is one of
        # ours (shared generic ALTs such as "bad-access in f" alone do not count).
        same_bug = bool(
            rep
            and (
                rep.title in {case.title, *case.alts}
                or case.title in getattr(rep, "alt_titles", [])
            )
        )
        corrupted = bool(getattr(rep, "corrupted", False)) if rep else None
        for row in (by_kind[family(case.title)], by_arch[arch_of(case.log)]):
            row.logs += 1
            row.detected += rep is not None
            row.title += same_bug
            row.exact += bool(rep and rep.title == case.title)
            row.corrupted += corrupted == case.corrupted
        if misses and not same_bug and shown[family(case.title)] < misses:
            shown[family(case.title)] += 1
            got = f"{rep.title!r} corrupted={corrupted}" if rep else "nothing"
            print(f"MISS {case.name} [{arch_of(case.log)}]: want {case.title!r} got {got}")
    return by_kind, by_arch, clean, fp


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:5.1f}%" if d else "    -"


def print_table(label: str, rows: dict[str, Row]) -> None:
    print(f"\n{label:<12} {'logs':>5} {'recall':>7} {'title':>7} {'exact':>7} {'corrupt':>8}")
    total = Row()
    for name, row in sorted(rows.items(), key=lambda kv: -kv[1].logs):
        print(
            f"{name:<12} {row.logs:>5} {pct(row.detected, row.logs):>7} "
            f"{pct(row.title, row.logs):>7} {pct(row.exact, row.logs):>7} "
            f"{pct(row.corrupted, row.logs):>8}"
        )
        for attr in ("logs", "detected", "title", "exact", "corrupted"):
            setattr(total, attr, getattr(total, attr) + getattr(row, attr))
    print(
        f"{'all':<12} {total.logs:>5} {pct(total.detected, total.logs):>7} "
        f"{pct(total.title, total.logs):>7} {pct(total.exact, total.logs):>7} "
        f"{pct(total.corrupted, total.logs):>8}"
    )


def time_per_report(cases: list[Case]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for case in cases:
            parse_console(case.log)
        best = min(best, time.perf_counter() - start)
    return 1000 * best / len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("SYZKALLER_ROOT"))
    parser.add_argument("--misses", type=int, default=0, help="print N misses per kind")
    args = parser.parse_args()
    if not args.root:
        raise SystemExit("set SYZKALLER_ROOT (or --root) to a syzkaller checkout")
    cases = load_corpus(Path(args.root))
    by_kind, by_arch, clean, fp = evaluate(cases, args.misses)
    print(f"corpus: {len(cases)} files, {len(cases) - clean} crash logs, {clean} clean logs")
    print(f"false positives on clean logs: {fp} of {clean}")
    print_table("kind", by_kind)
    print_table("arch", by_arch)
    print(f"\nparse time: {time_per_report(cases):.3f} ms per report (best of 3 passes)")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
