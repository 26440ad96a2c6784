"""Choosing problems of a suite by name glob, category and limit (one rule for every suite)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar


class _Problem(Protocol):
    @property
    def category(self) -> str: ...


P = TypeVar("P", bound=_Problem)


def select_problems(
    items: Iterable[P],
    problems: Sequence[str] | str | None,
    categories: Sequence[str] | str | None,
    limit: int | None,
    *,
    suite: str,
    names: Callable[[P], Iterable[str]],
) -> list[P]:
    """Items any of whose `names` matches one of the `problems` globs and whose category is
    one of `categories` (no globs / no categories: all), in the given order, first `limit`.
    Asking for something that matches nothing is an error naming the suite, not an empty run."""
    pats = [problems] if isinstance(problems, str) else list(problems or [])
    cats = {categories} if isinstance(categories, str) else set(categories or [])
    chosen = [
        p
        for p in items
        if (not pats or any(fnmatch.fnmatchcase(n, g) for n in names(p) for g in pats))
        and (not cats or p.category in cats)
    ]
    if (pats or cats) and not chosen:
        raise ValueError(f"no {suite} problem matches {pats or ''} {sorted(cats) or ''}".rstrip())
    return chosen[:limit] if limit is not None else chosen
