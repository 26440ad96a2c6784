"""The dataflow runtime: one scheduler per run, one task per gen, and the model-resolution hook.

Scheduling rule: `gen(...)` snapshots the prompt and starts a task AT ONCE. The task first
waits for the futures inside its prompt (other gens), then sends its request. So a gen never
blocks the code that wrote it, and it is dispatched the moment its inputs resolve. There is
no queue or serialization here: per-model limits (concurrency, rpm, tpm), retries and budgets
are enforced by the model wrapper behind `resolve_model` (appl.models).

Structure (trio-like): a `Runtime` owns every gen task of a run. The run ends only when all of
them have finished; if the program fails or is cancelled, its pending gens are cancelled and
awaited before the error propagates, so no task outlives its run. An error of a gen goes to
whoever reads its future; an error that nobody read is raised when the run ends, so failures
never vanish silently.

Replay hook: every model is obtained through `resolve_model(alias, identity)`. A tracing or
replay layer installs its own resolver with `use_model_resolver(...)` (context-scoped) or
`set_model_resolver(...)` (process-wide), and receives the deterministic call identity of
each request (appl.identity) so it can answer from a recording.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pydantic

from appl import events
from appl.errors import ApplError, BudgetExceededError, StructuredOutputError, ToolError
from appl.future import GenFuture, GenResult
from appl.gen_n import run_gen_n
from appl.identity import CallIdentity, compute_call_identity, request_to_jsonable
from appl.prompt import Part, render_messages, snapshot_pending
from appl.structured import (
    describe_error,
    is_model_class,
    parse_reply,
    response_format_for,
    retry_messages,
)
from appl.tools import Tool, ToolResult, run_tool_calls
from appl.types import GenRequest, GenResponse, Message, ModelAPI, Role, ToolCall

# --- the model-resolution hook -------------------------------------------------------------

ModelResolver = Callable[[str | None, CallIdentity], ModelAPI]

_resolver_override: contextvars.ContextVar[ModelResolver | None] = contextvars.ContextVar(
    "appl_model_resolver", default=None
)
_global_resolver: ModelResolver | None = None


def set_model_resolver(resolver: ModelResolver | None) -> None:
    """Install a process-wide resolver (None restores appl.models.get_model)."""
    global _global_resolver
    _global_resolver = resolver


@contextmanager
def use_model_resolver(resolver: ModelResolver) -> Iterator[None]:
    """Use `resolver` for gens started inside this block (context-scoped)."""
    token = _resolver_override.set(resolver)
    try:
        yield
    finally:
        _resolver_override.reset(token)


# Answers a tool call from a recording (the replay layer installs one): (identity of the
# request that asked for the tool, the call) -> the recorded result, or None to run the tool.
ToolReplayer = Callable[[CallIdentity, ToolCall], ToolResult | None]
_tool_replayer: contextvars.ContextVar[ToolReplayer | None] = contextvars.ContextVar(
    "appl_tool_replayer", default=None
)


@contextmanager
def use_tool_replayer(replayer: ToolReplayer) -> Iterator[None]:
    """Answer the tool calls of gens started in this block from `replayer` (tools marked
    pure still run)."""
    token = _tool_replayer.set(replayer)
    try:
        yield
    finally:
        _tool_replayer.reset(token)


def resolve_model(
    alias: str | None, identity: CallIdentity, default: ModelAPI | None = None
) -> ModelAPI:
    """THE place where the runtime gets a ModelAPI for a call (see the module docstring).
    `default`: the ModelAPI to use when no resolver is installed, instead of the alias's."""
    resolver = _resolver_override.get() or _global_resolver
    if resolver is not None:
        return resolver(alias, identity)
    if default is not None:
        return default
    from appl.models import get_model  # late: keeps `import appl` light

    return get_model(alias)


def default_alias(alias: str | None) -> str:
    """The alias a request names (the configured default when the gen gives none)."""
    if alias is not None:
        return alias
    from appl.config import get_config

    return get_config().model(None).alias


# --- the current run ----------------------------------------------------------------------

# The run the current code belongs to (set by a top-level @ppl call; gen tasks inherit it).
_current_runtime: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar(
    "appl_runtime", default=None
)


def current_runtime() -> Runtime | None:
    """The `Runtime` of the run the calling code belongs to (None outside any run).

    Gen tasks inherit it, so a model resolver can tell which run a call belongs to
    (`current_runtime().run_id`)."""
    return _current_runtime.get()


def current_run_id() -> str | None:
    """The id of the current run (as in its events' `run_id`), or None outside any run."""
    runtime = _current_runtime.get()
    return runtime.run_id if runtime is not None else _standalone_run.get()


# A run that is not a @ppl run: the LLM compiler called outside any @ppl function is a run
# of its own, so its model calls are traced and strictly replayed like a program's gens.
_standalone_run: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "appl_standalone_run", default=None
)


@contextmanager
def standalone_run(function: str) -> Iterator[str]:
    """A run of its own for library code that sends model requests outside any @ppl call:
    yields its run id, emits run_start and run_end around the block."""
    run_id = uuid.uuid4().hex[:12]
    token = _standalone_run.set(run_id)
    events.emit("run_start", run_id, {"function": function})
    try:
        yield run_id
    except BaseException as exc:
        events.emit("run_end", run_id, {"function": function, "ok": False, "error": repr(exc)})
        raise
    else:
        events.emit("run_end", run_id, {"function": function, "ok": True})
    finally:
        _standalone_run.reset(token)


# --- gen options --------------------------------------------------------------------------


@dataclass(slots=True)
class GenOptions:
    model: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    tools: dict[str, Tool] = field(default_factory=dict)
    tool_choice: str | dict[str, Any] | None = None
    run_tools: bool = False
    max_rounds: int = 8
    final_answer: bool = False  # after max_rounds, one request with tool_choice="none"
    response_format: Any = None  # pydantic model class or OpenAI dict
    format_retries: int = 2
    stream: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    n: int = 1  # completions wanted (gen(n=k) > 1 resolves a group of k futures)
    empty_hint: str = ""  # why the prompt was empty when gen() ran (for the error)

    def for_event(self) -> dict[str, Any]:
        fmt = self.response_format
        return {
            "model": self.model,
            "tools": sorted(self.tools),
            "run_tools": self.run_tools,
            "max_rounds": self.max_rounds,
            **({"final_answer": True} if self.final_answer else {}),
            "response_format": fmt.__name__ if is_model_class(fmt) else fmt,
            "format_retries": self.format_retries,
            "stream": self.stream,
            **({"n": self.n} if self.n != 1 else {}),
        }


# --- the scheduler ------------------------------------------------------------------------


class Runtime:
    """The scheduler of one run: owns its gen tasks, on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str):
        self.loop = loop
        self.name = name
        self.run_id = uuid.uuid4().hex[:12]
        self.tasks: set[asyncio.Task[None]] = set()
        self.failed: list[GenFuture] = []  # gens that ended with an error
        self.closed = False

    def submit(
        self,
        fut: GenFuture | list[GenFuture],
        items: tuple[tuple[Role, Part], ...],
        options: GenOptions,
    ) -> None:
        """Start a gen task (from the loop thread, or thread-safely from a sync body)."""
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._spawn(fut, items, options)
        else:
            # call_soon_threadsafe copies this thread's context (listeners, resolvers,
            # budgets) into the handle, and the task inherits it
            self.loop.call_soon_threadsafe(self._spawn, fut, items, options)

    def _spawn(
        self,
        fut: GenFuture | list[GenFuture],
        items: tuple[tuple[Role, Part], ...],
        options: GenOptions,
    ) -> None:
        if self.closed:
            for one in fut if isinstance(fut, list) else (fut,):
                one._set_exception(ApplError(f"run {self.name!r} has ended; gen not started"))
            return
        if isinstance(fut, list):
            coro = run_gen_n(self, fut, items, options, default_alias(options.model))
        else:
            coro = self._run_gen(fut, items, options)
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        """Wait until every gen of the run has finished (new ones may start meanwhile)."""
        while self.tasks:
            await asyncio.wait(list(self.tasks))

    async def finish(self) -> None:
        """Normal end of the run: wait for all gens, then raise the first unread error."""
        await self.drain()
        self.closed = True
        for fut in self.failed:
            # a gen(n=k) group that failed as a whole shares one error: reading any one is
            # reading it
            group = fut._group or (fut,)
            if fut._exc is not None and not any(f._retrieved for f in group if f._exc is fut._exc):
                fut._retrieved = True
                raise fut._exc

    async def cancel_all(self) -> None:
        """Abnormal end: cancel every pending gen and wait for them (no orphans)."""
        self.closed = True
        while self.tasks:
            pending = list(self.tasks)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    # --- one gen ----------------------------------------------------------------------------

    async def _run_gen(
        self, fut: GenFuture, items: tuple[tuple[Role, Part], ...], options: GenOptions
    ) -> None:
        last: list[CallIdentity] = []  # the identity of the latest request, once there is one
        try:
            result = await self._execute(fut, items, options, last)
        except asyncio.CancelledError:
            fut._set_exception(asyncio.CancelledError(f"gen {fut.site.path} was cancelled"))
            fut._retrieved = True  # a cancelled gen is not an unread failure
            raise
        except Exception as exc:
            fut._set_exception(for_the_reader(exc))
            self.failed.append(fut)
            if events.has_listeners():
                # `call` is the identity of the gen's latest request (None when it failed
                # before sending any, e.g. because an input gen failed)
                events.emit(
                    "gen_error",
                    self.run_id,
                    {"type": type(exc).__name__, "message": str(exc), "path": fut.site.path},
                    last[-1] if last else None,
                )
        else:
            fut._set_result(result)

    async def _execute(
        self,
        fut: GenFuture,
        items: tuple[tuple[Role, Part], ...],
        options: GenOptions,
        last: list[CallIdentity],
    ) -> GenResult:
        site = fut.site
        for dep in snapshot_pending(items):  # dataflow: wait for the inputs, in the background
            await dep._wait()
        messages = render_messages(items)  # re-raises the error of a failed input gen
        if not messages:
            raise ApplError(
                f"gen() at {site.file}:{site.line} has an empty prompt{options.empty_hint}"
            )
        alias = default_alias(options.model)
        response_format = response_format_for(options.response_format)
        structured = options.response_format if is_model_class(options.response_format) else None
        added: list[Message] = []
        tool_calls: list[Any] = []
        tool_results: list[ToolResult] = []
        format_failures = 0
        step = 0
        on_text = fut._push_chunk if options.stream else None
        tool_choice = options.tool_choice
        while True:
            request = GenRequest(
                model=alias,
                messages=messages + added,
                temperature=options.temperature,
                top_p=options.top_p,
                max_tokens=options.max_tokens,
                stop=options.stop,
                seed=options.seed,
                tools=[t.spec for t in options.tools.values()],
                tool_choice=tool_choice,
                response_format=response_format,
                stream=options.stream,
                extra=dict(options.extra),
            )
            identity = compute_call_identity(site, request, step)
            last[:] = (identity,)
            response = await self._call_model(options, request, identity, on_text)
            step += 1
            if response.tool_calls and options.tools:
                tool_calls.extend(response.tool_calls)
                added.append(
                    Message("assistant", response.text or None, tool_calls=response.tool_calls)
                )
                results = await self._run_tools(response, options.tools, identity)
                tool_results.extend(results)
                added.extend(r.to_message() for r in results)
                if not options.run_tools:
                    value: Any = response.text
                    break
                if step == options.max_rounds and options.final_answer:
                    # one more request that may not call tools: the model answers from the
                    # results it has, instead of the loop ending in an error
                    tool_choice = "none"
                    continue
                if step >= options.max_rounds:
                    raise ToolError(
                        f"gen at {site.file}:{site.line}: the model still asked for tools after "
                        f"max_rounds={options.max_rounds} rounds (last: "
                        f"{', '.join(c.name for c in response.tool_calls)}); "
                        "gen(final_answer=True) asks it for a last answer without tools instead",
                        tool=response.tool_calls[0].name,
                        tool_results=tool_results,
                        messages=messages + added,
                    )
                continue
            added.append(Message("assistant", response.text))
            if structured is None:
                value = response.text
                break
            try:
                value = parse_reply(structured, response.text)
                break
            except pydantic.ValidationError as exc:
                format_failures += 1
                if format_failures > options.format_retries:
                    raise StructuredOutputError(
                        f"gen at {site.file}:{site.line}: the reply did not validate as "
                        f"{structured.__name__} after {format_failures} attempt(s): "
                        f"{describe_error(exc)}",
                        raw_text=response.text,
                        attempts=format_failures,
                    ) from exc
                events.emit("format_retry", self.run_id, {"error": describe_error(exc)}, identity)
                added.pop()  # retry_messages re-adds the bad reply before the correction
                added.extend(retry_messages(response.text, exc))
        return GenResult(
            text=response.text,
            value=value,
            response=response,
            tool_calls=tuple(tool_calls),
            tool_results=tool_results,
            messages=added,
            rounds=step,
            identity=identity,
        )

    async def _call_model(
        self,
        options: GenOptions,
        request: GenRequest,
        identity: CallIdentity,
        on_text: Callable[[str], None] | None,
    ) -> GenResponse:
        return await traced_generate(
            self.run_id,
            request,
            identity,
            alias=options.model,
            options=options,
            on_text=on_text,
        )

    async def _run_tools(
        self, response: GenResponse, tools: dict[str, Tool], identity: CallIdentity
    ) -> list[ToolResult]:
        def started(call: Any) -> None:
            events.emit(
                "tool_call",
                self.run_id,
                {"id": call.id, "name": call.name, "arguments": call.arguments},
                identity,
            )

        def done(result: ToolResult) -> None:
            events.emit(
                "tool_result",
                self.run_id,
                {
                    "id": result.call.id,
                    "name": result.call.name,
                    "ok": result.ok,
                    "content": result.content,
                    "duration_s": result.duration_s,
                    **({"replayed": True} if result.replayed else {}),
                },
                identity,
            )

        replayer = _tool_replayer.get()
        recorded = None
        if replayer is not None:

            def recorded(call: ToolCall) -> ToolResult | None:
                target = tools.get(call.name)
                if target is not None and target.pure:
                    return None  # pure tools run again
                return replayer(identity, call)

        return await run_tool_calls(response.tool_calls, tools, started, done, recorded)


async def traced_generate(
    run_id: str,
    request: GenRequest,
    identity: CallIdentity,
    *,
    alias: str | None = None,
    model: ModelAPI | None = None,
    options: GenOptions | None = None,
    on_text: Callable[[str], None] | None = None,
) -> GenResponse:
    """Send one model request the way every gen does: traced (gen_request, then gen_response
    or budget_stop) and resolved through `resolve_model`, so a replay answers it.

    `model`: an explicit ModelAPI (the LLM compiler's planner may be given one); it is used
    only while no resolver is installed, so a strict replay still answers the call from the
    trace instead of sending it.
    """
    if events.has_listeners():
        events.emit(
            "gen_request",
            run_id,
            {
                "request": request_to_jsonable(request),
                "options": options.for_event() if options is not None else {},
            },
            identity,
        )
    api = resolve_model(alias, identity, default=model)
    started = time.perf_counter()
    chunks: list[str] | None = None
    if on_text is not None and events.has_listeners():
        # a trace keeps the streamed chunks, so a replay can re-emit them as they came; they
        # are also written in batches as they arrive, so a call cut by a crash keeps its text
        chunks, push = [], on_text
        batch = _ChunkBatcher(run_id, identity)

        def on_text(delta: str) -> None:
            chunks.append(delta)
            batch.add(delta)
            push(delta)

    try:
        response = await api.generate(request, on_text=on_text)
    except BudgetExceededError as exc:
        events.emit(
            "budget_stop",
            run_id,
            {"message": str(exc), "budget": exc.budget, "limit": exc.limit, "used": exc.used},
            identity,
        )
        raise
    if events.has_listeners():
        events.emit(
            "gen_response",
            run_id,
            {
                "text": response.text,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments}
                    for c in response.tool_calls
                ],
                "finish_reason": response.finish_reason,
                "usage": {
                    "prompt_tokens": response.usage.prompt_tokens,
                    "completion_tokens": response.usage.completion_tokens,
                },
                "model": response.model,
                "latency_s": response.latency_s,
                "wall_s": time.perf_counter() - started,
                "retries": response.retries,
                "cost_usd": response.cost_usd,
                **({"chunks": chunks} if chunks is not None else {}),
                **(
                    {"choices": [_choice_data(c) for c in response.choices]}
                    if request.n > 1
                    else {}
                ),
            },
            identity,
        )
    return response


def for_the_reader(exc: Exception) -> Exception:
    """An appl error is read where the program reads the future: its traceback then starts at
    the program's own line, not in the runtime's and the HTTP client's frames (37-97 lines of
    aiohttp internals for a dead server). The causes stay in `__cause__`, with their message
    and without their frames. Exceptions of the program's own code (its tools, its pydantic
    models) keep every frame."""
    if not isinstance(exc, ApplError):
        return exc
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.__traceback__ = None
        link = link.__cause__ if link.__cause__ is not None else link.__context__
    return exc


class _ChunkBatcher:
    """Emits `gen_chunks` events for a streamed call: every CHUNKS chunks or SECONDS seconds,
    whichever comes first, so a trace of a crashed run loses at most one batch of text and a
    long stream costs one trace line per batch, not per token."""

    CHUNKS = 32
    SECONDS = 0.5

    def __init__(self, run_id: str, identity: CallIdentity) -> None:
        self.run_id, self.identity = run_id, identity
        self.pending: list[str] = []
        self.since = time.monotonic()

    def add(self, delta: str) -> None:
        self.pending.append(delta)
        now = time.monotonic()
        if len(self.pending) >= self.CHUNKS or now - self.since >= self.SECONDS:
            events.emit("gen_chunks", self.run_id, {"chunks": self.pending}, self.identity)
            self.pending, self.since = [], now


def _choice_data(choice: Any) -> dict[str, Any]:
    """One choice of a gen(n=k) response as trace data (replayed by appl.trace._replay)."""
    return {
        "text": choice.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in choice.tool_calls
        ],
        "finish_reason": choice.finish_reason,
    }
