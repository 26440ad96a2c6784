"""Keep every request inside the model's context window.

    budget = ContextBudget.for_model("local", max_tokens=1024)
    result = await gen_within(budget, messages, tools=tools, model="local")

`ContextBudget.fit` shortens a conversation until the prompt plus a useful completion fits:
first the longest tool results and old answers are cut in the middle, then the oldest
exchanges are dropped (an assistant tool call together with its results), and only then the
protected head (system prompt, first user message) and the newest message are cut. The
completion's `max_tokens` shrinks with the room left. Token counts are estimates (characters
per token, corrected by the prompt tokens servers report); when a server still refuses a
request as too long (ContextOverflowError), `gen_within` learns from the numbers it names and
retries smaller, a bounded number of times.

The window comes from the alias's `context_window` in appl.toml, else, for the embedded
local model, from its server's n_ctx (and the model's trained context).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from appl.config import get_config
from appl.core import gen, ppl
from appl.errors import ContextOverflowError
from appl.tools import as_tools
from appl.types import Message, ToolSpec

__all__ = ["ContextBudget", "context_window", "cut_middle", "gen_within"]

# Framing tokens per chat message (role markers, separators) in common chat templates.
_PER_MESSAGE = 6
# The emulated tool choice (appl.models._tool_emulation) adds an instruction of about this
# many tokens besides the tool schemas themselves.
_TOOL_OVERHEAD = 60


def context_window(alias: str | None = None) -> int | None:
    """Tokens per request the model `alias` accepts; None when unknown (no limit applied)."""
    config = get_config().model(alias)
    if config.context_window:
        return config.context_window
    if config.provider == "local":
        from appl.local.catalog import resolve_spec
        from appl.local.server import ServerFlags

        n_ctx = int(config.options.get("n_ctx") or ServerFlags().n_ctx)
        name = config.options.get("model") or config.options.get("local_model")
        return min(n_ctx, resolve_spec(name).trained_context)
    return None


def cut_middle(text: str, limit: int) -> str:
    """`text` shortened to about `limit` characters, keeping its head and tail."""
    if len(text) <= limit:
        return text
    keep = max(limit - 60, 20)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut to fit the context ...]\n{tail}"


def _message_chars(m: Message) -> int:
    chars = len(m.content or "")
    for call in m.tool_calls:
        chars += len(call.name) + len(call.arguments or "") + 20
    return chars


@dataclass(slots=True)
class ContextBudget:
    """How much of the window a conversation may use; see the module docstring.

    window: the model's context in tokens (None: unlimited, nothing is cut).
    max_tokens: the completion length wanted; min_tokens: the least worth asking for.
    chars_per_token: the estimate's ratio; lowered when a server reports more tokens than
        estimated, so later requests are cut sooner.
    """

    window: int | None
    max_tokens: int = 1024
    min_tokens: int = 256
    margin: int = 48
    chars_per_token: float = 3.2
    overflows: int = 0  # server refusals seen (each one made the budget stricter)
    trims: int = 0  # requests that had to be shortened

    @classmethod
    def for_model(cls, alias: str | None, max_tokens: int = 1024, **kwargs: Any) -> ContextBudget:
        return cls(context_window(alias), max_tokens=max_tokens, **kwargs)

    # --- estimates -----------------------------------------------------------------------

    def tokens(self, chars: int) -> int:
        return int(chars / self.chars_per_token) + 1

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        total = sum(self.tokens(_message_chars(m)) + _PER_MESSAGE for m in messages)
        if tools:
            schema_chars = sum(
                len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools
            )
            total += self.tokens(schema_chars) + _TOOL_OVERHEAD
        return total

    def observe(self, estimated: int, actual: int) -> None:
        """A server reported `actual` prompt tokens for a prompt estimated at `estimated`."""
        if actual > estimated > 0:
            self.chars_per_token = max(1.0, self.chars_per_token * estimated / actual)

    def overflowed(self, error: ContextOverflowError, estimated: int) -> None:
        """The server refused a prompt estimated at `estimated` tokens: be stricter."""
        self.overflows += 1
        if error.window and (self.window is None or error.window < self.window):
            self.window = error.window
        if error.requested and error.requested > estimated > 0:
            self.observe(estimated, error.requested)
        else:  # no numbers: assume a quarter more tokens than estimated
            self.chars_per_token = max(1.0, self.chars_per_token * 0.8)
        if self.window is None:
            # the server has a limit we were never told: assume the prompt was at it
            self.window = max(self.min_tokens * 2, int(estimated * 0.75))

    def room(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """Completion tokens left after this prompt (very large when the window is unknown)."""
        if self.window is None:
            return 1 << 30
        return self.window - self.estimate(messages, tools) - self.margin

    # --- fitting -------------------------------------------------------------------------

    def fit(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
    ) -> tuple[list[Message], int]:
        """The messages shortened to fit with at least min_tokens of completion, and the
        max_tokens to ask for. The first system and user messages and the last message are
        kept (cut only as a last resort)."""
        out = list(messages)
        if self.window is None:
            return out, self.max_tokens
        # a tiny window still gets a request: the completion floor is at most a quarter of it
        need = min(self.max_tokens, self.min_tokens, self.window // 4)
        if self.room(out, tools) >= need:
            return out, min(self.max_tokens, self.room(out, tools))
        self.trims += 1
        head = _head_length(out)
        # 1. cut long middle messages, longest first, down to a floor of ~600 characters
        for limit in (4000, 2000, 1200, 600):
            for i in range(head, len(out) - 1):
                if _message_chars(out[i]) > limit and out[i].content:
                    out[i] = replace(out[i], content=cut_middle(out[i].content or "", limit))
            if self.room(out, tools) >= need:
                return out, min(self.max_tokens, self.room(out, tools))
        # 2. drop the oldest exchanges (a tool call goes together with its results)
        while len(out) - 1 > head and self.room(out, tools) < need:
            end = head + 1
            while end < len(out) - 1 and out[end].role == "tool":
                end += 1
            del out[head:end]
        # 3. cut the protected messages themselves, the longest first
        for _ in range(12):
            if self.room(out, tools) >= need:
                break
            longest = max(range(len(out)), key=lambda i: len(out[i].content or ""))
            content = out[longest].content or ""
            if len(content) < 200:
                break
            deficit_chars = int((need - self.room(out, tools)) * self.chars_per_token) + 100
            limit = max(150, min(len(content) * 3 // 4, len(content) - deficit_chars))
            out[longest] = replace(out[longest], content=cut_middle(content, limit))
        return out, max(16, min(self.max_tokens, self.room(out, tools)))


def _head_length(messages: Sequence[Message]) -> int:
    """The leading system messages and the first user message: the task itself."""
    i = 0
    while i < len(messages) and messages[i].role == "system":
        i += 1
    if i < len(messages) - 1 and messages[i].role == "user":
        i += 1
    return i


@ppl
async def _ask(sent: list[Message], options: dict[str, Any]) -> Any:
    for message in sent:
        message
    return await gen(run_tools=False, **options).result()


async def gen_within(
    budget: ContextBudget,
    messages: Sequence[Message],
    *,
    tools: Sequence[Any] = (),
    attempts: int = 3,
    **gen_options: Any,
) -> tuple[Any, list[Message]]:
    """One `gen` (tools run once, not looped) over `messages` fitted to `budget`; a server's
    context refusal makes the budget stricter and the request is sent again, smaller, up to
    `attempts` times. Returns the GenResult and the messages actually sent."""
    specs = [t.spec for t in as_tools(tools).values()]
    last: ContextOverflowError | None = None
    for _ in range(attempts):
        sent, max_tokens = budget.fit(messages, specs)
        estimated = budget.estimate(sent, specs)
        options = {**gen_options, "tools": tools, "max_tokens": max_tokens}
        try:
            result = await _ask(sent, options)
        except ContextOverflowError as exc:
            last = exc
            budget.overflowed(exc, estimated)
            continue
        usage = result.response.usage if result.response is not None else None
        if usage is not None and usage.prompt_tokens:
            budget.observe(estimated, usage.prompt_tokens)
        return result, sent
    assert last is not None
    raise last
