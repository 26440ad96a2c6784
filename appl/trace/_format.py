"""The trace file format: versioned JSONL, written as it happens, read back tolerantly.

Line 1 is a header:
    {"type": "header", "schema": "appl.trace", "version": 1, "program": ..., "argv": [...],
     "started_at": "2024-...Z", "time": <epoch s>, "pid": ..., "config": {...secrets masked}}
Every further line is one runtime event (see appl.events.EventKind):
    {"seq": 7, "type": "gen_response", "run": "ab12...", "time": <epoch s>,
     "call": {"site", "path", "occurrence", "step", "request_hash"} | null, "data": {...}}

Each line is written with one `write` and flushed at once, so a crash or Ctrl-C loses
nothing that was emitted before it; at worst the last line is cut short, and the reader
drops such a line and says so (`Trace.truncated`, `Trace.warnings`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from appl.errors import ApplError
from appl.events import Event

SCHEMA = "appl.trace"
SCHEMA_VERSION = 1


class TraceFormatError(ApplError):
    """The file is not an appl trace, or is damaged somewhere other than its last line."""


def _dumps(obj: Any) -> str:
    # default=str: tool arguments and results may hold objects; a trace must never fail a run
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def make_header(program: str | None = None, config: dict[str, Any] | None = None) -> dict[str, Any]:
    if config is None:
        from appl.config import get_config

        try:
            config = get_config().redacted()
        except ApplError as exc:  # a broken appl.toml must not stop tracing
            config = {"error": str(exc)}
    now = time.time()
    return {
        "type": "header",
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "program": program if program is not None else " ".join(sys.argv) or "python",
        "argv": list(sys.argv),
        "started_at": datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z"),
        "time": now,
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "config": config,
    }


def event_record(seq: int, event: Event) -> dict[str, Any]:
    return {
        "seq": seq,
        "type": event.kind,
        "run": event.run_id,
        "time": event.time,
        "call": event.call.to_dict() if event.call is not None else None,
        "data": event.data,
    }


class TraceWriter:
    """An events listener that appends one JSON line per event to a file, flushed per line.

    Thread-safe: listeners run on the loop thread and on the threads of sync @ppl bodies.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        program: str | None = None,
        config: dict[str, Any] | None = None,
        overwrite: bool = True,
    ):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._seq = 0
        self.events_written = 0
        try:
            self._file: IO[str] | None = self.path.open("w" if overwrite else "x", encoding="utf-8")
        except FileExistsError:
            raise FileExistsError(
                f"trace file {self.path} already exists: pass overwrite=True to replace it, or "
                "record to another path"
            ) from None
        self._write_line(make_header(program, config))

    def _write_line(self, record: dict[str, Any]) -> None:
        assert self._file is not None
        self._file.write(_dumps(record) + "\n")  # one write per line: never half-interleaved
        self._file.flush()

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self._file is None:  # closed: a straggler event after the block ended
                return
            self._seq += 1
            self._write_line(event_record(self._seq, event))
            self.events_written += 1

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None


@dataclass
class Trace:
    """A trace read back: the header, the event records, and what was wrong with the file."""

    path: Path
    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False  # the last line was cut short (crash mid-write) and was dropped
    warnings: list[str] = field(default_factory=list)

    @property
    def version(self) -> int:
        return int(self.header.get("version", 0))


def read_trace(path: str | Path) -> Trace:
    """Read a trace. A damaged LAST line is dropped with a warning; damage elsewhere raises."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise TraceFormatError(f"trace file {file} does not exist") from None
    lines = raw.split(b"\n")
    ends_clean = raw.endswith(b"\n")
    if ends_clean:
        lines.pop()  # the empty string after the final newline
    parsed: list[dict[str, Any]] = []
    truncated = False
    warnings: list[str] = []
    for number, line in enumerate(lines, 1):
        last = number == len(lines)
        try:
            record = json.loads(line.decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            if last:
                truncated = True
                warnings.append(
                    f"{file}: the last line ({len(line)} bytes) is truncated or damaged and was "
                    f"ignored (the run was probably interrupted while writing it): {exc}"
                )
                break
            raise TraceFormatError(f"{file}:{number}: not a valid trace line: {exc}") from None
        if last and not ends_clean:
            # a complete JSON object, only the newline is missing: keep it, but say so
            warnings.append(f"{file}: the last line has no final newline (interrupted run?)")
        parsed.append(record)
    if not parsed or parsed[0].get("type") != "header" or parsed[0].get("schema") != SCHEMA:
        raise TraceFormatError(f"{file}: not an appl trace (the first line is not a header)")
    header = parsed[0]
    if int(header.get("version", 0)) > SCHEMA_VERSION:
        raise TraceFormatError(
            f"{file}: trace schema version {header.get('version')} is newer than this appl "
            f"understands ({SCHEMA_VERSION}); upgrade appl to read it"
        )
    return Trace(file, header, parsed[1:], truncated, warnings)
