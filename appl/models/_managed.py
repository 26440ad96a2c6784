"""The one place for limits, retries and accounting around a provider.

`ManagedModel.generate` = reserve budget -> [semaphore -> rpm -> tpm -> one attempt] x retries
-> settle usage and cost. Retry policy:

- retried: HTTP 408/409/429/5xx, timeouts, dropped connections, malformed answers
  (BadResponseError: usually a proxy or server hiccup, and retrying is bounded);
- never retried: other 4xx (ClientRequestError), asyncio.CancelledError, a callback's error;
- a stream that breaks after text reached `on_text` is not retried (that would deliver the
  same text twice): it raises ModelConnectionError at once;
- waits: exponential backoff with full jitter, uniform(0, min(backoff_max_s, base * 2**k)),
  but at least the server's Retry-After (capped at retry_after_cap_s);
- giving up raises the last error's class with a message naming the model alias, the number
  of attempts, what happened and the last detail.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from dataclasses import replace

from appl.accounting import Reservation, estimate_prompt_tokens, reserve
from appl.clock import SYSTEM_CLOCK, Clock
from appl.config import ModelConfig
from appl.errors import (
    BadResponseError,
    ClientRequestError,
    ContextOverflowError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
)
from appl.models._limits import RequestRateLimiter, TokenBucket
from appl.models._tool_emulation import generate_with_emulated_tools, needs_tool_emulation
from appl.types import Choice, GenRequest, GenResponse, ModelAPI, TextCallback, Usage


class ManagedModel:
    """Wraps a provider's ModelAPI with the model's limits, the retry policy and accounting.

    `clock` decides the rate limits and the waits between retries (tests pass a fake one);
    `latency_s` measures the real call, and the provider's timeout stays real, in its HTTP
    client."""

    def __init__(
        self, config: ModelConfig, inner: ModelAPI, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.name = config.alias
        self.config = config
        self.inner = inner
        self.clock = clock
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        self._rpm = RequestRateLimiter(config.rpm, clock=clock) if config.rpm else None
        self._tpm = TokenBucket(config.tpm, clock=clock) if config.tpm else None
        self.in_flight = 0  # attempts currently holding a concurrency slot
        self._prepared = False
        self._emulated_calls = 0  # numbers the ids of emulated tool calls
        self._n_short = False  # the server answered fewer choices than asked: emulate n

    @property
    def capabilities(self) -> dict[str, bool]:
        from appl.config import DEFAULT_CAPABILITIES

        return {**DEFAULT_CAPABILITIES, **self.config.capabilities}

    async def aclose(self) -> None:
        await self.inner.aclose()

    def estimate(self, request: GenRequest) -> tuple[int, int]:
        """(estimated prompt tokens, completion tokens reserved) for budgets and tpm."""
        return estimate_prompt_tokens(request), (request.max_tokens or 0) * max(1, request.n)

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.config.price_input_per_mtok
            + usage.completion_tokens * self.config.price_output_per_mtok
        ) / 1_000_000

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        if needs_tool_emulation(request, self.config):
            self._emulated_calls += 1
            return await generate_with_emulated_tools(
                self.generate, request, on_text, self._emulated_calls
            )
        prompt_tokens, completion_tokens = self.estimate(request)
        emulate_n = request.n > 1 and (self._n_short or not self.config.supports("n"))
        copies = request.n if emulate_n else 1
        estimate = prompt_tokens * copies + completion_tokens
        reservation: Reservation = reserve(
            estimate, self.cost(Usage(prompt_tokens * copies, completion_tokens))
        )
        try:
            if emulate_n:
                response = await self._emulate_n(request, on_text, prompt_tokens)
            else:
                response = await self._with_retries(
                    request, on_text, prompt_tokens + completion_tokens
                )
                if request.n > 1 and len(response.choices) < request.n:
                    response = await self._top_up_choices(request, response, prompt_tokens)
        except BaseException:
            reservation.release()
            raise
        response.cost_usd = self.cost(response.usage)
        reservation.settle(self.name, response.usage, response.cost_usd)
        return response

    async def _top_up_choices(
        self, request: GenRequest, response: GenResponse, prompt_tokens: int
    ) -> GenResponse:
        """The server answered fewer choices than `n` without an error (the llama.cpp server
        returns one for n=2): ask for the missing ones one by one, and emulate `n` for this
        model from now on."""
        self._n_short = True
        have = response.choices or (
            Choice(response.text, response.tool_calls, response.finish_reason),
        )
        missing = request.n - len(have)
        rest = await self._emulate_n(replace(request, n=missing), None, prompt_tokens)
        return self._merge([replace(response, choices=have), rest])

    async def _emulate_n(
        self, request: GenRequest, on_text: TextCallback | None, prompt_tokens: int
    ) -> GenResponse:
        """n separate one-choice requests, concurrently (they still share the model's limits)."""
        single = replace(request, n=1)
        per_call = prompt_tokens + (request.max_tokens or 0)
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(self._with_retries(single, on_text if i == 0 else None, per_call))
                for i in range(request.n)
            ]
        return self._merge([t.result() for t in tasks])

    @staticmethod
    def _merge(parts: list[GenResponse]) -> GenResponse:
        """One response holding every choice of `parts` (usage and retries summed)."""
        first = parts[0]
        usage = Usage()
        for part in parts:
            usage = usage + part.usage
        choices = tuple(
            c
            for p in parts
            for c in (p.choices or (Choice(p.text, p.tool_calls, p.finish_reason),))
        )
        return replace(
            first,
            usage=usage,
            choices=choices,
            retries=sum(p.retries for p in parts),
            latency_s=max(p.latency_s for p in parts),
        )

    async def _with_retries(
        self, request: GenRequest, on_text: TextCallback | None, estimate: int
    ) -> GenResponse:
        config = self.config
        attempts = 0
        delivered = False
        if not self._prepared:  # set up the client outside the rate limits (and only once)
            prepare = getattr(self.inner, "prepare", None)
            if prepare is not None:
                await prepare()
            self._prepared = True

        async def forward(delta: str) -> None:
            nonlocal delivered
            delivered = True
            assert on_text is not None
            result = on_text(delta)
            if inspect.isawaitable(result):
                await result

        while True:
            attempts += 1
            try:
                async with self._semaphore:
                    if self._rpm is not None:
                        await self._rpm.acquire()
                    taken = await self._tpm.acquire(estimate) if self._tpm is not None else 0
                    self.in_flight += 1
                    started = time.monotonic()
                    try:
                        response = await self.inner.generate(
                            request, on_text=forward if on_text else None
                        )
                    finally:
                        self.in_flight -= 1
                    if self._tpm is not None:
                        self._tpm.correct(response.usage.total_tokens - taken)
                response.latency_s = time.monotonic() - started
                response.retries = attempts - 1
                return response
            except ModelError as error:
                if delivered:
                    raise self._give_up(
                        error,
                        attempts,
                        "the stream broke after text was delivered; not retried, to avoid duplicate text",
                    ) from error
                if not _retryable(error) or attempts > config.max_retries:
                    raise self._give_up(error, attempts) from error
                await self.clock.sleep(self._backoff(attempts, error.retry_after))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (attempt - 1))
        delay = random.uniform(0, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.config.retry_after_cap_s))
        return delay

    def _give_up(self, error: ModelError, attempts: int, note: str = "") -> ModelError:
        if error.status_code is not None:
            what = f"HTTP {error.status_code}"
        elif isinstance(error, ModelTimeoutError):
            what = f"timeout ({self.config.timeout_s:g}s)"
        elif isinstance(error, ModelConnectionError):
            what = "connection error"
        elif isinstance(error, BadResponseError):
            what = "malformed response"
        else:
            what = type(error).__name__
        detail = getattr(error, "detail", None) or str(error).removeprefix(f"model {self.name!r}: ")
        plural = "attempt" if attempts == 1 else "attempts"
        message = f"model {self.name!r}: {what} on {attempts} {plural} (last: {detail})"
        if note:
            message += f"; {note}"
        final = type(error)(
            message,
            model=self.name,
            attempts=attempts,
            status_code=error.status_code,
            retry_after=error.retry_after,
        )
        if isinstance(error, ContextOverflowError):  # the numbers the caller shrinks by
            final.requested, final.window = error.requested, error.window  # type: ignore[attr-defined]
        return final


def _retryable(error: ModelError) -> bool:
    if isinstance(error, ClientRequestError):
        return False
    status = error.status_code
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return True  # timeouts, dropped connections, malformed answers
