# ruff: noqa: ASYNC240  (tests inspect host state synchronously, on purpose)
"""Adversarial conformance: payloads that go after what the harness gave exec() or after the
machinery around the run (pid 1, descriptors, later execs, cleanup, the disk). Parametrized
over the isolating backends, bwrap and docker (unsafe-local is not a sandbox: see
docs/sandboxes.md)."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from pathlib import Path

import pytest

from sandboxes import ExecStatus, Limits, Sandbox, toolchains
from sandboxes._cleanup import remove_tree

from .conftest import WALL_FAR_S, marker, open_or_assert_clear_error, processes_with

SCAN_C = (Path(__file__).with_name("secret_scan.c")).read_text()


async def test_exec_env_is_visible_only_in_the_payloads_own_environment(
    iso_sb: Sandbox,
) -> None:
    b = await toolchains.get("c").compile(iso_sb, {"scan.c": SCAN_C}, output="scan")
    assert b.ok, b.exec_result.stderr
    secret = secrets.token_hex(16)
    # Through a shell, so another payload process (sh, same env) and pid 1 are there to scan.
    r = await iso_sb.exec(
        ["sh", "-c", "./scan; echo done"],
        env={"SECRET_NAME": "HARNESS_KEY", "HARNESS_KEY": secret},
        limits=Limits(wall_s=60),
    )
    assert r.ok, r
    lines = r.stdout.splitlines()
    assert lines[-1] == "done" and any(x.startswith("scanned ") for x in lines), r.stdout
    # The one process that certainly holds the value in its environment, the shell, must be
    # found: otherwise the scan could not have found a leak either.
    env_pids = {int(x.split()[1]) for x in lines if x.startswith("ENV ")}
    assert env_pids, r.stdout
    leaks = [x for x in lines if x.startswith("FOUND") and not x.endswith(("(its env)", "(own)"))]
    assert leaks == [], r.stdout
    # pid 1 is our non-dumpable init on both backends: its descriptors cannot be reopened.
    assert "ROOT-FD-WRITE" not in lines
    assert secret not in r.stderr
    # pid 1 shows nothing of the launch machinery: no bwrap options, no host paths.
    r = await iso_sb.exec(["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline"])
    assert r.ok, r
    assert "--setenv" not in r.stdout and "--args" not in r.stdout and "bwrap" not in r.stdout
    assert str(iso_sb.run_dir) not in r.stdout
    # Our init on both backends (docker's tini was dumpable, as the payload's uid): its
    # memory, environment and descriptors are closed.
    assert r.limits_enforced["sandbox_init"] is True
    r = await iso_sb.exec(
        ["sh", "-c", "for f in mem environ maps; do cat /proc/1/$f >/dev/null; done; ls /proc/1/fd"]
    )
    assert r.stderr.count("Permission denied") == 4, r.stderr


# -- extra_ro_binds: trusted files the payload can use but never change ----------------------
TRUSTED = "#!/bin/sh\necho trusted-$1\n"
ATTACKS = {
    "write": "echo evil > $P/tool",
    "append": "echo evil >> $P/tool",
    "unlink": "rm -f $P/tool",
    "rename": "mv $P/tool $P/tool.old",
    "symlink-over": "ln -sf /bin/true $P/tool",
    "rename-over": "cp /bin/true /tmp/evil && mv -f /tmp/evil $P/tool",
    "new-file": "touch $P/new",
    "mkdir": "mkdir $P/newdir",
    "chmod": "chmod 777 $P/tool",
    "truncate-in-subdir": ": > $P/d/data",
    "rmdir-subdir": "rm -rf $P/d",
    "move-the-bind": "mv $P /tmp/moved-bind",
    "move-its-parent": 'mv "$(dirname $P)" /tmp/moved-parent',
    "remove-the-bind": "rm -rf $P",
}


def _trusted_tree(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "tool").write_text(TRUSTED)
    (path / "tool").chmod(0o755)
    (path / "d").mkdir()
    (path / "d" / "data").write_text("reference\n")
    for p in [path, *path.parents]:
        if str(p) in ("/", "/tmp", "/var", "/var/tmp"):
            break
        p.chmod(0o755)  # readable by the payload's uid


def _snapshot(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): p.read_text() for p in path.rglob("*") if p.is_file()}


@pytest.fixture(params=["bwrap", "docker"])
def iso_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_extra_ro_binds_can_be_used_but_never_changed(iso_backend: str) -> None:
    tag = secrets.token_hex(4)
    # Directly under /tmp, nested deeper under /tmp (ancestors in the payload's writable
    # /tmp), and under the read-only root.
    binds = [
        Path(f"/tmp/codegen-trusted-{tag}"),
        Path(f"/tmp/codegen-trusted-{tag}-n/sub/bin"),
        Path(f"/var/tmp/codegen-trusted-{tag}"),
    ]
    tops = [binds[0], binds[1].parents[1], binds[2]]
    try:
        for b in binds:
            _trusted_tree(b)
        before = {b: _snapshot(b) for b in binds}
        async for sb in open_or_assert_clear_error(
            iso_backend, extra_ro_binds=tuple(map(str, binds))
        ):
            if sb is None:
                return
            for b in binds:
                script = "".join(
                    f'( {cmd} ) 2>/dev/null && echo "BROKE {name}"\n'
                    for name, cmd in ATTACKS.items()
                )
                r = await sb.exec(
                    ["sh", "-c", f"{script}$P/tool ok; cat $P/d/data"], env={"P": str(b)}
                )
                assert r.ok, r
                assert "BROKE" not in r.stdout, (b, r.stdout)
                assert r.stdout.splitlines() == ["trusted-ok", "reference"], r.stdout
            r = await sb.exec(["sh", "-c", " && ".join(f"{b}/tool again" for b in binds)])
            assert r.ok and r.stdout.split() == ["trusted-again"] * len(binds), r
        assert {b: _snapshot(b) for b in binds} == before
    finally:
        for t in tops:
            remove_tree(t)


# -- traps for the next exec and for the output reader ---------------------------------------
async def test_symlinks_planted_for_the_next_exec_are_replaced_not_followed(
    any_sb: Sandbox,
) -> None:
    """A payload plants symlinks (and a FIFO) where the harness will write the next exec's
    files: into host paths, into a directory the harness will create, onto a file the
    harness will read back. The harness (root) must replace them, never write through."""
    victim = Path(tempfile.mkdtemp(prefix="codegen-victim-"))
    try:
        (victim / "keep").write_text("host\n")
        victim.chmod(0o777)  # so only our refusal, not permissions, protects it
        plant = (
            f"ln -s {victim}/keep input.txt; ln -s {victim} sub; mkfifo expected.txt; "
            "ln -s /proc/self/fd/1 out.txt"
        )
        r = await any_sb.exec(["sh", "-c", plant])
        assert r.ok, r
        r = await any_sb.exec(
            ["sh", "-c", "cat input.txt sub/more.txt expected.txt"],
            files={"input.txt": "A\n", "sub/more.txt": "B\n", "expected.txt": "C\n"},
        )
        assert r.ok and r.stdout == "A\nB\nC\n", r
        assert (victim / "keep").read_text() == "host\n"
        assert sorted(p.name for p in victim.iterdir()) == ["keep"]
        with pytest.raises(PermissionError):  # symlinks are refused when reading back
            await any_sb.read_file("out.txt")
    finally:
        remove_tree(victim)


async def test_stderr_flood_with_stdout_closed_is_cut(any_sb: Sandbox) -> None:
    r = await any_sb.exec(
        ["sh", "-c", "exec 1>&- 0<&-; yes flood >&2"],
        limits=Limits(wall_s=WALL_FAR_S, output_bytes=1 << 16),
    )
    assert r.status is ExecStatus.OUTPUT_LIMIT, r
    assert r.truncated and len(r.stderr) == 1 << 16 and r.stdout == ""
    assert r.wall_s < WALL_FAR_S / 2  # cut at the cap, well before the wall limit


async def test_stubborn_daemon_does_not_outlive_the_run(any_sb: Sandbox) -> None:
    """Double fork, new session, every descriptor closed, SIGTERM/SIGHUP/SIGINT ignored."""
    tok = marker()
    daemon = (
        "trap '' TERM HUP INT; exec </dev/null >/dev/null 2>&1; "
        f"(setsid sh -c \"trap '' TERM HUP INT; sleep {tok}\" &) ; sleep {tok}"
    )
    r = await any_sb.exec(
        ["sh", "-c", f"(setsid sh -c '{daemon}' &) ; sleep 0.3; echo parent-exits"],
        limits=Limits(wall_s=10),
    )
    assert r.ok and r.stdout.strip() == "parent-exits", r
    await asyncio.sleep(0.3)
    assert processes_with(tok) == []
