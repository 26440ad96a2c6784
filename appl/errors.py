"""Every exception appl raises, in one place (like httpx's exception tree).

ApplError
├── ConfigError              bad appl.toml / unknown model alias / missing API key
├── ModelError               a model call failed (after retries, where retryable)
│   ├── ModelTimeoutError    no answer within the request timeout
│   ├── ModelConnectionError connection refused / dropped mid-stream
│   ├── RateLimitError       HTTP 429 that outlasted the retry policy
│   ├── ServerError          HTTP 5xx that outlasted the retry policy
│   ├── ClientRequestError   HTTP 4xx other than 408/409/429 (never retried)
│   │   └── ContextOverflowError  the prompt (+ max_tokens) does not fit the model's window
│   └── BadResponseError     the server answered with something that is not a valid completion
├── BudgetExceededError      the next call would exceed a budget (calls, tokens, cost)
├── StructuredOutputError    the reply never validated against the response format (.raw_text)
├── ToolError                a tool raised; carries the tool name and the original exception
└── ReplayMissError          strict replay found no recorded answer for a call (trace issue)
"""

from __future__ import annotations

from typing import Any


class ApplError(Exception):
    """Base of every error raised by appl."""


class ConfigError(ApplError):
    pass


class ModelError(ApplError):
    """A model call failed. `model` is the alias, `attempts` how many tries were made."""

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        attempts: int = 1,
        status_code: int | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.model = model
        self.attempts = attempts
        self.status_code = status_code
        self.retry_after = retry_after  # seconds the server asked us to wait (Retry-After)


class ModelTimeoutError(ModelError):
    pass


class ModelConnectionError(ModelError):
    pass


class RateLimitError(ModelError):
    pass


class ServerError(ModelError):
    pass


class ClientRequestError(ModelError):
    pass


class ContextOverflowError(ClientRequestError):
    """The server refused a request that does not fit its context window. `requested` and
    `window` are the token counts the server named (None when its message did not say)."""

    def __init__(
        self,
        message: str,
        *,
        requested: int | None = None,
        window: int | None = None,
        **kwargs: object,
    ):
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.requested = requested
        self.window = window


class BadResponseError(ModelError):
    pass


class BudgetExceededError(ApplError):
    def __init__(self, message: str, *, budget: str = "", limit: float = 0, used: float = 0):
        super().__init__(message)
        self.budget = budget
        self.limit = limit
        self.used = used


class StructuredOutputError(ApplError):
    def __init__(self, message: str, *, raw_text: str = "", attempts: int = 1):
        super().__init__(message)
        self.raw_text = raw_text
        self.attempts = attempts


class ToolError(ApplError):
    """A tool failed, or a tool loop ran out of rounds. `tool_results` and `messages` keep
    what the loop did (results of every tool that ran, the transcript) so nothing is lost."""

    def __init__(
        self,
        message: str,
        *,
        tool: str = "",
        tool_results: list[Any] | None = None,
        messages: list[Any] | None = None,
    ):
        super().__init__(message)
        self.tool = tool
        self.tool_results = list(tool_results or [])
        self.messages = list(messages or [])


class ReplayMissError(ApplError):
    pass


class LocalModelError(ApplError):
    """The embedded local model cannot be used: weights missing or corrupt, server package
    not installed, or the server failed to start. The message says what to run."""


class WeightsChecksumError(LocalModelError):
    pass
