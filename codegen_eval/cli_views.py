"""What the CLI prints outside a run's table: the suite and problem listings (`codegen-eval
list [SUITE]`) and the summary after Ctrl-C."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from codegen_eval.report import plural, print_table, summarize
from codegen_eval.report_samples import sample_rows


def report_interrupted(log_path: Path, ks: Sequence[int], resume_hint: str) -> None:
    """After Ctrl-C: how many candidates were scored (read back from the log) and their
    partial table, or that none was; then how to continue."""
    from codegen_eval.log import read_log

    try:
        contents = read_log(log_path)
    except (OSError, ValueError):
        contents = None
    scored = contents.score_records if contents is not None else []
    if contents is not None and scored:
        print(f"\ninterrupted: the partial results of {len(scored)} scored candidate(s):")
        print_table(summarize(scored, ks), ks, contents.excluded)
        where = f"they are in {log_path}"
    else:
        where = f"no candidate was scored yet (log: {log_path})"
    print(f"\ninterrupted; {where}; continue with:\n  {resume_hint}", file=sys.stderr)


def suite_listing() -> int:
    """`codegen-eval list`: every registered suite with its size and description."""
    from rich.console import Console
    from rich.table import Table

    from codegen_eval.registry import list_suites

    table = Table(title="codegen-eval suites")
    for col in ("suite", "problems", "description"):
        table.add_column(col)
    for info in list_suites():
        try:
            size = str(len(info.factory().dataset))
        except Exception as exc:  # a suite whose data is missing still shows up, with why
            size = f"? ({exc})"
        table.add_row(info.name, size, info.description)
    Console().print(table)
    return 0


def problem_listing(suite: str, pattern: str | None = None) -> int:
    """`codegen-eval list SUITE`: the suite's problem ids (what --filter matches) with the first
    line of each prompt, and how the ids are grouped ("9 kernels x 5 variants")."""
    import fnmatch

    from rich.console import Console
    from rich.table import Table

    from codegen_eval.registry import UnknownSuiteError, get_suite

    try:
        task = get_suite(suite)
    except UnknownSuiteError as exc:
        print(f"codegen-eval: error: {exc}", file=sys.stderr)
        return 1
    samples = [s for s in task.dataset if not pattern or fnmatch.fnmatchcase(s.id, pattern)]
    console = Console(width=None if sys.stdout.isatty() else 200)
    table = Table(title=f"{suite}: problems", show_lines=False)
    table.add_column("id", no_wrap=True, overflow="fold")  # ids are never cut
    table.add_column("prompt (first line)")
    for s in samples:
        first = next((ln.strip() for ln in str(s.input).splitlines() if ln.strip()), "")
        table.add_row(s.id, first[:100])
    console.print(table)
    groups = Counter(s.id.split("/", 1)[0] for s in samples if "/" in s.id)
    variants = {s.id.split("/", 1)[1] for s in samples if "/" in s.id}
    shape = ""
    if groups and len(groups) * len(variants) == len(samples):
        shape = (
            f" ({len(groups)} kernels x {len(variants)} variants: {', '.join(sorted(variants))})"
        )
    excluded = task.metadata.get("excluded") or {}
    more = f"; {len(excluded)} excluded (reasons in a run's table)" if excluded else ""
    console.print(f"{plural(len(samples), 'problem')}{shape}{more}; select with --filter GLOB")
    return 0


def show_log(log: Path, sample_id: str | None, *, as_json: bool = False) -> int:
    """`codegen-eval show LOG [ID]`: every problem x sample with its status and failure class
    (ids never cut); with ID, each of its samples whole: verdict, metrics, the scorer's
    explanation, the extracted code and the model's raw reply."""
    import json

    from rich.console import Console
    from rich.table import Table

    every = sample_rows(log)
    rows = every if sample_id is None else [r for r in every if r["id"] == sample_id]
    if sample_id is not None and not rows:
        ids = sorted({str(r["id"]) for r in every})
        near = [i for i in ids if sample_id in i][:5] or ids[:5]
        print(f"codegen-eval: error: no sample {sample_id!r} in {log}; ids look like "
              f"{', '.join(near)}", file=sys.stderr)  # fmt: skip
        return 1
    if as_json:
        print(json.dumps(rows if sample_id else [
            {k: v for k, v in r.items() if k not in ("code", "raw")} for r in rows
        ], indent=1))  # fmt: skip
        return 0
    console = Console(width=None if sys.stdout.isatty() else 200)
    if sample_id is None:
        table = Table(title=f"{log}: problems x samples")
        table.add_column("suite", no_wrap=True)
        table.add_column("id", no_wrap=True)
        for col in ("sample", "status", "failure class", "explanation"):
            table.add_column(col)
        for r in rows:
            first = next(iter(str(r["explanation"]).splitlines()), "")
            table.add_row(str(r["suite"]), str(r["id"]), str(r["index"]), str(r["status"]),
                          str(r["failure_class"] or ""), first[:120])  # fmt: skip
        console.print(table)
        console.print(f"{plural(len(rows), 'sample')}; `codegen-eval show {log} ID` for one")
        return 0
    for r in rows:
        console.rule(f"{r['suite']} {r['id']} sample {r['index']}: {r['status']}")
        if r["failure_class"]:
            console.print(f"failure class: {r['failure_class']}", markup=False)
        if r["metrics"]:
            console.print(f"metrics: {json.dumps(r['metrics'])}", markup=False)
        console.print("explanation:", markup=False)
        console.print(str(r["explanation"]) or "-", markup=False, highlight=False)
        console.print("code:", markup=False)
        console.print(str(r["code"]) or "(none extracted)", markup=False, highlight=False)
        if r["raw"] and r["raw"] != r["code"]:
            console.print("raw reply:", markup=False)
            console.print(str(r["raw"]), markup=False, highlight=False)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from codegen_eval.compare import load_runs, print_comparison, render_comparison_html
    from codegen_eval.report import render_html

    runs, ks = load_runs(args.logs, args.k)
    for run in runs:
        for note in run.notes:
            print(f"note: {run.path}: {note}", file=sys.stderr)
        n = run.header.get("n")
        if isinstance(n, int) and max(ks) > n:
            print(
                f"note: {run.path}: pass@{max(ks)} needs n >= {max(ks)}, this run has n={n}: "
                "shown as —",
                file=sys.stderr,
            )
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if len(runs) == 1:
        run = runs[0]
        print_table(run.groups, ks, run.excluded)
        page = render_html(
            run.groups,
            ks,
            headers=[run.header],
            excluded=run.excluded,
            samples=sample_rows(Path(run.path)),
        )
    else:
        print_comparison(runs, ks)
        page = render_comparison_html(runs, ks)
    out.write_text(page, encoding="utf-8")
    print(f"report: {out}")
    return 0
