"""The HTTP client under `openai.AsyncOpenAI`: httpx2 with a cheaper connection-health probe.

httpcore's connection pool checks every idle keep-alive connection (`has_expired`) each time a
request starts or ends, and for each it asks the network stream `get_extra_info("is_readable")`.
Through anyio that lookup rebuilds a dict of typed attributes per call (~20 us), so with 64
connections open a request spends ~1 ms of CPU in the pool alone. `_ProbeCachingBackend` wraps
the stock anyio backend and answers that probe from the socket it looked up once; reads,
writes, TLS and errors stay anyio's. Everything else is the stock transport (HTTP/1.1 only,
no HTTP/2). If the installed httpx2/httpcore2 lay their transport out differently, the stock
backend is kept: this is an optimisation, never a requirement.
"""

from __future__ import annotations

import importlib.util
import os
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2
import openai
from httpcore2._utils import is_socket_readable

from appl.models._tls import ssl_context_for

_UNSET = object()


def _aiohttp_available() -> bool:
    return importlib.util.find_spec("aiohttp") is not None


class _ProbeCachingStream(httpcore2.AsyncNetworkStream):
    __slots__ = ("_socket", "_stream")

    def __init__(self, stream: httpcore2.AsyncNetworkStream) -> None:
        self._stream = stream
        self._socket: Any = _UNSET

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
    ) -> httpcore2.AsyncNetworkStream:
        return _ProbeCachingStream(
            await self._stream.start_tls(ssl_context, server_hostname, timeout)
        )

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            sock = self._socket
            if sock is _UNSET:
                sock = self._socket = self._stream.get_extra_info("socket")
            return is_socket_readable(sock)
        return self._stream.get_extra_info(info)


class _ProbeCachingBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _ProbeCachingStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._backend.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )
        return _ProbeCachingStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _use_fast_backend(client: httpx2.AsyncClient) -> None:
    """Give the client's default (non-proxy) connection pool the probe-caching backend."""
    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    if type(pool) is httpcore2.AsyncConnectionPool and hasattr(pool, "_network_backend"):
        pool._network_backend = _ProbeCachingBackend()


def make_http_client(
    *, timeout: httpx2.Timeout, max_connections: int, max_keepalive: int, base_url: str = ""
) -> httpx2.AsyncClient:
    """The httpx2 client handed to `openai.AsyncOpenAI` (openai's defaults, tuned limits).

    Proxies from the environment keep working: they are separate mounts with their own
    transports, which stay stock.
    """
    limits = httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_keepalive)
    verify = ssl_context_for(base_url)
    if _aiohttp_available() and os.environ.get("APPL_HTTP_BACKEND", "aiohttp") == "aiohttp":
        # openai's own aiohttp transport (the `openai[aiohttp]` extra): the same client API,
        # about a third less CPU per request than httpx's pool on a busy 2-core machine.
        return openai.DefaultAioHttpClient(limits=limits, timeout=timeout, verify=verify)
    client = openai.DefaultAsyncHttpxClient(
        limits=limits, timeout=timeout, http2=False, verify=verify
    )
    try:
        _use_fast_backend(client)
    except Exception:  # an httpx2 laid out differently: the stock backend is fine
        pass
    return client
