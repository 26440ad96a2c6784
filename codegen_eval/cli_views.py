"""What the CLI prints outside a run's table: the suite and problem listings (`codegen-eval
list [SUITE]`) and the summary after Ctrl-C."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from codegen_eval.report import plural, print_table, summarize


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
