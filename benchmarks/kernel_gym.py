"""Cycle time of the kernel-crash gym, per bundled bug: build, boot, reproduce.

    .venv/bin/python benchmarks/kernel_gym.py              # tier 0
    .venv/bin/python benchmarks/kernel_gym.py --tier 1     # tier 1 (builds the KASAN kernel once)
    .venv/bin/python benchmarks/kernel_gym.py --tier 0 --runs 1 --json out.json

A cycle = build the module (or rebuild the patched kernel) without caches, boot, run the
reproducer K times, read the console. Measured for the unpatched bug (ends at the crash) and
for the developer fix (K clean runs + reboot), which must also match itself (the localization
of issue 29: `matches_fix`). Times are medians over --repeat cycles.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from codegen_eval.kernelgym import Outcome, PatchScorer, ReproConfig, bundled_bugs


async def measure(tier: int, runs: int, repeat: int, accel: str) -> list[dict[str, Any]]:
    scorer = PatchScorer(ReproConfig(runs=runs, accel=accel), use_cache=False)
    if tier == 1:
        t0 = time.monotonic()
        built = await asyncio.to_thread(scorer.tree.ensure_built)
        if not built.ok:
            raise SystemExit(f"tier-1 kernel build failed:\n{built.errors}")
        print(
            f"tier-1 kernel: {'cached' if built.cached else 'built'} "
            f"in {time.monotonic() - t0:.0f}s",
            file=sys.stderr,
        )
    rows = []
    for bug in bundled_bugs(tier=tier):
        for label, patch in (("buggy", ""), ("fixed", bug.developer_patch)):
            samples = []
            for _ in range(repeat):
                t0 = time.monotonic()
                step = await scorer.score(bug, patch)
                samples.append((step, time.monotonic() - t0))
            steps = [s for s, _ in samples]
            want = Outcome.REPRODUCED if label == "buggy" else Outcome.RESOLVED
            rows.append(
                {
                    "bug": bug.id,
                    "variant": label,
                    "outcome": steps[-1].outcome.value,
                    "as_expected": all(s.outcome is want for s in steps)
                    and (label == "fixed" or all(s.matches_expected for s in steps))
                    and (label == "buggy" or all(s.matches_fix is True for s in steps)),
                    "matches_fix": steps[-1].matches_fix,
                    "build_s": statistics.median(s.build_s for s in steps),
                    "boot_s": statistics.median(s.boot_s or 0.0 for s in steps),
                    "reproduce_s": statistics.median(
                        max(0.0, s.run_s - (s.boot_s or 0.0)) for s in steps
                    ),
                    "cycle_s": statistics.median(t for _, t in samples),
                    "cycle_min_s": min(t for _, t in samples),
                    "cycle_max_s": max(t for _, t in samples),
                }
            )
            print(
                f"{bug.id:24} {label:5} {rows[-1]['outcome']:12} {rows[-1]['cycle_s']:6.1f}s",
                file=sys.stderr,
            )
    return rows


def table(rows: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=title)
    cols = ("bug", "variant", "outcome", "matches fix", "ok", "build s", "boot s", "reproduce s",
            "cycle s")  # fmt: skip
    for col in cols:
        t.add_column(col, justify="right" if col.endswith(" s") else "left")
    for r in rows:
        t.add_row(
            r["bug"],
            r["variant"],
            r["outcome"],
            {True: "yes", False: "NO", None: "-"}[r.get("matches_fix")],
            "yes" if r["as_expected"] else "NO",
            f"{r['build_s']:.1f}",
            f"{r['boot_s']:.1f}",
            f"{r['reproduce_s']:.1f}",
            f"{r['cycle_s']:.1f}",
        )
    return t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tier", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3, help="reproducer runs per boot (K)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--accel", default="auto", choices=["auto", "tcg", "kvm"])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    t0 = time.monotonic()
    rows = asyncio.run(measure(args.tier, args.runs, args.repeat, args.accel))
    total = time.monotonic() - t0
    console = Console()
    console.print(table(rows, f"kernel-gym tier {args.tier}, K={args.runs}"))
    cycles = [r["cycle_s"] for r in rows]
    console.print(
        f"{len(rows)} cycles, total {total:.0f}s, per cycle median {statistics.median(cycles):.1f}s"
        f" (min {min(cycles):.1f}s, max {max(cycles):.1f}s); "
        f"all as expected: {all(r['as_expected'] for r in rows)}"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "total_s": total}, indent=1))
    return 0 if all(r["as_expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
