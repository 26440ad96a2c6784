"""The selection options shared by `codegen-eval run`, `list`, `show` and `report`.

    --filter GLOB     fnmatch on the qualified id SUITE/ID or any '/'-tail of it (repeatable)
    --match, -m TEXT  case-insensitive substring of the qualified id (repeatable)
    --sample-id ID    exact id, with or without SUITE/ (repeatable, or comma separated)

The rule is problem_ids.py's. Why `--match` and not pytest's `-k`: `run -k` is pass@k and has
been since the first release; `-m` is free in every subcommand. `--sample-id` is Inspect's
spelling (comma separated there too).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codegen_eval.errors import CliError
from codegen_eval.problem_ids import Selection, qualified_id

__all__ = [
    "add_selection_options",
    "narrow_runs",
    "reader_glob_notes",
    "reader_problems",
    "selection_from_args",
]

# The readers' own glob options, kept as deprecated spellings (docs/codegen-eval.md says why
# they are not plain aliases): dest -> the suite they select in.
READER_GLOBS = {"cvdp_problems": "cvdp", "rtllm_problems": "rtllm"}


def add_selection_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "problem selection (one rule for every suite; docs/codegen-eval.md#selecting-problems)"
    )
    g.add_argument(
        "--filter",
        action="append",
        metavar="GLOB",
        help="glob on the id SUITE/ID or any '/'-tail of it, e.g. 'atomic*', 'axpy/*', "
        "'serial' (repeatable: any)",
    )
    g.add_argument(
        "--match",
        "-m",
        action="append",
        metavar="TEXT",
        help="case-insensitive substring of SUITE/ID, like pytest -k (repeatable: any)",
    )
    g.add_argument(
        "--sample-id",
        action="append",
        metavar="ID",
        help="exactly this problem id, with or without SUITE/ (repeatable or comma separated)",
    )


def _values(raw: Any, flag: str, *, split: bool = False) -> list[str]:
    items = [raw] if isinstance(raw, str) else list(raw or [])
    out: list[str] = []
    for item in items:
        out += [x.strip() for x in str(item).split(",")] if split else [str(item)]
    if any(not x for x in out):
        raise CliError(f"{flag} needs a non-empty value")
    return list(dict.fromkeys(out))


def selection_from_args(args: argparse.Namespace) -> Selection:
    """The selection the options ask for. A `filter` that is a string, not a list, comes from
    a log written before the common rule (its single --filter was a glob on the stored id):
    resuming it keeps that rule, so it selects the same problems it did."""
    legacy = isinstance(getattr(args, "filter", None), str)
    return Selection.of(
        _values(getattr(args, "filter", None), "--filter"),
        _values(getattr(args, "match", None), "--match"),
        _values(getattr(args, "sample_id", None), "--sample-id", split=True),
        whole_id=legacy,
    )


def reader_problems(args: argparse.Namespace, suite: str) -> Any:
    """What a reader named `suite` should load: its deprecated glob option when given, else
    a test of each id against the common selection (so `--filter 'rtllm/adder*'` loads and
    calibrates only those designs, as `--rtllm-problems` did), else None (all). The runner
    applies the whole selection again, so a reader that loads more changes no result."""
    dest = next((d for d, s in READER_GLOBS.items() if s == suite), None)
    if dest and getattr(args, dest, None):
        return getattr(args, dest)
    selection = selection_from_args(args)
    if not selection:
        return None
    return lambda sample_id: selection.matches(suite, sample_id)


def reader_glob_notes(args: argparse.Namespace) -> list[str]:
    """One deprecation note per reader glob option given (they still work as before)."""
    notes = []
    for dest, suite in READER_GLOBS.items():
        if getattr(args, dest, None):
            flag = "--" + dest.replace("_", "-")
            notes.append(
                f"note: {flag} is deprecated: use --filter '{suite}/GLOB' (the same globs, one "
                f"rule for every suite); {flag} still limits what the reader loads"
            )
    return notes


def narrow_runs(runs: Sequence[Any], selection: Selection, ks: Sequence[int]) -> None:
    """`report` with a selection: each run's records, exclusions and groups cut to it."""
    from codegen_eval.report import summarize

    if not selection:
        return
    # what the runs hold before the cut, for the message when nothing is left (from the
    # records already read: an Inspect .eval run has no JSONL log to read again)
    known = sorted({(str(r["suite"]), str(r["sample_id"])) for run in runs
                    for r in [*run.records, *run.excluded]})  # fmt: skip
    for run in runs:
        run.records = [r for r in run.records if _picked(selection, r)]
        run.excluded = [r for r in run.excluded if _picked(selection, r)]
        run.groups = summarize(run.records, ks)
    if not any(run.records or run.excluded for run in runs):
        raise CliError(_nothing(selection, known))


def _picked(selection: Selection, record: dict[str, Any]) -> bool:
    return selection.matches(str(record.get("suite", "")), str(record.get("sample_id", "")))


def _nothing(selection: Selection, known: Sequence[tuple[str, str]]) -> str:
    from codegen_eval.selection import nothing_selected

    return nothing_selected(selection, known)


def pick_rows(rows: list[dict[str, Any]], selection: Selection, log: Path) -> list[dict[str, Any]]:
    """`show` with a selection: the sample rows it keeps; none is a CliError."""
    if not selection:
        return rows
    kept = [r for r in rows if selection.matches(str(r["suite"]), str(r["id"]))]
    if not kept:
        known = sorted({(str(r["suite"]), str(r["id"])) for r in rows})
        raise CliError(f"{log}: {_nothing(selection, known)}")
    return kept


def shown_id(suite: str, sample_id: str) -> str:
    """How listings across suites name a problem (what --sample-id accepts too)."""
    return qualified_id(suite, sample_id)


def print_notes(notes: Sequence[str]) -> None:
    for note in notes:
        print(note, file=sys.stderr)
