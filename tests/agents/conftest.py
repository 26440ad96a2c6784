"""`scripted` for the agents' tests: appl's own fixture (appl.testing.pytest_plugin) with
limits fit for real compile/simulate rounds, and unmatched requests failing loudly."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

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
def scripted(scripted: MakeScripted) -> MakeScripted:
    def make(
        rules: Sequence[Rule] = (), *, model: dict[str, Any] | None = None, **server_kwargs: Any
    ) -> ScriptedServer:
        server_kwargs.setdefault("default_reply", None)  # an unmatched request fails loudly
        return scripted(rules, model={**TEST_MODEL, **(model or {})}, **server_kwargs)

    return make
