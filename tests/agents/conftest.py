"""`scripted`: real ScriptedServers playing the model (the idea of tests/appl/conftest.py).

`scripted(rules, **server_kwargs)` starts a server and makes alias "scripted" the default
model with test-friendly limits; at the end every model is closed, every server stopped and
the config and usage totals restored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from appl import accounting, config
from appl.models import close_models
from appl.testing import Rule, ScriptedServer

MakeScripted = Callable[..., ScriptedServer]

TEST_MODEL: dict[str, Any] = {
    "provider": "openai",
    "api_key": "test",
    "api_key_env": None,
    "timeout_s": 20.0,
    "max_retries": 1,
    "backoff_base_s": 0.01,
    "backoff_max_s": 0.05,
    "max_concurrency": 16,
}


@pytest.fixture
async def scripted() -> AsyncIterator[MakeScripted]:
    saved = config.get_config()
    servers: list[ScriptedServer] = []

    def make(rules: Sequence[Rule] = (), **server_kwargs: Any) -> ScriptedServer:
        server_kwargs.setdefault("default_reply", None)  # an unmatched request fails loudly
        server = ScriptedServer(rules, **server_kwargs).start()
        servers.append(server)
        spec = {**TEST_MODEL, "base_url": server.base_url}
        config.configure(models={"scripted": spec}, default_model="scripted", budget={})
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
