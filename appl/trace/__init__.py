"""Tracing, strict replay and trace views for appl programs (see docs/appl-trace.md).

    with appl.trace.recording("run.jsonl"):          # record every event, flushed per line
        main()
    with appl.trace.replaying("run.jsonl"):          # every gen answered from the trace
        main()

Also: APPL_TRACE=path / `[trace] path = ...` in appl.toml; APPL_REPLAY=path; the pytest
fixture `appl_replay` (appl.trace.pytest_plugin); and `appl trace show|export|diff|html`.
"""

from appl.trace._cassette import cassette
from appl.trace._format import (
    SCHEMA_VERSION,
    Trace,
    TraceFormatError,
    TraceWriter,
    read_trace,
)
from appl.trace._record import recording
from appl.trace._replay import Replayer, ReplayIndex, ReplayMode, replaying

__all__ = [
    "SCHEMA_VERSION",
    "ReplayIndex",
    "ReplayMode",
    "Replayer",
    "Trace",
    "TraceFormatError",
    "TraceWriter",
    "cassette",
    "read_trace",
    "recording",
    "replaying",
]
