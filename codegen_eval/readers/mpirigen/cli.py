"""The MPIrigen options of `codegen-eval run` and the `mpirigen-table` / `mpirigen-survey`
subcommands (cli.py only calls these).

    codegen-eval run --mpirigen MPI-rigen [--mpirigen-set test|gpt] [--mpirigen-limit N] ...
    codegen-eval mpirigen-table --predictions bpe_1000_examples.jsonl --tolerance 1 [--mcc] \\
        --csv scores_var_1.csv [--compare MPI-rigen/.../scores_var_1.csv]
    codegen-eval mpirigen-survey MPI-rigen [--mpirigen-set test] [--json survey.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from codegen_eval.errors import CliError
from codegen_eval.types import Task

COMMANDS = ("mpirigen-table", "mpirigen-survey")


def _tolerance(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--tolerance wants a whole number of lines, got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError("--tolerance must be >= 0")
    return value


def _add_set_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mpirigen-set", choices=("test", "gpt"), default="test",
                   help="test: data/test/test (the set of upstream's released predictions); "
                   "gpt: data/HPCorpusMPI_gpt.jsonl (default: test)")  # fmt: skip
    p.add_argument("--mpirigen-limit", type=int, default=1000, metavar="N",
                   help="the first N programs (default 1000, those upstream's predictions "
                   "answer; 0: all)")  # fmt: skip


def add_run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--mpirigen", metavar="CHECKOUT",
                   help="your Scientific-Computing-Lab/MPI-rigen checkout as a task")  # fmt: skip
    _add_set_options(r)


def add_subcommands(sub: Any) -> None:
    t = sub.add_parser("mpirigen-table",
                       help="MPIrigen's score table (scores_var_T[_MCC].csv) from predictions")  # fmt: skip
    t.add_argument("--predictions", required=True, metavar="FILE",
                   help="JSONL with 'pred' and 'label' (upstream's bpe_1000_examples.jsonl)")  # fmt: skip
    t.add_argument("--tolerance", required=True, type=_tolerance, metavar="T",
                   help="line tolerance (upstream's VARIANCE: 0, 1, 2)")  # fmt: skip
    t.add_argument("--mcc", action="store_true", help="the MPI common core only (_MCC tables)")
    t.add_argument("--csv", required=True, metavar="OUT", help="the table to write")
    t.add_argument("--compare", metavar="CSV",
                   help="an upstream table: exit 1 unless equal to 3 decimals")  # fmt: skip
    s = sub.add_parser("mpirigen-survey",
                       help="which MPIrigen programs can be built and run here, and why not")  # fmt: skip
    s.add_argument("checkout", help="your MPI-rigen checkout")
    _add_set_options(s)
    s.add_argument("--json", metavar="OUT", help="also write each program's class here")
    s.add_argument("--sandbox", default=None, help="sandbox backend (default: the best here)")


def _limit(args: argparse.Namespace) -> int | None:
    if args.mpirigen_limit < 0:
        raise CliError("--mpirigen-limit must be >= 0 (0: all programs)")
    return args.mpirigen_limit or None


def mpirigen_tasks(args: argparse.Namespace) -> list[Task]:
    from codegen_eval.readers.mpirigen import MpirigenFormatError, mpirigen_task

    try:
        return [mpirigen_task(args.mpirigen, args.mpirigen_set, _limit(args),
                              backend=args.sandbox)]  # fmt: skip
    except (MpirigenFormatError, OSError) as exc:
        raise CliError(f"--mpirigen: {exc}") from None


def cmd_table(args: argparse.Namespace) -> int:
    from codegen_eval.readers.mpirigen import metrics as m

    try:
        pairs = m.read_predictions(args.predictions)
    except (OSError, ValueError) as exc:
        raise CliError(f"--predictions: {exc}") from None
    rows = m.table(pairs, args.tolerance, args.mcc)
    m.write_table(rows, args.csv)
    print(f"{args.csv}: {len(rows)} rows from {len(pairs)} predictions "
          f"(tolerance {args.tolerance}{', MCC' if args.mcc else ''})")  # fmt: skip
    if not args.compare:
        return 0
    try:
        theirs = m.read_table(args.compare)
    except (OSError, ValueError) as exc:
        raise CliError(f"--compare: {exc}") from None
    diffs = m.compare_tables(rows, theirs)
    if not diffs:
        print(f"equal to {args.compare} to 3 decimals ({len(rows)} rows)")
        return 0
    print(f"differs from {args.compare} in {len(diffs)} cell(s):", *diffs[:20], sep="\n  ")
    return 1


def cmd_survey(args: argparse.Namespace) -> int:
    from codegen_eval.readers.mpirigen import MpirigenFormatError, load_programs
    from codegen_eval.readers.mpirigen.survey import survey

    try:
        programs = load_programs(args.checkout, args.mpirigen_set)[: _limit(args)]
    except (MpirigenFormatError, OSError) as exc:
        raise CliError(f"mpirigen-survey: {exc}") from None

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            print(f"  {done}/{total}", file=sys.stderr)

    rows = asyncio.run(survey(programs, args.sandbox, progress=progress))
    ran = sum(r.built_and_ran for r in rows)
    print(f"built and ran (np=2, 3 or 4): {ran} of {len(rows)} ({100 * ran / len(rows):.1f}%)")
    for why, n in Counter(r.verdict for r in rows).most_common():
        print(f"  {why:34s} {n:5d}  {100 * n / len(rows):5.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


def run_command(args: argparse.Namespace) -> int:
    return cmd_table(args) if args.command == "mpirigen-table" else cmd_survey(args)
