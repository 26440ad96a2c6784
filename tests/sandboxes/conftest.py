"""Shared fixtures: a sandbox per backend. For docker (no engine on this machine kind) the
fixture asserts that opening fails fast with a clear SandboxError and yields None; tests
then have nothing more to check. With an engine and image it yields a real sandbox."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandboxes import Sandbox, SandboxError, open_sandbox


async def open_or_assert_clear_error(backend: str) -> AsyncIterator[Sandbox | None]:
    if backend == "docker":
        t0 = time.monotonic()
        try:
            async with open_sandbox("docker") as sb:
                yield sb
                return
        except SandboxError as exc:
            msg = str(exc)
            assert "docker" in msg.lower()
            assert "unix://" in msg or "tcp://" in msg or "docker build" in msg
            assert "bwrap" in msg or "docker build" in msg
            assert time.monotonic() - t0 < 5.0
            yield None
            return
    async with open_sandbox(backend) as sb:
        yield sb


@pytest.fixture(params=["bwrap", "docker", "unsafe-local"])
async def any_sb(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox | None]:
    """Every backend: the resource-limit half of the conformance suite."""
    async for sb in open_or_assert_clear_error(request.param):
        yield sb


@pytest.fixture(params=["bwrap", "docker"])
async def iso_sb(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox | None]:
    """Isolating backends only (unsafe-local shares the host's network and filesystem)."""
    async for sb in open_or_assert_clear_error(request.param):
        yield sb


def marker() -> str:
    """A unique number usable as a sleep argument, to find leftover processes by cmdline."""
    return f"{1000 + uuid.uuid4().int % 9000}.{uuid.uuid4().int % 10**6:06d}"


def processes_with(token: str) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmd:
            found.append(int(p.name))
    return found
