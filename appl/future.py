"""`GenFuture`: the value of a `gen(...)` call, available before the model has answered.

A GenFuture lives on the run's event loop. It resolves once, to a `GenResult`; its *value*
is the result's `value` (the text, or the validated object for structured output).

How to read it:
* `await fut` (async code)                       -> value
* `str(fut)`, `fut.value()`, `fut.upper()`, `fut == "x"`, `hash(fut)`, `len(fut)`,
  `"x" in fut`, `sorted(futs)`, `json.dumps(fut)`, ... -> as the value does, blocking.
  Allowed from the thread of a sync @ppl program (the loop runs in another thread). On the
  loop's own thread a pending future cannot be waited for without deadlocking, so that
  raises `ApplError` telling you to `await` it instead.
* `await fut.result()` / `fut.result_sync()`     -> the full `GenResult` (response, usage,
  tool calls and results, the messages the gen added).
* `async for chunk in fut` / `for chunk in fut`  -> streamed text deltas (gen(stream=True)).

Placing a future in prompt text (a bare statement, or an f-string inside a @ppl function)
does NOT read it: the prompt keeps the future, and a later gen that uses that prompt waits
for it in the background (see appl.prompt).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from appl.errors import ApplError
from appl.types import GenResponse, Message, ToolCall

if TYPE_CHECKING:
    from appl.identity import CallIdentity, CallSite
    from appl.tools import ToolResult


@dataclass(slots=True)
class GenResult:
    """Everything one `gen(...)` produced (across tool rounds and format retries)."""

    text: str  # the final reply text
    value: Any  # `text`, or the validated object when response_format was a pydantic model
    response: GenResponse | None  # the last model response
    tool_calls: tuple[ToolCall, ...] = ()  # every tool call the model made, all rounds
    tool_results: list[ToolResult] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)  # turns added after the prompt
    rounds: int = 1  # model requests made for this gen
    identity: CallIdentity | None = None  # identity of the last request


def prompt_text_of(value: Any) -> str:
    """How a resolved value is written into prompt text."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)  # pydantic objects become JSON
    if callable(dump):
        return str(dump())
    return str(value)


_PENDING = object()


def _no_joiner(*parts: Any) -> Any:
    raise ApplError("appl.prompt is not imported: `gen + text` needs it (import appl)")


# `fut + text` builds prompt text that may keep the future pending (appl.prompt.concat).
# appl.prompt, which imports this module, installs its concat here when it is imported, so
# that this module never imports it back.
_joiner: list[Callable[..., Any]] = [_no_joiner]


class GenFuture:
    """A pending or finished gen. Thread-safe to read; completed only on its loop."""

    __slots__ = (
        "_chunk_waiters",
        "_chunks",
        "_exc",
        "_group",
        "_loop",
        "_result",
        "_retrieved",
        "_waiters",
        "site",
        "stream",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, site: CallSite, *, stream: bool = False):
        self._loop = loop
        self.site = site
        self.stream = stream
        self._result: GenResult | object = _PENDING
        self._exc: BaseException | None = None
        self._retrieved = False  # whether anyone looked at the outcome (for unread errors)
        self._waiters: list[asyncio.Future[None]] = []
        self._chunks: list[str] = []
        self._chunk_waiters: list[asyncio.Future[None]] = []
        self._group: tuple[GenFuture, ...] | None = None  # the k futures of one gen(n=k)

    # --- completion (loop thread only) -------------------------------------------------

    def done(self) -> bool:
        return self._result is not _PENDING or self._exc is not None

    def _set_result(self, result: GenResult) -> None:
        self._result = result
        self._wake()

    def _set_exception(self, exc: BaseException) -> None:
        self._exc = exc
        self._wake()

    def _wake(self) -> None:
        for waiter in (*self._waiters, *self._chunk_waiters):
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()
        self._chunk_waiters.clear()

    def _push_chunk(self, text: str) -> None:
        self._chunks.append(text)
        for waiter in self._chunk_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._chunk_waiters.clear()

    # --- reading -------------------------------------------------------------------------

    def _outcome(self) -> GenResult:
        self._retrieved = True
        if self._exc is not None:
            raise self._exc
        assert isinstance(self._result, GenResult)
        return self._result

    async def _wait(self) -> None:
        """Wait on the loop thread. A cancelled reader never cancels the gen itself."""
        if not self.done():
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter

    def _wait_blocking(self, timeout: float | None = None) -> None:
        if self.done():
            return
        if _running_loop() is self._loop:
            raise ApplError(
                f"gen at {self.site.file}:{self.site.line} is still running and this is the "
                "event loop's thread, so blocking on it would deadlock: use `await` on it first "
                "(in async code, reading a pending gen's value - ==, hash, len, in, str(), "
                "json.dumps, f-strings outside @ppl, attribute access - is refused; after "
                "`await` they all work)"
            )
        if self._loop.is_closed():
            raise ApplError("the run that owned this gen has ended before the gen finished")
        asyncio.run_coroutine_threadsafe(self._wait(), self._loop).result(timeout)

    def __await__(self) -> Any:
        if not self.done():
            yield from self._wait().__await__()
        return self._outcome().value

    async def result(self) -> GenResult:
        """The full GenResult (await it)."""
        await self._wait()
        return self._outcome()

    def result_sync(self, timeout: float | None = None) -> GenResult:
        self._wait_blocking(timeout)
        return self._outcome()

    def value(self, timeout: float | None = None) -> Any:
        """The value, blocking (sync programs)."""
        return self.result_sync(timeout).value

    @property
    def text(self) -> str:
        return self.result_sync().text

    def exception(self) -> BaseException | None:
        """The error of a finished gen (None if it succeeded); does not block."""
        if not self.done():
            raise ApplError("gen has not finished yet")
        self._retrieved = True
        return self._exc

    # --- streaming -------------------------------------------------------------------------

    async def _next_chunk(self, index: int) -> str | None:
        while index >= len(self._chunks):
            if self.done():
                self._outcome()  # raise the gen's error at the end of the stream
                return None
            waiter = self._loop.create_future()
            self._chunk_waiters.append(waiter)
            await waiter
        return self._chunks[index]

    async def __aiter__(self) -> AsyncIterator[str]:
        """Text deltas as they arrive (buffered: a late reader still sees every chunk)."""
        if not self.stream:
            yield str(await self)
            return
        index = 0
        while (chunk := await self._next_chunk(index)) is not None:
            index += 1
            yield chunk

    def __iter__(self) -> Iterator[str]:
        """Sync streaming, for sync @ppl programs (blocks between chunks)."""
        if not self.stream:
            yield from iter(str(self))
            return
        if _running_loop() is self._loop:
            raise ApplError("use `async for` to stream a gen on the event loop's thread")
        index = 0
        while True:
            chunk = asyncio.run_coroutine_threadsafe(self._next_chunk(index), self._loop).result()
            if chunk is None:
                return
            index += 1
            yield chunk

    # --- using the value ---------------------------------------------------------------------
    # The rule (docs/appl.md, "Using a result"): every operation a str (or the structured
    # value) supports behaves as it does on the resolved value, reading the future first. So
    # equal texts compare and hash equal, and Counter/set/dict/sorted/max give the answers a
    # user expects. Reading a pending future on the event loop's thread raises ApplError.

    def __str__(self) -> str:
        return prompt_text_of(self.value())

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        if self._exc is not None:
            state = f"failed {type(self._exc).__name__}"
        elif self.done():
            state = f"done {prompt_text_of(self._outcome().value)[:40]!r}"
        else:
            state = "pending"
        return f"<GenFuture {self.site.path}#{self.site.occurrence} {state}>"

    def __eq__(self, other: object) -> bool:
        return bool(self.value() == _value_of(other))

    def __ne__(self, other: object) -> bool:
        return bool(self.value() != _value_of(other))

    def __lt__(self, other: object) -> bool:
        return bool(self.value() < _value_of(other))

    def __le__(self, other: object) -> bool:
        return bool(self.value() <= _value_of(other))

    def __gt__(self, other: object) -> bool:
        return bool(self.value() > _value_of(other))

    def __ge__(self, other: object) -> bool:
        return bool(self.value() >= _value_of(other))

    def __hash__(self) -> int:
        if not self.done() and _running_loop() is self._loop and _called_from_asyncio():
            # asyncio.gather/wait/as_completed put their arguments in a dict or set for a
            # moment, keyed by identity; a pending gen cannot give its value's hash there.
            return object.__hash__(self)
        return hash(self.value())

    def __add__(self, other: object) -> Any:
        return _joiner[0](self, other)

    def __radd__(self, other: object) -> Any:
        return _joiner[0](other, self)

    def __mul__(self, count: int) -> Any:
        return self.value() * count

    __rmul__ = __mul__

    def __len__(self) -> int:
        return len(self.value())

    def __getitem__(self, key: Any) -> Any:
        return self.value()[key]

    def __contains__(self, item: object) -> bool:
        return _value_of(item) in self.value()

    def __bool__(self) -> bool:
        return bool(self.value())

    def __int__(self) -> int:
        return int(self.value())

    def __float__(self) -> float:
        return float(self.value())

    def __appl_json__(self) -> Any:
        """What json.dumps writes: the text, or a structured value as its JSON data."""
        return json_data_of(self.value())

    def __getattr__(self, name: str) -> Any:
        # Only called for names GenFuture lacks: forward to the resolved value ("using the
        # value resolves it"), e.g. fut.strip() or fut.answer on a structured result.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value(), name)


def _value_of(other: object) -> Any:
    return other.value() if isinstance(other, GenFuture) else other


def json_data_of(value: Any) -> Any:
    """A value as json.dumps can write it (pydantic objects become their JSON data)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    return value


def _called_from_asyncio() -> bool:
    caller = sys._getframe(2)  # 0: this function, 1: __hash__, 2: whoever hashed
    return str(caller.f_globals.get("__name__", "")).startswith("asyncio.")


def _install_json_support() -> None:
    """Let json.dumps write gen results (and lazy prompt text) like their values.

    json's encoder only accepts real str/int/list/dict objects and asks `default` for anything
    else; a result is not a str until it resolves, so the stock `JSONEncoder.default` is
    wrapped once: objects with `__appl_json__` are converted, everything else goes to the
    original (an encoder subclass that overrides `default` and calls super() gets it too).
    """
    original = json.JSONEncoder.default
    if getattr(original, "_appl_wrapped", False):
        return

    def default(self: json.JSONEncoder, o: Any) -> Any:
        convert = getattr(type(o), "__appl_json__", None)
        if convert is not None:
            return convert(o)
        return original(self, o)

    default._appl_wrapped = True  # type: ignore[attr-defined]
    default.__doc__ = original.__doc__
    json.JSONEncoder.default = default  # type: ignore[method-assign]


_install_json_support()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def is_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    return _running_loop() is loop
