"""`GenFuture`: the value of a `gen(...)` call, available before the model has answered.

A GenFuture lives on the run's event loop. It resolves once, to a `GenResult`; its *value*
is the result's `value` (the text, or the validated object for structured output).

How to read it:
* `await fut` (async code)                       -> value
* `str(fut)`, `fut.value()`, `fut.upper()`, ...  -> value, blocking. Allowed from the thread
  of a sync @ppl program (the loop runs in another thread). On the loop's own thread a pending
  future cannot be waited for without deadlocking, so that raises `ApplError` telling you to
  `await` it instead.
* `await fut.result()` / `fut.result_sync()`     -> the full `GenResult` (response, usage,
  tool calls and results, the messages the gen added).
* `async for chunk in fut` / `for chunk in fut`  -> streamed text deltas (gen(stream=True)).

Placing a future in prompt text (a bare statement, or an f-string inside a @ppl function)
does NOT read it: the prompt keeps the future, and a later gen that uses that prompt waits
for it in the background (see appl.prompt).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
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


class GenFuture:
    """A pending or finished gen. Thread-safe to read; completed only on its loop."""

    __slots__ = (
        "_chunk_waiters",
        "_chunks",
        "_exc",
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
                "event loop's thread, so blocking on it would deadlock: use `await` on it "
                "(inside async code str(), f-strings outside @ppl and attribute access on a "
                "pending gen are not allowed)"
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

    def __add__(self, other: object) -> Any:
        from appl.prompt import concat

        return concat(self, other)

    def __radd__(self, other: object) -> Any:
        from appl.prompt import concat

        return concat(other, self)

    def __len__(self) -> int:
        return len(self.value())

    def __getitem__(self, key: Any) -> Any:
        return self.value()[key]

    def __contains__(self, item: object) -> bool:
        return item in self.value()

    def __bool__(self) -> bool:
        return bool(self.value())

    def __getattr__(self, name: str) -> Any:
        # Only called for names GenFuture lacks: forward to the resolved value ("using the
        # value resolves it"), e.g. fut.strip() or fut.answer on a structured result.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value(), name)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def is_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    return _running_loop() is loop
