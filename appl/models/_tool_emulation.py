"""Tool calling for servers whose chat template never produces tool calls on tool_choice="auto".

Measured on llama.cpp's server with Qwen2.5-Coder (shared/FACTS.md): a forced tool_choice
works, "auto" never returns tool_calls. For a model whose config says
`capabilities.auto_tool_choice = false`, a request with tools and tool_choice "auto" (or
"required", or unset) is sent instead with grammar-enforced JSON output: the model must reply
either {"tool": NAME, "arguments": {...}} (one per tool, each with that tool's schema) or,
unless a tool is required, {"answer": "..."}. The reply is turned back into an ordinary
GenResponse with a tool call or text, so nothing above the model seam sees the difference.
tool_choice "none" keeps the tool instructions (the same prompt prefix) but no grammar: the
model writes free text, e.g. code with quotes that a small model does not escape inside a JSON
string. A tool_choice naming one function is emulated too, with a schema that admits only that
tool: the native path would render the prompt through the server's own tool template, a
different prefix from the emulated calls around it, so a server's prompt cache (llama.cpp)
would process the whole conversation again for that one call. The instruction text does not
depend on tool_choice for the same reason; the grammar alone narrows the reply.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from appl.config import ModelConfig
from appl.errors import BadResponseError
from appl.types import GenRequest, GenResponse, Message, TextCallback, ToolCall

Generate = Callable[..., Awaitable[GenResponse]]


def _named(request: GenRequest) -> str | None:
    """The function a tool_choice names ({"type": "function", "function": {"name": ...}})."""
    choice = request.tool_choice
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    return None


def needs_tool_emulation(request: GenRequest, config: ModelConfig) -> bool:
    if not request.tools or config.supports("auto_tool_choice"):
        return False
    if request.tool_choice in (None, "auto", "required", "none"):
        return True
    return _named(request) in {t.name for t in request.tools}


def _schema(request: GenRequest) -> dict[str, Any]:
    named = _named(request)
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": t.parameters},
            "required": ["tool", "arguments"],
        }
        for t in request.tools
        if named is None or t.name == named
    ]
    if request.tool_choice != "required" and named is None:
        options.append(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    return options[0] if len(options) == 1 else {"oneOf": options}


def _instruction(request: GenRequest) -> str:
    lines = ["You can call these tools:"]
    lines += [
        f"- {t.name}: {t.description} Arguments (JSON schema): {json.dumps(t.parameters)}"
        for t in request.tools
    ]
    lines.append('To call a tool reply with JSON {"tool": "<name>", "arguments": {...}}.')
    if request.tool_choice != "required":  # a named choice keeps this line: same prefix
        lines.append('To answer without a tool reply with JSON {"answer": "<your answer>"}.')
    return "\n".join(lines)


def _plain_messages(messages: list[Message]) -> list[Message]:
    """Earlier tool turns, rewritten as text the server's template surely renders."""
    out: list[Message] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            calls = [
                {"tool": c.name, "arguments": json.loads(c.arguments or "{}")} for c in m.tool_calls
            ]
            out.append(Message("assistant", json.dumps(calls[0] if len(calls) == 1 else calls)))
        elif m.role == "tool":
            out.append(Message("user", f"Result of tool call {m.tool_call_id or ''}: {m.content}"))
        else:
            out.append(m)
    return out


def emulated_request(request: GenRequest) -> GenRequest:
    messages = _plain_messages(request.messages)
    # The instruction goes first (into the leading system message), not last: the prompt's
    # prefix then stays the same from one call to the next of a conversation, and a server
    # that keeps its prompt cache (llama.cpp) need not process it again on every call. The
    # JSON shape itself is enforced by the grammar, wherever the instruction stands.
    instruction = _instruction(request)
    if messages and messages[0].role == "system":
        messages[0] = Message("system", f"{messages[0].content or ''}\n\n{instruction}")
    else:
        messages.insert(0, Message("system", instruction))
    free = request.tool_choice == "none"  # free text: no grammar
    return replace(
        request,
        messages=messages,
        tools=[],
        tool_choice=None,
        stream=False,
        response_format=None
        if free
        else {
            "type": "json_schema",
            "json_schema": {"name": "tool_or_answer", "schema": _schema(request)},
        },
    )


def response_from_emulation(
    request: GenRequest, response: GenResponse, call_index: int
) -> GenResponse:
    if request.tool_choice == "none":  # free text; {"answer": ...} if it wrote that anyway
        try:
            data = json.loads(response.text)
        except ValueError:
            return response
        answer = data.get("answer") if isinstance(data, dict) else None
        return replace(response, text=answer) if isinstance(answer, str) else response
    try:
        data = json.loads(response.text)
    except ValueError as exc:
        raise BadResponseError(
            f"model {request.model!r}: emulated tool choice returned non-JSON: {response.text[:200]!r}"
        ) from exc
    names = {t.name for t in request.tools}
    if isinstance(data, dict) and data.get("tool") in names:
        call = ToolCall(
            f"call_emulated_{call_index}", data["tool"], json.dumps(data.get("arguments", {}))
        )
        return replace(response, text="", tool_calls=(call,), finish_reason="tool_calls")
    if isinstance(data, dict) and isinstance(data.get("answer"), str):
        return replace(response, text=data["answer"], tool_calls=())
    raise BadResponseError(
        f"model {request.model!r}: emulated tool choice returned {response.text[:200]!r}"
    )


async def generate_with_emulated_tools(
    generate: Generate, request: GenRequest, on_text: TextCallback | None, call_index: int
) -> GenResponse:
    response = response_from_emulation(
        request, await generate(emulated_request(request)), call_index
    )
    if on_text is not None and response.text:  # a streamed caller still gets its text
        result = on_text(response.text)
        if inspect.isawaitable(result):
            await result
    return response
