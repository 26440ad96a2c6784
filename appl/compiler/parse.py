"""Plan text -> ParsedCall, incrementally while the planner streams, and JSON plans.

Line format (one step per line; a step is executable as soon as its newline arrives):

    Thought: free text, recorded, never executed
    1. search("Barack Obama age")
    2. search(query="Michelle Obama age")
    3. math(expression="${1} - ${2}")
    4. lookup($2.items[0], limit=3)
    5. join()                       (or a bare `join()` / `<END_OF_PLAN>`: the plan ends)

Argument values: JSON/Python literals ("str" or 'str', numbers, true/false/null,
True/False/None, [lists], {dicts}), and references.

Reference grammar (see docs/appl-compiler.md):
    ref   := "$" INT path | "${" INT path "}" path
    path  := ( "." IDENT | "[" INT "]" | "[" STRING "]" )*
  * Outside quotes, `$3`, `$2.price`, `${2}.items[0]`, `${2.items[0]}` are references; the
    argument receives the referenced value itself (any type).
  * Inside a quoted string, ONLY the braced form `${...}` is a reference, and its value's text
    (strings as-is, other values as JSON) is spliced into the string. Every other `$` is a
    literal character, so "costs $10" stays "costs $10". To write a literal `${` inside a
    string, double the dollar: "$${" -> "${".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from appl.compiler.plan import ParsedCall, PathItem, PlanIssue, Ref, Template

_WS = " \t\r"
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOOL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INT_RE = re.compile(r"[0-9]+")
_STEP_HEAD_RE = re.compile(r"\s*(?:[-*]\s*)?(?:Step\s*)?([0-9]+)\s*[.):]\s*")
_CONSTANTS = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}
_ESCAPES = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "0": "\0",
}
END_MARKERS = ("<END_OF_PLAN>",)


class PlanSyntaxError(ValueError):
    """A line that is not a valid step; `col` is the 0-based column of the problem."""

    def __init__(self, message: str, col: int = 0) -> None:
        super().__init__(message)
        self.col = col


class _Cursor:
    """Recursive-descent reader over one line of text."""

    def __init__(self, text: str, *, allow_refs: bool = True) -> None:
        self.text = text
        self.pos = 0
        self.allow_refs = allow_refs

    def error(self, message: str) -> PlanSyntaxError:
        near = self.text[self.pos : self.pos + 20]
        where = f" at column {self.pos + 1} (near {near!r})" if near else " at end of line"
        return PlanSyntaxError(message + where, self.pos)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _WS:
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def eat(self, char: str) -> bool:
        self.skip_ws()
        if self.text.startswith(char, self.pos):
            self.pos += len(char)
            return True
        return False

    def expect(self, char: str, what: str) -> None:
        if not self.eat(char):
            raise self.error(f"expected {what}")

    def match(self, pattern: re.Pattern[str]) -> str | None:
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)

    # ------------------------------------------------------------------ values
    def value(self) -> Any:
        self.skip_ws()
        c = self.peek()
        if c in ('"', "'"):
            return self.string()
        if c == "[":
            return self.list_()
        if c == "{":
            return self.dict_()
        if c == "$":
            if not self.allow_refs:
                raise self.error("references ($N) are not allowed here")
            return self.ref()
        number = self.match(_NUMBER_RE)
        if number is not None:
            return float(number) if any(ch in number for ch in ".eE") else int(number)
        ident = self.match(_IDENT_RE)
        if ident is not None:
            if ident in _CONSTANTS:
                return _CONSTANTS[ident]
            self.pos -= len(ident)
            raise self.error(f"unquoted word {ident!r}: strings need quotes")
        raise self.error("expected a value")

    def list_(self) -> list[Any]:
        self.expect("[", "'['")
        items: list[Any] = []
        while not self.eat("]"):
            items.append(self.value())
            if not self.eat(","):
                self.expect("]", "',' or ']'")
                break
        return items

    def dict_(self) -> dict[str, Any]:
        self.expect("{", "'{'")
        out: dict[str, Any] = {}
        while not self.eat("}"):
            self.skip_ws()
            key: str | Template | None
            if self.peek() in ('"', "'"):
                key = self.string()
                if isinstance(key, Template):
                    raise self.error("a dict key cannot contain a reference")
            else:
                key = self.match(_IDENT_RE)
                if key is None:
                    raise self.error("expected a dict key")
            self.expect(":", "':' after a dict key")
            out[key] = self.value()
            if not self.eat(","):
                self.expect("}", "',' or '}'")
                break
        return out

    def string(self) -> str | Template:
        quote = self.text[self.pos]
        self.pos += 1
        parts: list[str | Ref] = []
        buf: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated string")
            c = self.text[self.pos]
            if c == quote:
                self.pos += 1
                break
            if c == "\\":
                self.pos += 1
                esc = self.peek()
                if esc == "u":
                    hexd = self.text[self.pos + 1 : self.pos + 5]
                    if not re.fullmatch(r"[0-9a-fA-F]{4}", hexd):
                        raise self.error("bad \\u escape")
                    buf.append(chr(int(hexd, 16)))
                    self.pos += 5
                    continue
                if esc not in _ESCAPES:
                    # Unknown escapes keep their backslash, as Python does (regexes survive).
                    buf.append("\\")
                    continue
                buf.append(_ESCAPES[esc])
                self.pos += 1
                continue
            if c == "$" and self.text.startswith("$${", self.pos):
                buf.append("${")  # the escape for a literal "${"
                self.pos += 3
                continue
            if c == "$" and self.text.startswith("${", self.pos) and self.allow_refs:
                if buf:
                    parts.append("".join(buf))
                    buf = []
                parts.append(self.braced_ref())
                continue
            buf.append(c)  # any other "$" is literal text: "$10" is ten dollars
            self.pos += 1
        if buf or not parts:
            parts.append("".join(buf))
        if len(parts) == 1 and isinstance(parts[0], str):
            return parts[0]
        return Template(tuple(parts))

    def braced_ref(self) -> Ref:
        start = self.pos
        self.pos += 2  # "${"
        num = self.match(_INT_RE)
        if num is None:
            self.pos = start
            raise self.error(
                "'${' must be followed by a step number (write '$${' for a literal '${')"
            )
        path = self.path()
        if not self.text.startswith("}", self.pos):
            raise self.error("expected '}' to close the reference")
        self.pos += 1
        return Ref(int(num), tuple(path))

    def ref(self) -> Ref:
        if self.text.startswith("${", self.pos):
            inner = self.braced_ref()
            return Ref(inner.step, inner.path + tuple(self.path()))
        self.pos += 1
        num = self.match(_INT_RE)
        if num is None:
            raise self.error("'$' must be followed by a step number")
        return Ref(int(num), tuple(self.path()))

    def path(self) -> list[PathItem]:
        items: list[PathItem] = []
        while True:
            if self.text.startswith(".", self.pos):
                self.pos += 1
                name = self.match(_IDENT_RE)
                if name is None:
                    raise self.error("expected a field name after '.'")
                items.append(name)
            elif self.text.startswith("[", self.pos):
                self.pos += 1
                self.skip_ws()
                if self.peek() in ('"', "'"):
                    key = self.string()
                    if not isinstance(key, str):
                        raise self.error("a path key cannot contain a reference")
                    items.append(key)
                else:
                    num = self.match(re.compile(r"-?[0-9]+"))
                    if num is None:
                        raise self.error("expected an index or a quoted key")
                    items.append(int(num))
                self.expect("]", "']'")
            else:
                return items


def parse_value(text: str, *, allow_refs: bool = True) -> Any:
    """One argument value from text (used by tests and the ReAct parser)."""
    cur = _Cursor(text, allow_refs=allow_refs)
    value = cur.value()
    cur.skip_ws()
    if cur.pos != len(text):
        raise cur.error("unexpected text after the value")
    return value


def parse_call(
    text: str, *, allow_refs: bool = True
) -> tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    """`name(arg, key=value, ...)` -> (name, positional, keywords). Trailing `# comments` allowed."""
    cur = _Cursor(text, allow_refs=allow_refs)
    cur.skip_ws()
    name = cur.match(_TOOL_RE)
    if name is None:
        raise cur.error("expected a tool name")
    cur.expect("(", f"'(' after the tool name {name!r}")
    positional: list[Any] = []
    keywords: list[tuple[str, Any]] = []
    while not cur.eat(")"):
        cur.skip_ws()
        save = cur.pos
        key = cur.match(_IDENT_RE)
        if key is not None and key not in _CONSTANTS and cur.eat("="):
            keywords.append((key, cur.value()))
        else:
            cur.pos = save
            if keywords:
                raise cur.error("positional argument after a keyword argument")
            positional.append(cur.value())
        if not cur.eat(","):
            cur.expect(")", "',' or ')'")
            break
    cur.skip_ws()
    rest = text[cur.pos :].strip()
    if rest and not rest.startswith("#") and rest not in END_MARKERS:
        raise cur.error("unexpected text after the call")
    return name, tuple(positional), tuple(keywords)


@dataclass(frozen=True, slots=True)
class Thought:
    text: str
    line_no: int


@dataclass(frozen=True, slots=True)
class Join:
    line_no: int


ParsedItem = ParsedCall | PlanIssue | Thought | Join


def parse_line(line: str, line_no: int = 0, *, round: int = 1) -> ParsedItem | None:
    """Classify one complete line. None for blank lines and markdown fences."""
    stripped = line.strip()
    if not stripped or stripped.startswith("```"):
        return None
    if stripped.lower().startswith("thought:"):
        return Thought(stripped[len("thought:") :].strip(), line_no)
    if stripped in END_MARKERS:
        return Join(line_no)
    head = _STEP_HEAD_RE.match(line)
    body = line[head.end() :] if head else line
    if re.match(r"\s*join\s*\(\s*\)", body):
        return Join(line_no)
    if head is None:
        # Not silently dropped: prose in a plan is reported, so the planner learns the format.
        return PlanIssue(
            "syntax",
            "not a step: expected 'N. tool(args)', 'Thought: ...' or 'join()'",
            line,
            line_no,
            round=round,
        )
    step_id = int(head.group(1))
    try:
        name, positional, keywords = parse_call(body)
    except PlanSyntaxError as exc:
        return PlanIssue("syntax", str(exc), line, line_no, step_id=step_id, round=round)
    return ParsedCall(step_id, name, positional, keywords, line, line_no)


class StreamingPlanParser:
    """Feed text deltas as they stream; complete lines come out as parsed items at once.

    `feed` returns the items whose line ended inside this delta; `close` parses the last line
    (a plan may end without a newline). After `join()` the plan is over: later non-blank lines
    are reported as warnings rather than run.
    """

    def __init__(self, *, round: int = 1, first_line_no: int = 1) -> None:
        self.round = round
        self._buf = ""
        self._line_no = first_line_no - 1
        self.text = ""
        self.joined = False

    def feed(self, delta: str) -> list[ParsedItem]:
        self.text += delta
        self._buf += delta
        if "\n" not in delta:
            return []
        *lines, self._buf = self._buf.split("\n")
        return list(self._items(lines))

    def close(self) -> list[ParsedItem]:
        rest, self._buf = self._buf, ""
        return list(self._items([rest])) if rest.strip() else []

    def _items(self, lines: list[str]) -> Iterator[ParsedItem]:
        for line in lines:
            self._line_no += 1
            if self.joined:
                if line.strip() and line.strip() not in END_MARKERS:
                    yield PlanIssue(
                        "warning",
                        "text after join() is ignored",
                        line,
                        self._line_no,
                        round=self.round,
                    )
                continue
            item = parse_line(line, self._line_no, round=self.round)
            if isinstance(item, Join):
                self.joined = True
            if item is not None:
                yield item


# ---------------------------------------------------------------------- JSON plans
def _json_value(value: Any, *, where: str) -> Any:
    """JSON argument value -> value tree: strings use the same `${...}` rule as the line
    format, and {"$ref": "2.items[0]"} is a reference to the raw value."""
    if isinstance(value, str):
        if "$" not in value:
            return value
        quoted = json.dumps(value)
        return _Cursor(quoted).string()
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            target = value["$ref"]
            text = str(target)
            cur = _Cursor("${" + text.lstrip("$").strip("{}") + "}")
            ref = cur.braced_ref()
            if cur.pos != len(cur.text):
                raise PlanSyntaxError(f"{where}: bad $ref {target!r}")
            return ref
        return {str(k): _json_value(v, where=where) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v, where=where) for v in value]
    return value


def parse_json_plan(data: Any, *, round: int = 1) -> list[ParsedItem]:
    """A JSON plan: {"thought": "...", "steps": [{"id": 1, "tool": "search", "args": {...}}]}.

    `args` may be an object (keywords) or a list (positional). A bare list of steps is also
    accepted. Malformed steps become PlanIssues; the well-formed ones still run.
    """
    if isinstance(data, str):
        try:
            # strict=False: a raw newline or tab inside a string (a thought written over
            # several lines: seen from the 0.5B model under a schema grammar) is no reason
            # to lose the whole plan
            data = json.loads(data, strict=False)
        except ValueError as exc:
            return [
                PlanIssue(
                    "syntax", f"the plan is not valid JSON: {exc}", data[:200], 0, round=round
                )
            ]
    items: list[ParsedItem] = []
    if isinstance(data, dict):
        if isinstance(data.get("thought"), str):
            items.append(Thought(data["thought"], 0))
        steps = data.get("steps")
    else:
        steps = data
    if not isinstance(steps, list):
        return [
            *items,
            PlanIssue("syntax", 'expected {"steps": [...]}', json.dumps(data)[:200], round=round),
        ]
    for n, raw in enumerate(steps, start=1):
        line = json.dumps(raw, ensure_ascii=False)
        if not isinstance(raw, dict):
            items.append(PlanIssue("syntax", f"step #{n} is not an object", line, n, round=round))
            continue
        step_id, tool, args = (
            raw.get("id"),
            raw.get("tool", raw.get("name")),
            raw.get("args", raw.get("arguments", {})),
        )
        if tool == "join":
            items.append(Join(n))
            continue
        if not isinstance(step_id, int) or isinstance(step_id, bool):
            items.append(PlanIssue("syntax", "step needs an integer 'id'", line, n, round=round))
            continue
        if not isinstance(tool, str) or not tool:
            items.append(PlanIssue("syntax", "step needs a 'tool' name", line, n, step_id, round))
            continue
        try:
            if isinstance(args, dict):
                kws = tuple(
                    (str(k), _json_value(v, where=f"step {step_id}")) for k, v in args.items()
                )
                items.append(ParsedCall(step_id, tool, (), kws, line, n))
            elif isinstance(args, list):
                pos = tuple(_json_value(v, where=f"step {step_id}") for v in args)
                items.append(ParsedCall(step_id, tool, pos, (), line, n))
            else:
                items.append(
                    PlanIssue(
                        "syntax", "'args' must be an object or a list", line, n, step_id, round
                    )
                )
        except PlanSyntaxError as exc:
            items.append(PlanIssue("syntax", str(exc), line, n, step_id, round))
    return items
