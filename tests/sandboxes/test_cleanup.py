# ruff: noqa: ASYNC220  (a plain Popen child, to SIGKILL it without asyncio bookkeeping)
"""What a run leaves behind: no zombies or processes (the launcher reaps what bwrap
orphans), and the garbage collection of run directories and cgroups of a SIGKILLed caller."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from sandboxes import Limits, open_sandbox
from sandboxes._stale import maybe_sweep, owner_alive, owner_token, sweep
from sandboxes.base import base_dir
from sandboxes.cgroups import layout

from .conftest import marker, processes_with

# Run in a child process that is a child subreaper: anything our execs orphan is reparented
# to it (not to PID 1, where other users' leftovers also land), so its children after the
# batch are exactly what the sandbox failed to reap.
BATCH = textwrap.dedent(
    """
    import asyncio, ctypes, json, os
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    from sandboxes import Limits, open_sandbox
    from sandboxes._stale import owner_token

    def children():
        out = []
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        return out

    def stat(pid):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                s = f.read()
            return s[s.index(b"(") + 1 : s.rindex(b")")].decode() + " " + chr(s[s.rindex(b")") + 2])
        except OSError:
            return "gone"

    def ours_alive(token):  # processes still in one of our per-run cgroups
        found = []
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    with open(f"/proc/{p}/cgroup") as f:
                        if token in f.read():
                            found.append(int(p))
                except OSError:
                    pass
        return found

    async def main():
        async with open_sandbox() as sb:
            for _ in range(3):
                r = await sb.exec(["sleep", "30"], limits=Limits(wall_s=0.3))
                assert r.status == "wall_timeout", r
                r = await sb.exec(["sh", "-c", "sleep 30 & sleep 30 & wait"], limits=Limits(wall_s=0.3))
                assert r.status == "wall_timeout", r
                r = await sb.exec(["yes"], limits=Limits(output_bytes=1000))
                assert r.status == "output_limit", r
                r = await sb.exec(["sh", "-c", "setsid sleep 30 </dev/null >/dev/null 2>&1 & exit 3"])
                assert r.status == "nonzero_exit", r
                r = await sb.exec(["true"])
                assert r.ok, r
            t = asyncio.create_task(sb.exec(["sleep", "30"], limits=Limits(wall_s=30)))
            await asyncio.sleep(0.5)
            t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                pass
        async with open_sandbox("unsafe-local") as sb:
            r = await sb.exec(["sh", "-c", "setsid sleep 30 </dev/null >/dev/null 2>&1 & exit 0"])
            assert r.ok, r
            r = await sb.exec(["sleep", "30"], limits=Limits(wall_s=0.3))
            assert r.status == "wall_timeout", r
        await asyncio.sleep(0.5)
        kids = children()
        print(json.dumps({"children": {k: stat(k) for k in kids},
                          "alive": ours_alive("run-" + owner_token() + "-")}))

    asyncio.run(main())
    """
)


def test_no_zombies_or_leftovers_after_kills() -> None:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    p = subprocess.run(
        [sys.executable, "-c", BATCH], capture_output=True, text=True, timeout=300, env=env
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    # A zombie bwrap here ("bwrap Z") is what used to pile up under PID 1.
    assert got["children"] == {}, got
    assert got["alive"] == [], got


def _cgroup_parents() -> list[Path]:
    lay = layout()
    return sorted({p for p in (lay.memory, lay.pids, lay.cpu, lay.cpuacct) if p is not None})


def _ours(token: str) -> list[Path]:
    found = [p for p in base_dir().iterdir() if f"-{token}-" in p.name]
    for parent in _cgroup_parents():
        found += [p for p in parent.iterdir() if f"-{token}-" in p.name]
    return found


async def test_killed_callers_run_dirs_and_cgroups_are_swept() -> None:
    tok = marker()
    script = textwrap.dedent(
        f"""
        import asyncio
        from sandboxes import open_sandbox, Limits
        from sandboxes._stale import owner_token
        async def main():
            async with open_sandbox() as sb:
                print(owner_token(), flush=True)
                await sb.exec(['sleep', '{tok}'], limits=Limits(wall_s=60))
        asyncio.run(main())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    dead = (await asyncio.to_thread(proc.stdout.readline)).strip()
    for _ in range(200):
        if processes_with(f"sleep {tok}"):
            break
        await asyncio.sleep(0.05)
    assert processes_with(f"sleep {tok}")
    left = _ours(dead)
    assert any(p.parent == base_dir() for p in left)  # its run dir
    assert any(p.parent != base_dir() for p in left)  # its cgroups
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    for _ in range(100):  # the payload dies with its caller (launcher's parent-death signal)
        if not processes_with(tok):
            break
        await asyncio.sleep(0.05)
    assert processes_with(tok) == []
    assert all(p.exists() for p in left)  # nothing removed them yet
    assert all(owner_alive(p.name) is False for p in left)

    # A live process's state (ours: an open sandbox with an exec running) is never touched.
    import sandboxes._stale as stale

    stale._last_sweep[os.getpid()] = time.monotonic()  # no automatic sweep at this open
    async with open_sandbox() as sb:
        running = asyncio.create_task(sb.exec(["sleep", "1"], limits=Limits(wall_s=10)))
        await asyncio.sleep(0.3)
        mine = _ours(owner_token())
        assert sb.run_dir in mine and len(mine) >= 2  # run dir + cgroups of the running exec
        removed = await asyncio.to_thread(sweep, base_dir(), _cgroup_parents())
        assert set(left) <= set(removed)
        assert not any(p.exists() for p in left)
        assert all(p.exists() for p in mine)
        assert not set(mine) & set(removed)
        r = await running
        assert r.ok, r
    # And opening a sandbox sweeps by itself (once per process, then every ten minutes).
    stale._last_sweep.pop(os.getpid(), None)
    d = base_dir() / f"bwrap-{dead}-zzzzzzzz"
    d.mkdir()
    async with open_sandbox():
        assert not d.exists()
    d.mkdir()
    maybe_sweep(base_dir())  # not again so soon
    assert d.exists()
    d.rmdir()
