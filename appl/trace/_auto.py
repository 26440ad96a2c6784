"""The environment/config route into tracing and replay, consulted by the core once per
top-level run. Its own module because it needs both the recorder and the replayer, and the
replayer needs the recorder: kept here, neither of those imports the other back.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager, ExitStack
from typing import Any

from appl import events
from appl.trace._record import (
    ENV_REPLAY,
    ENV_REPLAY_MODE,
    ENV_TRACE,
    _auto_active,
    _setting,
    _trace_section,
    auto_writer,
)
from appl.trace._replay import replaying


def auto_scope() -> AbstractContextManager[Any]:
    """What the environment/config asks for around one top-level run (usually nothing)."""
    section = _trace_section()
    trace_path = _setting(ENV_TRACE, "path", section)
    replay_path = _setting(ENV_REPLAY, "replay", section)
    if trace_path is None and replay_path is None:
        return contextlib.nullcontext()
    stack = ExitStack()
    if replay_path is not None:
        mode = _setting(ENV_REPLAY_MODE, "replay_mode", section) or "strict"
        stack.enter_context(replaying(replay_path, mode=mode))  # type: ignore[arg-type]
    if trace_path is not None:
        writer = auto_writer(trace_path)
        active = _auto_active.get()
        if writer not in active:  # a run nested in a traced run is already being written
            stack.enter_context(events.listening(writer))
            token = _auto_active.set((*active, writer))
            stack.callback(_auto_active.reset, token)
    return stack
