"""How well the localizer's function reader (codegen_eval/kernelgym/localize.py) finds the
function that encloses each line of real kernel C files, against universal-ctags.

    .venv/bin/python benchmarks/kgym_localize.py [TREE] [--every N] [--misses N]

TREE: a kernel source tree (default: the gym's unpacked linux-source-6.1). Every Nth `.c`
file (default 40) is read both ways: ctags' function definitions with their end lines
(`--fields=+ne`), and `function_spans`. For every line inside a ctags function, the line's
function by our reading must be the same (SYSCALL_DEFINEn(x, ...) counts as sys_x). Reports
the share of lines that agree, the files where they do not, and CPU time per file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codegen_eval.kernelgym.builders import cache_root
from codegen_eval.kernelgym.localize import function_spans


def ctags_spans(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each function definition, as ctags reads it."""
    proc = subprocess.run(
        ["ctags", "--languages=C", "--kinds-C=f", "--fields=+ne", "-o", "-", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    spans = []
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if "line" in fields and "end" in fields:
            spans.append((parts[0], int(fields["line"]), int(fields["end"])))
    return spans


def line_owner(spans: list[tuple[str, int, int]], n_lines: int) -> list[str | None]:
    owner: list[str | None] = [None] * (n_lines + 2)
    for name, first, last in spans:
        for n in range(first, min(last, n_lines) + 1):
            owner[n] = name
    return owner


def same(ours: str | None, theirs: str | None) -> bool:
    if ours == theirs:
        return True
    return bool(ours and theirs and theirs.startswith(("SYSCALL_DEFINE", "COMPAT_SYSCALL"))
                and "sys_" in ours)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tree", nargs="?", default=str(cache_root() / "src" / "linux-source-6.1"))
    ap.add_argument("--every", type=int, default=40, help="read every Nth .c file")
    ap.add_argument("--misses", type=int, default=5, help="files with disagreements to show")
    args = ap.parse_args()
    tree = Path(args.tree)
    if not tree.is_dir():
        print(f"kgym_localize: {tree} is not a directory", file=sys.stderr)
        return 2
    files = sorted(tree.rglob("*.c"))[:: args.every]
    agree = total = 0
    cpu = 0.0
    misses: list[tuple[str, int, int]] = []
    for path in files:
        text = path.read_text(errors="replace")
        n_lines = text.count("\n") + 1
        theirs = line_owner(ctags_spans(path), n_lines)
        t0 = time.process_time()
        ours_spans = function_spans(text)
        cpu += time.process_time() - t0
        ours = line_owner([(s.name, s.first, s.last) for s in ours_spans], n_lines)
        file_total = sum(1 for o in theirs if o is not None)
        file_agree = sum(
            1 for a, b in zip(ours, theirs, strict=True) if b is not None and same(a, b)
        )
        agree, total = agree + file_agree, total + file_total
        if file_agree < file_total:
            misses.append((str(path.relative_to(tree)), file_agree, file_total))
    print(f"{len(files)} files of {tree}, every {args.every}th .c file")
    print(f"lines inside a function (ctags): {total}; same function by our reading: "
          f"{agree} ({100 * agree / max(total, 1):.2f}%)")  # fmt: skip
    print(f"files with a disagreement: {len(misses)}; function_spans CPU "
          f"{1000 * cpu / max(len(files), 1):.2f} ms per file")  # fmt: skip
    for rel, a, t in sorted(misses, key=lambda m: m[1] - m[2])[: args.misses]:
        print(f"  {rel}: {a}/{t}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
