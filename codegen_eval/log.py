"""The run log: one JSONL file per run, append-only, flushed after every record.

The record types (header, resume, candidate, score, excluded, end) are defined once in
codegen_eval/records.py; every line is read through `records.parse_record` and written
through `records.to_json`.

Ctrl-C and SIGKILL lose at most the record being written: every record is one write() of one
line followed by flush(), and the reader ignores a truncated last line (appending to such a
log first cuts the partial line off so the file stays valid JSONL).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO, cast

from codegen_eval.records import (
    LOG_VERSION,
    RECORD_TYPES,
    CandidateRecord,
    EndRecord,
    ExcludedRecord,
    HeaderRecord,
    LogFormatError,
    Record,
    ResumeRecord,
    ScoreRecord,
    parse_record,
    to_json,
)

__all__ = ["LOG_VERSION", "LogContents", "LogFormatError", "RunLog", "read_log", "score_key"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version(), "platform": sys.platform}
    for dist in ("codegen-lab", "openai", "datasets"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def score_key(suite: str, sample_id: str, index: int) -> str:
    return f"{suite}\x1f{sample_id}\x1f{index}"


@dataclass
class LogContents:
    path: Path
    # {} (falsy) when the log has no header: an empty file
    header: HeaderRecord = field(default_factory=lambda: cast(HeaderRecord, {}))
    resumes: list[ResumeRecord] = field(default_factory=list)
    candidates: dict[str, CandidateRecord] = field(default_factory=dict)  # key -> record
    scores: dict[str, ScoreRecord] = field(default_factory=dict)  # key -> first score record
    excluded: list[ExcludedRecord] = field(default_factory=list)
    ends: list[EndRecord] = field(default_factory=list)
    duplicates: int = 0  # score records for a key already scored (should stay 0)
    truncated_tail: bool = False
    # records of a type this version does not know, in a log a newer version wrote (its
    # header or a resume says a higher log_version): skipped, not refused, and counted here
    skipped_newer: int = 0

    @property
    def score_records(self) -> list[ScoreRecord]:
        return list(self.scores.values())


def _iter_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, bool]]:
    """(line number, record or None if unparsable, is_last_line)."""
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines, start=1):
        is_last = i == len(lines)
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            yield i, None, is_last
            continue
        yield i, rec if isinstance(rec, dict) else None, is_last


def is_infra_error(score_record: ScoreRecord) -> bool:
    """Not a result: the harness, the sandbox or the model server failed (--retry-infra)."""
    return score_record.get("failure_class") == "infra_error"


def failed_generation(candidate_record: CandidateRecord) -> bool:
    """A candidate record of a generation that raised: no code, only the error."""
    return "generation_error" in (candidate_record.get("metadata") or {})


def _add(out: LogContents, rec: Record) -> None:
    if rec["type"] == "resume":
        out.resumes.append(rec)
    elif rec["type"] == "candidate":
        key = score_key(rec["suite"], rec["sample_id"], rec["index"])
        first = out.candidates.get(key)
        if first is None or failed_generation(first):
            out.candidates[key] = rec  # a failed generation is superseded by its retry
    elif rec["type"] == "score":
        key = score_key(rec["suite"], rec["sample_id"], rec["index"])
        if key not in out.scores or is_infra_error(out.scores[key]):
            out.scores[key] = rec  # a retried infra_error (--retry-infra) is superseded
        else:
            out.duplicates += 1
    elif rec["type"] == "excluded":
        out.excluded.append(rec)
    elif rec["type"] == "end":
        out.ends.append(rec)


def read_log(path: str | os.PathLike[str]) -> LogContents:
    """Read a run log. A truncated last line is tolerated (flagged `truncated_tail`); any other
    bad line raises LogFormatError naming the line, because guessing would miscount results."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such run log: {p}")
    if p.is_dir():
        raise LogFormatError(f"{p} is a directory, not a run log")
    out = LogContents(path=p)
    has_header = False
    newer = False  # a newer writer's log: its record types we lack are skipped, not refused
    for lineno, obj, is_last in _iter_records(p):
        if obj is None:
            if is_last:
                out.truncated_tail = True
                continue
            raise LogFormatError(f"{p}:{lineno}: not a JSON record (the log is damaged)")
        if newer and obj.get("type") not in RECORD_TYPES:
            out.skipped_newer += 1
            continue
        rec = parse_record(obj, f"{p}:{lineno}")
        if rec["type"] in ("header", "resume") and rec["log_version"] > LOG_VERSION:
            newer = True
        if rec["type"] == "header":
            if not has_header:
                out.header, has_header = rec, True
        else:
            _add(out, rec)
    if not has_header and (out.scores or out.candidates):
        raise LogFormatError(f"{p}: no header line; is this a codegen-eval run log?")
    return out


class RunLog:
    """Appends records to a run log. Not thread-safe; the runner writes from one event loop."""

    def __init__(self, path: str | os.PathLike[str], fh: TextIO) -> None:
        self.path = Path(path)
        self._fh = fh
        self.records_written = 0

    @classmethod
    def create(cls, path: str | os.PathLike[str], header: dict[str, Any]) -> RunLog:
        """Start a new log. Refuses to overwrite a non-empty file (that would lose a run)."""
        p = Path(path)
        if p.exists() and p.stat().st_size > 0:
            raise FileExistsError(
                f"run log {p} already exists; pass --resume to continue it or --log to pick "
                "another path"
            )
        p.parent.mkdir(parents=True, exist_ok=True)
        log = cls(p, p.open("a", encoding="utf-8"))
        first = {"type": "header", "log_version": LOG_VERSION, "started": now_iso(), **header}
        log.write(cast(HeaderRecord, first))
        return log

    @classmethod
    def append(cls, path: str | os.PathLike[str], header: dict[str, Any]) -> RunLog:
        """Continue an existing log (resume): cut a truncated last line, then add a resume
        record."""
        p = Path(path)
        with p.open("rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)
        log = cls(p, p.open("a", encoding="utf-8"))
        again = {"type": "resume", "log_version": LOG_VERSION, "started": now_iso(), **header}
        log.write(cast(ResumeRecord, again))
        return log

    def write(self, record: Record) -> None:
        self._fh.write(to_json(record) + "\n")
        self._fh.flush()  # a killed process loses nothing already written to the kernel
        self.records_written += 1

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
