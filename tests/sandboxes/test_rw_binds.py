"""bwrap's extra_rw_binds: a host directory the payload may write in place (the kernel-crash
gym's build directories), beside read-only binds, and nothing else of the host."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes import open_sandbox
from sandboxes.base import sandbox_uid


@pytest.fixture
def top() -> Iterator[Path]:
    top = Path(tempfile.mkdtemp(prefix="codegen-rw-", dir="/var/tmp"))
    top.chmod(0o755)  # reachable by the sandbox's uid
    (top / "build").mkdir()
    (top / "src").mkdir()
    (top / "src" / "main.c").write_text("int x;\n")
    if os.geteuid() == 0:
        os.chown(top / "build", sandbox_uid(), sandbox_uid())
    yield top
    shutil.rmtree(top, ignore_errors=True)


async def test_the_payload_writes_an_rw_bind_and_nothing_beside_it(top: Path) -> None:
    rw, ro = top / "build", top / "src"
    async with open_sandbox("bwrap", extra_ro_binds=(str(ro),), extra_rw_binds=(str(rw),)) as sb:
        r = await sb.exec(
            ["sh", "-c", f"cp {ro}/main.c {rw}/out.c && echo made > {rw}/obj; "
             f"echo no > {ro}/main.c 2>/dev/null && echo BROKE; "
             f"echo no > {top}/beside 2>/dev/null && echo BROKE; id -u"]
        )  # fmt: skip
    assert r.ok, r
    assert "BROKE" not in r.stdout
    assert (rw / "out.c").read_text() == "int x;\n"
    assert (rw / "obj").read_text() == "made\n"
    assert (ro / "main.c").read_text() == "int x;\n"
    assert not (top / "beside").exists()
    if os.geteuid() == 0:
        assert r.stdout.split()[-1] == str(sandbox_uid())
        assert (rw / "obj").stat().st_uid == sandbox_uid()


@pytest.mark.parametrize("path", ["relative/dir", "/proc/sys", "/", "/no/such/dir"])
async def test_rw_binds_must_be_existing_absolute_directories_of_the_host(path: str) -> None:
    with pytest.raises(ValueError, match="extra_rw_binds"):
        async with open_sandbox("bwrap", extra_rw_binds=(path,)):
            pass


async def test_an_rw_bind_can_show_a_host_directory_at_another_path(top: Path) -> None:
    """(host, at): the kernel gym shows a candidate's scratch copy of a build directory at the
    build directory's own path; the build directory itself stays untouched."""
    scratch, build = top / "scratch", top / "build"
    scratch.mkdir()
    if os.geteuid() == 0:
        os.chown(scratch, sandbox_uid(), sandbox_uid())
    async with open_sandbox("bwrap", extra_rw_binds=((str(scratch), str(build)),)) as sb:
        r = await sb.exec(["sh", "-c", f"echo obj > {build}/made.o && ls {build}"])
    assert r.ok, r
    assert r.stdout.split() == ["made.o"]
    assert (scratch / "made.o").read_text() == "obj\n"
    assert not (build / "made.o").exists()
