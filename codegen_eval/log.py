"""The run log: one JSONL file per run, append-only, flushed after every record.

Record types (field "type"):
  header     first line: suites, model, solver, options, start time, versions
  resume     appended each time a run is resumed (same fields as header)
  candidate  a generated candidate (code, raw reply, metadata) - so a resumed run scores it
             without generating it again
  score      one scored candidate: suite, sample_id, index, code_hash, value, status,
             failure_class, metrics, explanation, language, variant, cached, and
             score_metadata (a scorer's structured details) when the scorer gave any
  excluded   a sample left out on purpose (known-bad upstream problem) with the reason
  end        the run finished (interrupted=false) or stopped on Ctrl-C (interrupted=true)

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
from typing import Any, TextIO

from codegen_eval.errors import CodegenEvalError

LOG_VERSION = 1


class LogFormatError(CodegenEvalError, ValueError):
    """A log line (other than a truncated last one) is not a JSON record."""


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
    header: dict[str, Any] = field(default_factory=dict)
    resumes: list[dict[str, Any]] = field(default_factory=list)
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> record
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> first score record
    excluded: list[dict[str, Any]] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0  # score records for a key already scored (should stay 0)
    truncated_tail: bool = False

    @property
    def score_records(self) -> list[dict[str, Any]]:
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


# Fields a record of each kind cannot do without (reports and resume index by them).
_REQUIRED = {
    "candidate": ("suite", "sample_id", "index"),
    "score": ("suite", "sample_id", "index", "status"),
    "excluded": ("suite", "sample_id"),
}


def is_infra_error(score_record: dict[str, Any]) -> bool:
    """Not a result: the harness, the sandbox or the model server failed (--retry-infra)."""
    return score_record.get("failure_class") == "infra_error"


def failed_generation(candidate_record: dict[str, Any]) -> bool:
    """A candidate record of a generation that raised: no code, only the error."""
    return "generation_error" in (candidate_record.get("metadata") or {})


def read_log(path: str | os.PathLike[str]) -> LogContents:
    """Read a run log. A truncated last line is tolerated (flagged `truncated_tail`); any other
    bad line raises LogFormatError naming the line, because guessing would miscount results."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such run log: {p}")
    if p.is_dir():
        raise LogFormatError(f"{p} is a directory, not a run log")
    out = LogContents(path=p)
    for lineno, rec, is_last in _iter_records(p):
        if rec is None:
            if is_last:
                out.truncated_tail = True
                continue
            raise LogFormatError(f"{p}:{lineno}: not a JSON record (the log is damaged)")
        kind = rec.get("type")
        if kind in _REQUIRED:
            missing = [f for f in _REQUIRED[kind] if f not in rec]
            if missing:
                raise LogFormatError(
                    f"{p}:{lineno}: a {kind} record without {', '.join(missing)} "
                    "(the log is damaged or not a codegen-eval run log)"
                )
        if kind == "header":
            if not out.header:
                out.header = rec
        elif kind == "resume":
            out.resumes.append(rec)
        elif kind == "candidate":
            key = score_key(rec["suite"], rec["sample_id"], rec["index"])
            first = out.candidates.get(key)
            if first is None or failed_generation(first):
                out.candidates[key] = rec  # a failed generation is superseded by its retry
        elif kind == "score":
            key = score_key(rec["suite"], rec["sample_id"], rec["index"])
            if key not in out.scores or is_infra_error(out.scores[key]):
                out.scores[key] = rec  # a retried infra_error (--retry-infra) is superseded
            else:
                out.duplicates += 1
        elif kind == "excluded":
            out.excluded.append(rec)
        elif kind == "end":
            out.ends.append(rec)
    if not out.header and (out.scores or out.candidates):
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
        log.write({"type": "header", "log_version": LOG_VERSION, "started": now_iso(), **header})
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
        log.write({"type": "resume", "log_version": LOG_VERSION, "started": now_iso(), **header})
        return log

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        self._fh.write(line + "\n")
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
