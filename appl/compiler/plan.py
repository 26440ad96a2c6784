"""Plans as data: steps (tool calls) whose arguments may refer to earlier steps' results.

Argument values form a small tree:
  * plain JSON-like literals (str, int, float, bool, None, list, dict),
  * `Ref(step, path)`: the result of an earlier step, or one field of it (`$2.price`),
  * `Template(parts)`: a string with references interpolated into it (`"total: ${3}"`).

The text grammar of references lives in `appl.compiler.parse` (and docs/appl-compiler.md);
this module only holds the values and how they resolve once results exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from appl.errors import ApplError

PathItem = str | int


class CompilerError(ApplError):
    """Base of the compiler's own errors."""


class RoundLimitError(CompilerError):
    """The joiner (or ReAct loop) still wanted more work after the last allowed round/turn.

    `result` holds everything done so far (a CompilerResult or ReactResult) with answer None.
    """

    def __init__(self, message: str, *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class ReferenceError_(CompilerError):
    """A reference could not be resolved (missing field, index out of range, ...)."""


@dataclass(frozen=True, slots=True)
class Ref:
    """The result of step `step`, then `path` applied to it (keys, attributes, indexes)."""

    step: int
    path: tuple[PathItem, ...] = ()

    @property
    def inner(self) -> str:
        """`2.items[0]`: the text between `${` and `}`."""
        out = str(self.step)
        for item in self.path:
            if isinstance(item, int):
                out += f"[{item}]"
            elif item.isidentifier():
                out += f".{item}"
            else:
                out += f"[{json.dumps(item)}]"
        return out

    def __str__(self) -> str:
        return f"${{{self.inner}}}"


@dataclass(frozen=True, slots=True)
class Template:
    """A string with references in it; each Ref is replaced by its value's text form."""

    parts: tuple[str | Ref, ...]

    def __str__(self) -> str:
        return "".join(p if isinstance(p, str) else str(p) for p in self.parts)


def iter_refs(value: Any) -> Iterator[Ref]:
    """Every reference inside an argument value tree."""
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, Template):
        for part in value.parts:
            if isinstance(part, Ref):
                yield part
    elif isinstance(value, list | tuple):
        for item in value:
            yield from iter_refs(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_refs(item)


def has_refs(value: Any) -> bool:
    return next(iter_refs(value), None) is not None


def follow(value: Any, ref: Ref) -> Any:
    """Apply `ref.path` to a step's result. Raises ReferenceError_ with a readable reason."""
    current = value
    walked = f"${ref.step}"
    for item in ref.path:
        try:
            if isinstance(item, int):
                if not isinstance(current, list | tuple | str):
                    raise ReferenceError_(
                        f"{walked} is a {type(current).__name__}, not a list; cannot index [{item}]"
                    )
                current = current[item]
            elif isinstance(current, Mapping):
                current = current[item]
            elif hasattr(current, item):
                current = getattr(current, item)
            else:
                raise ReferenceError_(
                    f"{walked} ({type(current).__name__}) has no field {item!r}"
                    + (
                        f"; fields: {sorted(map(str, current))}"
                        if isinstance(current, dict)
                        else ""
                    )
                )
        except (KeyError, IndexError) as exc:
            keys = f"; keys: {sorted(map(str, current))}" if isinstance(current, Mapping) else ""
            raise ReferenceError_(
                f"{walked} has no {item!r} ({type(exc).__name__}){keys}"
            ) from None
        walked += f"[{item}]" if isinstance(item, int) else f".{item}"
    return current


def text_of(value: Any) -> str:
    """How a value is written into a string: strings as-is, everything else as JSON."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def resolve(value: Any, results: Mapping[int, Any]) -> Any:
    """Replace every Ref/Template in `value` using the finished steps' `results`."""
    if isinstance(value, Ref):
        return follow(results[value.step], value)
    if isinstance(value, Template):
        return "".join(
            p if isinstance(p, str) else text_of(follow(results[p.step], p)) for p in value.parts
        )
    if isinstance(value, list | tuple):
        return [resolve(v, results) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    return value


def render_value(value: Any) -> str:
    """Source form of an argument value in the line format (round-trips through the parser)."""
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, Template):
        body = "".join(_escape_str(p) if isinstance(p, str) else str(p) for p in value.parts)
        return f'"{body}"'
    if isinstance(value, str):
        return f'"{_escape_str(value)}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)}: {render_value(v)}" for k, v in value.items()) + "}"
        )
    return json.dumps(value)


def _escape_str(text: str) -> str:
    # json.dumps gives the backslash escapes; "${" must be doubled to stay literal.
    return json.dumps(text, ensure_ascii=False)[1:-1].replace("${", "$${")


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A syntactically valid step line before it is checked against the tools."""

    id: int
    tool: str
    positional: tuple[Any, ...] = ()
    keywords: tuple[tuple[str, Any], ...] = ()
    line: str = ""
    line_no: int = 0


@dataclass(frozen=True, slots=True)
class PlanStep:
    """A validated step: arguments bound to parameter names, dependencies known."""

    id: int
    tool: str
    args: dict[str, Any]
    deps: frozenset[int] = frozenset()
    line: str = ""
    round: int = 1

    def render(self) -> str:
        args = ", ".join(f"{k}={render_value(v)}" for k, v in self.args.items())
        return f"{self.id}. {self.tool}({args})"


IssueKind = Literal["syntax", "validation", "warning"]


@dataclass(frozen=True, slots=True)
class PlanIssue:
    """Something wrong with the plan text, shown to the joiner and the next planner round.

    kind "syntax" and "validation" mean the step was rejected (it does not run); "warning"
    means it runs but may not do what the planner meant.
    """

    kind: IssueKind
    message: str
    line: str = ""
    line_no: int = 0
    step_id: int | None = None
    round: int = 1

    def __str__(self) -> str:
        where = f"step {self.step_id}" if self.step_id is not None else f"line {self.line_no}"
        verdict = "rejected" if self.kind != "warning" else "warning"
        return f"{where} ({verdict}): {self.message}" + (
            f"  [line: {self.line.strip()}]" if self.line.strip() else ""
        )


StepStatus = Literal["waiting", "ready", "running", "done", "failed", "skipped"]


@dataclass(slots=True)
class StepRecord:
    """One step's execution: status, result or error, and timings (seconds from run start)."""

    step: PlanStep
    status: StepStatus = "waiting"
    result: Any = None
    error: str | None = None
    attempts: int = 0
    emitted_at: float = 0.0  # its plan line was complete
    ready_at: float | None = None  # every input resolved
    started_at: float | None = None  # the tool was called (first attempt)
    finished_at: float | None = None
    args: dict[str, Any] | None = None  # resolved arguments, once known

    @property
    def id(self) -> int:
        return self.step.id

    @property
    def ok(self) -> bool:
        return self.status == "done"

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at

    @property
    def terminal(self) -> bool:
        return self.status in ("done", "failed", "skipped")


@dataclass(slots=True)
class PlanRound:
    """One planner call: its text, the steps it produced, the issues found, timings."""

    round: int
    text: str = ""
    step_ids: list[int] = field(default_factory=list)
    issues: list[PlanIssue] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    started_at: float = 0.0
    first_text_at: float | None = None
    last_text_at: float | None = None  # the last text delta arrived
    finished_at: float | None = None  # the planner's response was complete
    joined: bool = False  # the plan ended with join() / <END_OF_PLAN>
