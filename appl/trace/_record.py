"""Turning tracing on: a context manager, the environment, or the config file.

    with appl.trace.recording("run.jsonl"):      # explicit, context-scoped
        main()

    APPL_TRACE=run.jsonl python prog.py            # environment
    [trace]                                        # appl.toml
    path = "runs/trace.jsonl"

Off costs nothing: no listener is installed, so the runtime's `events.has_listeners()` checks
stay false and no event object is even built. The environment/config route is consulted by
the core once per top-level run (`_auto.auto_scope`); that check is an env lookup and a dict get.
The same route also replays: APPL_REPLAY=trace.jsonl (or `[trace] replay = ...`) answers
every gen from the trace, strictly unless APPL_REPLAY_MODE=lenient / `replay_mode`.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from appl import events
from appl.trace._format import TraceWriter

ENV_TRACE = "APPL_TRACE"
ENV_REPLAY = "APPL_REPLAY"
ENV_REPLAY_MODE = "APPL_REPLAY_MODE"
_OFF = frozenset({"", "0", "off", "false", "no"})


@contextmanager
def recording(
    path: str | Path, *, program: str | None = None, overwrite: bool = False
) -> Iterator[TraceWriter]:
    """Record every event of the code inside the block (and the gens it starts) to `path`.

    The file is created with a header at once; each event is written and flushed as it
    happens. An existing file is an error (FileExistsError) unless `overwrite=True`: a trace
    is often the only record of paid calls. Nested `recording` blocks each get every event of
    their scope.
    """
    writer = TraceWriter(path, program=program, overwrite=overwrite)
    try:
        with events.listening(writer):
            yield writer
    finally:
        writer.close()


# --- environment / config activation -------------------------------------------------------

# One writer per path per process: a script that makes several top-level @ppl calls gets one
# trace with several runs, not one file overwritten per run.
_auto_writers: dict[Path, TraceWriter] = {}
_auto_lock = threading.Lock()
_auto_active: ContextVar[tuple[TraceWriter, ...]] = ContextVar("appl_trace_auto", default=())


def _close_auto_writers() -> None:
    with _auto_lock:
        for writer in _auto_writers.values():
            writer.close()
        _auto_writers.clear()


atexit.register(_close_auto_writers)


def _setting(env: str, key: str, section: dict[str, Any]) -> str | None:
    value = os.environ.get(env)
    if value is None:
        raw = section.get(key)
        value = None if raw is None else str(raw)
    if value is None or value.strip().lower() in _OFF:
        return None
    return value


def _trace_section() -> dict[str, Any]:
    from appl.config import get_config
    from appl.errors import ConfigError

    try:
        section = get_config().sections.get("trace")
    except ConfigError:  # a broken appl.toml is reported where a model is needed, not here
        return {}
    return section if isinstance(section, dict) else {}


def auto_writer(path: str | Path) -> TraceWriter:
    """The process-wide writer for `path` (created on first use)."""
    key = Path(path).resolve()
    with _auto_lock:
        writer = _auto_writers.get(key)
        if writer is None or writer.closed:
            writer = _auto_writers[key] = TraceWriter(key)
        return writer
