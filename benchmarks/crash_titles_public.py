"""How often our crash reader gives syzbot's own title for crash reports syzbot published.

    .venv/bin/python benchmarks/crash_titles_public.py DIR [--misses N] [--jsonl OUT]

DIR is one of:
- the `syzbot_data/` folder of github.com/seclab-fudan/SyzbotCauseBisectionStudy (the FSE'24
  cause-bisection study): `syzbot_bug_info.sql` (bug id, syzbot's title, ...) and
  `sample_crash_report/syzbot_sample_crash_report_<id>.txt` (the report syzbot linked);
- a folder of `*.jsonl` files, one object per line with "title" and "report" (and optionally
  "id" and "date").

Each report is read by `title_of_report` (codegen_eval.kernelgym.crash). A report counts as
symbolized when syzbot annotated its frames with source positions (`f+0x1/0x2 file.c:3`,
`g file.h:4 [inline]`), raw otherwise; the figures are given per group and per year, and for
the symbolized reports whose headline is repeated per inlined function.
- exact: our title is syzbot's (syzbot's " (2)" numbering ignored);
- same bug: syzbot's title is our title or one of our ALT titles;
- corrupted: we flag the report as corrupted.
syzbot's titles for errors outside a test run are left out ("... build error"); for a crash
while booting or during syzbot's own smoke test syzbot prefixes the crash's title ("upstream
boot error: ", "linux-next test error: "): normalize_title drops it before comparing. Titles are
those syzbot gave when each bug was first seen, under the syzkaller of that day; our reader
follows today's syzkaller, so older bugs agree less (see the per-year rows).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codegen_eval.kernelgym.crash import normalize_title, title_of_report
from codegen_eval.kernelgym.crash.symbolized import is_symbolized

_SQL_ROW = re.compile(r"'((?:[^'\\]|\\.)*)'|(NULL)|(-?[0-9.]+)")
_NOT_A_CRASH = re.compile(r"\bbuild error\b")
# A headline repeated once per inlined function (the case the reader used to get wrong).
_INLINED_HEADLINE = re.compile(r"^(?:BUG: |WARNING: |kernel BUG|UBSAN)[^\n]*\[inline\]", re.M)


@dataclass(slots=True)
class Item:
    id: str
    title: str
    report: str
    year: str


def _sql_values(line: str) -> list[str | None]:
    body = line[line.index("VALUES (") + len("VALUES (") :]
    out: list[str | None] = []
    for m in _SQL_ROW.finditer(body):
        if m.group(1) is not None:
            out.append(re.sub(r"\\(.)", r"\1", m.group(1)))
        else:
            out.append(None if m.group(2) else m.group(3))
    return out


def _from_sql(root: Path) -> Iterator[Item]:
    sql = root / "syzbot_bug_info.sql"
    for line in sql.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("INSERT INTO"):
            continue
        row = _sql_values(line)
        bug_id, title, date = row[0] or "", row[1] or "", row[9] or ""
        path = root / "sample_crash_report" / f"syzbot_sample_crash_report_{bug_id}.txt"
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            yield Item(bug_id, title, text, date[:4])


def _from_jsonl(root: Path) -> Iterator[Item]:
    for path in sorted(root.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                rec = json.loads(line)
                bug_id = str(rec.get("id") or f"{path.name}:{n + 1}")
                year = str(rec.get("date") or "")[:4]
                yield Item(bug_id, rec["title"], rec["report"], year)


def load(root: Path) -> list[Item]:
    if (root / "syzbot_bug_info.sql").is_file():
        return list(_from_sql(root))
    if any(root.glob("*.jsonl")):
        return list(_from_jsonl(root))
    raise SystemExit(f"{root}: neither syzbot_bug_info.sql nor *.jsonl files here")


@dataclass(slots=True)
class Row:
    reports: int = 0
    exact: int = 0
    same: int = 0
    corrupted: int = 0

    def add(self, exact: bool, same: bool, corrupted: bool) -> None:
        self.reports += 1
        self.exact += exact
        self.same += same
        self.corrupted += corrupted

    def line(self, label: str) -> str:
        def pct(n: int) -> str:
            return f"{100 * n / self.reports:5.1f}%" if self.reports else "    -"

        return (
            f"{label:<16} {self.reports:>6} {pct(self.exact):>7} {pct(self.same):>7} "
            f"{pct(self.corrupted):>8}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--misses", type=int, default=0, help="print N disagreements")
    parser.add_argument("--jsonl", type=Path, help="write one line per report here")
    args = parser.parse_args()
    if not args.dir.is_dir():
        raise SystemExit(f"{args.dir}: not a directory")
    items = load(args.dir)
    groups: dict[str, Row] = defaultdict(Row)
    years: dict[str, Row] = defaultdict(Row)
    skipped = 0
    misses: list[str] = []
    out = args.jsonl.open("w", encoding="utf-8") if args.jsonl else None
    cpu = time.process_time()
    for item in items:
        if _NOT_A_CRASH.search(item.title):
            skipped += 1
            continue
        want = normalize_title(item.title)  # without syzbot's boot/test error prefix
        got = title_of_report(item.report)
        titles = {normalize_title(t) for t in got.all_titles} if got else set()
        exact = bool(got and normalize_title(got.title) == want)
        same = want in titles
        corrupted = bool(got and got.corrupted)
        group = "symbolized" if is_symbolized(item.report) else "raw"
        groups[group].add(exact, same, corrupted)
        groups["all"].add(exact, same, corrupted)
        if _INLINED_HEADLINE.search(item.report):
            groups[" inlined headline"].add(exact, same, corrupted)
        years[f"{group} {item.year}"].add(exact, same, corrupted)
        if not same and len(misses) < args.misses:
            misses.append(f"{item.id} [{group}]: want {want!r} got {got.title if got else None!r}")
        if out:
            rec = {"id": item.id, "group": group, "want": want, "got": got.title if got else None,
                   "exact": exact, "same": same, "corrupted": corrupted}  # fmt: skip
            out.write(json.dumps(rec) + "\n")
    cpu = time.process_time() - cpu
    if out:
        out.close()
    if misses:
        print("\n".join(misses))
    read = groups["all"].reports
    print(f"{len(items)} reports, {skipped} left out (not crash titles), {read} read")
    print(f"\n{'group':<16} {'reports':>6} {'exact':>7} {'same':>7} {'corrupt':>8}")
    for name in ("symbolized", " inlined headline", "raw", "all"):
        print(groups[name].line(name))
    print()
    for name in sorted(years):
        print(years[name].line(name))
    print(f"\nCPU per report: {1000 * cpu / max(read, 1):.3f} ms")


if __name__ == "__main__":
    main()
