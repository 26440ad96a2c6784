"""Scoring several candidates per sandbox for scorers that can (`BatchScorer`).

A scorer with `score_batch(items) -> scores` and `batch_size` is handed the candidates that
are waiting together, up to `batch_size` at a time, instead of one per call: the Verilog
scorer then compiles and simulates them in one sandbox exec, which pays the sandbox's fixed
cost once. Nothing else changes for the run: every candidate still gets its own Score and
its own log record, in the same place, and identical candidates are still scored once
(the cache sits above this).

No task of its own: each candidate's coroutine queues its item, then waits for a sandbox
slot (the runner's semaphore, so `max_sandboxes` still bounds the sandboxes). Whoever gets a
slot scores the oldest waiting items, its own first if still waiting, and hands every item
its score; a coroutine whose item was taken by another just collects the result. The share
taken is the waiting items spread over the slots (at most `batch_size`), so the last items
do not all pile onto one slot while another idles. A batch that raises or runs past the
timeout gives each of its items an infra_error Score, as a single score would.
"""

from __future__ import annotations

import asyncio
import math
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from codegen_eval.types import Candidate, FailureClass, Sample, Score, ScoreStatus


@runtime_checkable
class BatchScorer(Protocol):
    batch_size: int

    async def score(self, sample: Sample, candidate: Candidate) -> Score: ...

    async def score_batch(self, items: Sequence[tuple[Sample, Candidate]]) -> list[Score]:
        """One Score per item, in order."""
        ...


def batch_size(scorer: Any) -> int:
    """How many candidates `scorer` takes per call: 1 unless it is a BatchScorer."""
    if not isinstance(scorer, BatchScorer):
        return 1
    return max(1, int(scorer.batch_size))


@dataclass(eq=False, slots=True)
class _Item:
    sample: Sample
    cand: Candidate
    result: asyncio.Future[Score] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def _error(why: str) -> Score:
    return Score(0.0, ScoreStatus.ERROR, FailureClass.INFRA_ERROR, explanation=why)


async def guarded_scores(
    scoring: Callable[[], Awaitable[list[Score]]], n: int, timeout_s: float
) -> list[Score]:
    """`scoring()`'s n Scores, bounded by `timeout_s`. A scorer that hangs, raises, or
    returns other than n Scores gives n infra_error Scores, never an exception (one
    candidate's `runner.guarded_score` and a batch's alike)."""
    try:
        async with asyncio.timeout(timeout_s):
            scores = await scoring()
        if len(scores) != n:
            raise TypeError(f"score_batch returned {len(scores)} results for {n} items")
        for s in scores:
            if not isinstance(s, Score):
                raise TypeError(f"scorer returned {type(s).__name__}, not Score")
        return scores
    except TimeoutError:
        return [_error(f"scorer did not finish within {timeout_s:.0f}s") for _ in range(n)]
    except Exception as exc:  # a broken scorer is recorded, never fatal
        why = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return [_error(why) for _ in range(n)]


def batcher_for(
    scorer: Any, slots: asyncio.Semaphore, n_slots: int, timeout_s: float
) -> ScoreBatcher | None:
    """A batcher for `scorer` where it takes several candidates per call, else None (it is
    then scored one candidate per slot, as before)."""
    if batch_size(scorer) <= 1:
        return None
    return ScoreBatcher(scorer, slots, n_slots, timeout_s)


class ScoreBatcher:
    """Batches one scorer's calls; `slots` is shared with every other scorer of the run."""

    def __init__(
        self, scorer: BatchScorer, slots: asyncio.Semaphore, n_slots: int, timeout_s: float
    ) -> None:
        self.scorer = scorer
        self.slots = slots
        self.n_slots = max(1, n_slots)
        self.size = batch_size(scorer)
        self.timeout_s = timeout_s
        self.waiting: list[_Item] = []
        self.sizes: list[int] = []  # every batch scored, for tests and the curious

    async def score(self, sample: Sample, cand: Candidate) -> Score:
        item = _Item(sample, cand)
        self.waiting.append(item)
        try:
            async with self.slots:
                # one turn of the loop first: candidates made in the same burst (a samples
                # file, the reference solver) are then all waiting, and the first batch is
                # full rather than one candidate alone
                await asyncio.sleep(0)
                if self.waiting:
                    await self._run(self._take(item))
            return await asyncio.shield(item.result)
        finally:
            if item in self.waiting:  # cancelled before anyone took it
                self.waiting.remove(item)

    def _take(self, own: _Item) -> list[_Item]:
        share = min(self.size, max(1, math.ceil(len(self.waiting) / self.n_slots)))
        batch = [own] if own in self.waiting else []
        batch += [x for x in self.waiting if x is not own][: share - len(batch)]
        self.waiting = [x for x in self.waiting if x not in batch]
        return batch

    async def _run(self, batch: list[_Item]) -> None:
        if not batch:
            return
        self.sizes.append(len(batch))
        try:
            scores = await guarded_scores(
                lambda: self.scorer.score_batch([(x.sample, x.cand) for x in batch]),
                len(batch),
                self.timeout_s,
            )
        except BaseException:  # cancelled: the items' own coroutines are cancelled with us
            for x in batch:
                if not x.result.done():
                    x.result.cancel()
            raise
        for x, s in zip(batch, scores, strict=True):
            if not x.result.done():
                x.result.set_result(s)


__all__ = ["BatchScorer", "ScoreBatcher", "batch_size", "batcher_for", "guarded_scores"]
