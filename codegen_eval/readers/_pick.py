"""The problem selection every reader offers (`problems=` globs, `limit=`), in one place."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from codegen_eval.types import Sample


def pick_problems(
    samples: Sequence[Sample],
    excluded: dict[str, str],
    problems: str | Sequence[str] | None,
    limit: int | None,
) -> tuple[list[Sample], dict[str, str]]:
    """The samples and exclusions whose ids match any glob of `problems` (all when None),
    then the first `limit` samples (exclusions are not cut: they are reported, not run)."""
    picked, kept = list(samples), dict(excluded)
    if problems:
        pats = [problems] if isinstance(problems, str) else list(problems)

        def keep(sample_id: str) -> bool:
            return any(fnmatch.fnmatchcase(sample_id, p) for p in pats)

        picked = [s for s in picked if keep(s.id)]
        kept = {i: r for i, r in kept.items() if keep(i)}
    if limit is not None:
        picked = picked[:limit]
    return picked, kept
