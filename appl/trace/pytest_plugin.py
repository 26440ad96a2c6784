"""pytest plugin: record a program's model calls once, commit the trace, replay it in CI.

Registered through the `pytest11` entry point (pyproject.toml), so installed checkouts get it
automatically:

    async def test_summary(appl_replay):
        with appl_replay("tests/traces/summary.jsonl"):
            assert "cache" in await summarize(TEXT)

The first run (file absent), or any run with `pytest --appl-record`, sends the calls to the
real model and writes the trace; every other run replays it strictly: zero model calls, and
a changed prompt fails with ReplayMissError showing the diff. Relative paths are taken from
the pytest root directory.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("appl")
    group.addoption(
        "--appl-record",
        action="store_true",
        default=False,
        help="appl_replay: call the real models and (re)write the traces instead of replaying",
    )


@pytest.fixture
def appl_replay(request: pytest.FixtureRequest) -> Callable[..., AbstractContextManager[Any]]:
    """`with appl_replay(path, mode="strict"):` record (file absent / --appl-record) or replay."""
    from appl.trace._cassette import cassette  # late: plain pytest runs never import appl

    force = bool(request.config.getoption("--appl-record"))
    root = Path(request.config.rootpath)

    def use(path: str | Path, *, mode: str = "strict") -> AbstractContextManager[Any]:
        file = Path(path)
        if not file.is_absolute():
            file = root / file
        return cassette(file, record=True if force else None, mode=mode)  # type: ignore[arg-type]

    return use
