"""`python -m agents.repair`: run suites with the repair solver through codegen_eval's runner.

    python -m agents.repair --suite verilog --suite hpc-kernels --model local -n 2 -R 3 --limit 3

`codegen-eval run --solver` only knows its built-in solvers, so this is the way in until the
core CLI can take a solver from a plugin; the log and report formats are the core's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from pathlib import Path

from agents.repair.solver import with_repair
from codegen_eval import RunConfig, get_suite, print_table, run_eval, summarize
from codegen_eval.cli_select import add_selection_options, selection_from_args
from codegen_eval.errors import CliError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agents.repair", description=__doc__.split("\n")[0])
    p.add_argument("--suite", action="append", required=True, help="suite name (repeatable)")
    p.add_argument("--model", default=None, help="appl model alias (default: configured default)")
    p.add_argument("-n", type=int, default=1, help="attempts per problem (each with repairs)")
    p.add_argument("-k", default="1", help="pass@k values, e.g. 1,5")
    p.add_argument("-R", "--rounds", type=int, default=3, help="model calls per attempt")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--max-tokens", type=int, default=2048)
    p.add_argument("--limit", type=int)
    p.add_argument("--max-sandboxes", type=int, default=2)
    p.add_argument("--log", help="run log (default runs/repair-<suites>-<time>.jsonl)")
    p.add_argument("--resume", action="store_true")
    add_selection_options(p)  # --filter/--match/--sample-id, as in codegen-eval
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ks = tuple(sorted({int(x) for x in args.k.split(",") if x.strip()}))
    try:
        selection = selection_from_args(args)
    except CliError as exc:
        print(f"agents.repair: error: {exc}", file=sys.stderr)
        return 2
    options = {
        "model": args.model,
        "rounds": args.rounds,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "max_scoring": args.max_sandboxes,
    }
    try:
        tasks = [with_repair(get_suite(name), **options) for name in args.suite]
    except (KeyError, ImportError, ValueError) as exc:
        print(f"agents.repair: error: {exc}", file=sys.stderr)
        return 1
    log = (
        Path(args.log)
        if args.log
        else Path("runs")
        / ("repair-" + "-".join(args.suite) + datetime.now().strftime("-%Y%m%d-%H%M%S.jsonl"))
    )
    config = RunConfig(
        n=args.n,
        ks=ks,
        max_sandboxes=args.max_sandboxes,
        limit=args.limit,
        selection=selection,
        header={"solver": "repair", "model": args.model or "", "options": options},
    )
    try:
        result = asyncio.run(run_eval(tasks, None, log, config, resume=args.resume))
    except FileExistsError as exc:
        print(f"agents.repair: error: {exc}", file=sys.stderr)
        return 1
    print_table(summarize(result.records, ks), ks, result.excluded)
    print(f"log: {log}")
    return 0
