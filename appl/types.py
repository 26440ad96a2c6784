"""Small value types shared by the appl runtime and its model providers.

This module is the contract at the model seam: the language/runtime builds a
`GenRequest`, a provider (`appl.models`) answers with a `GenResponse`. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for. `arguments` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # set on role="tool" messages
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(slots=True)
class GenRequest:
    """One chat-completion request, provider-neutral.

    `model` is an alias from the configuration (e.g. "local", "gpt-4o-mini", "scripted").
    `response_format` is an OpenAI-style dict ({"type": "json_object"} or
    {"type": "json_schema", "json_schema": {...}}); the runtime converts pydantic models.
    """

    model: str
    messages: list[Message]
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    stream: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # passed through to the provider verbatim
    n: int = 1  # choices wanted; emulated with n requests where the server lacks n>1


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class Choice:
    """One of the n alternatives of a response."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None


@dataclass(slots=True)
class GenResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""  # the model name the server reported
    latency_s: float = 0.0  # wall time of the successful attempt
    retries: int = 0  # attempts that failed before this one
    cost_usd: float = 0.0
    # True when the server reported no usage (e.g. llama.cpp's server while streaming) and the
    # counts are estimates: deltas for completion tokens, ~4 characters a token for the prompt.
    usage_estimated: bool = False
    # Every choice when n > 1 (choices[0] mirrors text/tool_calls/finish_reason); may be empty
    # for n == 1.
    choices: tuple[Choice, ...] = ()


# Called with each text delta while a streamed response arrives.
TextCallback = Callable[[str], Awaitable[None] | None]


@runtime_checkable
class ModelAPI(Protocol):
    """The one model seam. Providers implement it; the runtime calls nothing else.

    `generate` returns the complete response. When `request.stream` is true the provider
    streams from the server and calls `on_text` with each text delta as it arrives; the
    returned `GenResponse` still holds the full text. Failures raise `appl.errors.ModelError`
    subclasses; cancellation propagates as `asyncio.CancelledError` and is never retried.
    """

    @property
    def name(self) -> str: ...

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse: ...

    async def aclose(self) -> None: ...
