"""The README's main job (`./dev.sh main`): plain generation and the repair agent on the same
few problems (two verilog and two hpc-kernels by default), at equal budget, printed side by
side: `generate` draws R samples per problem, the repair agent (agents.repair, loaded by name
like `codegen-eval run --solver repair`) makes up to R model calls per problem, its first one
being the same request as generate's first sample. Writes both logs and an HTML comparison
under runs/. Suites not registered yet are skipped with a note.

    python -m codegen_eval.main_job [--model local] [--limit 2] [--rounds 2] [--suite verilog ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from appl.cache import ResponseCache, response_cache
from codegen_eval.registry import UnknownSuiteError, get_suite
from codegen_eval.types import Task

DEFAULT_SUITES = ("verilog", "hpc-kernels")


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _outcome(record: dict[str, Any]) -> str:
    return "pass" if record.get("status") == "pass" else str(record.get("failure_class") or "fail")


def per_problem_rows(
    gen_records: list[dict[str, Any]], rep_records: list[dict[str, Any]]
) -> list[tuple[str, str, str, str]]:
    """(suite, problem, generate's samples, repair's rounds) for each problem of either run."""
    by_key: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for name, records in (("generate", gen_records), ("repair", rep_records)):
        for r in sorted(records, key=lambda r: r["index"]):
            by_key.setdefault((r["suite"], r["sample_id"]), {}).setdefault(name, []).append(r)
    rows = []
    for (suite, sid), runs in by_key.items():
        samples = ", ".join(_outcome(r) for r in runs.get("generate", [])) or "—"
        chains = []
        for r in runs.get("repair", []):
            history = (r.get("candidate") or {}).get("failure_history") or []
            text = " → ".join(str(h) for h in history) or _outcome(r)
            if history and str(history[-1]) == "pass" and r.get("status") != "pass":
                text += f" (re-scored: {_outcome(r)})"
            chains.append(text)
        rows.append((suite, sid, samples, "; ".join(chains) or "—"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="codegen_eval.main_job")
    ap.add_argument("--model", default="local")
    ap.add_argument("--suite", action="append", help="default: verilog, hpc-kernels")
    ap.add_argument("--limit", type=int, default=2, help="problems per suite")
    ap.add_argument("--rounds", type=int, default=2, help="model calls per problem, both solvers")
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--temperature", type=float, default=0.8)
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.limit < 1:
        ap.error("--rounds and --limit must be >= 1")

    from rich.console import Console
    from rich.table import Table

    from codegen_eval.cli import CliError, _solver_factory
    from codegen_eval.compare import load_runs, print_comparison, render_comparison_html
    from codegen_eval.solvers import GenerateSolver

    tasks: list[Task] = []
    for name in args.suite or DEFAULT_SUITES:
        try:
            tasks.append(get_suite(name))
        except (UnknownSuiteError, ImportError) as exc:
            print(f"main job: skipping suite {name!r}: {exc}", file=sys.stderr)
    if not tasks:
        print("main job: no suite is registered yet; nothing to run", file=sys.stderr)
        return 1
    try:
        with_repair = _solver_factory("repair")
    except CliError as exc:
        print(f"main job: {exc}", file=sys.stderr)
        return 1
    settings = {"model": args.model, "temperature": args.temperature,
                "max_tokens": args.max_tokens, "seed": 0}  # fmt: skip
    generate = GenerateSolver(args.model, **{k: v for k, v in settings.items() if k != "model"})
    repair_tasks = [with_repair(t, rounds=args.rounds, **settings) for t in tasks]
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    plan = [
        ("generate", tasks, generate, args.rounds, generate.describe()),
        ("repair", repair_tasks, None, 1, repair_tasks[0].solver.describe()),  # type: ignore[union-attr]
    ]
    logs: list[Path] = []
    timings: list[str] = []
    # The repair agent's first round is generate's first sample, request for request (same
    # prompt, seed and settings): answered from memory, not computed twice. Its tokens still
    # count for repair, so the budgets compare as before; only the wall time is saved.
    with response_cache() as cache:
        for name, run_tasks, solver, n, described in plan:
            status = _run_one(args, name, run_tasks, solver, n, described, stamp, cache)
            if isinstance(status, int):
                return status
            logs.append(status[0])
            timings.append(status[1])

    console = Console(width=None if sys.stdout.isatty() else 160)
    loaded, ks = load_runs(logs)
    print_comparison(loaded, ks, console=console)
    table = Table(
        title=f"per problem: generate (n={args.rounds}) | repair (up to {args.rounds} rounds)"
    )
    for col in ("suite", "problem", "generate: each sample", "repair: each round"):
        table.add_column(col)
    for row in per_problem_rows(loaded[0].records, loaded[1].records):
        table.add_row(*row)
    console.print(table)
    for line in timings:
        console.print(line, highlight=False)
    report = Path("runs") / f"main-{stamp}.html"
    report.write_text(render_comparison_html(loaded, ks), encoding="utf-8")
    print(f"logs: {logs[0]} {logs[1]}\nreport: {report}")
    return 0


def _run_one(
    args: argparse.Namespace,
    name: str,
    run_tasks: list[Task],
    solver: Any,
    n: int,
    described: dict[str, Any],
    stamp: str,
    cache: ResponseCache,
) -> int | tuple[Path, str]:
    """One solver's run: its log and timing line, or the exit status it failed with."""
    from codegen_eval.runner import RunAborted, RunConfig, run_eval_sync

    log_path = Path("runs") / f"main-{stamp}-{name}.jsonl"
    config = RunConfig(
        n=n,
        ks=tuple(range(1, n + 1)),
        limit=args.limit,
        progress=True,  # a bar on a terminal; on a pipe a plain line every 30 s, never silent
        header={"model": args.model, "solver": name, "job": "main", "options": described},
    )
    print(f"main job: {name} on {len(run_tasks)} suite(s), {args.limit} problem(s) each...",
          file=sys.stderr)  # fmt: skip
    load_before, t0, hits = _load(), time.monotonic(), cache.hits
    try:
        run_eval_sync(run_tasks, solver, log_path, config)
    except KeyboardInterrupt:
        print(f"interrupted; partial log: {log_path}", file=sys.stderr)
        return 130
    except RunAborted as exc:
        print(f"main job: {exc}", file=sys.stderr)
        return 1
    reused = cache.hits - hits
    note = f" ({reused} model call(s) answered by an identical earlier request)" if reused else ""
    timing = (
        f"{name}: {time.monotonic() - t0:.0f} s wall, load average {load_before} -> {_load()}"
        + note
    )
    return log_path, timing


if __name__ == "__main__":
    raise SystemExit(main())
