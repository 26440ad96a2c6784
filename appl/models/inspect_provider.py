"""appl models answered by Inspect AI's model: how APPL programs run as Inspect solvers.

Inside an Inspect sample, `inspect_ai.model.get_model()` is the model the eval was given
(`inspect eval ... --model openai/gpt-4o`, `mockllm/model`, any provider Inspect supports).
`InspectModel` is an appl `ModelAPI` that sends each `GenRequest` there, so a program written
against appl (the repair agent, `codegen_eval`'s generate solver) runs unchanged and Inspect
does what it does for its own solvers: usage per sample, token/time limits, retries, its
model cache, the transcript in the `.eval` log.

    with use_inspect_models():          # every gen in this block, whatever its alias
        await my_appl_program(...)

or, by alias, `provider = "inspect"` under `[models.NAME]` in appl.toml (registered on import
of this module; `register()` does it explicitly).

Inspect is imported only when a request is sent: `import appl` keeps working without it.
Retries and concurrency are Inspect's (its `--max-retries`, `--max-connections`), so the appl
wrapper around this provider makes one attempt and does not bound concurrency itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from appl.config import ModelConfig
from appl.identity import CallIdentity
from appl.types import (
    Choice,
    GenRequest,
    GenResponse,
    Message,
    ModelAPI,
    TextCallback,
    ToolCall,
    ToolSpec,
    Usage,
)

PROVIDER = "inspect"
ALIAS = "inspect"

__all__ = [
    "ALIAS",
    "PROVIDER",
    "InspectModel",
    "inspect_model_config",
    "register",
    "use_inspect_models",
]


class InspectModel:
    """An appl ModelAPI over Inspect's active model (resolved at every request, so one
    instance serves every sample, each with its own model and limits)."""

    name = ALIAS

    def __init__(self, config: ModelConfig | None = None) -> None:
        self.config = config

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        from inspect_ai.model import get_model

        model = get_model()
        output = await model.generate(
            [_to_inspect(m) for m in request.messages],
            tools=[_tool_info(t) for t in request.tools],
            tool_choice=_tool_choice(request.tool_choice) if request.tools else None,
            config=_generate_config(request),
        )
        response = _from_output(output)
        if on_text is not None and response.text:
            # Inspect returns whole answers: a streaming caller gets the text as one delta
            result = on_text(response.text)
            if result is not None:
                await result
        return response

    async def aclose(self) -> None:
        return None  # Inspect owns the model's client and closes it


def inspect_model_config(alias: str = ALIAS) -> ModelConfig:
    """The appl config of an alias served by Inspect: no key, one attempt (Inspect retries),
    a concurrency bound Inspect's --max-connections makes redundant."""
    return ModelConfig(
        alias=alias,
        provider=PROVIDER,
        api_key_env=None,
        max_retries=0,
        max_concurrency=1_000_000,
        timeout_s=24 * 3600.0,  # Inspect's own --timeout applies; appl sends no HTTP itself
    )


def register() -> None:
    """Make `provider = "inspect"` usable in appl model configs."""
    from appl.models import register_provider

    register_provider(PROVIDER, InspectModel)


@contextmanager
def use_inspect_models() -> Iterator[None]:
    """Every gen started in this block (any alias, or none) is answered by Inspect's active
    model, through appl's accounting wrapper. Context-scoped: concurrent samples each keep
    their own Inspect model."""
    from appl.models import ManagedModel
    from appl.runtime import use_model_resolver

    managed = ManagedModel(inspect_model_config(), InspectModel())

    def resolver(_alias: str | None, _identity: CallIdentity) -> ModelAPI:
        return managed

    with use_model_resolver(resolver):
        yield


# ------------------------------------------------------------------ conversions


def _to_inspect(message: Message) -> Any:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall as InspectToolCall

    text = message.content or ""
    if message.role == "system":
        return ChatMessageSystem(content=text)
    if message.role == "user":
        return ChatMessageUser(content=text)
    if message.role == "tool":
        return ChatMessageTool(
            content=text, tool_call_id=message.tool_call_id, function=message.name
        )
    calls = [
        InspectToolCall(id=c.id, function=c.name, arguments=_arguments(c.arguments))
        for c in message.tool_calls
    ]
    return ChatMessageAssistant(content=text, tool_calls=calls or None)


def _arguments(text: str) -> dict[str, Any]:
    """appl keeps the model's raw JSON text; Inspect wants the parsed object."""
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"__raw__": text}  # replayed as the model wrote it
    return value if isinstance(value, dict) else {"value": value}


def _tool_info(spec: ToolSpec) -> Any:
    from inspect_ai.tool import ToolInfo, ToolParams

    return ToolInfo(
        name=spec.name,
        description=spec.description,
        parameters=ToolParams.model_validate(spec.parameters or {"type": "object"}),
    )


def _tool_choice(choice: str | dict[str, Any] | None) -> Any:
    from inspect_ai.tool import ToolFunction

    if choice is None or choice == "auto":
        return "auto"
    if choice == "none":
        return "none"
    if choice == "required":
        return "any"
    if isinstance(choice, dict):  # OpenAI's {"type": "function", "function": {"name": ...}}
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if name:
            return ToolFunction(name=str(name))
    return "auto"


def _generate_config(request: GenRequest) -> Any:
    from inspect_ai.model import GenerateConfig, ResponseSchema

    schema = None
    fmt = request.response_format or {}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        from inspect_ai.util import JSONSchema

        schema = ResponseSchema(
            name=str(spec.get("name") or "answer"),
            json_schema=JSONSchema.model_validate(spec.get("schema") or {}),
            strict=spec.get("strict"),
        )
    return GenerateConfig(
        temperature=request.temperature,
        top_p=request.top_p,
        max_tokens=request.max_tokens,
        stop_seqs=request.stop,
        seed=request.seed,
        num_choices=request.n if request.n > 1 else None,
        response_schema=schema,
        extra_body=request.extra or None,
    )


def _from_output(output: Any) -> GenResponse:
    choices = tuple(
        Choice(
            text=c.message.text or "",
            tool_calls=_tool_calls(c.message.tool_calls),
            finish_reason=str(c.stop_reason) if c.stop_reason else None,
        )
        for c in output.choices
    )
    first = choices[0] if choices else Choice(text=output.completion or "")
    usage = output.usage
    return GenResponse(
        text=first.text,
        tool_calls=first.tool_calls,
        finish_reason=first.finish_reason,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        ),
        model=str(output.model or ""),
        latency_s=float(output.time or 0.0),
        usage_estimated=usage is None,
        choices=choices,
    )


def _tool_calls(calls: Any) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(id=str(c.id), name=str(c.function), arguments=json.dumps(c.arguments))
        for c in calls or ()
    )


register()
