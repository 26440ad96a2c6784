"""Event-driven execution of a plan DAG that grows while it runs.

There is no polling loop. State changes happen in exactly three places, all on the event
loop thread: `submit` (a step's line was accepted), and the end of a step's task (done or
failed). Each of them updates dependents and calls `_pump`, which starts as many ready steps
as the limits allow, longest remaining path first.

Structured concurrency: every step runs in the executor's TaskGroup, so leaving the
`async with` (normally or by cancellation/error) cancels and awaits them all. A tool's
exception never escapes its task: it becomes the step's error and its dependents are
skipped with that reason.
"""

from __future__ import annotations

import asyncio
import heapq
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from appl import events
from appl.compiler.plan import PlanStep, StepRecord, resolve
from appl.compiler.tools import PlanTool
from appl.compiler.validate import object_errors


class LatencyModel:
    """Per-tool latency estimates: the declared `latency_s` until a call is observed, then an
    EWMA of observed durations (alpha weights the newest)."""

    def __init__(self, default_s: float = 1.0, alpha: float = 0.3) -> None:
        self.default_s = default_s
        self.alpha = alpha
        self._ewma: dict[str, float] = {}
        self.observations: dict[str, int] = {}

    def estimate(self, tool: PlanTool) -> float:
        if tool.name in self._ewma:
            return self._ewma[tool.name]
        return tool.latency_s if tool.latency_s is not None else self.default_s

    def observe(self, tool: PlanTool, duration_s: float) -> None:
        old = self._ewma.get(tool.name)
        if old is None:
            # The first observation replaces a guess but only blends with a declared value.
            old = tool.latency_s if tool.latency_s is not None else duration_s
        self._ewma[tool.name] = (1 - self.alpha) * old + self.alpha * duration_s
        self.observations[tool.name] = self.observations.get(tool.name, 0) + 1


@dataclass(frozen=True, slots=True)
class ExecEvent:
    """A timeline entry: seconds from the executor's start, what happened, to which step."""

    t: float
    kind: str  # submitted | ready | started | retry | done | failed | skipped
    step_id: int
    detail: str = ""


class Executor:
    """Runs steps as their inputs resolve. Use as `async with Executor(tools) as ex:`.

    max_concurrency bounds running steps overall (None: unbounded); each tool's own
    `max_concurrency` bounds its calls. When a limit holds steps back, the one with the
    longest estimated remaining path (its latency plus its longest known chain of
    dependents) starts first.
    """

    def __init__(
        self,
        tools: Mapping[str, PlanTool],
        *,
        max_concurrency: int | None = None,
        latency: LatencyModel | None = None,
        thread_workers: int = 32,
        clock: Callable[[], float] = time.perf_counter,
        t0: float | None = None,
        run_id: str | None = None,
    ) -> None:
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.tools = tools
        self.max_concurrency = max_concurrency
        self.latency = latency or LatencyModel()
        self.records: dict[int, StepRecord] = {}
        self.timeline: list[ExecEvent] = []
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._clock = clock
        self._t0 = clock() if t0 is None else t0
        self._thread_workers = thread_workers
        self._dependents: dict[int, list[int]] = {}
        self._waiting_on: dict[int, set[int]] = {}
        self._ready: set[int] = set()
        self._running_total = 0
        self._running_by_tool: dict[str, int] = {}
        self._unfinished = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._rank_cache: dict[int, float] = {}
        self._tg: asyncio.TaskGroup | None = None
        self._closing = False
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Executor:
        self._pool = ThreadPoolExecutor(self._thread_workers, thread_name_prefix="appl-tool")
        self._tg = asyncio.TaskGroup()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._tg is not None and self._pool is not None
        if et is not None:
            # The body failed or was cancelled: the TaskGroup cancels the running steps, and
            # nothing new may start while it does.
            self._closing = True
        try:
            try:
                await self._tg.__aexit__(et, e, tb)
                return None
            except BaseExceptionGroup as group:
                # Step tasks never raise (their errors are data), so a group holding only the
                # body's own exception is just that exception: let it propagate unwrapped.
                if e is not None and group.exceptions == (e,):
                    return False
                raise
        finally:
            # A timed-out sync tool may still hold its thread; do not wait for it.
            self._pool.shutdown(wait=False, cancel_futures=True)

    def now(self) -> float:
        return self._clock() - self._t0

    def _log(self, kind: str, step_id: int, detail: str = "") -> None:
        self.timeline.append(ExecEvent(self.now(), kind, step_id, detail))

    # ------------------------------------------------------------------ graph updates
    def submit(self, step: PlanStep) -> StepRecord:
        """Add an accepted step. Its dependencies must already be submitted (the validator
        guarantees it). Starts it at once when its inputs are done and a slot is free."""
        if self._tg is None:
            raise RuntimeError("Executor.submit outside `async with Executor(...)`")
        if step.id in self.records:
            raise ValueError(f"step {step.id} submitted twice")
        rec = StepRecord(step, emitted_at=self.now())
        self.records[step.id] = rec
        self._log("submitted", step.id)
        self._unfinished += 1
        self._idle.clear()
        self._rank_cache.clear()  # a new dependent can lengthen its ancestors' paths
        waiting: set[int] = set()
        for dep in sorted(step.deps):
            d = self.records[dep]
            if d.status in ("failed", "skipped"):
                self._skip(rec, f"step {dep} {d.status}: {d.error}")
                break
            if d.status != "done":
                waiting.add(dep)
                self._dependents.setdefault(dep, []).append(step.id)
        else:
            self._waiting_on[step.id] = waiting
            if not waiting:
                self._make_ready(rec)
        self._pump()
        return rec

    def _make_ready(self, rec: StepRecord) -> None:
        rec.status = "ready"
        rec.ready_at = self.now()
        self._ready.add(rec.id)
        self._log("ready", rec.id)

    def _skip(self, rec: StepRecord, reason: str) -> None:
        """Skip `rec` and, transitively, everything already waiting on it."""
        stack = [(rec, reason)]
        while stack:
            r, why = stack.pop()
            if r.terminal:
                continue
            r.status, r.error, r.finished_at = "skipped", f"skipped because {why}", self.now()
            self._ready.discard(r.id)
            self._log("skipped", r.id, r.error)
            self._emit_result(r)
            self._finish_one()
            for child in self._dependents.pop(r.id, []):
                stack.append((self.records[child], f"step {r.id} was skipped ({why})"))

    def _complete(self, rec: StepRecord) -> None:
        """Bookkeeping after a step's task ended (done or failed), then start what can run."""
        tool = rec.step.tool
        self._running_total -= 1
        self._running_by_tool[tool] -= 1
        self._finish_one()
        children = self._dependents.pop(rec.id, [])
        for cid in children:
            child = self.records[cid]
            if child.terminal:
                continue
            if rec.status == "done":
                waiting = self._waiting_on[cid]
                waiting.discard(rec.id)
                if not waiting:
                    self._make_ready(child)
            else:
                self._skip(child, f"step {rec.id} failed: {rec.error}")
        self._rank_cache.clear()  # estimates moved (EWMA) and finished steps left the graph
        self._pump()

    def _finish_one(self) -> None:
        self._unfinished -= 1
        if self._unfinished == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Until every submitted step is done, failed or skipped (event, not polling)."""
        await self._idle.wait()

    # ------------------------------------------------------------------ dispatch
    def rank(self, step_id: int) -> float:
        """Estimated seconds from starting this step to the end of its longest known chain."""
        cached = self._rank_cache.get(step_id)
        if cached is not None:
            return cached
        # Iterative post-order (children before parents) so a long chain cannot hit the
        # recursion limit.
        stack: list[tuple[int, bool]] = [(step_id, False)]
        while stack:
            sid, expanded = stack.pop()
            if sid in self._rank_cache:
                continue
            children = self._dependents.get(sid, ())
            if not expanded:
                stack.append((sid, True))
                stack.extend((c, False) for c in children if c not in self._rank_cache)
                continue
            own = self.latency.estimate(self.tools[self.records[sid].step.tool])
            tail = max((self._rank_cache[c] for c in children), default=0.0)
            self._rank_cache[sid] = own + tail
        return self._rank_cache[step_id]

    def _pump(self) -> None:
        """Start ready steps while slots are free, highest rank first (ties: lower id)."""
        if not self._ready or self._closing:
            return
        if self.max_concurrency is None:
            free = len(self._ready)
        else:
            free = self.max_concurrency - self._running_total
        if free <= 0:
            return
        # The ready set is small and ranks change whenever the graph grows, so the heap is
        # rebuilt per dispatch round rather than kept with stale keys.
        heap = [(-self.rank(sid), sid) for sid in self._ready]
        heapq.heapify(heap)
        while heap and free > 0:
            _, sid = heapq.heappop(heap)
            rec = self.records[sid]
            tool = self.tools[rec.step.tool]
            running = self._running_by_tool.get(tool.name, 0)
            if tool.max_concurrency is not None and running >= tool.max_concurrency:
                continue  # stays ready; its tool's next completion pumps again
            self._ready.discard(sid)
            self._start(rec, tool)
            free -= 1

    def _start(self, rec: StepRecord, tool: PlanTool) -> None:
        assert self._tg is not None
        rec.status = "running"
        self._running_total += 1
        self._running_by_tool[tool.name] = self._running_by_tool.get(tool.name, 0) + 1
        self._tg.create_task(self._run(rec, tool), name=f"step:{self.run_id}:{rec.id}")

    async def _run(self, rec: StepRecord, tool: PlanTool) -> None:
        try:
            try:
                args = resolve(
                    rec.step.args, {k: r.result for k, r in self.records.items() if r.ok}
                )
                rec.args = args
                errors = object_errors(args, tool.parameters, "")
                if errors:
                    raise TypeError(
                        "resolved arguments do not fit the schema: " + "; ".join(errors)
                    )
                rec.result = await self._attempts(rec, tool, args)
                rec.status = "done"
                rec.finished_at = self.now()
                assert rec.started_at is not None
                self.latency.observe(tool, rec.finished_at - rec.started_at)
                self._log("done", rec.id)
            except Exception as exc:  # a tool's failure is data, never a crash or a hang
                rec.status = "failed"
                rec.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                rec.finished_at = self.now()
                self._log("failed", rec.id, rec.error)
            self._emit_result(rec)
        finally:
            # Also on cancellation, so counters stay right; the TaskGroup is ending then.
            if not rec.terminal:
                rec.status, rec.error, rec.finished_at = "failed", "cancelled", self.now()
            self._complete(rec)

    async def _attempts(self, rec: StepRecord, tool: PlanTool, args: dict[str, Any]) -> Any:
        for attempt in range(tool.retries + 1):
            rec.attempts = attempt + 1
            if rec.started_at is None:
                rec.started_at = self.now()
            self._log("started", rec.id, f"attempt {attempt + 1}")
            events.emit(
                "step_start",
                self.run_id,
                {"id": rec.id, "tool": tool.name, "args": args, "attempt": attempt + 1},
            )
            try:
                try:
                    async with asyncio.timeout(tool.timeout_s):
                        return await tool.call(args, self._pool)
                except TimeoutError as exc:
                    raise TimeoutError(f"{tool.name} timed out after {tool.timeout_s:g}s") from exc
            except Exception as exc:
                if attempt == tool.retries:
                    raise
                self._log("retry", rec.id, f"{type(exc).__name__}: {exc}")
                if tool.retry_backoff_s:
                    await asyncio.sleep(tool.retry_backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    def _emit_result(self, rec: StepRecord) -> None:
        """step_done / step_failed (skipped steps too) for traces (appl.events)."""
        if not events.has_listeners():
            return
        data: dict[str, Any] = {"id": rec.id, "tool": rec.step.tool, "duration_s": rec.duration_s}
        if rec.ok:
            events.emit("step_done", self.run_id, {**data, "result": _preview(rec.result)})
        else:
            skipped = rec.status == "skipped"
            events.emit(
                "step_failed", self.run_id, {**data, "error": rec.error, "skipped": skipped}
            )


def _preview(value: Any, limit: int = 2000) -> Any:
    """A step's result as trace data: JSON-able values as they are, others as bounded text."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
