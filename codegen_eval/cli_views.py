"""What the CLI prints outside a run's table: the suite and problem listings (`codegen-eval
list [SUITE]`) and the summary after Ctrl-C."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codegen_eval.cli_select import narrow_runs, pick_rows, selection_from_args, shown_id
from codegen_eval.problem_ids import Selection, closest_ids, qualified_id
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
    # names and sizes are never cut or folded (a narrow terminal wraps the description)
    table.add_column("suite", no_wrap=True)
    table.add_column("problems", no_wrap=True)
    table.add_column("description")
    for info in list_suites():
        try:
            task = info.factory()
            size = f"{len(task.dataset)}{_shape(task.name, task.dataset, full=False)}"
        except Exception as exc:  # a suite whose data is missing still shows up, with why
            size = f"? ({exc})"
        table.add_row(info.name, size, info.description)
    Console().print(table)
    return 0


def _listed(suite: str | None, selection: Selection) -> list[tuple[str, Any]]:
    """(suite, sample) for the listing: one suite's problems, or every registered suite's
    when no suite is named (a selection across suites: `list --filter 'atomic*'`)."""
    from codegen_eval.cli_select import CliError
    from codegen_eval.registry import UnknownSuiteError, get_suite, list_suites
    from codegen_eval.selection import nothing_selected

    try:
        tasks = [get_suite(suite)] if suite else [info.factory() for info in list_suites()]
    except UnknownSuiteError as exc:
        raise CliError(str(exc)) from None
    every = [(t.name, s) for t in tasks for s in t.dataset]
    picked = [(n, s) for n, s in every if not selection or selection.matches(n, s.id)]
    if not picked and every:
        raise CliError(nothing_selected(selection, [(n, s.id) for n, s in every]))
    return picked


def _shape(suite: str, samples: Sequence[Any], *, full: bool = True) -> str:
    """The suffix " (9 kernels x 5 variants: ...)" when the ids past the suite are NAME/VARIANT for
    every name and variant (hpc-kernels, ParEval's problem/model), else ""."""
    names = [qualified_id(suite, s.id).split("/", 1)[1] for s in samples]
    if not names or not all("/" in n for n in names):
        return ""
    groups = Counter(n.split("/", 1)[0] for n in names)
    variants = {n.split("/", 1)[1] for n in names}
    if len(groups) < 2 or len(variants) < 2 or len(groups) * len(variants) != len(names):
        return ""
    listed = f": {', '.join(sorted(variants))}" if full else ""
    return f" ({len(groups)} kernels x {len(variants)} variants{listed})"


def problem_listing(suite: str | None, selection: Selection | str | None = None) -> int:
    """`codegen-eval list [SUITE]`: the problem ids (what --filter/--match/--sample-id match;
    across suites shown as SUITE/ID) with the first line of each prompt, and how the ids are
    grouped ("9 kernels x 5 variants")."""
    from rich.console import Console
    from rich.table import Table

    if not isinstance(selection, Selection):  # a glob, as callers before the common rule gave
        selection = Selection.of(selection)
    listed = _listed(suite, selection)  # a CliError: main prints it with the exit code of all
    samples = [s for _, s in listed]
    console = Console(width=None if sys.stdout.isatty() else 200)
    table = Table(title=f"{suite or 'every suite'}: problems", show_lines=False)
    table.add_column("id", no_wrap=True, overflow="fold")  # ids are never cut
    table.add_column("prompt (first line)")
    for name, s in listed:
        first = next((ln.strip() for ln in str(s.input).splitlines() if ln.strip()), "")
        table.add_row(s.id if suite else shown_id(name, s.id), first[:100])
    console.print(table)
    shape = _shape(suite, samples) if suite else ""
    more = ""
    if suite:
        excluded = get_excluded(suite)
        more = f"; {len(excluded)} excluded (reasons in a run's table)" if excluded else ""
    console.print(
        f"{plural(len(samples), 'problem')}{shape}{more}; select with --filter GLOB, "
        "--match TEXT or --sample-id ID"
    )
    return 0


def get_excluded(suite: str) -> dict[str, str]:
    from codegen_eval.registry import get_suite

    return dict(get_suite(suite).excluded)


def show_log(
    log: Path,
    sample_id: str | None,
    *,
    as_json: bool = False,
    selection: Selection | None = None,
) -> int:
    """`codegen-eval show LOG [ID]`: every problem x sample with its status and failure class
    (ids never cut); with ID, each of its samples whole: verdict, metrics, the scorer's
    explanation, the extracted code and the model's raw reply."""
    import json

    from rich.console import Console
    from rich.table import Table

    every = pick_rows(sample_rows(log), selection or Selection(), log)
    by_id = Selection.of(ids=sample_id)  # the stored id, or SUITE/ID
    rows = every if sample_id is None else [r for r in every if by_id.matches(r["suite"], r["id"])]
    if sample_id is not None and not rows:
        near = closest_ids(sample_id, sorted({(str(r["suite"]), str(r["id"])) for r in every}))
        from codegen_eval.errors import CliError

        raise CliError(f"no sample {sample_id!r} in {log}; closest: {', '.join(near)}")
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
    selection = selection_from_args(args)
    narrow_runs(runs, selection, ks)
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
            samples=pick_rows(sample_rows(Path(run.path)), selection, Path(run.path)),
        )
    else:
        print_comparison(runs, ks)
        page = render_comparison_html(runs, ks)
    out.write_text(page, encoding="utf-8")
    print(f"report: {out}")
    return 0
