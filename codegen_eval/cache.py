"""Score cache: identical candidates are compiled and scored once.

The key is a SHA-256 of (suite, sample id, code). Concurrent requests for the same key share
one in-flight scoring (the second awaits the first's future), so n identical samples at
temperature 0 cost one compile. A resumed run seeds the cache from the scores in its log.
Infrastructure errors are not cached: the next identical candidate tries again.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import replace

from codegen_eval.types import FailureClass, Score


def code_hash(suite: str, sample_id: str, code: str) -> str:
    h = hashlib.sha256()
    for part in (suite, sample_id, code):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguous joins
        h.update(data)
    return h.hexdigest()


def _copy(score: Score) -> Score:
    return replace(score, metrics=dict(score.metrics))


class ScoreCache:
    def __init__(self) -> None:
        self._done: dict[str, Score] = {}
        self._pending: dict[str, asyncio.Future[Score]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._done)

    def __contains__(self, key: str) -> bool:
        return key in self._done

    def put(self, key: str, score: Score) -> None:
        if score.failure_class != FailureClass.INFRA_ERROR:
            self._done[key] = _copy(score)

    def get(self, key: str) -> Score | None:
        s = self._done.get(key)
        return _copy(s) if s is not None else None

    async def get_or_score(
        self, key: str, compute: Callable[[], Awaitable[Score]]
    ) -> tuple[Score, bool]:
        """(score, cached). `cached` is True when no new scoring was done for this call."""
        if key in self._done:
            self.hits += 1
            return _copy(self._done[key]), True
        if key in self._pending:
            self.hits += 1
            # shield: one waiter being cancelled must not cancel the shared scoring
            return _copy(await asyncio.shield(self._pending[key])), True
        self.misses += 1
        fut: asyncio.Future[Score] = asyncio.get_running_loop().create_future()
        self._pending[key] = fut
        try:
            score = await compute()
        except BaseException as exc:
            fut.set_exception(exc) if not isinstance(exc, asyncio.CancelledError) else fut.cancel()
            fut.exception() if not fut.cancelled() else None  # mark retrieved: no loop warning
            raise
        finally:
            self._pending.pop(key, None)
        self.put(key, score)
        fut.set_result(score)
        return _copy(score), False
