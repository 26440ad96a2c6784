"""The benchmark runner: generate candidates, score them in sandboxes, log every result.

Shape of a run (one asyncio TaskGroup, nothing outlives it):

    for each (task, sample, index) still missing from the log:
        generate  --(candidate logged)-->  score (bounded by max_sandboxes)  --> score logged

A scorer that scores several candidates per sandbox (`batching.BatchScorer`, e.g. Verilog's)
gets the candidates waiting together, each batch taking one of the max_sandboxes slots.

Scoring of a candidate starts as soon as it exists, so generation and compilation overlap.
Identical candidates (same suite, sample and code) are scored once (`cache.ScoreCache`). A
scorer that raises is recorded as `infra_error` with the message; it never stops the run. A
model that cannot be reached stops the run with `RunAborted` naming it (every later request
would fail the same way). Ctrl-C cancels the group: everything scored so far is in the log and
`resume=True` continues from there without redoing it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codegen_eval.batching import ScoreBatcher, batcher_for, guarded_scores
from codegen_eval.cache import ScoreCache, code_hash
from codegen_eval.errors import CodegenEvalError
from codegen_eval.log import (
    RunLog,
    failed_generation,
    is_infra_error,
    read_log,
    score_key,
    versions,
)
from codegen_eval.problem_ids import Selection
from codegen_eval.progress import Progress as _Progress
from codegen_eval.records import CandidateRecord, EndRecord, ExcludedRecord, ScoreRecord
from codegen_eval.types import (
    Candidate,
    Executor,
    FailureClass,
    IncrementalSolver,
    Sample,
    Score,
    ScoreStatus,
    Solver,
    Task,
)

MAX_EXPLANATION = 4000


class RunAborted(CodegenEvalError, RuntimeError):
    """The run cannot go on (e.g. the model server is unreachable). The log keeps what was
    done; fix the cause and resume."""


@dataclass
class RunConfig:
    n: int = 1
    ks: tuple[int, ...] = (1,)
    max_sandboxes: int = field(default_factory=lambda: os.cpu_count() or 1)
    max_generations: int = 16  # requests in flight; appl's per-model limits apply too
    limit: int | None = None  # first L samples per suite (after --filter)
    filter: str | None = None  # a --filter glob (problem_ids: the id or a '/'-tail of it)
    selection: Selection | None = None  # the CLI's --filter/--match/--sample-id, all at once
    score_timeout_s: float = 1800.0  # a scorer hung longer than this is an infra error
    progress: bool = True  # a bar on a terminal, else a line every progress_interval_s
    progress_interval_s: float = 30.0
    header: dict[str, Any] = field(default_factory=dict)  # model, solver, options for the log
    # None: score here (local). Else an executor (codegen_eval.executors), e.g. SlurmExecutor:
    # entered for the run, scores every candidate; its info goes into each score record.
    executor: Executor | None = None
    # resume: candidates whose logged score is infra_error are generated or scored again
    retry_infra: bool = False

    def chosen(self) -> Selection:
        """`selection` with `filter` (the Python API's one glob) added to its globs."""
        sel = self.selection or Selection()
        return replace(sel, globs=(*sel.globs, self.filter)) if self.filter else sel


@dataclass
class RunResult:
    log_path: Path
    records: list[ScoreRecord]  # every score record of the run (resumed ones included)
    excluded: list[ExcludedRecord]
    scored_now: int  # candidates scored by this invocation (cache hits included)
    cache_hits: int
    interrupted: bool = False


def _nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def select_samples(task: Task, config: RunConfig) -> list[Sample]:
    samples = list(task.dataset)
    if chosen := config.chosen():
        samples = [s for s in samples if chosen.matches(task.name, s.id)]
    if config.limit is not None:
        samples = samples[: config.limit]
    return samples


def _language(sample: Sample) -> str:
    return str(sample.metadata.get("language", ""))


def _variant(sample: Sample) -> str:
    return str(sample.metadata.get("variant", ""))


def _model_unreachable(exc: BaseException) -> bool:
    try:
        from appl.errors import ModelConnectionError
    except ImportError:  # pragma: no cover - appl is a dependency
        return False
    return isinstance(exc, ModelConnectionError)


async def guarded_score(scorer: Any, sample: Sample, cand: Candidate, timeout_s: float) -> Score:
    """`scorer.score` bounded by `timeout_s`; a scorer that hangs or raises gives an
    infra_error Score, never an exception (the slurm worker scores through this too)."""

    async def one() -> list[Score]:
        return [await scorer.score(sample, cand)]

    return (await guarded_scores(one, 1, timeout_s))[0]


class _Run:
    def __init__(
        self, tasks: Sequence[Task], solver: Solver | None, config: RunConfig, log: RunLog
    ):
        self.tasks = tasks
        self.solver = solver
        self.config = config
        self.log = log
        self.cache = ScoreCache()
        self.score_sem = asyncio.Semaphore(max(1, config.max_sandboxes))
        self.batchers: dict[str, ScoreBatcher | None] = {}  # task name -> its batcher
        self.gen_sem = asyncio.Semaphore(max(1, config.max_generations))
        self.records: list[ScoreRecord] = []
        self.scored_now = 0
        self.progress = _Progress(False)
        self.executor_info: dict[str, dict[str, Any]] = {}  # code hash -> where it was scored

    # ------------------------------------------------------------------ scoring
    def _batcher(self, task: Task) -> ScoreBatcher | None:
        """The task's batcher where its scorer takes several candidates per call."""
        if task.name not in self.batchers:
            c = self.config
            self.batchers[task.name] = batcher_for(
                task.scorer, self.score_sem, c.max_sandboxes, c.score_timeout_s
            )
        return self.batchers[task.name]

    async def _guarded_score(self, task: Task, sample: Sample, cand: Candidate) -> Score:
        return await guarded_score(task.scorer, sample, cand, self.config.score_timeout_s)

    async def score(self, task: Task, sample: Sample, cand: Candidate) -> None:
        key = code_hash(task.name, sample.id, cand.code)
        t0 = time.monotonic()
        executor = self.config.executor
        info: dict[str, Any] | None = None
        if executor is None and (batcher := self._batcher(task)) is not None:
            # the batcher takes a sandbox slot per batch of candidates (batching.py)
            score, cached = await self.cache.get_or_score(key, lambda: batcher.score(sample, cand))
        elif executor is None:
            async with self.score_sem:
                score, cached = await self.cache.get_or_score(
                    key, lambda: self._guarded_score(task, sample, cand)
                )
        else:  # the cluster bounds the concurrency, not max_sandboxes

            async def remote() -> Score:
                s, self.executor_info[key] = await executor.score(task, sample, cand, key)
                return s

            score, cached = await self.cache.get_or_score(key, remote)
            info = self.executor_info.get(key)
        rec = ScoreRecord(
            type="score",
            suite=task.name,
            sample_id=sample.id,
            index=cand.index,
            code_hash=key,
            value=score.value,
            status=score.status,
            failure_class=score.failure_class,
            metrics=score.metrics,
            explanation=score.explanation[:MAX_EXPLANATION],
            language=_language(sample),
            variant=_variant(sample),
            cached=cached,
            elapsed_s=round(time.monotonic() - t0, 4),
            candidate={k: v for k, v in cand.metadata.items() if k != "raw"},
        )
        if score.metadata:
            rec["score_metadata"] = score.metadata
        if info is not None:
            rec["executor"] = info
        self.log.write(rec)
        self.records.append(rec)
        self.scored_now += 1
        self.progress.done(score=1)

    # --------------------------------------------------------------- generation
    async def generate_and_score(
        self, tg: asyncio.TaskGroup, task: Task, solver: Any, sample: Sample, index: int
    ) -> None:
        async with self.gen_sem:
            try:
                cand = await solver.solve_one(sample, index)
            except Exception as exc:
                if _model_unreachable(exc):
                    raise RunAborted(f"model unreachable: {exc}") from exc
                cand = Candidate(sample.id, index, "", metadata={"generation_error": str(exc)})
        self.progress.done(gen=1)
        self._start_scoring(tg, task, sample, cand)

    def _start_scoring(
        self, tg: asyncio.TaskGroup, task: Task, sample: Sample, cand: Candidate
    ) -> None:
        if cand.metadata.get("missing"):  # a samples file with fewer than n entries
            self.progress.add(score=-1)
            return
        self.log.write(
            CandidateRecord(
                type="candidate",
                suite=task.name,
                sample_id=sample.id,
                index=cand.index,
                code=cand.code,
                raw=cand.raw if cand.raw != cand.code else "",
                metadata=cand.metadata,
            )
        )
        if "generation_error" in cand.metadata:
            self._record_generation_error(task, sample, cand)
            return
        tg.create_task(self.score(task, sample, cand))

    def _record_generation_error(self, task: Task, sample: Sample, cand: Candidate) -> None:
        rec = ScoreRecord(
            type="score",
            suite=task.name,
            sample_id=sample.id,
            index=cand.index,
            code_hash="",
            value=0.0,
            status=ScoreStatus.ERROR,
            failure_class=FailureClass.INFRA_ERROR,
            metrics={},
            explanation=f"generation failed: {cand.metadata['generation_error']}"[:MAX_EXPLANATION],
            language=_language(sample),
            variant=_variant(sample),
            cached=False,
            candidate=cand.metadata,
        )
        self.log.write(rec)
        self.records.append(rec)
        self.scored_now += 1
        self.progress.done(score=1)

    async def solve_all_then_score(
        self, tg: asyncio.TaskGroup, task: Task, solver: Solver, sample: Sample, todo: set[int]
    ) -> None:
        """For solvers without solve_one (e.g. agents): one solve(sample, n) call."""
        async with self.gen_sem:
            cands = await solver.solve(sample, self.config.n)
        for cand in cands:
            if cand.index in todo:
                self.progress.done(gen=1)
                self._start_scoring(tg, task, sample, cand)

    # --------------------------------------------------------------------- main
    async def run(
        self, resumed: dict[str, ScoreRecord], pending: dict[str, CandidateRecord]
    ) -> None:
        plan: list[tuple[Task, Any, Sample, list[int], list[Candidate]]] = []
        for task in self.tasks:
            solver = self.solver or task.solver
            if solver is None:
                raise ValueError(f"suite {task.name!r} has no solver; choose one")
            for sample in select_samples(task, self.config):
                todo: list[int] = []
                logged: list[Candidate] = []
                for i in range(self.config.n):
                    key = score_key(task.name, sample.id, i)
                    if key in resumed:
                        continue
                    if key in pending:  # generated before the interruption, not yet scored
                        c = pending[key]
                        logged.append(Candidate(sample.id, i, c["code"], c["raw"], c["metadata"]))
                    else:
                        todo.append(i)
                if todo or logged:
                    plan.append((task, solver, sample, todo, logged))

        self.progress.add(
            gen=sum(len(p[3]) for p in plan), score=sum(len(p[3]) + len(p[4]) for p in plan)
        )
        async with asyncio.TaskGroup() as tg:
            for task, solver, sample, todo, logged in plan:
                for cand in logged:
                    tg.create_task(self.score(task, sample, cand))
                if not todo:
                    continue
                if isinstance(solver, IncrementalSolver):
                    for i in todo:
                        tg.create_task(self.generate_and_score(tg, task, solver, sample, i))
                else:
                    tg.create_task(self.solve_all_then_score(tg, task, solver, sample, set(todo)))


async def run_eval(
    tasks: Sequence[Task],
    solver: Solver | None,
    log_path: str | os.PathLike[str],
    config: RunConfig | None = None,
    *,
    resume: bool = False,
) -> RunResult:
    """Run `tasks` with `solver` (None: each task's own solver), logging to `log_path`.

    With resume=True an existing log is continued: candidates already scored are kept, ones
    generated but not scored are scored, the rest are generated. Without it an existing
    non-empty log is an error (nothing is overwritten).
    """
    config = config or RunConfig()
    if config.n < 1:
        raise ValueError("n must be >= 1")
    if config.limit is not None and config.limit < 1:
        raise ValueError(f"limit must be >= 1 (got {config.limit})")
    path = Path(log_path)
    header = {
        "suites": [t.name for t in tasks],
        "n": config.n,
        "ks": list(config.ks),
        "versions": versions(),
        **config.header,
    }
    # What a suite wants readers of the log to know (e.g. ParEval's core cap and verdict mode).
    notes = {t.name: dict(t.log_header) for t in tasks if t.log_header}
    if notes:
        header["suite_notes"] = notes
    resumed: dict[str, ScoreRecord] = {}
    pending: dict[str, CandidateRecord] = {}
    excluded_logged: set[tuple[str, str]] = set()
    if resume and _nonempty(path):
        previous = read_log(path)
        resumed = dict(previous.scores)
        if config.retry_infra:  # not results: the harness or the model server failed
            resumed = {k: r for k, r in resumed.items() if not is_infra_error(r)}
        pending = {
            k: v
            for k, v in previous.candidates.items()
            if k not in resumed and not failed_generation(v)
        }
        excluded_logged = {(e["suite"], e["sample_id"]) for e in previous.excluded}
        log = RunLog.append(path, header)
    else:
        log = RunLog.create(path, header)

    run = _Run(tasks, solver, config, log)
    for rec in resumed.values():  # identical candidates of a resumed run hit the cache
        if rec["code_hash"] and not is_infra_error(rec):
            run.cache.put(
                rec["code_hash"],
                Score(
                    rec["value"],
                    ScoreStatus(rec["status"]),
                    rec["failure_class"],
                    dict(rec["metrics"]),
                    rec["explanation"],
                    metadata=dict(rec.get("score_metadata") or {}),
                ),
            )
    excluded: list[ExcludedRecord] = []
    # A --limit run covers the first N scorable problems only: which excluded problems would
    # have been among them is unknowable, so none enters the upstream-comparable totals (they
    # would count failures for problems the run never selected). --filter is exact.
    for task in tasks if config.limit is None else ():
        for sample_id, reason in task.excluded.items():
            if not config.chosen().matches(task.name, sample_id):
                continue  # the denominators follow the selection
            left_out = ExcludedRecord(
                type="excluded", suite=task.name, sample_id=sample_id, reason=str(reason)
            )
            excluded.append(left_out)
            if (task.name, sample_id) not in excluded_logged:
                log.write(left_out)

    interrupted = True
    try:
        with _Progress(config.progress, config.progress_interval_s) as progress:
            run.progress = progress
            if config.executor is None:
                await run.run(resumed, pending)
            else:
                config.executor.on_status = progress.status
                async with config.executor:
                    await run.run(resumed, pending)
        interrupted = False
    except BaseExceptionGroup as group:
        # Surface the first real cause (RunAborted, a solver bug) instead of the group.
        aborted = group.subgroup(RunAborted)
        raise (aborted.exceptions[0] if aborted else group.exceptions[0]) from None
    finally:
        log.write(EndRecord(type="end", interrupted=interrupted, scored=run.scored_now))
        log.close()
    return RunResult(
        log_path=path,
        records=[*resumed.values(), *run.records],
        excluded=excluded,
        scored_now=run.scored_now,
        cache_hits=run.cache.hits,
        interrupted=interrupted,
    )


async def _interruptible(coro: Any) -> Any:
    """Run `coro` cancelling it on SIGINT/SIGTERM through the event loop.

    asyncio.run's own SIGINT handler runs Python code at an arbitrary point of the main
    thread; measured here, it hangs a loop that keeps spawning subprocesses (the handler can
    land inside subprocess start-up). A loop signal handler only wakes the loop, so the
    cancellation arrives at an await and every finally block (the log's end record) runs.
    """
    import signal

    task = asyncio.ensure_future(coro)
    loop = asyncio.get_running_loop()
    interrupted = False

    def on_signal() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            continue
    try:
        return await task
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def run_eval_sync(
    tasks: Sequence[Task],
    solver: Solver | None,
    log_path: str | os.PathLike[str],
    config: RunConfig | None = None,
    *,
    resume: bool = False,
) -> RunResult:
    """Blocking wrapper of `run_eval` for scripts and the CLI. Ctrl-C (or SIGTERM) cancels the
    run cleanly and raises KeyboardInterrupt; the log holds everything finished."""
    return asyncio.run(
        _interruptible(_closing_models(run_eval(tasks, solver, log_path, config, resume=resume)))
    )


async def _closing_models(run: Awaitable[RunResult]) -> RunResult:
    """The sync wrapper owns its event loop, so it also closes the model clients the run
    opened (an async caller of run_eval owns its loop and closes them itself)."""
    from appl.models import close_models

    try:
        return await run
    finally:
        await close_models()
