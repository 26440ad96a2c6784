"""Rules of the scripted server: which request gets which reply, latency and faults.

A rule is plain data plus a little state (how many requests it has answered, which faults and
scripted replies are used up). All state changes happen on the server's own event loop thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Status-code faults answer with that HTTP status; the others break the transport or the body.
STATUS_FAULTS = frozenset({"408", "409", "429", "500", "502", "503", "504"})
TRANSPORT_FAULTS = frozenset({"malformed", "hang", "drop", "drop_stream"})
KNOWN_FAULTS = STATUS_FAULTS | TRANSPORT_FAULTS


@dataclass(frozen=True, slots=True)
class Reply:
    """An explicit reply: text content and/or tool calls (each {"name", "arguments", "id"?})."""

    content: str | None = None
    tool_calls: Sequence[dict[str, Any]] = ()
    finish_reason: str | None = None


# What a rule may answer with: text, an explicit Reply, a pydantic model or a dict/list (sent as
# JSON text, for response_format), or a dict with "tool_calls"/"content" keys (a message).
ReplyValue = Any
Matcher = str | re.Pattern[str] | Callable[[dict[str, Any]], bool] | None


def prompt_text(body: dict[str, Any]) -> str:
    """All message contents of a chat request joined with newlines (what rules match against)."""
    parts: list[str] = []
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts: keep the text ones
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


@dataclass(eq=False)
class Rule:
    """One scripted behaviour. The first rule whose `match` fits a request answers it.

    match: a substring of the prompt text, a compiled regex (searched), a predicate on the
        parsed JSON body, or None (matches everything).
    reply: the answer, or a callable taking the parsed JSON body and returning one.
    replies: answers used in order, one per choice; the LAST ONE REPEATS once they run out.
    tool_calls: tool calls to return ({"name": ..., "arguments": dict | str, "id"?: ...}).
    latency: seconds to wait before answering (per request); None uses the server default.
    faults: the first matching requests fail as listed ("429", "500", "503", "malformed",
        "hang", "drop", "drop_stream", also "408", "409", "502", "504"), then the rule answers.
    retry_after: the Retry-After header (seconds) sent with a "429" fault.
    times: answer at most this many requests, then let later rules match (None: unlimited).
    """

    match: Matcher = None
    reply: ReplyValue = None
    replies: Sequence[ReplyValue] | None = None
    tool_calls: Sequence[dict[str, Any]] | None = None
    latency: float | None = None
    faults: Sequence[str] = ()
    retry_after: float = 1.0
    finish_reason: str | None = None
    times: int | None = None
    hits: int = field(default=0, init=False)  # requests this rule has matched so far
    _faults_used: int = field(default=0, init=False, repr=False)
    _replies_used: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.reply is not None and self.replies is not None:
            raise ValueError("Rule: give `reply` or `replies`, not both")
        if isinstance(self.replies, str):
            raise ValueError("Rule: `replies` must be a sequence of replies, not one string")
        if self.replies is not None and len(self.replies) == 0:
            raise ValueError("Rule: `replies` is empty")
        if isinstance(self.faults, str):
            self.faults = (self.faults,)
        unknown = [f for f in self.faults if str(f) not in KNOWN_FAULTS]
        if unknown:
            raise ValueError(f"Rule: unknown fault(s) {unknown}; known: {sorted(KNOWN_FAULTS)}")
        self.faults = tuple(str(f) for f in self.faults)
        if not (
            self.match is None or isinstance(self.match, str | re.Pattern) or callable(self.match)
        ):
            raise TypeError(
                f"Rule: match must be str, re.Pattern, callable or None, not {self.match!r}"
            )

    def matches(self, body: dict[str, Any], text: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        m = self.match
        if m is None:
            return True
        if isinstance(m, str):
            return m in text
        if isinstance(m, re.Pattern):
            return m.search(text) is not None
        return bool(m(body))

    def next_fault(self) -> str | None:
        if self._faults_used < len(self.faults):
            self._faults_used += 1
            return self.faults[self._faults_used - 1]
        return None

    def produce(self, body: dict[str, Any], default: ReplyValue) -> Reply:
        """The reply for one choice of one request."""
        if self.replies is not None:
            value = self.replies[min(self._replies_used, len(self.replies) - 1)]
            self._replies_used += 1
        elif self.reply is not None:
            value = self.reply
        elif self.tool_calls is not None:
            value = None
        else:
            value = default
        if callable(value) and not isinstance(value, type):
            value = value(body)
        reply = to_reply(value)
        if self.tool_calls is not None:
            reply = Reply(reply.content, tuple(self.tool_calls), reply.finish_reason)
        if self.finish_reason is not None:
            reply = Reply(reply.content, reply.tool_calls, self.finish_reason)
        return reply


def to_reply(value: ReplyValue) -> Reply:
    if value is None:
        return Reply(content="")
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    if (
        isinstance(value, dict)
        and ("tool_calls" in value or "content" in value)
        and set(value)
        <= {
            "content",
            "tool_calls",
            "finish_reason",
        }
    ):
        return Reply(
            value.get("content"), tuple(value.get("tool_calls") or ()), value.get("finish_reason")
        )
    if hasattr(value, "model_dump_json"):  # a pydantic model: structured output
        return Reply(content=value.model_dump_json())
    if isinstance(value, dict | list | int | float | bool):
        return Reply(content=json.dumps(value))
    raise TypeError(f"ScriptedServer: cannot turn {type(value).__name__} into a reply: {value!r}")


_TOKEN_RE = re.compile(r"\s*\S+|\s+")


def split_tokens(text: str) -> list[str]:
    """The scripted server's notion of tokens: words with their leading whitespace."""
    return _TOKEN_RE.findall(text)
