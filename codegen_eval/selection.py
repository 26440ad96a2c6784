"""Checking which problems a run will cover before it starts, so that a filter, a limit or a
samples file that selects nothing is an error naming valid ids, not an empty table.

    check_selection(tasks, config)              -> {suite: selected samples}; raises on none
    match_samples_file(solver, tasks, selected) -> notes for stderr; raises when nothing matches

The selection rule itself (qualified ids SUITE/ID, --filter/--match/--sample-id) is in
problem_ids.py; a selection that matches nothing names the closest ids (difflib).

Short ids: a samples file written with `Prob001` for the problem `Prob001_zero` is accepted
when exactly one problem id starts with `Prob001_` (the part before the first `_`, as
VerilogEval's file names and many users' scripts shorten it); the mapping is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from codegen_eval.errors import CodegenEvalError
from codegen_eval.problem_ids import Selection, closest_ids, qualified_id
from codegen_eval.runner import RunConfig, select_samples
from codegen_eval.types import Sample, Task

__all__ = ["SelectionError", "check_selection", "match_samples_file"]

_SHOW = 5  # ids named in a message


class SelectionError(CodegenEvalError, ValueError):
    """The options select no problem (or a samples file matches none)."""


class _SamplesSource(Protocol):
    path: Any

    @property
    def sample_ids(self) -> list[str]: ...

    def rename_ids(self, mapping: dict[str, str]) -> None: ...


def _some(ids: Iterable[str], n: int = _SHOW) -> str:
    ids = list(ids)
    text = ", ".join(ids[:n])
    return text + (f" (+{len(ids) - n} more)" if len(ids) > n else "")


def _examples(tasks: Sequence[Task]) -> str:
    return "; ".join(f"{t.name}: {_some(s.id for s in t.dataset)}" for t in tasks if t.dataset)


def check_selection(tasks: Sequence[Task], config: RunConfig) -> dict[str, list[Sample]]:
    """The samples each suite will run; SelectionError when the selection/limit leaves none or
    a --sample-id names no problem."""
    if config.limit is not None and config.limit < 1:
        raise SelectionError(f"--limit must be >= 1 (got {config.limit})")
    chosen = config.chosen()
    known = [(t.name, s.id) for t in tasks for s in t.dataset]
    excluded = [(t.name, i) for t in tasks for i in t.excluded]
    if missing := chosen.unknown_ids(known + excluded):
        # An exact id is meant: one that names nothing is a mistake even when others match.
        raise SelectionError(
            f"--sample-id {missing[0]!r} names no problem"
            + (f" (nor do {_some(missing[1:], 3)})" if len(missing) > 1 else "")
            + f"; closest: {', '.join(closest_ids(missing[0], known + excluded))}"
        )
    selected = {t.name: select_samples(t, config) for t in tasks}
    if any(selected.values()):
        return selected
    if not known:
        more = f" ({len(excluded)} excluded, see the reader's reasons)" if excluded else ""
        raise SelectionError(
            f"the suites {', '.join(t.name for t in tasks)} have no problems{more}"
        )
    if only := [(t, i) for t in tasks for i in t.excluded if chosen.matches(t.name, i)]:
        task, sid = only[0]
        raise SelectionError(
            f"{chosen.describe()} selects only excluded problems ({len(only)}), none to run; "
            f"{qualified_id(task.name, sid)}: {task.excluded[sid]}"
        )
    raise SelectionError(nothing_selected(chosen, known + excluded, tasks))


def nothing_selected(
    chosen: Selection, known: Sequence[tuple[str, str]], tasks: Sequence[Task] = ()
) -> str:
    """The one-line message for a selection that matches none of `known` ((suite, id))."""
    hint = ""
    if len(chosen.globs) == 1 and not chosen.substrings and not chosen.ids:
        pattern = chosen.globs[0]
        wider = Selection.of(f"{pattern}*", whole_id=chosen.whole_id)
        if any(wider.matches(suite, sid) for suite, sid in known):
            hint = f" (did you mean --filter '{pattern}*'? a glob matches whole ids or /-tails)"
        elif any(Selection.of(substrings=pattern).matches(s, i) for s, i in known):
            hint = f" (did you mean --match '{pattern}'? a glob matches whole ids or /-tails)"
    word = next(iter(chosen.globs + chosen.substrings + chosen.ids), "")
    examples = f"; ids look like {_examples(tasks)}" if tasks else ""
    return (
        f"{chosen.describe()} matches no problem id{hint}; closest: "
        f"{', '.join(closest_ids(word, known))}{examples}"
    )


def _short_id_mapping(unknown: Iterable[str], known: set[str]) -> dict[str, str]:
    """file id -> problem id, for ids that are the unique `<id>_...` prefix of one problem."""
    by_prefix: dict[str, list[str]] = {}
    for full in known:
        head = full
        while "_" in head:
            head = head.rsplit("_", 1)[0]
            by_prefix.setdefault(head, []).append(full)
    mapping: dict[str, str] = {}
    for short in unknown:
        fulls = by_prefix.get(short, [])
        if len(fulls) == 1:
            mapping[short] = fulls[0]
    # Two short ids for one problem, or a short id next to the full one, stay unmatched: the
    # file would hold two sets of candidates for one problem.
    targets = list(mapping.values())
    return {s: f for s, f in mapping.items() if targets.count(f) == 1}


def match_samples_file(
    solver: _SamplesSource, tasks: Sequence[Task], selected: dict[str, list[Sample]]
) -> list[str]:
    """Match a samples file's ids to the problems (renaming unambiguous short ids in the
    solver). Returns notes for stderr; raises SelectionError when no selected problem has a
    candidate in the file."""
    known = {s.id for t in tasks for s in t.dataset}
    excluded = {sid for t in tasks for sid in t.excluded}
    file_ids = list(solver.sample_ids)
    if not file_ids:
        raise SelectionError(f"samples file {solver.path} has no candidates")
    unknown = [i for i in file_ids if i not in known]
    # Ids copied from `list` across suites are qualified (SUITE/ID): each is its problem when
    # the file does not also hold the stored id (two sets of candidates for one problem).
    stored = {qualified_id(t.name, s.id): s.id for t in tasks for s in t.dataset}
    qualified = {i: stored[i] for i in unknown if i in stored and stored[i] not in file_ids}
    rest = [i for i in unknown if i not in qualified and i not in excluded]
    mapping = _short_id_mapping(rest, known - set(file_ids) - set(qualified.values()))
    notes: list[str] = []
    if qualified:
        solver.rename_ids(qualified)
        notes.append(
            f"note: {len(qualified)} ids in {solver.path} are qualified ids (SUITE/ID), each "
            f"taken as its problem: {_some([f'{q} -> {i}' for q, i in qualified.items()], 3)}"
        )
    if mapping:
        solver.rename_ids(mapping)
        pairs = [f"{s} -> {f}" for s, f in mapping.items()]
        notes.append(
            f"note: {len(mapping)} ids in {solver.path} are short ids, each taken as the one "
            f"problem id it starts: {_some(pairs, 3)}"
        )
    on_excluded = [i for i in unknown if i in excluded]
    unmatched = [i for i in rest if i not in mapping]
    matched = set(solver.sample_ids) & known
    if not matched:
        raise SelectionError(
            f"no id in samples file {solver.path} matches a problem (file ids: "
            f"{_some(file_ids, 3)}); problem ids look like {_examples(tasks)}"
        )
    if unmatched:
        notes.append(
            f"warning: {len(unmatched)} ids in {solver.path} match no problem and are ignored: "
            f"{_some(unmatched)}"
        )
    if on_excluded:
        notes.append(
            f"note: {len(on_excluded)} ids in {solver.path} are excluded problems (reasons in "
            f"the table): {_some(on_excluded)}"
        )
    chosen = [s.id for samples in selected.values() for s in samples]
    covered = [i for i in chosen if i in matched]
    if not covered:
        raise SelectionError(
            f"none of the {len(chosen)} selected problems has a candidate in {solver.path} "
            f"(--filter/--limit leave {_some(chosen, 3)}; the file has {_some(sorted(matched), 3)})"
        )
    if len(covered) < len(chosen):
        missing = [i for i in chosen if i not in matched]
        notes.append(
            f"warning: {len(missing)} of {len(chosen)} selected problems have no candidate in "
            f"{solver.path} and are left out: {_some(missing)}"
        )
    return notes
