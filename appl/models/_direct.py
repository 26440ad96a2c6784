"""The non-streaming chat request over aiohttp directly, without the openai package.

Why: importing `openai` costs 0.4-1.5 s on the development machine (its type modules), and
it was paid inside the first gen of every process, on the event loop's thread. A plain
chat completion needs none of it: appl already sends its own JSON body and reads the JSON
reply itself (appl.models.openai_provider). So when aiohttp is installed (the default
`APPL_HTTP_BACKEND=aiohttp`), non-streaming requests go through this small client: one
`aiohttp.ClientSession` per model, the same limits, timeouts and TLS context the openai
client would get, and the same error classes (openai_provider.status_error / translate).
Streaming requests still use the openai client, created (and imported) on the first stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

_USER_AGENT = f"appl (aiohttp {aiohttp.__version__})"


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    reason: str
    headers: Mapping[str, str]
    content: bytes


class DirectClient:
    """POST {base_url}/chat/completions with a JSON body; returns the raw response."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float,
        max_connections: int,
        ssl_context: Any,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": _USER_AGENT,
        }
        # One knob for every phase, as for the openai client: waiting for a pool slot, the
        # connect, and each read (a hung server is a timeout, however long the reply).
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=timeout_s, sock_connect=timeout_s, sock_read=timeout_s
        )
        self._max_connections = max_connections
        self._ssl = ssl_context
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._max_connections, ssl=self._ssl)
            # trust_env stays off: with a proxy in the environment the openai client is used
            # instead (openai_provider._direct_available), and ~/.netrc must never replace
            # the API key
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    async def post(self, body: bytes) -> RawResponse:
        session = self._get_session()
        async with session.post(
            self.url, data=body, headers=self._headers, allow_redirects=False
        ) as response:
            content = await response.read()
            return RawResponse(response.status, response.reason or "", response.headers, content)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
