# ruff: noqa: ASYNC240  (tests inspect host state synchronously, on purpose)
"""The Sandbox API itself: run directories, files, env/stdin, concurrency, errors, the sync
wrapper and cancellation."""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path

import pytest

import sandboxes.base as base
from sandboxes import (
    ExecStatus,
    Limits,
    Sandbox,
    SandboxError,
    open_sandbox,
    open_sandbox_sync,
    set_concurrency,
)
from sandboxes.local import UnsafeLocalSandbox

from .conftest import WALL_FAR_S, marker, processes_with


async def test_run_directory_is_private_shared_within_and_removed() -> None:
    async with open_sandbox() as a, open_sandbox() as b:
        assert a.run_dir != b.run_dir
        await a.write_file("secret.txt", "A")
        r = await a.exec(["cat", "secret.txt"])
        assert r.ok and r.stdout == "A"
        r = await b.exec(["sh", "-c", "cat secret.txt; ls -A"])
        assert r.stdout.strip() == ""  # b sees neither a's file nor anything else
        r = await a.exec(["sh", "-c", "echo hi > out.txt"])
        assert await a.read_file("out.txt") == b"hi\n"
        assert await a.read_text("out.txt") == "hi\n"
        kept = a.run_dir
    assert kept is not None and not kept.exists()


async def test_files_argument_stdin_and_env() -> None:
    async with open_sandbox() as sb:
        r = await sb.exec(
            ["sh", "-c", "cat in/data.txt; read x; echo $x; echo $GREETING; echo $HOME"],
            files={"in/data.txt": "file\n"},
            stdin="line\n",
            env={"GREETING": "hello"},
        )
        assert r.ok
        assert r.stdout.splitlines() == ["file", "line", "hello", "/sandbox"]
        r = await sb.exec(["sh", "-c", "env"])
        assert "CODEGEN" not in r.stdout and "VIRTUAL_ENV" not in r.stdout  # host env not leaked


async def test_payload_symlinks_are_not_followed_when_reading_or_writing() -> None:
    async with open_sandbox() as sb:
        r = await sb.exec(["sh", "-c", "ln -s /etc/shadow leak; mkdir d; ln -s /etc dirlink"])
        assert r.ok
        with pytest.raises(PermissionError):
            await sb.read_file("leak")
        with pytest.raises(OSError):
            await sb.read_file("dirlink/passwd")
        await sb.write_file("dirlink/evil", "x")  # the link is replaced by a real directory
        assert not Path("/etc/evil").exists()
        assert sb.run_dir is not None and (sb.run_dir / "dirlink").is_dir()
        assert not (sb.run_dir / "dirlink").is_symlink()
        assert await sb.read_file("dirlink/evil") == b"x"
        await sb.write_file("leak", "replaced")  # replaces the link, never writes through it
        assert await sb.read_file("leak") == b"replaced"
        for bad in ("/etc/passwd", "../x", "a/../../x", ""):
            with pytest.raises(ValueError):
                await sb.write_file(bad, "x")


async def test_read_files_reads_many_with_read_files_rules() -> None:
    """read_files gives, per path, the bytes or the error read_file would raise: the same
    refusal of symlinks and escapes, the same cap."""
    async with open_sandbox() as sb:
        r = await sb.exec(["sh", "-c", "printf abcdef > a; mkdir d; echo x > d/b; ln -s a link"])
        assert r.ok
        got = await sb.read_files(["a", "d/b", "link", "missing", "../x"], max_bytes=3)
        assert got[0] == b"abc" and got[1] == b"x\n"
        assert isinstance(got[2], PermissionError) and isinstance(got[3], FileNotFoundError)
        assert isinstance(got[4], ValueError)
        assert await sb.read_files([]) == []


async def test_exec_reports_failures_as_results() -> None:
    async with open_sandbox() as sb:
        r = await sb.exec(["sh", "-c", "exit 7"])
        assert r.status is ExecStatus.NONZERO_EXIT and r.exit_code == 7
        r = await sb.exec(["sh", "-c", "kill -SEGV $$"])
        assert r.status is ExecStatus.SIGNAL and r.signal == 11
        r = await sb.exec(["no-such-program-xyz"])
        assert r.status is ExecStatus.NONZERO_EXIT and "no-such-program-xyz" in r.stderr
        assert r.backend == "bwrap" and r.cpu_s is not None and r.peak_memory_mb is not None


async def test_limits_enforced_reports_what_applied() -> None:
    async with open_sandbox() as sb:
        r = await sb.exec(["true"])
    le = r.limits_enforced
    for key in ("memory", "pids", "seccomp", "uid_drop", "network_isolated", "rlimits"):
        assert le[key] is True, key
    assert le["address_space"] is False  # the memory cgroup holds, so no RLIMIT_AS


async def test_cpu_quota_and_cgroup_cpu_limit() -> None:
    async with open_sandbox() as sb:
        # Two busy shells: the tree's CPU time (not per process) is bounded by the cgroup.
        r = await sb.exec(
            ["sh", "-c", "while :; do :; done & while :; do :; done"],
            limits=Limits(wall_s=WALL_FAR_S, cpu_s=0.5, cpus=1.0),
        )
        assert r.status is ExecStatus.CPU_LIMIT, r
        assert r.limits_enforced["cpu_quota"] is True
        assert r.wall_s < WALL_FAR_S / 2  # 0.5 s of CPU: stopped by it, not by the wall


async def test_concurrency_limit_bounds_simultaneous_execs(monkeypatch: pytest.MonkeyPatch) -> None:
    set_concurrency("bwrap", 2)
    try:
        inflight = peak = 0
        orig = type(sb_cls := base._make("bwrap"))._exec

        async def counting(self, *a, **k):  # type: ignore[no-untyped-def]
            nonlocal inflight, peak
            inflight += 1
            peak = max(peak, inflight)
            try:
                return await orig(self, *a, **k)
            finally:
                inflight -= 1

        monkeypatch.setattr(type(sb_cls), "_exec", counting)
        async with open_sandbox() as a, open_sandbox() as b:
            rs = await asyncio.gather(*(s.exec(["sleep", "0.2"]) for s in (a, b, a, b, a)))
        assert all(r.ok for r in rs)
        assert peak == 2
    finally:
        base._limits.pop("bwrap", None)


async def test_cancelled_exec_kills_the_tree(iso_sb: Sandbox) -> None:
    tok = marker()
    task = asyncio.create_task(
        iso_sb.exec(["sh", "-c", f"sleep {tok} & sleep {tok}"], limits=Limits(wall_s=30))
    )
    for _ in range(100):  # a container takes a moment to start
        if processes_with(tok):
            break
        await asyncio.sleep(0.05)
    assert processes_with(tok)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert processes_with(tok) == []
    assert (await iso_sb.exec(["true"])).ok  # the sandbox is still usable


async def test_unknown_backend_and_closed_sandbox_raise() -> None:
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        async with open_sandbox("nope"):
            pass
    async with open_sandbox() as sb:
        pass
    with pytest.raises(SandboxError):
        await sb.exec(["true"])


async def test_backend_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", "docker")
    # An engine that is not there: the docker backend was chosen, and says so clearly.
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxError, match=r"docker backend: no Docker engine .*nonexistent"):
        async with open_sandbox():
            pass


async def test_unsafe_local_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import sandboxes.local as local

    monkeypatch.setattr(local, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with open_sandbox("unsafe-local") as sb:
            assert isinstance(sb, UnsafeLocalSandbox)
            r = await sb.exec(["id", "-u"])
            assert r.stdout.strip() == ("65534" if os.geteuid() == 0 else str(os.geteuid()))
        async with open_sandbox("unsafe-local"):
            pass
    assert sum("unsafe-local" in str(w.message) for w in caught) == 1


def test_sync_wrapper() -> None:
    with open_sandbox_sync() as sb:
        sb.write_file("a.txt", "x")
        r = sb.exec(["cat", "a.txt"], limits=Limits(wall_s=5))
        assert r.ok and r.stdout == "x"
        assert sb.read_text("a.txt") == "x"
        run_dir = sb.sandbox.run_dir
    assert run_dir is not None and not run_dir.exists()


async def test_payload_dies_with_a_killed_host_process() -> None:
    """PR_SET_PDEATHSIG on bwrap: a SIGKILLed caller leaves nothing running."""
    import sys

    tok = marker()
    script = (
        "import asyncio\nfrom sandboxes import open_sandbox, Limits\n"
        "async def main():\n"
        "    async with open_sandbox() as sb:\n"
        f"        await sb.exec(['sleep', '{tok}'], limits=Limits(wall_s=60))\n"
        "asyncio.run(main())\n"
    )
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
    try:
        for _ in range(100):
            if processes_with(f"sleep {tok}"):
                break
            await asyncio.sleep(0.1)
        assert processes_with(f"sleep {tok}")
    finally:
        proc.kill()
        await proc.wait()
    await asyncio.sleep(0.5)
    assert processes_with(tok) == []
