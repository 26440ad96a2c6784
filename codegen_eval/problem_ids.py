"""Problem ids and the one selection rule every suite and reader shares.

Suites name their problems in their own ways (`p01_basic_gates`, `omp-pragma/atomic_histogram`,
`axpy/serial`, `HumanEval/0`), and run logs store those ids as they are (a resumed run and a
comparison of old logs match records by them). Selection does not depend on the scheme:

    qualified id   SUITE/ID, where ID is the stored id without a leading `SUITE/`
                   (verilog/p01_basic_gates, omp-pragma/atomic_histogram,
                   hpc-kernels/axpy/serial, humaneval/HumanEval/0)
    --filter GLOB  fnmatch on the qualified id or on any tail of it that starts after a '/'
                   (so 'atomic*', 'axpy/*', 'serial', 'p0*', 'omp-pragma/*' each select what
                   they look like, whatever the suite)
    --match TEXT   a case-insensitive substring of the qualified id (pytest's -k, which
                   `run -k` already is: pass@k)
    --sample-id ID exactly the stored id or the qualified id

Each option given narrows the selection (a problem must satisfy all); repeating one option
widens it (any of its values). `whole_id` keeps the rule that logs written before this one
recorded: a glob on the stored id only, so resuming such a log selects what it selected.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Selection", "closest_ids", "id_tails", "qualified_id"]


def qualified_id(suite: str, sample_id: str) -> str:
    """`SUITE/ID`, without doubling a suite prefix the stored id already has."""
    return sample_id if sample_id.startswith(f"{suite}/") else f"{suite}/{sample_id}"


def id_tails(suite: str, sample_id: str) -> list[str]:
    """The qualified id and each tail of it after a '/': what a --filter glob is tried on."""
    parts = qualified_id(suite, sample_id).split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def _as_tuple(values: str | Iterable[str] | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        return (values,)
    return tuple(values)


@dataclass(frozen=True)
class Selection:
    """Which problems a command covers; empty selects every problem."""

    globs: tuple[str, ...] = ()
    substrings: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    whole_id: bool = False

    @classmethod
    def of(
        cls,
        globs: str | Iterable[str] | None = None,
        substrings: str | Iterable[str] | None = None,
        ids: str | Iterable[str] | None = None,
        *,
        whole_id: bool = False,
    ) -> Selection:
        return cls(_as_tuple(globs), _as_tuple(substrings), _as_tuple(ids), whole_id)

    def __bool__(self) -> bool:
        return bool(self.globs or self.substrings or self.ids)

    def _glob_hit(self, suite: str, sample_id: str) -> bool:
        keys = [sample_id] if self.whole_id else id_tails(suite, sample_id)
        return any(fnmatch.fnmatchcase(k, g) for g in self.globs for k in keys)

    def matches(self, suite: str, sample_id: str) -> bool:
        if self.globs and not self._glob_hit(suite, sample_id):
            return False
        full = qualified_id(suite, sample_id)
        if self.substrings and not any(s.lower() in full.lower() for s in self.substrings):
            return False
        return not self.ids or sample_id in self.ids or full in self.ids

    def describe(self) -> str:
        """The selection as the options that make it, for messages."""
        parts = [f"--filter {g!r}" for g in self.globs]
        parts += [f"--match {s!r}" for s in self.substrings]
        parts += [f"--sample-id {i!r}" for i in self.ids]
        return " ".join(parts) or "(no selection)"

    def unknown_ids(self, known: Iterable[tuple[str, str]]) -> list[str]:
        """The --sample-id values that name no problem of `known` ((suite, id) pairs)."""
        names = {n for suite, sid in known for n in (sid, qualified_id(suite, sid))}
        return [i for i in self.ids if i not in names]


def closest_ids(wanted: str, known: Sequence[tuple[str, str]], n: int = 3) -> list[str]:
    """The qualified ids most like `wanted` (a glob's or substring's letters), by difflib's
    ratio against each id's tails and its words (so a typo in one word, 'lsfr', still finds
    'Prob086_lfsr5'); never empty when `known` is not."""
    key = re.sub(r"[*?\[\]]", "", wanted).strip("/").lower()
    matcher = difflib.SequenceMatcher(b=key)
    scored: dict[str, float] = {}
    for suite, sid in known:
        full = qualified_id(suite, sid)
        pieces = id_tails(suite, sid) + re.split(r"[/_.-]+", sid)
        best = 0.0
        for piece in pieces:
            matcher.set_seq1(piece.lower())
            best = max(best, matcher.ratio())
        scored[full] = max(best, scored.get(full, 0.0))
    ranked = sorted(scored, key=lambda i: -scored[i])  # stable: ties keep the suite's order
    near = [i for i in ranked if scored[i] >= 0.5][:n]
    return near or [qualified_id(s, i) for s, i in known[:n]]
