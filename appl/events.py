"""Structured runtime events and the listener interface.

The runtime emits an `Event` at well-defined points (see `EventKind`). Listeners are plain
callables kept in a context variable, so they are scoped like any other context: a listener
added inside a task or a `listening(...)` block sees the events of the code that runs there
(and of every gen task started from there, because tasks inherit the context they were
created in), and nothing else. A tracing layer subscribes here; the runtime never imports it.

Listeners run synchronously on the event loop thread (or the thread of a sync @ppl body);
they must be quick and must not raise. An exception in a listener is reported once via
`warnings` and the listener keeps its place: a broken logger must never break a program.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from appl.identity import CallIdentity

EventKind = Literal[
    "run_start",  # a top-level @ppl call started a run (data: function)
    "run_end",  # the run finished (data: function, ok, error)
    "call",  # a @ppl function was entered (data: function, path, ctx)
    "return",  # a @ppl function returned (data: function, path, ok)
    "gen_request",  # inputs resolved, request about to be sent (data: request, options)
    "gen_chunks",  # streamed text so far, in batches (data: chunks): a crash keeps what came
    "gen_response",  # the model answered (data: text, tool_calls, usage, latency_s, retries)
    "gen_error",  # a gen failed (data: type, message, path; call: its latest request, if any)
    "format_retry",  # a structured reply failed validation and is retried (data: error)
    "tool_call",  # a tool is about to run (data: name, arguments, id)
    "tool_result",  # a tool finished (data: name, id, ok, content, duration_s)
    "budget_stop",  # a budget refused the call (data: message, budget, limit, used)
    # the LLM compiler (appl.compiler), one run per run_compiler call:
    "plan_line",  # a plan line was parsed (data: round, line, step_id, tool, accepted, issue)
    "step_start",  # a plan step started (data: id, tool, args, attempt)
    "step_done",  # a step finished (data: id, tool, duration_s, result)
    "step_failed",  # a step failed or was skipped (data: id, tool, error, skipped, duration_s)
    "replan",  # the joiner asked for a new plan (data: round, reason)
    "join",  # the joiner decided (data: round, action, text, thought)
]


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    run_id: str
    data: dict[str, Any] = field(default_factory=dict)
    call: CallIdentity | None = None  # set on every gen-related event
    time: float = field(default_factory=time.time)


Listener = Callable[[Event], None]

_listeners: ContextVar[tuple[Listener, ...]] = ContextVar("appl_event_listeners", default=())
_warned: set[int] = set()


def add_listener(listener: Listener) -> None:
    """Subscribe `listener` in the current context (and contexts created from it later)."""
    if not callable(listener):
        raise TypeError(f"listener must be callable, got {type(listener).__name__}")
    current = _listeners.get()
    if listener not in current:
        _listeners.set((*current, listener))


def remove_listener(listener: Listener) -> None:
    """Unsubscribe `listener` from the current context; unknown listeners are ignored."""
    _listeners.set(tuple(x for x in _listeners.get() if x is not listener))


@contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    """`with listening(events.append): ...` subscribes for the duration of the block."""
    token = _listeners.set((*_listeners.get(), listener))
    try:
        yield listener
    finally:
        _listeners.reset(token)


def has_listeners() -> bool:
    return bool(_listeners.get())


def emit(
    kind: EventKind, run_id: str, data: dict[str, Any], call: CallIdentity | None = None
) -> None:
    listeners = _listeners.get()
    if not listeners:  # the common case costs one context-variable read
        return
    event = Event(kind=kind, run_id=run_id, data=data, call=call)
    for listener in listeners:
        try:
            listener(event)
        except Exception as exc:
            if id(listener) not in _warned:
                _warned.add(id(listener))
                warnings.warn(
                    f"appl event listener {listener!r} raised {exc!r}; events keep flowing",
                    RuntimeWarning,
                    stacklevel=2,
                )
