"""Check each step as it arrives: tool, arguments, references. Errors are messages for the
planner (they end up in the join/replan context), never exceptions that stop the run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from appl.compiler.plan import ParsedCall, PlanIssue, PlanStep, Ref, Template, has_refs, iter_refs
from appl.compiler.tools import PlanTool

_LITERAL_DOLLAR_REF = re.compile(r"\$([0-9]+)")


class StepRejected(ValueError):
    pass


# ---------------------------------------------------------------------- JSON schema (subset)
def schema_errors(value: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    """Errors of `value` against a JSON-schema subset: type, enum, anyOf/oneOf, items,
    properties/required/additionalProperties, minimum/maximum. Unknown keywords pass."""
    if not schema:
        return []
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = schema[key]
            if any(not schema_errors(value, s, where) for s in options):
                return []
            return [f"{where}: {value!r} matches none of {[s.get('type', s) for s in options]}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    types = schema.get("type")
    if types is not None:
        allowed = types if isinstance(types, list) else [types]
        if not any(_is_type(value, t) for t in allowed):
            errors.append(
                f"{where}: expected {' or '.join(allowed)}, got {_json_type(value)} {_short(value)}"
            )
            return errors
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} > maximum {schema['maximum']}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict) and ("properties" in schema or "required" in schema):
        errors += object_errors(value, schema, where)
    return errors


def object_errors(value: Mapping[str, Any], schema: Mapping[str, Any], where: str) -> list[str]:
    props = schema.get("properties") or {}
    errors = [
        f"{where}: missing required {k!r}" for k in schema.get("required") or () if k not in value
    ]
    for key, item in value.items():
        if key in props:
            errors += schema_errors(item, props[key], f"{where}.{key}" if where else key)
        elif schema.get("additionalProperties") is False:
            errors.append(
                f"{where + ': ' if where else ''}unknown argument {key!r} (known: {list(props)})"
            )
    return errors


def _is_type(value: Any, t: str) -> bool:
    match t:
        case "string":
            return isinstance(value, str)
        case "integer":
            return (isinstance(value, int) and not isinstance(value, bool)) or (
                isinstance(value, float) and value.is_integer()
            )
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "boolean":
            return isinstance(value, bool)
        case "array":
            return isinstance(value, list | tuple)
        case "object":
            return isinstance(value, dict)
        case "null":
            return value is None
    return True


def _json_type(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _is_type(value, name):
            return name
    return type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def static_errors(value: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    """Schema errors knowable before results exist: a Template is a string, a Ref unknown."""
    if isinstance(value, Ref):
        return []
    if isinstance(value, Template):
        return schema_errors(
            "", {k: v for k, v in schema.items() if k in ("type", "anyOf", "oneOf")}, where
        )
    if isinstance(value, list) and has_refs(value):
        items: Mapping[str, Any] = (
            schema["items"] if isinstance(schema.get("items"), Mapping) else {}
        )
        errs = (
            []
            if _is_type(value, schema.get("type", "array")) or "type" not in schema
            else [f"{where}: expected {schema['type']}, got array"]
        )
        return errs + [
            e for i, v in enumerate(value) for e in static_errors(v, items, f"{where}[{i}]")
        ]
    if isinstance(value, dict) and has_refs(value):
        return (
            []
            if "type" not in schema or _is_type(value, schema["type"])
            else [f"{where}: expected {schema['type']}, got object"]
        )
    return schema_errors(value, schema, where)


# ---------------------------------------------------------------------- steps
class PlanValidator:
    """Holds the steps accepted so far (all rounds) and checks each new one against them."""

    def __init__(self, tools: Mapping[str, PlanTool]) -> None:
        self.tools = tools
        self.accepted: dict[int, PlanStep] = {}
        self.rejected: dict[int, str] = {}  # id -> why, so dependents can say so

    @property
    def next_id(self) -> int:
        return max([0, *self.accepted, *self.rejected]) + 1

    def check(self, call: ParsedCall, *, round: int = 1) -> tuple[PlanStep | None, list[PlanIssue]]:
        """(the step, warnings) when accepted; (None, [the error]) when rejected."""
        try:
            step = self._check(call, round)
        except StepRejected as exc:
            if call.id not in self.accepted:
                self.rejected.setdefault(call.id, str(exc))
            return None, [
                PlanIssue("validation", str(exc), call.line, call.line_no, call.id, round)
            ]
        self.accepted[step.id] = step
        self.rejected.pop(step.id, None)
        return step, self._warnings(step, call, round)

    def reject_syntax(self, issue: PlanIssue) -> None:
        """A line that did not parse still claims its number, so `$N` to it explains why."""
        if issue.step_id is not None and issue.step_id not in self.accepted:
            self.rejected.setdefault(issue.step_id, issue.message)

    def _check(self, call: ParsedCall, round: int) -> PlanStep:
        if call.id < 1:
            raise StepRejected(f"step ids start at 1, got {call.id}")
        if call.id in self.accepted:
            raise StepRejected(
                f"duplicate step id {call.id} (already: {self.accepted[call.id].render()}); "
                f"number new steps from {self.next_id}"
            )
        tool = self.tools.get(call.tool)
        if tool is None:
            raise StepRejected(f"unknown tool {call.tool!r}; available: {sorted(self.tools)}")
        args = self._bind(call, tool)
        deps: set[int] = set()
        for ref in (r for v in args.values() for r in iter_refs(v)):
            if ref.step == call.id:
                raise StepRejected(f"cycle: step {call.id} refers to its own result ({ref})")
            if ref.step in self.accepted:
                deps.add(ref.step)
            elif ref.step in self.rejected:
                raise StepRejected(
                    f"refers to step {ref.step}, which was rejected ({self.rejected[ref.step]})"
                )
            elif ref.step > call.id:
                raise StepRejected(
                    f"forward reference {ref}: step {ref.step} comes later; "
                    "a step may only use results of steps listed before it"
                )
            else:
                raise StepRejected(f"dangling reference {ref}: there is no step {ref.step}")
        errors: list[str] = []
        props = tool.parameters.get("properties") or {}
        for name, value in args.items():
            errors += static_errors(value, props.get(name, {}), name)
        if errors:
            raise StepRejected("arguments do not fit the tool's schema: " + "; ".join(errors))
        return PlanStep(call.id, call.tool, args, frozenset(deps), call.line, round)

    def _bind(self, call: ParsedCall, tool: PlanTool) -> dict[str, Any]:
        names = tool.param_names
        if len(call.positional) > len(names):
            raise StepRejected(
                f"{tool.name} takes {len(names)} argument(s) ({', '.join(names)}), "
                f"got {len(call.positional)} positional"
            )
        args = dict(zip(names, call.positional, strict=False))
        for key, value in call.keywords:
            if key in args:
                raise StepRejected(f"argument {key!r} given twice")
            if key not in names and not tool.parameters.get("additionalProperties", False):
                raise StepRejected(f"{tool.name} has no argument {key!r} (arguments: {names})")
            args[key] = value
        missing = [k for k in tool.parameters.get("required") or () if k not in args]
        if missing:
            raise StepRejected(
                f"missing required argument(s) {missing} for {tool.name}({', '.join(names)})"
            )
        return args

    def _warnings(self, step: PlanStep, call: ParsedCall, round: int) -> list[PlanIssue]:
        """Plain strings with `$N` where step N exists: probably a reference written the
        reference system's way. It stays literal (that is the rule), but the planner hears."""
        out = []
        for text in _plain_strings(step.args):
            for m in _LITERAL_DOLLAR_REF.finditer(text):
                n = int(m.group(1))
                if n in self.accepted and n != step.id:
                    out.append(
                        PlanIssue(
                            "warning",
                            f"{m.group(0)!r} inside a string is literal text; write "
                            f"${{{n}}} to use step {n}'s result",
                            call.line,
                            call.line_no,
                            step.id,
                            round,
                        )
                    )
        return out


def _plain_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Template):
        return [p for p in value.parts if isinstance(p, str)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _plain_strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _plain_strings(v)]
    return []
