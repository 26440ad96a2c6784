"""The language: `@ppl`, `gen`, roles, and how calls between @ppl functions share prompts.

    @ppl
    def answer(question: str) -> GenFuture:
        "You are terse."            # a bare string statement: appended to the prompt
        with role("system"):
            "Answer in one word."
        f"Q: {question}"            # f-strings too (pending futures inside stay futures)
        return gen(max_tokens=5)    # returns a GenFuture at once

How a call runs, by where it is made:
* a sync @ppl function from plain sync code (no running loop) starts a run: its body runs in
  the calling thread while the event loop runs in a helper thread (so `str(fut)` can block);
  the run waits for all its gens and closes the models at the end.
* an async @ppl function behaves like any `async def`: calling it gives a coroutine, so
  `await main()` / `asyncio.run(main())` / `appl.run(main())` (which also closes the models).
* a sync @ppl function from async code gives an awaitable that runs the body in a worker
  thread (never blocking the loop).
* inside a run: sync -> sync runs directly; an async @ppl function called from a sync body
  runs on the run's loop and the sync caller blocks for its result.

Context modes (`@ppl(ctx=...)`) decide the prompt a callee starts with:
  "new" (default) an empty prompt; "copy" a copy of the caller's prompt; "same" the caller's
  prompt itself (what the callee appends, the caller sees); "resume" the callee's own prompt
  from its previous call (a chat that goes on; concurrent calls share it).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import sys
import threading
import types
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from typing import Any, Literal, TypeVar, get_args

from appl import events
from appl.errors import ApplError
from appl.future import GenFuture
from appl.identity import CallSite, display_file
from appl.prompt import PromptContext, PromptStr, PromptText, RoleText, fstring
from appl.runtime import GenOptions, Runtime, for_the_reader
from appl.runtime import _current_runtime as _runtime  # one context variable, owned there
from appl.tools import Tool, as_tools
from appl.types import Message, Role

CtxMode = Literal["new", "copy", "same", "resume"]
_CTX_MODES = frozenset(get_args(CtxMode))
_ROLES = frozenset(("system", "user", "assistant"))
T = TypeVar("T")


class Frame:
    """One invocation of a @ppl function: its prompt and its place in the call tree."""

    __slots__ = ("child_counts", "ctx", "empty_hint", "gen_counts", "name", "path", "runtime")

    def __init__(
        self, name: str, path: str, ctx: PromptContext, runtime: Runtime, empty_hint: str = ""
    ):
        self.name = name
        self.empty_hint = empty_hint  # what an empty-prompt error should add
        self.path = path
        self.ctx = ctx
        self.runtime = runtime
        self.child_counts: defaultdict[str, int] = defaultdict(int)
        self.gen_counts: defaultdict[int, int] = defaultdict(int)

    def child_path(self, name: str) -> str:
        """The logical path of the next call of `name` made from this frame ("name[i]", i
        counting this frame's earlier calls of it, in program order)."""
        index = self.child_counts[name]
        self.child_counts[name] = index + 1
        return f"{self.path}/{name}[{index}]"


_frame: contextvars.ContextVar[Frame | None] = contextvars.ContextVar("appl_frame", default=None)


def _current_frame(what: str) -> Frame:
    frame = _frame.get()
    if frame is None:
        raise ApplError(f"{what} must be called inside a @ppl function")
    return frame


def current_prompt() -> PromptContext:
    """The prompt of the running @ppl call (for inspection and helpers)."""
    return _current_frame("current_prompt()").ctx


# --- hooks called by the rewritten function body ---------------------------------------------


_PROMPT_OBJECTS = (GenFuture, PromptText, RoleText, Message)


def record(value: Any, from_call: bool = False) -> None:
    """A bare expression statement in a @ppl body. It joins the prompt when it is prompt text:
    a string literal, an f-string, a name/attribute/subscript holding a str, or - from any
    expression, calls included - what the prompt helpers make (a PromptStr from Tagged(...),
    NumberedList(...), ...), a GenFuture, a PromptText, a SystemMessage(...)-style RoleText or a
    Message. A *call* returning a plain str (e.g. `s.strip()`) is not added, nor is any other
    value (None from `list.append`, numbers, ...).

    A list or tuple that is not a call's result (`[a, b]`, `drafts`, `[gen() for ...]`) adds
    its items, one prompt line each, in order, by the same rule (nested lists too); pending
    results stay pending. A list with no prompt text in it (`[x.append(1) for ...]`) is not
    prompt; one mixing prompt text with other values is an error."""
    if isinstance(value, str):
        if not from_call or isinstance(value, PromptStr):
            _current_frame("record").ctx.add(value)
    elif isinstance(value, _PROMPT_OBJECTS):
        _current_frame("record").ctx.add(value)
    elif type(value) in (list, tuple) and not from_call:
        items = list(_flatten(value))
        texts = [i for i in items if isinstance(i, (str, *_PROMPT_OBJECTS))]
        if not texts:
            return
        if len(texts) != len(items):
            other = next(i for i in items if not isinstance(i, (str, *_PROMPT_OBJECTS)))
            raise ApplError(
                f"a {type(value).__name__} statement mixes prompt text with "
                f"{type(other).__name__} {other!r:.60}: only strings, f-strings, gen results "
                "and messages can join the prompt (convert the others with str() or f-strings)"
            )
        ctx = _current_frame("record").ctx
        for item in texts:
            ctx.add(item)


def _flatten(items: list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    for item in items:
        if type(item) in (list, tuple):
            yield from _flatten(item)
        else:
            yield item


def add_docstring(role: Role, text: str) -> None:
    """The docstring of a @ppl(docstring_as=role) function, added where its body starts."""
    _current_frame("record").ctx.add(text, role)


class _Hooks:
    """The object the rewritten code reaches as `__appl_rt__` (a closure cell)."""

    __slots__ = ()
    record = staticmethod(record)
    fstring = staticmethod(fstring)
    docstring = staticmethod(add_docstring)


HOOKS = _Hooks()


@contextmanager
def role(name: Role) -> Iterator[None]:
    """`with role("system"):` - statements inside the block get this role."""
    if name not in _ROLES:
        raise ValueError(f"role must be one of {sorted(_ROLES)}, got {name!r}")
    ctx = _current_frame("role()").ctx
    previous, ctx.role = ctx.role, name
    try:
        yield
    finally:
        ctx.role = previous


# --- gen ------------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _site_file(filename: str) -> str:
    return display_file(filename)


def gen(
    *,
    model: str | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    stop: str | Sequence[str] | None = None,
    seed: int | None = None,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    tool_choice: str | dict[str, Any] | None = None,
    run_tools: bool = False,
    max_rounds: int = 8,
    final_answer: bool = False,
    response_format: Any = None,
    format_retries: int = 2,
    stream: bool = False,
    n: int = 1,
    extra: dict[str, Any] | None = None,
) -> Any:
    """Send the prompt so far to a model; returns a GenFuture immediately.

    n: k > 1 asks for k completions of the same prompt and returns a LIST of k GenFutures.
        One request with `n=k` where the server supports it; otherwise (capability n=false,
        or a server found to answer fewer choices than asked) k requests, concurrently.
        Not combinable with tools or stream; with response_format each choice is validated on
        its own (an invalid one fails its own future; format_retries does not apply).

    tools: functions (or Tool objects) the model may call; its calls run concurrently and
        their results are added as tool messages. run_tools=True loops (call model, run tools)
        until the model answers without tool calls, at most max_rounds requests. Still
        asking for tools after that raises ToolError (with `.tool_results` and `.messages`),
        unless final_answer=True: then one more request with tool_choice="none" makes the
        model answer from the results it has (a small local model often never stops asking).
    response_format: a pydantic model class -> the value is a validated instance; invalid
        replies are retried up to format_retries times, then StructuredOutputError.
    stream: the future is also an async iterator of text chunks.
    """
    frame = _current_frame("gen()")
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1")
    if format_retries < 0:
        raise ValueError("format_retries must be >= 0")
    if n < 1:
        raise ValueError("n must be at least 1")
    if n > 1 and (tools or stream):
        raise ValueError("gen(n=...) > 1 cannot be combined with tools or stream")
    options = GenOptions(
        model=model,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        stop=[stop] if isinstance(stop, str) else (list(stop) if stop is not None else None),
        seed=seed,
        tools=as_tools(tools),
        tool_choice=tool_choice,
        run_tools=run_tools,
        max_rounds=max_rounds,
        final_answer=final_answer,
        response_format=response_format,
        format_retries=format_retries,
        stream=stream,
        extra=dict(extra or {}),
        n=n,
        empty_hint="" if frame.ctx.items else frame.empty_hint,
    )
    if response_format is not None:
        from appl.structured import response_format_for

        response_format_for(response_format)  # a bad value fails here, at the call site
    caller = sys._getframe(1)
    line = caller.f_lineno
    occurrence = frame.gen_counts[line]
    frame.gen_counts[line] = occurrence + 1
    site = CallSite(
        _site_file(caller.f_code.co_filename), line, f"{frame.path}/gen@L{line}", occurrence
    )
    rt = frame.runtime
    if n > 1:  # one request (one identity) answers the whole group
        group = [GenFuture(rt.loop, site) for _ in range(n)]
        rt.submit(group, frame.ctx.snapshot(), options)
        return group
    fut = GenFuture(rt.loop, site, stream=stream)
    rt.submit(fut, frame.ctx.snapshot(), options)
    return fut


# --- @ppl -----------------------------------------------------------------------------------


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _close_models_quietly() -> None:
    try:
        from appl.models import close_models

        await close_models()
    except Exception:  # closing must never hide the program's own result or error
        pass


class PplFunction:
    """A compiled @ppl function. Call it like the original (see the module docstring)."""

    def __init__(
        self,
        func: Callable[..., Any],
        ctx: CtxMode,
        name: str | None,
        docstring_as: Role | None = None,
    ):
        from appl.transform import compile_ppl

        if ctx not in _CTX_MODES:
            raise ValueError(f"ctx must be one of {sorted(_CTX_MODES)}, got {ctx!r}")
        if docstring_as is not None and docstring_as not in ("user", "system"):
            raise ValueError(f'docstring_as must be "user", "system" or None, got {docstring_as!r}')
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise TypeError(f"@ppl does not support generator functions ({func.__qualname__})")
        self.original = func
        self.compiled, excluded = compile_ppl(func, HOOKS, docstring_as)
        where = func.__qualname__
        self._empty_hint = (
            f" (the leading triple-quoted string of {where} is its docstring, which is not "
            'prompt: write it with single quotes "..." to make it prompt text, or use '
            '@ppl(docstring_as="user") or "system")'
            if excluded
            else f" (nothing was added to {where}'s prompt before this gen)"
        )
        self.is_async = inspect.iscoroutinefunction(func)
        self.ctx_mode: CtxMode = ctx
        self.name = name or func.__name__
        self._resume_ctx: PromptContext | None = None
        functools.update_wrapper(self, func)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<ppl function {self.original.__qualname__} ctx={self.ctx_mode}>"

    def _make_frame(self, parent: Frame | None, rt: Runtime) -> Frame:
        path = self.name if parent is None else parent.child_path(self.name)
        mode = self.ctx_mode
        if mode == "resume":
            if self._resume_ctx is None:
                self._resume_ctx = PromptContext()
            ctx = self._resume_ctx
        elif parent is None or mode == "new":
            ctx = PromptContext()
        elif mode == "copy":
            ctx = parent.ctx.copy()
        else:  # same
            ctx = parent.ctx
        return Frame(self.name, path, ctx, rt, self._empty_hint)

    def reset_resume(self) -> None:
        """Forget the prompt kept by ctx="resume"."""
        self._resume_ctx = None

    # --- calling -------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        parent = _frame.get()
        rt = _runtime.get()
        loop = _running_loop()
        usable = rt is not None and not rt.closed and not rt.loop.is_closed()
        if loop is not None:  # async code: hand back an awaitable
            if usable and rt is not None and rt.loop is loop:
                frame = self._make_frame(parent, rt)
                if self.is_async:
                    return self._body_async(frame, args, kwargs)
                return self._body_in_thread(frame, args, kwargs)
            return self._top_level_async(args, kwargs)
        if self.is_async and not usable:
            # like any `async def`: a coroutine, so `asyncio.run(main())` works as usual
            return self._top_level_async(args, kwargs)
        if usable and rt is not None:  # inside a sync body of a run
            frame = self._make_frame(parent, rt)
            if not self.is_async:
                return self._body_sync(frame, args, kwargs)
            # run_coroutine_threadsafe carries this thread's context (frame, runtime) along
            coro = self._body_async(frame, args, kwargs)
            return asyncio.run_coroutine_threadsafe(coro, rt.loop).result()
        return self._top_level_sync(args, kwargs)

    def _emit_call(self, frame: Frame, kind: Literal["call", "return"], ok: bool = True) -> None:
        if events.has_listeners():
            data: dict[str, Any] = {"function": self.original.__qualname__, "path": frame.path}
            if kind == "call":
                data["ctx"] = self.ctx_mode
            else:
                data["ok"] = ok
            events.emit(kind, frame.runtime.run_id, data)

    def _body_sync(self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        token = _frame.set(frame)
        self._emit_call(frame, "call")
        ok = False
        try:
            result = self.compiled(*args, **kwargs)
            ok = True
            return result
        finally:
            _frame.reset(token)
            self._emit_call(frame, "return", ok)

    async def _body_async(self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        token = _frame.set(frame)
        self._emit_call(frame, "call")
        ok = False
        try:
            result = await self.compiled(*args, **kwargs)
            ok = True
            return result
        finally:
            _frame.reset(token)
            self._emit_call(frame, "return", ok)

    async def _body_in_thread(
        self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        # a sync body may block on futures: keep it off the loop's thread
        return await asyncio.to_thread(self._body_sync, frame, args, kwargs)

    async def _top_level_async(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with _trace_scope():
            try:
                return await self._run_async(args, kwargs)
            except ApplError as exc:
                raise for_the_reader(exc) from exc.__cause__

    def _top_level_sync(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with _trace_scope():
            try:
                return self._run_sync(args, kwargs)
            except ApplError as exc:
                # the program's line, not the run's threads and futures, heads the traceback
                raise for_the_reader(exc) from exc.__cause__

    async def _run_async(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        rt = Runtime(asyncio.get_running_loop(), self.name)
        token = _runtime.set(rt)
        frame = self._make_frame(None, rt)
        events.emit("run_start", rt.run_id, {"function": self.original.__qualname__})
        try:
            if self.is_async:
                result = await self._body_async(frame, args, kwargs)
            else:
                result = await self._body_in_thread(frame, args, kwargs)
            await rt.finish()
        except BaseException as exc:
            await rt.cancel_all()
            events.emit(
                "run_end", rt.run_id, {"function": self.name, "ok": False, "error": repr(exc)}
            )
            raise
        finally:
            _runtime.reset(token)
        events.emit("run_end", rt.run_id, {"function": self.name, "ok": True})
        return result

    def _run_sync(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=loop.run_forever, name=f"appl-run-{self.name}", daemon=True
        )
        thread.start()
        rt = Runtime(loop, self.name)
        token = _runtime.set(rt)
        try:
            frame = self._make_frame(None, rt)
            events.emit("run_start", rt.run_id, {"function": self.original.__qualname__})
            try:
                result = self._body_sync(frame, args, kwargs)
                asyncio.run_coroutine_threadsafe(rt.finish(), loop).result()
            except BaseException as exc:  # KeyboardInterrupt included: stop the gens first
                asyncio.run_coroutine_threadsafe(rt.cancel_all(), loop).result()
                events.emit(
                    "run_end", rt.run_id, {"function": self.name, "ok": False, "error": repr(exc)}
                )
                raise
            events.emit("run_end", rt.run_id, {"function": self.name, "ok": True})
            # The run has finished every gen, so a future returned from the top level is
            # resolved: hand back its value (a str, or the pydantic instance of a structured
            # gen), which `isinstance` and type checkers understand; a future is no use here.
            return result.value() if isinstance(result, GenFuture) else result
        finally:
            _runtime.reset(token)
            asyncio.run_coroutine_threadsafe(_close_models_quietly(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


@contextmanager
def library_run(name: str) -> Iterator[tuple[str, str]]:
    """(run id, logical path) for library code that sends model requests itself (the LLM
    compiler): inside a @ppl call it is a child of that call's frame, "name[i]" like a nested
    @ppl call; outside any run it is a run of its own, with the tracing or replay that
    APPL_TRACE / APPL_REPLAY / [trace] ask for, so its calls are recorded and strictly
    replayed exactly like a program's gens."""
    parent = _frame.get()
    rt = _runtime.get()
    if parent is not None and rt is not None and not rt.closed:
        yield rt.run_id, parent.child_path(name)
        return
    from appl.runtime import standalone_run

    with _trace_scope(), standalone_run(name) as run_id:
        yield run_id, name


def _trace_scope() -> AbstractContextManager[Any]:
    """Tracing/replay asked for by APPL_TRACE / APPL_REPLAY / [trace] (usually a no-op)."""
    from appl.trace._auto import auto_scope  # late: tracing is opt-in and costs nothing off

    return auto_scope()


def run(awaitable: Awaitable[T]) -> T:
    """`asyncio.run` for appl programs: runs `awaitable` and closes the models at the end."""

    async def main() -> T:
        try:
            return await awaitable
        finally:
            await _close_models_quietly()

    return asyncio.run(main())


def ppl(
    func: Callable[..., Any] | None = None,
    *,
    ctx: CtxMode = "new",
    name: str | None = None,
    docstring_as: Role | None = None,
) -> Any:
    """Decorator: `@ppl` or `@ppl(ctx="copy")`. See the module docstring.

    docstring_as: a leading triple-quoted string is the docstring and is not prompt (APPL's
    rule); "user" or "system" adds it to the prompt with that role.
    """
    if func is None:
        return lambda f: PplFunction(f, ctx, name, docstring_as)
    return PplFunction(func, ctx, name, docstring_as)
