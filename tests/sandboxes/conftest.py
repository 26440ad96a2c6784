"""Shared fixtures: a sandbox per backend. For docker, as root, the first use starts a local
engine and builds the sandbox image offline (scripts/docker-local.sh up: ~35 s cold, then
well under a second) and a failure there fails the test. Without root and without an engine
the fixture asserts that opening fails fast with a clear SandboxError and yields None."""

from __future__ import annotations

import functools
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandboxes import Sandbox, SandboxError, open_sandbox
from sandboxes.docker_backend import DockerSandbox

REPO = Path(__file__).resolve().parents[2]

# A wall limit far beyond any honest run, for tests whose subject is another limit (output,
# CPU): the run must end by that limit well before this one (half of it). The kill is real,
# so the clock is; the bound is relative and generous: `yes` cut at 4 KiB took 0.1 s under
# bwrap and 12-18 s under docker at load 17 (22 s at load 25), and a harness that cut only
# at the wall limit would take 240 s.
WALL_FAR_S = 240.0


@functools.cache
def docker_local_up() -> None:
    """Engine + image, once per test session (idempotent; only root can start dockerd)."""
    if os.geteuid() != 0:
        return
    p = subprocess.run(
        [str(REPO / "scripts" / "docker-local.sh"), "up"],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if p.returncode != 0:
        pytest.fail(f"scripts/docker-local.sh up failed:\n{p.stderr[-3000:]}")


async def open_or_assert_clear_error(backend: str, **options: object) -> AsyncIterator[Sandbox]:
    if backend == "docker" and os.geteuid() != 0:
        # No engine can be started here: opening must fail fast with a clear message (or
        # an engine somebody else runs is used).
        t0 = time.monotonic()
        sb = DockerSandbox(**options)  # type: ignore[arg-type]
        try:
            await sb.start()
        except SandboxError as exc:
            await sb.close()
            msg = str(exc)
            assert "docker" in msg.lower()
            assert "unix://" in msg or "tcp://" in msg or "docker build" in msg
            assert "bwrap" in msg or "docker build" in msg
            assert time.monotonic() - t0 < 5.0
            # The clear error is what a user without an engine gets, and it was checked;
            # the case itself cannot run here. (As root, as in CI, an engine is started.)
            pytest.skip(f"no docker engine for uid {os.geteuid()}: {msg.splitlines()[0]}")
        try:
            yield sb
        finally:
            await sb.close()
        return
    if backend == "docker":
        docker_local_up()
    async with open_sandbox(backend, **options) as sb:
        yield sb


@pytest.fixture(params=["bwrap", "docker", "unsafe-local"])
async def any_sb(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """Every backend: the resource-limit half of the conformance suite."""
    async for sb in open_or_assert_clear_error(request.param):
        yield sb


@pytest.fixture(params=["bwrap", "docker"])
async def iso_sb(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
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
