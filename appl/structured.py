"""Structured output: pydantic models as response formats, parsing and the retry message.

`gen(response_format=Model)` sends Model's JSON schema as an OpenAI `json_schema` response
format, parses the reply (tolerating a ```json fence around it, which small models add even
in JSON mode) and validates it. When validation fails the runtime appends the bad reply and
a user message quoting the validation error, and asks again, at most `format_retries` times;
then it raises `StructuredOutputError` carrying the last raw text.
"""

from __future__ import annotations

import re
from typing import Any

import pydantic

from appl.types import Message

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def is_model_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, pydantic.BaseModel)


def response_format_for(fmt: Any) -> dict[str, Any] | None:
    """The request's `response_format` dict for a gen option value."""
    if fmt is None:
        return None
    if is_model_class(fmt):
        return {
            "type": "json_schema",
            "json_schema": {"name": fmt.__name__, "schema": fmt.model_json_schema()},
        }
    if isinstance(fmt, dict):
        return fmt
    raise TypeError(
        "response_format must be a pydantic model class or an OpenAI response_format dict, "
        f"got {fmt!r}"
    )


def strip_fence(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) if m else text.strip()


def parse_reply(fmt: type[pydantic.BaseModel], text: str) -> pydantic.BaseModel:
    """Validate a reply; raises pydantic.ValidationError."""
    return fmt.model_validate_json(strip_fence(text))


def describe_error(error: pydantic.ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(x) for x in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts[:10])


def retry_messages(raw_text: str, error: pydantic.ValidationError) -> list[Message]:
    """What the model sees after an invalid reply."""
    return [
        Message(role="assistant", content=raw_text),
        Message(
            role="user",
            content=(
                "Your reply did not match the required JSON schema: "
                f"{describe_error(error)}. Reply again with only the corrected JSON object."
            ),
        ),
    ]
