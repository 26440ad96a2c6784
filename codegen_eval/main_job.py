"""The README's main job (`./dev.sh main`): a real benchmark run on the local model over a
small subset (a few verilog and hpc-kernels problems, n=1) that prints the results table and
writes the HTML report under runs/. Suites not registered yet are skipped with a note.

    python -m codegen_eval.main_job [--model local] [--limit 3] [--suite verilog ...]
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from codegen_eval.registry import UnknownSuiteError, get_suite
from codegen_eval.types import Task

DEFAULT_SUITES = ("verilog", "hpc-kernels")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="codegen_eval.main_job")
    ap.add_argument("--model", default="local")
    ap.add_argument("--suite", action="append", help="default: verilog, hpc-kernels")
    ap.add_argument("--limit", type=int, default=3, help="problems per suite")
    ap.add_argument("-n", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--solver", choices=["generate", "reference"], default="generate")
    args = ap.parse_args(argv)

    from codegen_eval.report import print_table, render_html, summarize
    from codegen_eval.runner import RunAborted, RunConfig, run_eval_sync
    from codegen_eval.solvers import GenerateSolver, ReferenceSolver

    tasks: list[Task] = []
    for name in args.suite or DEFAULT_SUITES:
        try:
            tasks.append(get_suite(name))
        except (UnknownSuiteError, ImportError) as exc:
            print(f"main job: skipping suite {name!r}: {exc}", file=sys.stderr)
    if not tasks:
        print("main job: no suite is registered yet; nothing to run", file=sys.stderr)
        return 1
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    runs = Path("runs")
    log_path = runs / f"main-{stamp}.jsonl"
    solver = (
        GenerateSolver(args.model, temperature=0.2, max_tokens=args.max_tokens)
        if args.solver == "generate"
        else ReferenceSolver()
    )
    config = RunConfig(
        n=args.n,
        ks=(1,),
        limit=args.limit,
        progress=sys.stderr.isatty(),
        header={"model": args.model, "solver": args.solver, "job": "main"},
    )
    try:
        result = run_eval_sync(tasks, solver, log_path, config)
    except KeyboardInterrupt:
        print(f"interrupted; partial log: {log_path}", file=sys.stderr)
        return 130
    except RunAborted as exc:
        print(f"main job: {exc}", file=sys.stderr)
        return 1
    summary = summarize(result.records, (1,))
    print_table(summary, (1,), result.excluded)
    report = runs / f"main-{stamp}.html"
    report.write_text(render_html(summary, (1,), excluded=result.excluded), encoding="utf-8")
    print(f"log: {log_path}\nreport: {report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
