"""Which backend `open_sandbox()` opens when none is named: the innermost `use_backend`
block's, else $CODEGEN_SANDBOX, else bwrap. The choice is scoped (a context variable): it
never touches os.environ and never leaks out of its block or into a run beside it."""

from __future__ import annotations

import asyncio
import os

import pytest

import sandboxes
from sandboxes import (
    BACKEND_ENV,
    SandboxError,
    current_backend,
    open_sandbox,
    open_sandbox_sync,
    use_backend,
)


@pytest.fixture(autouse=True)
def _no_user_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)


async def test_use_backend_is_what_open_sandbox_opens_and_ends_with_its_block() -> None:
    before = dict(os.environ)
    with use_backend("unsafe-local"):
        assert current_backend() == "unsafe-local"
        async with open_sandbox() as sb:
            assert sb.backend == "unsafe-local"
            r = await sb.exec(["true"])
            assert r.ok
        # An explicit name still wins over the block's.
        async with open_sandbox("bwrap") as sb:
            assert sb.backend == "bwrap"
    assert dict(os.environ) == before
    assert current_backend() == "bwrap"
    async with open_sandbox() as sb:
        assert sb.backend == "bwrap"


async def test_two_runs_side_by_side_each_open_their_own_backend() -> None:
    async def run(name: str, other_started: asyncio.Event, started: asyncio.Event) -> list[str]:
        seen = []
        with use_backend(name):
            started.set()
            await other_started.wait()  # both blocks are open now
            for _ in range(3):
                async with open_sandbox() as sb:
                    seen.append(sb.backend)
                # a thread started inside the block sees it too (to_thread copies the context)
                seen.append(await asyncio.to_thread(current_backend))
                await asyncio.sleep(0)
        return seen

    a, b = asyncio.Event(), asyncio.Event()
    local, bwrap = await asyncio.gather(run("unsafe-local", b, a), run("bwrap", a, b))
    assert set(local) == {"unsafe-local"} and set(bwrap) == {"bwrap"}


async def test_the_environment_is_the_default_outside_any_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(BACKEND_ENV, "unsafe-local")
    assert current_backend() == "unsafe-local"
    with use_backend("bwrap"):
        async with open_sandbox() as sb:
            assert sb.backend == "bwrap"
    with use_backend(None) as chosen:  # None: the choice around the block stands
        assert chosen == "unsafe-local"


def test_an_unknown_name_is_refused_before_the_block() -> None:
    with pytest.raises(SandboxError, match=r"unknown sandbox backend 'firecracker' \(bwrap"):
        with use_backend("firecracker"):
            pytest.fail("the block ran")
    assert current_backend() == "bwrap"


def test_the_sync_wrapper_reads_the_callers_block() -> None:
    with use_backend("unsafe-local"), open_sandbox_sync() as sb:
        assert sb.sandbox.backend == "unsafe-local"
        assert sb.exec(["true"]).ok


def test_the_helpers_the_kernel_gym_uses_are_public(tmp_path: os.PathLike[str]) -> None:
    for name in ("read_beneath", "sandbox_uid", "use_backend", "current_backend"):
        assert name in sandboxes.__all__ and getattr(sandboxes, name).__doc__
    root = str(tmp_path)
    os.mkdir(os.path.join(root, "real"))
    with open(os.path.join(root, "real", "f"), "wb") as fh:
        fh.write(b"data")
    os.symlink("real", os.path.join(root, "link"))
    os.symlink("/etc/shadow", os.path.join(root, "shadow"))
    assert sandboxes.read_beneath(root, "real/f", 2) == b"da"
    with pytest.raises(NotADirectoryError):
        sandboxes.read_beneath(root, "link/f", 10)
    with pytest.raises(PermissionError, match="symlink"):
        sandboxes.read_beneath(root, "shadow", 10)
    with pytest.raises(ValueError):
        sandboxes.read_beneath(root, "../x", 10)
    assert sandboxes.sandbox_uid() != 0
