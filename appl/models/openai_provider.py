"""Provider "openai": any OpenAI-compatible chat-completions server.

One attempt per `generate` call: the client's own retries are off (max_retries=0) because the
retry policy lives in one place, `appl.models._managed`. This module only translates
GenRequest -> chat.completions and back, and every failure into an `appl.errors` class.

Non-streaming requests go over aiohttp directly (appl.models._direct) when it is installed
and APPL_HTTP_BACKEND is not "httpx"; streams, and everything under APPL_HTTP_BACKEND=httpx,
use `openai.AsyncOpenAI`. The openai package is imported only then: importing it is most of
what the first call of a process used to cost.
"""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import inspect
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import pydantic

from appl.accounting import estimate_prompt_tokens
from appl.config import ModelConfig
from appl.errors import (
    BadResponseError,
    ClientRequestError,
    ContextOverflowError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from appl.models._tls import PROXY_VARS
from appl.types import Choice, GenRequest, GenResponse, TextCallback, ToolCall, Usage

if TYPE_CHECKING:
    import openai

    from appl.models._direct import DirectClient

# The most idle keep-alive connections kept per model (the openai client's own default).
MAX_KEEPALIVE = 100
_JSON_HEADERS = {"Content-Type": "application/json"}


class OpenAIModel:
    """A ModelAPI over one OpenAI-compatible endpoint (one AsyncOpenAI client, pooled)."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        base_url: Callable[[], Awaitable[str]] | None = None,
    ) -> None:
        self.name = config.alias
        self.config = config
        self._resolve_base_url = base_url  # for servers started on demand (provider "local")
        self._client: openai.AsyncOpenAI | None = None
        self._direct: DirectClient | None = None
        self._base_url: str | None = None
        self._client_lock = asyncio.Lock()
        self._use_direct = _direct_available()

    async def prepare(self) -> None:
        """Resolve the endpoint (and start an on-demand server) before the first request is
        timed. Clients are built on first use (the openai one only for streams)."""
        await self._get_base_url()

    async def _get_base_url(self) -> str:
        if self._base_url is None:
            # Concurrent first calls must resolve once: resolving may start the local server.
            async with self._client_lock:
                if self._base_url is None:
                    self._base_url = str(
                        await self._resolve_base_url()
                        if self._resolve_base_url
                        else self.config.base_url
                    )
        return self._base_url

    async def _get_direct(self) -> DirectClient:
        if self._direct is None:
            base_url = await self._get_base_url()
            if self._direct is None:  # another caller may have built it meanwhile
                from appl.models._direct import DirectClient
                from appl.models._tls import ssl_context_for

                self._direct = DirectClient(
                    base_url,
                    self.config.resolve_api_key(),
                    timeout_s=self.config.timeout_s,
                    max_connections=max(self.config.max_concurrency, MAX_KEEPALIVE),
                    ssl_context=ssl_context_for(base_url),
                )
        return self._direct

    async def _get_client(self) -> openai.AsyncOpenAI:
        if self._client is not None:
            return self._client
        base_url = await self._get_base_url()
        # Concurrent first calls must build ONE client: all but the last would leak their
        # connection pools.
        async with self._client_lock:
            if self._client is not None:
                return self._client
            import httpx2
            import openai

            from appl.models._http import make_http_client

            # One knob for every phase: on a loaded machine even a localhost connect can wait
            # seconds for the event loop when a thousand calls start at once.
            timeout = httpx2.Timeout(self.config.timeout_s)
            # Bursts reuse idle keep-alive connections instead of reconnecting, but not
            # too many are kept: httpcore's pool checks every idle connection each time a
            # request starts or ends, so its cost per request grows with the pool.
            slots = self.config.max_concurrency
            self._client = openai.AsyncOpenAI(
                base_url=base_url,
                api_key=self.config.resolve_api_key(),
                max_retries=0,
                timeout=timeout,
                http_client=make_http_client(
                    timeout=timeout,
                    max_connections=max(slots, MAX_KEEPALIVE),
                    max_keepalive=min(slots, MAX_KEEPALIVE),
                    base_url=str(base_url),
                ),
            )
        return self._client

    async def aclose(self) -> None:
        if self._direct is not None:
            direct, self._direct = self._direct, None
            await direct.aclose()
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def request_kwargs(self, request: GenRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [m.to_openai() for m in request.messages],
        }
        optional = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "stop": request.stop,
            "seed": request.seed,
            "response_format": request.response_format,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if request.n != 1:
            kwargs["n"] = request.n
        if request.tools:
            kwargs["tools"] = [t.to_openai() for t in request.tools]
            if request.tool_choice is not None:
                kwargs["tool_choice"] = request.tool_choice
        extra = {**self.config.extra_body, **request.extra}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def request_body(self, request: GenRequest) -> bytes:
        """The JSON body `chat.completions.create(**request_kwargs(request))` would send."""
        kwargs = self.request_kwargs(request)
        body = {**kwargs, **kwargs.pop("extra_body", {})}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        try:
            if request.stream:
                return await self._stream(await self._get_client(), request, on_text)
            if self._use_direct:
                direct = await self._get_direct()
                raw = await direct.post(self.request_body(request))
                if raw.status >= 400:
                    raise self.status_error(raw.status, raw.reason, raw.content, raw.headers)
                return _from_json(json.loads(raw.content))
            client = await self._get_client()
            import httpx2

            # The client's own POST (base URL, auth, headers, timeouts, APIStatusError on
            # non-2xx), cast to the raw httpx response: the completion is read from the JSON
            # directly instead of being validated into pydantic objects first (which cost
            # more CPU than the rest of the request on a busy machine).
            response = await client.post(
                "/chat/completions",
                cast_to=httpx2.Response,
                content=self.request_body(request),
                options={"headers": _JSON_HEADERS},
            )
            return _from_json(json.loads(response.content))
        except ModelError:
            raise
        except Exception as exc:
            raise self.translate(exc) from exc

    async def _stream(
        self, client: openai.AsyncOpenAI, request: GenRequest, on_text: TextCallback | None
    ) -> GenResponse:
        kwargs = self.request_kwargs(request)
        if self.config.supports("stream_usage"):
            kwargs["stream_options"] = {"include_usage": True}
        texts: dict[int, list[str]] = {}
        calls: dict[int, dict[int, dict[str, Any]]] = {}
        finish: dict[int, str | None] = {}
        usage: Usage | None = None
        deltas = 0  # servers send about one token per delta: the estimate when usage is absent
        model = ""
        stream = await client.chat.completions.create(stream=True, **kwargs)
        try:
            async for chunk in stream:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = Usage(
                        chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0
                    )
                for choice in chunk.choices:
                    index = choice.index
                    texts.setdefault(index, [])
                    delta = choice.delta
                    if delta is not None and (delta.content or delta.tool_calls):
                        deltas += 1
                    if delta is not None and delta.content:
                        texts[index].append(delta.content)
                        if index == 0 and on_text is not None:
                            result = on_text(delta.content)
                            if inspect.isawaitable(result):
                                await result
                    for call in (delta.tool_calls if delta is not None else None) or ():
                        slot = calls.setdefault(index, {}).setdefault(
                            call.index, {"id": "", "name": "", "arguments": []}
                        )
                        if call.id:
                            slot["id"] = call.id
                        if call.function is not None:
                            if call.function.name:
                                slot["name"] += call.function.name
                            if call.function.arguments:
                                slot["arguments"].append(call.function.arguments)
                    if choice.finish_reason is not None:
                        finish[index] = choice.finish_reason
        finally:
            await stream.close()
        if not texts:
            raise BadResponseError(f"model {self.name!r}: the stream ended without any choice")
        choices = tuple(
            Choice(
                text="".join(texts[i]),
                tool_calls=tuple(
                    ToolCall(id=c["id"], name=c["name"], arguments="".join(c["arguments"]))
                    for _, c in sorted(calls.get(i, {}).items())
                ),
                finish_reason=finish.get(i),
            )
            for i in sorted(texts)
        )
        first = choices[0]
        estimated = usage is None
        if usage is None:  # budgets and costs must not see a streamed call as free
            usage = Usage(estimate_prompt_tokens(request), deltas)
        return GenResponse(
            text=first.text,
            tool_calls=first.tool_calls,
            finish_reason=first.finish_reason,
            usage=usage,
            model=model,
            choices=choices,
            usage_estimated=estimated,
        )

    def status_error(
        self, status: int, reason: str, body: Any, headers: Mapping[str, str] | None
    ) -> ModelError:
        """The error for an HTTP error status (the same from either client)."""
        if isinstance(body, bytes | str):
            try:
                body = json.loads(body)
            except ValueError:
                body = None
        inner = body.get("error", body) if isinstance(body, dict) else None
        message = inner.get("message") if isinstance(inner, dict) else None
        detail = ": ".join(str(p) for p in (reason, message) if p) or f"HTTP {status}"
        alias = self.name
        retry_after = _retry_after(headers) if headers is not None else None
        kw: dict[str, Any] = {"model": alias, "status_code": status, "retry_after": retry_after}
        if status == 404 and not self._base_url_has_version():
            detail += (
                f"; the base URL {self._base_url or self.config.base_url!r} has no /v1 - "
                "OpenAI-compatible servers usually serve /v1/chat/completions: try base_url "
                f"ending in /v1{self._origin_note()}"
            )
        elif status in (401, 403, 404):  # wrong key, wrong URL, wrong model name
            detail += self._origin_note()
        text = f"model {alias!r}: HTTP {status} ({detail})"
        if status in (400, 413) and (overflow := context_overflow(detail)) is not None:
            overflow_error = ContextOverflowError(
                text, requested=overflow[0], window=overflow[1], **kw
            )
            overflow_error.detail = detail  # type: ignore[attr-defined]
            return overflow_error
        cls: type[ModelError] = ClientRequestError
        if status == 429:
            cls = RateLimitError
        elif status == 408:
            cls = ModelTimeoutError
        elif status == 409 or status >= 500:
            cls = ServerError
        error = cls(text, **kw)
        error.detail = detail  # type: ignore[attr-defined]  # the retry policy's "last: ..."
        return error

    def _origin_note(self) -> str:
        """Where this alias is configured, for errors that point at the configuration."""
        origin = self.config.origin
        return f" (model {self.name!r} is configured in {origin})" if origin else ""

    def _connection_text(self, cause: BaseException) -> str:
        """What went wrong with the connection, in words: "cannot connect to URL: connection
        refused" rather than the client library's "Cannot connect to host H:P ssl:default
        [...]" (aiohttp names ssl:default for plain http URLs too)."""
        url = self._base_url or self.config.base_url or "the server"
        os_error = getattr(cause, "os_error", None)
        if not isinstance(os_error, OSError):
            os_error = cause if isinstance(cause, OSError) else None
        if os_error is not None and os_error.errno:
            reason = os.strerror(os_error.errno).lower()
            hint = " (is the server running?)" if os_error.errno == errno.ECONNREFUSED else ""
            return f"cannot connect to {url}: {reason}{hint}"
        text = str(cause).replace(" ssl:default", "") if url.startswith("http:") else str(cause)
        return f"connection to {url} failed: {type(cause).__name__}: {text}"

    def _base_url_has_version(self) -> bool:
        url = (self._base_url or self.config.base_url or "").rstrip("/")
        last = url.rsplit("/", 1)[-1].lower()
        return last.startswith("v") and last[1:2].isdigit()

    def translate(self, exc: BaseException) -> ModelError:
        """Map a client-side exception to the appl.errors class the retry policy understands."""
        alias = self.name
        # The client libraries are looked up, not imported: an exception can only come from
        # one that is already loaded, and importing openai here would cost the time saved.
        openai = sys.modules.get("openai")
        httpx2 = sys.modules.get("httpx2")
        aiohttp = sys.modules.get("aiohttp")
        if openai is not None and isinstance(exc, openai.APIStatusError):
            response = exc.response
            return self.status_error(
                exc.status_code,
                response.reason_phrase if response is not None else "",
                exc.body,
                response.headers if response is not None else None,
            )
        if (dropped := _dropped_connection(exc)) is not None:
            return ModelConnectionError(
                f"model {alias!r}: {self._connection_text(dropped)}{self._origin_note()}",
                model=alias,
            )
        timeouts: tuple[type[BaseException], ...] = (TimeoutError,)
        if openai is not None and httpx2 is not None:
            timeouts += (openai.APITimeoutError, httpx2.TimeoutException)
        if isinstance(exc, timeouts):
            return ModelTimeoutError(
                f"model {alias!r}: no answer within {self.config.timeout_s:g}s", model=alias
            )
        connection: tuple[type[BaseException], ...] = ()
        if openai is not None and httpx2 is not None:
            connection += (openai.APIConnectionError, httpx2.TransportError)
        if aiohttp is not None:
            connection += (aiohttp.ClientError,)
        if connection and isinstance(exc, connection):
            cause = exc.__cause__ or exc
            return ModelConnectionError(
                f"model {alias!r}: {self._connection_text(cause)}{self._origin_note()}",
                model=alias,
            )
        invalid: tuple[type[BaseException], ...] = (json.JSONDecodeError, pydantic.ValidationError)
        if openai is not None:
            invalid += (openai.APIResponseValidationError,)
        if isinstance(exc, invalid):
            return BadResponseError(
                f"model {alias!r}: the server's answer is not a valid completion: {exc}",
                model=alias,
            )
        if openai is not None and isinstance(exc, openai.OpenAIError):
            return ModelError(f"model {alias!r}: {type(exc).__name__}: {exc}", model=alias)
        raise exc  # not a model failure (e.g. a bug, or an on_text callback's own error)


# How servers word "the prompt does not fit": llama-cpp-python ("Requested tokens (4787)
# exceed context window of 4096"), llama.cpp's own server ("the request exceeds the available
# context size"), OpenAI and vLLM ("maximum context length is 4096 tokens ... you requested
# 6835 tokens").
_OVERFLOW_PATTERNS = (
    re.compile(r"requested tokens \((?P<req>\d+)\) exceed context window of (?P<win>\d+)", re.I),
    re.compile(
        r"maximum context length is (?P<win>\d+) tokens.*?requested (?P<req>\d+)", re.I | re.S
    ),
    re.compile(
        r"exceeds? the available context size|context[_ ]length[_ ]exceeded|too many tokens|prompt is too long",
        re.I,
    ),
)


def context_overflow(detail: str) -> tuple[int | None, int | None] | None:
    """(requested, window) when a server's error message says the prompt did not fit its
    context window (either number None when not named); None for any other error."""
    for pattern in _OVERFLOW_PATTERNS:
        m = pattern.search(detail or "")
        if m is not None:
            groups = m.groupdict()
            req, win = groups.get("req"), groups.get("win")
            return (int(req) if req else None, int(win) if win else None)
    return None


def _from_json(data: Any) -> GenResponse:
    """A chat.completion JSON object -> GenResponse (BadResponseError when it is not one)."""
    choices_data = data.get("choices") if isinstance(data, dict) else None
    if not choices_data or not isinstance(choices_data, list):
        raise BadResponseError(f"the server's answer has no choices: {str(data)[:200]}")
    try:
        choices = []
        for choice in choices_data:
            message = choice.get("message") or {}
            calls = tuple(
                ToolCall(
                    id=str(c.get("id") or ""),
                    name=str(function.get("name") or ""),
                    arguments=function.get("arguments") or "",
                )
                for c in (message.get("tool_calls") or ())
                if isinstance(function := c.get("function"), dict)
            )
            choices.append(
                Choice(
                    text=message.get("content") or "",
                    tool_calls=calls,
                    finish_reason=choice.get("finish_reason"),
                )
            )
        usage = data.get("usage")
        first = choices[0]
        return GenResponse(
            text=first.text,
            tool_calls=first.tool_calls,
            finish_reason=first.finish_reason,
            usage=(
                Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0)
                if usage
                else Usage()
            ),
            model=data.get("model") or "",
            choices=tuple(choices),
        )
    except (AttributeError, TypeError) as exc:  # a field of the wrong JSON type
        raise BadResponseError(
            f"the server's answer is not a valid completion: {exc}: {str(data)[:200]}"
        ) from exc


def _dropped_connection(exc: BaseException) -> BaseException | None:
    """The aiohttp error behind `exc` when the server closed the connection, else None.

    openai's aiohttp transport reports a server that hung up (aiohttp's
    ServerDisconnectedError, ClientOSError...) as httpx2.ConnectTimeout; it is a connection
    failure, and must not read as "no answer within the timeout".
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if type(cause).__module__.startswith("aiohttp") and "Timeout" not in type(cause).__name__:
            if any(c.__name__ == "ClientConnectionError" for c in type(cause).__mro__):
                return cause
        cause = cause.__cause__ or cause.__context__
    return None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue  # an HTTP date: rare for APIs; fall back to our own backoff
    return None


def _direct_available() -> bool:
    """Whether non-streaming requests go over aiohttp directly (see the module docstring).

    Not when a proxy is configured in the environment: the openai client's transports
    handle proxies as users expect, and the direct client stays simple (no proxy, no
    ~/.netrc credentials that could replace the API key)."""
    if os.environ.get("APPL_HTTP_BACKEND", "aiohttp") != "aiohttp":
        return False
    if any(os.environ.get(v) or os.environ.get(v.upper()) for v in PROXY_VARS):
        return False
    return importlib.util.find_spec("aiohttp") is not None
