# ruff: noqa: ASYNC220  (a plain Popen child, to SIGKILL it without asyncio bookkeeping)
"""What a run leaves behind: no zombies or processes (the launcher reaps what bwrap
orphans), and the garbage collection of run directories and cgroups of a SIGKILLed caller."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandboxes import ExecStatus, Limits, Sandbox, _cleanup, open_sandbox, toolchains
from sandboxes._cleanup import mount_tmpfs, remove_tree, unmount
from sandboxes._stale import maybe_sweep, owner_alive, owner_token, sweep
from sandboxes.base import base_dir
from sandboxes.cgroups import layout

from .conftest import marker, open_or_assert_clear_error, processes_with

# Run in a child process that is a child subreaper: anything our execs orphan is reparented
# to it (not to PID 1, where other users' leftovers also land), so its children after the
# batch are exactly what the sandbox failed to reap.
SUBREAPER = textwrap.dedent(
    """
    import asyncio, ctypes, json, os
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    from sandboxes import Limits, open_sandbox

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

    async def cancelled_exec(sb, after):  # an exec cancelled while it runs
        t = asyncio.create_task(sb.exec(["sleep", "30"], limits=Limits(wall_s=30)))
        await asyncio.sleep(after)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            pass
    """
)
BATCH = SUBREAPER + textwrap.dedent(
    """
    from sandboxes._stale import owner_token

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
            await cancelled_exec(sb, 0.5)
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


CANCELS = SUBREAPER + textwrap.dedent(
    """
    async def main():
        async with open_sandbox() as sb:
            for _ in range(10):
                await cancelled_exec(sb, 0.4)
        await asyncio.sleep(0.5)
        print(json.dumps([stat(k) for k in children() if stat(k).endswith(" Z")]))

    asyncio.run(main())
    """
)


def test_a_cancelled_exec_waits_for_the_launcher_to_reap_its_tree() -> None:
    """Cancelling exec() used to cancel the launcher's exit future with it, so the cleanup's
    wait for the launcher returned at once and SIGKILLed it while it was still reaping:
    bwrap or its init, orphaned, became zombies of whoever reaps next (a non-reaping PID 1
    in a container). Seen in 2 of 3 batches of 8 cancels at load 4; 10 cancels here."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    p = subprocess.run(
        [sys.executable, "-c", CANCELS], capture_output=True, text=True, timeout=300, env=env
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == []
    assert "Unknown child process" not in p.stderr  # the launcher reaped by someone else


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


# -- what a payload can do to its run directory ----------------------------------------------
LITTER_C = Path(__file__).with_name("litter.c").read_text()


@pytest.fixture(params=[("bwrap", 0), ("bwrap", None), ("docker", 0)], ids=str)
async def litter_sb(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """A plain on-disk run directory (run_dir_mb=0: the remover's path) and, for bwrap, the
    default (a tmpfs run directory as root: removal is an unmount)."""
    backend, mb = request.param
    async for sb in open_or_assert_clear_error(backend, run_dir_mb=mb):
        yield sb


async def test_hostile_tree_neither_breaks_exec_nor_cleanup(litter_sb: Sandbox) -> None:
    sb = litter_sb
    b = await toolchains.get("c").compile(sb, {"litter.c": LITTER_C}, output="litter")
    assert b.ok, b.exec_result.stderr
    r = await sb.exec(["./litter", "5000", "2000"], limits=Limits(wall_s=60))
    # A non-zero exit makes the backend look through the run directory (for files at the
    # size cap): that walk used to die of RecursionError at this depth.
    assert r.status is ExecStatus.NONZERO_EXIT and r.exit_code == 3, r
    assert "littered" in r.stdout
    # No undeletable files: the immutable and append-only flags need a capability.
    assert "chattr +i: SET" not in r.stdout and "chattr +a: SET" not in r.stdout
    assert "chattr +i: " in r.stdout
    assert (await sb.exec(["true"])).ok  # the sandbox goes on working
    d = sb.run_dir
    assert d is not None
    await sb.close()  # must not raise
    assert not d.exists()


def _deep(root: Path, depth: int) -> None:
    """A chain deeper than PATH_MAX, made with directory descriptors as a payload would."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.mkfifo("fifo", dir_fd=fd)
        os.mkdir("locked", dir_fd=fd)
        os.chmod("locked", 0, dir_fd=fd)
    finally:
        os.close(fd)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_remove_tree_is_iterative_and_leaves_mounts_alone(tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    deep.mkdir()
    _deep(deep, 5000)
    (deep / "m").mkdir()
    assert mount_tmpfs(deep / "m", size_mb=1, inodes=64, uid=0) is None
    (deep / "m" / "inside").write_text("kept")
    try:
        problems = remove_tree(deep)
        # Everything but the mount point (and the directory holding it) is gone; the mount's
        # contents were never touched.
        assert problems[0] == "m: a mount point; left alone", problems
        assert all("mount point" in p or "not empty" in p for p in problems), problems
        assert sorted(p.name for p in deep.iterdir()) == ["m"]
        assert (deep / "m" / "inside").read_text() == "kept"
    finally:
        unmount(deep / "m")
    assert remove_tree(deep) == [] and not deep.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_sweep_skips_and_reports_what_it_cannot_remove() -> None:
    dead = "999999.1"  # no process has this pid and start time
    stuck = base_dir() / f"bwrap-{dead}-stuck"
    deep = base_dir() / f"bwrap-{dead}-deeeep"
    capped = base_dir() / f"bwrap-{dead}-capped"
    for d in (stuck, deep, capped):
        d.mkdir()
    (stuck / "m").mkdir()
    assert mount_tmpfs(stuck / "m", size_mb=1, inodes=64, uid=0) is None
    assert mount_tmpfs(capped, size_mb=1, inodes=64, uid=0) is None
    _deep(capped, 30)
    _deep(deep, 5000)
    try:
        skipped: list[str] = []
        removed = sweep(base_dir(), [], skipped)
        assert deep in removed and not deep.exists()
        assert capped in removed and not capped.exists()  # a dead owner's tmpfs: unmounted
        assert stuck not in removed and stuck.exists()
        assert any(str(stuck) in s and "mount point" in s for s in skipped), skipped
    finally:
        unmount(stuck / "m")
    assert sweep(base_dir(), []) and not stuck.exists()


async def test_capped_run_dir_stops_a_disk_filler() -> None:
    """A payload that writes until the disk is full fills only its own capped tmpfs run
    directory (as root; a plain directory on the host's disk otherwise)."""
    async with open_sandbox(run_dir_mb=4) as sb:
        assert sb.run_dir_capped is (os.geteuid() == 0)
        if not sb.run_dir_capped:
            return
        r = await sb.exec(
            ["sh", "-c", "i=0; while head -c 65536 /dev/zero > f$i; do i=$((i+1)); done; exit 1"],
            limits=Limits(wall_s=30),
        )
        assert r.status is ExecStatus.FILE_SIZE_LIMIT, r
        assert r.limits_enforced["run_dir_capped"] is True
        assert "No space left" in r.stderr
        # Inodes are capped too (128 per MB): a payload making millions of empty files stops
        # at the cap, and cleanup stays one unmount.
        r = await sb.exec(
            ["sh", "-c", "rm -f f*; i=0; while : > e$i; do i=$((i+1)); done; exit 1"],
            limits=Limits(wall_s=30),
        )
        assert r.status is ExecStatus.FILE_SIZE_LIMIT, r
        assert len(os.listdir(sb.run_dir)) <= 4 * 128


def test_remove_tree_restores_permissions_it_needs_without_root() -> None:
    """Without root (a non-root caller's run directory is owned by the caller), locked
    directories must be unlocked before their entries can go: run the remover as a plain uid
    on a tree that uid made."""
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    top = Path(tempfile.mkdtemp(prefix="rmtree-test-"))
    try:
        d = top / "tree"
        d.mkdir()
        # The module itself, where the plain uid can read it (the venv may be under /root).
        shutil.copy(Path(_cleanup.__file__), top / "_cleanup.py")
        for p in (top, d, top / "_cleanup.py"):
            if os.geteuid() == 0:
                os.chown(p, uid, uid)
        script = textwrap.dedent(
            f"""
            import os, sys
            from pathlib import Path
            sys.path.insert(0, {str(top)!r})
            from _cleanup import remove_tree
            root = Path({str(d)!r})
            os.chdir(root)
            os.makedirs("a/b/c")
            open("a/b/c/f", "w").close()
            os.mkfifo("a/fifo")
            os.chmod("a/b/c", 0)      # unreadable, unsearchable
            os.chmod("a/b", 0o500)    # entries cannot be unlinked
            os.chmod("a", 0o100)      # not even listable
            os.chdir("/")
            problems = remove_tree(root)
            print(problems, root.exists())
            """
        )
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        p = subprocess.run(
            [python, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            user=uid if os.geteuid() == 0 else None,
            cwd="/",
            check=False,
        )
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "[] False"
    finally:
        remove_tree(top)
