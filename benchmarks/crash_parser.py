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
- ms per report: parse time per console (CPU and wall; first pass and best of 3 more).
The figures are this repository's measurement; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codegen_eval.kernelgym.crash import parse_console
from codegen_eval.kernelgym.crash.corpus import Case, Row, evaluate, load_corpus


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


def time_per_report(cases: list[Case]) -> tuple[float, float, float]:
    """ms per report: CPU time of the first pass (cold caches), best CPU time and best wall
    time of three more. CPU time is what this process used, so other load on the machine
    inflates it far less than wall time."""
    first = best_cpu = best_wall = float("inf")
    for n in range(4):
        wall, cpu = time.perf_counter(), time.process_time()
        for case in cases:
            parse_console(case.log)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if n == 0:
            first = cpu
        else:
            best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
    return tuple(1000 * t / len(cases) for t in (first, best_cpu, best_wall))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("SYZKALLER_ROOT"))
    parser.add_argument("--misses", type=int, default=0, help="print N misses per kind")
    args = parser.parse_args()
    if not args.root:
        raise SystemExit("set SYZKALLER_ROOT (or --root) to a syzkaller checkout")
    cases = load_corpus(Path(args.root))
    result = evaluate(cases, args.misses)
    if result.misses:
        print("\n".join(result.misses))
    by_kind, by_arch = result.by_kind, result.by_arch
    clean, fp = result.clean, result.false_positives
    print(f"corpus: {len(cases)} files, {len(cases) - clean} crash logs, {clean} clean logs")
    print(f"false positives on clean logs: {fp} of {clean}")
    print_table("kind", by_kind)
    print_table("arch", by_arch)
    first, cpu, wall = time_per_report(cases)
    print(
        f"\nparse time per report: {first:.3f} ms CPU first pass, {cpu:.3f} ms CPU and "
        f"{wall:.3f} ms wall best of 3 more"
    )
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
