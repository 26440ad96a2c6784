"""Shared bits of the language/runtime tests (not a conftest: that belongs to the model layer)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from appl import config
from appl.testing import Rule, ScriptedServer
from appl.testing._rules import prompt_text

TEST_MODEL = {
    "provider": "openai",
    "api_key": "test",
    "api_key_env": None,
    "timeout_s": 10.0,
    "max_retries": 2,
    "backoff_base_s": 0.01,
    "backoff_max_s": 0.05,
    "max_concurrency": 64,
}


class Arrivals:
    """Records when each request reached the server (a rule whose predicate never matches)."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.log: list[tuple[float, str]] = []

    def rule(self) -> Rule:
        def seen(body: dict[str, Any]) -> bool:
            self.log.append((time.monotonic() - self.start, prompt_text(body)))
            return False

        return Rule(match=seen)

    def first(self, marker: str) -> float:
        """Arrival time (s since start) of the first request whose prompt contains marker."""
        for at, text in self.log:
            if marker in text:
                return at
        raise AssertionError(f"no request containing {marker!r}; saw {[t for _, t in self.log]}")


@contextmanager
def sync_server(rules: list[Rule], **kwargs: Any) -> Iterator[ScriptedServer]:
    """A started ScriptedServer configured as the default model, for tests without a loop."""
    saved = config.get_config()
    server = ScriptedServer(rules, **kwargs).start()
    try:
        config.configure(
            models={"scripted": {**TEST_MODEL, "base_url": server.base_url}},
            default_model="scripted",
        )
        yield server
    finally:
        server.stop()
        config.reset_config(saved)
