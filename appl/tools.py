"""Python functions as tools: a `ToolSpec` from type hints and docstring, and execution.

`Tool.from_function(f)` (or the `@tool` decorator) reads:
* the name from `f.__name__` (override with name=...);
* the description from the docstring's text before its "Args:" section;
* one JSON-schema property per parameter, typed by its annotation through pydantic, described
  by the matching "Args:" entry (Google style: "name: text" or "name (type): text") or a
  Sphinx ":param name: text" line. Parameters without a default are required.

`run_tool_calls` runs the model's calls concurrently (sync tools in worker threads) and turns
every outcome into a `role="tool"` message. A tool that raises, arguments that are not valid
JSON or fail validation, or an unknown tool name all become an error message that the model
sees on its next turn; they never crash the program.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic

from appl.types import Message, ToolCall, ToolSpec

_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?)\s*:\s*$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {argument: description}) from a Google or Sphinx style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    last: str | None = None
    for line in lines:
        if m := _SECTION.match(line):
            section, last = m.group(1), None
            continue
        if m := _SPHINX_PARAM.match(line):
            last = m.group(1)
            args[last] = m.group(2).strip()
            section = "Args"
            continue
        if line.strip().startswith(":"):  # :returns: and friends
            section, last = "Other", None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            m = _ARG_LINE.match(line)
            if m and (line.startswith((" ", "\t")) or last is None):
                last = m.group(1).lstrip("*")
                args[last] = m.group(2).strip()
            elif last and line.strip():  # continuation of the previous argument
                args[last] = f"{args[last]} {line.strip()}".strip()
    return "\n".join(description).strip(), args


@dataclass(frozen=True, slots=True)
class ToolResult:
    call: ToolCall
    content: str  # what the model sees
    ok: bool
    value: Any = None  # the Python return value (None on error)
    error: BaseException | None = None
    duration_s: float = 0.0
    replayed: bool = False  # answered from a trace (value is then None: only text is kept)

    def to_message(self) -> Message:
        return Message(role="tool", content=self.content, tool_call_id=self.call.id)


class Tool:
    """A callable the model may invoke, with its spec and an argument validator."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        pure: bool = False,
    ):
        if not callable(func):
            raise TypeError(f"a tool must be callable, got {type(func).__name__}")
        self.func = func
        # pure: no side effects and the same answer for the same arguments, so a replay may
        # run it again; other tools' results are replayed from the trace (appl.trace)
        self.pure = pure
        self.is_async = inspect.iscoroutinefunction(func)
        signature = inspect.signature(func)
        try:
            hints = get_type_hints(func)
        except Exception as exc:
            raise TypeError(f"tool {func.__name__}: cannot read its type hints: {exc}") from exc
        doc_description, arg_docs = parse_docstring(func.__doc__)
        fields: dict[str, Any] = {}
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {func.__name__}: *args/**kwargs cannot be described")
            annotation = hints.get(param.name, Any)
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                annotation,
                pydantic.Field(default, description=arg_docs.get(param.name)),
            )
        self.arguments_model: type[pydantic.BaseModel] = pydantic.create_model(
            f"{func.__name__}_arguments", **fields
        )
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("properties", {})
        self.spec = ToolSpec(
            name=name or func.__name__,
            description=description or doc_description or f"Call {func.__name__}.",
            parameters=schema,
        )

    @property
    def name(self) -> str:
        return self.spec.name

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        parsed = self.arguments_model.model_validate(arguments)
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.is_async:
            return await self.func(**kwargs)
        # a sync tool may block (I/O, subprocess): keep the loop free for other gens
        return await asyncio.to_thread(self.func, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    pure: bool = False,
) -> Any:
    """Decorator: `@tool` or `@tool(name=..., description=..., pure=True)` -> `Tool`.

    pure=True: the tool has no side effects and answers the same for the same arguments; a
    replay runs it again instead of answering it from the trace."""
    if func is None:
        return lambda f: Tool(f, name=name, description=description, pure=pure)
    return Tool(func, name=name, description=description, pure=pure)


def as_tools(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    table: dict[str, Tool] = {}
    for item in tools:
        t = item if isinstance(item, Tool) else Tool(item)
        if t.name in table:
            raise ValueError(f"two tools are named {t.name!r}")
        table[t.name] = t
    return table


def tool_result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


async def run_tool_call(call: ToolCall, tools: dict[str, Tool]) -> ToolResult:
    started = time.perf_counter()

    def failed(message: str, error: BaseException | None = None) -> ToolResult:
        return ToolResult(
            call, f"Error: {message}", False, error=error, duration_s=time.perf_counter() - started
        )

    target = tools.get(call.name)
    if target is None:
        return failed(f"unknown tool {call.name!r}; available: {', '.join(sorted(tools))}")
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return failed(f"arguments are not valid JSON ({exc.msg}): {call.arguments[:200]}", exc)
    if not isinstance(arguments, dict):
        return failed("arguments must be a JSON object")
    try:
        value = await target.invoke(arguments)
    except pydantic.ValidationError as exc:
        return failed(f"invalid arguments for {call.name}: {exc}", exc)
    except Exception as exc:  # the model sees the failure and may recover
        return failed(f"{type(exc).__name__}: {exc}", exc)
    return ToolResult(
        call, tool_result_text(value), True, value=value, duration_s=time.perf_counter() - started
    )


async def run_tool_calls(
    calls: Iterable[ToolCall],
    tools: dict[str, Tool],
    on_start: Callable[[ToolCall], None] | None = None,
    on_done: Callable[[ToolResult], None] | None = None,
    recorded: Callable[[ToolCall], ToolResult | None] | None = None,
) -> list[ToolResult]:
    """Run all calls concurrently; results in call order. Cancellation cancels them all.

    recorded: answers a call from a trace instead of running it (None: run it)."""

    async def one(call: ToolCall) -> ToolResult:
        if on_start:
            on_start(call)
        result = recorded(call) if recorded is not None else None
        if result is None:
            result = await run_tool_call(call, tools)
        if on_done:
            on_done(result)
        return result

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(c)) for c in calls]
    return [t.result() for t in tasks]
