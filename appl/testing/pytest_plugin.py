"""pytest plugin (installed with appl): the `scripted` fixture.

`scripted` starts real ScriptedServers and points the model alias "scripted" (the default
model) at the latest one, for testing your own prompt programs without a model:

    from appl.testing import Rule

    async def test_hello(scripted):
        server = scripted([Rule(match="hello", reply="hi")])
        response = await get_model().generate(GenRequest(model="scripted", messages=[...]))
        assert response.text == "hi" and len(server.requests) == 1

`make(rules=(), *, alias="scripted", model=None, **server_kwargs)`: `model` overrides fields
of the model config (defaults here are test-friendly: 5 s timeout, 3 retries, 10 ms backoff);
`server_kwargs` go to ScriptedServer. At the end every model is closed, every server stopped,
and the process-wide config, usage totals and budgets are restored. A conftest may override
the fixture and still use this one by requesting `scripted` in its own `scripted`.

It is an async fixture declared with pytest-asyncio's decorator, so it works under
pytest-asyncio's default (strict) mode as well as `asyncio_mode = "auto"`; in strict mode mark
your async tests `@pytest.mark.asyncio` as usual. Sync tests may use it too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from appl import accounting, config
from appl.models import close_models
from appl.testing import Rule, ScriptedServer

MakeScripted = Callable[..., ScriptedServer]

TEST_MODEL_DEFAULTS: dict[str, Any] = {
    "provider": "openai",
    "api_key": "test",
    "api_key_env": None,
    "timeout_s": 5.0,
    "max_retries": 3,
    "backoff_base_s": 0.01,
    "backoff_max_s": 0.05,
}


try:  # pytest-asyncio's own decorator: the fixture then works in its default (strict) mode too
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # without pytest-asyncio no async test runs anyway
    _async_fixture = pytest.fixture  # type: ignore[assignment]


@_async_fixture
async def scripted() -> AsyncIterator[MakeScripted]:
    saved = config.get_config()
    servers: list[ScriptedServer] = []

    def make(
        rules: Sequence[Rule] = (),
        *,
        alias: str = "scripted",
        model: dict[str, Any] | None = None,
        **server_kwargs: Any,
    ) -> ScriptedServer:
        server = ScriptedServer(rules, **server_kwargs).start()
        servers.append(server)
        spec = {**TEST_MODEL_DEFAULTS, "base_url": server.base_url, **(model or {})}
        config.configure(models={alias: spec}, default_model=alias, budget={})
        return server

    accounting.reset_usage()
    try:
        yield make
    finally:
        await close_models()
        for server in servers:
            server.stop()
        config.reset_config(saved)
        accounting.reset_usage()
