"""The problem selection every reader offers (`problems=` globs, `limit=`), in one place."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence

from codegen_eval.types import Sample

# which problems a reader loads: globs on its ids, or a test of an id (the CLI's common
# selection, codegen_eval/problem_ids.py), or None for all
Problems = str | Sequence[str] | Callable[[str], bool] | None


def pick_problems(
    samples: Sequence[Sample],
    excluded: dict[str, str],
    problems: Problems,
    limit: int | None,
) -> tuple[list[Sample], dict[str, str]]:
    """The samples and exclusions whose ids match any glob of `problems`, or pass its test
    (all when None), then the first `limit` samples (exclusions are not cut: they are
    reported, not run)."""
    picked, kept = list(samples), dict(excluded)
    if problems:
        if callable(problems):
            keep = problems
        else:
            pats = [problems] if isinstance(problems, str) else list(problems)

            def keep(sample_id: str) -> bool:
                return any(fnmatch.fnmatchcase(sample_id, p) for p in pats)

        picked = [s for s in picked if keep(s.id)]
        kept = {i: r for i, r in kept.items() if keep(i)}
    if limit is not None:
        picked = picked[:limit]
    return picked, kept


def apply_calibration(
    samples: list[Sample],
    excluded: dict[str, str],
    measured: dict[str, str],
    include_known_bad: bool,
    reason: Callable[[str, str], str] = lambda sample_id, why: why,
) -> list[Sample]:
    """The samples to run, given `measured` ({id: why} for references that fail on this
    machine's toolchain): with include_known_bad they all run, the failing ones marked
    `known_bad`; otherwise the failing ones move into `excluded` (updated in place) with
    `reason(id, why)`."""
    if include_known_bad:
        for s in samples:
            if s.id in measured:
                s.metadata["known_bad"] = measured[s.id]
        return samples
    excluded.update({i: reason(i, why) for i, why in measured.items()})
    return [s for s in samples if s.id not in measured]
