"""The records of a run log, defined once: one TypedDict per kind, told apart by `type`.

A run log (codegen_eval/log.py) is JSONL; every line is one of

    header     first line: suites, n, ks, model, solver, options, start time, versions
    resume     appended each time a run is resumed (same fields as header)
    candidate  a generated candidate, so a resumed run scores it without generating it again
    score      one scored candidate: its verdict, failure class, metrics, explanation
    excluded   a problem left out on purpose (Task.excluded), with the reason
    end        the run finished (interrupted false) or stopped on Ctrl-C (interrupted true)

Records stay plain dicts (what json.loads gives and every existing caller indexes), so logs
on disk are byte-for-byte what they were. `parse_record` is the one door in: it checks the
fields the readers rely on, fills the ones an older writer left out with their defaults (so a
reader indexes `rec["failure_class"]` instead of guessing with `.get`), and raises
LogFormatError naming the line on an unknown or malformed record. `to_json` is the one door
out.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, Required, TypeAlias, TypedDict

from codegen_eval.errors import CodegenEvalError
from codegen_eval.types import ScoreStatus

LOG_VERSION = 1


class LogFormatError(CodegenEvalError, ValueError):
    """A log line (other than a truncated last one) is not a record of a run log."""


class HeaderRecord(TypedDict, total=False):
    """The run's first line. Callers may add keys of their own (RunConfig.header: model,
    solver, base_url, options, cli); they are kept as written."""

    type: Required[Literal["header"]]
    log_version: int
    started: str  # ISO 8601, UTC
    suites: list[str]
    n: int
    ks: list[int]
    versions: dict[str, str]
    suite_notes: dict[str, Any]  # suite -> Task.log_header
    model: str
    solver: str
    base_url: str
    options: dict[str, Any]
    cli: dict[str, Any]  # run_options.HEADER_KEY: the options as given, for --resume


class ResumeRecord(TypedDict, total=False):
    """A resumption: the header's fields as the resuming invocation would write them."""

    type: Required[Literal["resume"]]
    log_version: int
    started: str
    suites: list[str]
    n: int
    ks: list[int]
    versions: dict[str, str]
    suite_notes: dict[str, Any]
    model: str
    solver: str
    base_url: str
    options: dict[str, Any]
    cli: dict[str, Any]


class CandidateRecord(TypedDict):
    type: Literal["candidate"]
    suite: str
    sample_id: str
    index: int
    code: str  # what the scorer builds; "" when generation failed
    raw: str  # the model's whole reply, "" when it equals code
    metadata: dict[str, Any]  # model, tokens...; "generation_error" when generation raised


class ScoreRecord(TypedDict):
    type: Literal["score"]
    suite: str
    sample_id: str
    index: int
    code_hash: str  # the score cache's key; "" for a generation that failed
    value: float
    status: str  # a ScoreStatus value
    failure_class: str | None  # a FailureClass value, with an optional ":detail"
    metrics: dict[str, Any]
    explanation: str  # cut to runner.MAX_EXPLANATION characters
    language: str
    variant: str
    cached: bool
    elapsed_s: NotRequired[float]  # absent for a generation that failed
    candidate: NotRequired[dict[str, Any]]  # the candidate's metadata
    score_metadata: NotRequired[dict[str, Any]]  # Score.metadata, when the scorer gave any
    executor: NotRequired[dict[str, Any]]  # where an executor scored it (node, job id)


class ExcludedRecord(TypedDict):
    type: Literal["excluded"]
    suite: str
    sample_id: str
    reason: str


class EndRecord(TypedDict):
    type: Literal["end"]
    interrupted: bool
    scored: int  # candidates scored by this invocation


Record: TypeAlias = (
    HeaderRecord | ResumeRecord | CandidateRecord | ScoreRecord | ExcludedRecord | EndRecord
)

# Per type: (field, accepted types, default). The default is what today's writer always
# writes, filled in for records written by hand or by an older writer without it; _REQUIRED:
# a record without the field is malformed; _ABSENT: the field may be missing (NotRequired).
_REQUIRED, _ABSENT = object(), object()
_STR, _INT, _NUM, _BOOL = (str,), (int,), (int, float), (bool,)
_DICT, _LIST, _OPT_STR = (dict,), (list,), (str, type(None))
_SCHEMA: dict[str, tuple[tuple[str, tuple[type, ...], Any], ...]] = {
    "header": (("log_version", _INT, 1), ("suites", _LIST, _ABSENT), ("ks", _LIST, _ABSENT)),
    "resume": (("log_version", _INT, 1), ("suites", _LIST, _ABSENT), ("ks", _LIST, _ABSENT)),
    "candidate": (
        ("suite", _STR, _REQUIRED),
        ("sample_id", _STR, _REQUIRED),
        ("index", _INT, _REQUIRED),
        ("code", _STR, ""),
        ("raw", _STR, ""),
        ("metadata", _DICT, dict),
    ),
    "score": (
        ("suite", _STR, _REQUIRED),
        ("sample_id", _STR, _REQUIRED),
        ("index", _INT, _REQUIRED),
        ("status", _STR, _REQUIRED),
        ("code_hash", _STR, ""),
        ("value", _NUM, 0.0),
        ("failure_class", _OPT_STR, None),
        ("metrics", _DICT, dict),
        ("explanation", _STR, ""),
        ("language", _STR, ""),
        ("variant", _STR, ""),
        ("cached", _BOOL, False),
        ("elapsed_s", _NUM, _ABSENT),
        ("candidate", _DICT, _ABSENT),
        ("score_metadata", _DICT, _ABSENT),
        ("executor", _DICT, _ABSENT),
    ),
    "excluded": (
        ("suite", _STR, _REQUIRED),
        ("sample_id", _STR, _REQUIRED),
        ("reason", _STR, ""),
    ),
    "end": (("interrupted", _BOOL, False), ("scored", _INT, 0)),
}
RECORD_TYPES = tuple(_SCHEMA)
_STATUSES = frozenset(s.value for s in ScoreStatus)


_MISSING = "missing"


def _check_field(rec: dict[str, Any], name: str, types: tuple[type, ...], default: Any) -> str:
    """ "" when the field is fine (a missing optional one is filled in), _MISSING when a
    required one is absent, else what is wrong with it."""
    if name not in rec:
        if default is _REQUIRED:
            return _MISSING
        if default is not _ABSENT:
            rec[name] = default() if callable(default) else default
        return ""
    value = rec[name]
    # bool is an int to Python, never an index or a count here (and 1 is no True)
    if isinstance(value, bool) != (bool in types) or not isinstance(value, types):
        want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        return f"with {name} {json.dumps(value, default=str)[:60]} (not {want})"
    return ""


def parse_record(obj: object, where: str = "record") -> Record:
    """The record `obj` (a decoded JSON line) as its type, with missing optional fields
    filled in place. `where` names it in errors, e.g. "runs/a.jsonl:12"."""
    if not isinstance(obj, dict):
        raise LogFormatError(f"{where}: a JSON {type(obj).__name__}, not a record")
    kind = obj.get("type")
    schema = _SCHEMA.get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise LogFormatError(
            f"{where}: unknown record type {json.dumps(kind, default=str)[:40]} "
            f"(a run log has {', '.join(RECORD_TYPES)}; is this a codegen-eval run log?)"
        )
    checked = [(name, _check_field(obj, name, types, default)) for name, types, default in schema]
    missing = [name for name, p in checked if p == _MISSING]
    problems = [p for _, p in checked if p and p != _MISSING]
    if missing:  # one "without a, b" (what older readers said), then any other problem
        problems.insert(0, f"without {', '.join(missing)}")
    if kind == "score" and not problems and obj["status"] not in _STATUSES:
        problems.append(
            f"with status {obj['status']!r} (not one of {', '.join(sorted(_STATUSES))})"
        )
    if problems:
        raise LogFormatError(
            f"{where}: a {kind} record {'; '.join(problems)} "
            "(the log is damaged or not a codegen-eval run log)"
        )
    return obj  # type: ignore[return-value]  # checked above against its type's schema


def to_json(record: Record) -> str:
    """One log line (without the newline): keys in the order the record was built, non-ASCII
    kept, values JSON lacks (a Path, an enum) as their str."""
    return json.dumps(record, ensure_ascii=False, default=str)
