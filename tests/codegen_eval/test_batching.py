"""The runner with a scorer that takes several candidates per call (codegen_eval/batching.py):
every candidate gets its own score and record, batches never exceed the scorer's size nor
the run's sandbox slots, and a failing batch is an infra_error for its items only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from codegen_eval.batching import BatchScorer, batch_size
from codegen_eval.log import read_log
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import ReferenceSolver
from codegen_eval.types import Candidate, Sample, Score, Task


class Counting:
    """Passes a candidate whose code names its own sample; records what it was handed."""

    def __init__(self, size: int, fail_with: str | None = None, short: bool = False) -> None:
        self.batch_size = size
        self.fail_with = fail_with
        self.short = short
        self.batches: list[list[str]] = []
        self.singles = 0
        self.running = self.most_running = 0

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        self.singles += 1
        return (await self.score_batch([(sample, candidate)]))[0]

    async def score_batch(self, items: Sequence[tuple[Sample, Candidate]]) -> list[Score]:
        self.batches.append([s.id for s, _ in items])
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(0.01)  # a sandbox's worth of waiting, so batches overlap
            if self.fail_with and any(s.id == self.fail_with for s, _ in items):
                raise RuntimeError(f"scorer bug on {self.fail_with}")
            scores = [
                Score(1.0 if c.code == f"answer {s.id}" else 0.0,
                      "pass" if c.code == f"answer {s.id}" else "fail")
                for s, c in items
            ]  # fmt: skip
            return scores[:-1] if self.short else scores
        finally:
            self.running -= 1


def _task(scorer: object, n: int = 30) -> Task:
    samples = [Sample(f"s{i:02d}", "p", target=f"answer s{i:02d}") for i in range(n)]
    return Task("batchy", samples, scorer)  # type: ignore[arg-type]


async def test_candidates_are_batched_and_each_gets_its_own_score(tmp_path: Path) -> None:
    scorer = Counting(size=6)
    assert isinstance(scorer, BatchScorer) and batch_size(scorer) == 6
    log = tmp_path / "run.jsonl"
    cfg = RunConfig(progress=False, max_sandboxes=2)
    result = await run_eval([_task(scorer)], ReferenceSolver(), log, cfg)
    assert sorted(r["sample_id"] for r in result.records) == [f"s{i:02d}" for i in range(30)]
    assert all(r["status"] == "pass" for r in result.records)  # each score reached its sample
    assert len(read_log(log).scores) == 30
    sizes = [len(b) for b in scorer.batches]
    assert sum(sizes) == 30 and max(sizes) == 6 and len(sizes) < 30 // 2, sizes
    assert scorer.singles == 0 and scorer.most_running <= 2  # the sandbox slots still bound it


async def test_a_failing_batch_is_infra_error_for_its_items_only(tmp_path: Path) -> None:
    scorer = Counting(size=4, fail_with="s05")
    cfg = RunConfig(progress=False, max_sandboxes=2)
    result = await run_eval([_task(scorer, 12)], ReferenceSolver(), tmp_path / "r.jsonl", cfg)
    bad = [r for r in result.records if r["failure_class"] == "infra_error"]
    failed_batch = next(b for b in scorer.batches if "s05" in b)
    assert sorted(r["sample_id"] for r in bad) == sorted(failed_batch)
    assert all("scorer bug on s05" in r["explanation"] for r in bad)
    assert sum(r["status"] == "pass" for r in result.records) == 12 - len(failed_batch)


async def test_a_batch_with_too_few_scores_is_infra_error(tmp_path: Path) -> None:
    scorer = Counting(size=4, short=True)
    cfg = RunConfig(progress=False, max_sandboxes=1)
    result = await run_eval([_task(scorer, 5)], ReferenceSolver(), tmp_path / "r.jsonl", cfg)
    assert len(result.records) == 5
    assert all(r["failure_class"] == "infra_error" for r in result.records)
    assert "results for" in result.records[0]["explanation"]


async def test_batch_size_one_scores_one_at_a_time(tmp_path: Path) -> None:
    scorer = Counting(size=1)
    cfg = RunConfig(progress=False, max_sandboxes=2)
    await run_eval([_task(scorer, 5)], ReferenceSolver(), tmp_path / "r.jsonl", cfg)
    assert scorer.singles == 5 and all(len(b) == 1 for b in scorer.batches)


# -- the Slurm worker batches the same way ----------------------------------------------------
_WORKER_SCORERS: list[Counting] = []


def counting_tasks(n: int) -> list[Task]:
    """A worker's task factory ("module:function" in the batch's task spec)."""
    scorer = Counting(size=4)
    _WORKER_SCORERS.append(scorer)
    return [_task(scorer, n)]


async def test_the_slurm_worker_hands_a_batch_scorer_its_candidates_together(
    tmp_path: Path, monkeypatch
) -> None:
    from codegen_eval.executors import worker

    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "2")
    items = [
        {"key": f"k{i}", "suite": "batchy", "sample_id": f"s{i:02d}", "index": 0,
         "code": f"answer s{i:02d}" if i != 3 else "wrong"}
        for i in range(10)
    ]  # fmt: skip
    spec = {"factory": f"{__name__}:counting_tasks", "kwargs": {"n": 10}}
    out = tmp_path / "result-0.jsonl"
    written = await worker.score_batch({"task_spec": spec, "items": items}, out, "7_0")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert written == 10 and sorted(x["key"] for x in lines) == [f"k{i}" for i in range(10)]
    verdict = {x["key"]: x["score"]["status"] for x in lines}
    assert verdict["k3"] == "fail" and sum(v == "pass" for v in verdict.values()) == 9
    scorer = _WORKER_SCORERS[-1]
    assert scorer.singles == 0 and max(len(b) for b in scorer.batches) == 4
    assert len(scorer.batches) < 10 and scorer.most_running <= 2
