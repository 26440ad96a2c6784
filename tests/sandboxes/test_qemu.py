"""The QEMU backend on real QEMU with Debian's installed kernel (booted as an uncompressed ELF)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from sandboxes.base import sandbox_uid
from sandboxes.qemu import (
    VMSpec,
    VMStatus,
    build_initramfs,
    choose_accel,
    extract_vmlinux,
    run_vm,
    write_cpio,
)
from sandboxes.qemu.image import CpioEntry


def _debian_vmlinuz() -> Path:
    for vmlinuz in sorted(Path("/boot").glob("vmlinuz-*"), reverse=True):
        if Path("/usr/src", f"linux-headers-{vmlinuz.name.removeprefix('vmlinuz-')}").is_dir():
            return vmlinuz
    raise AssertionError("Debian's linux-image-amd64 + linux-headers-amd64 must be installed")


@pytest.fixture(scope="module")
def vmlinux(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_vmlinux(_debian_vmlinuz(), tmp_path_factory.mktemp("k") / "vmlinux")


def _initrd(tmp: Path, script: str) -> Path:
    return build_initramfs(tmp / "root.cpio", "#!/bin/sh\n" + script)


def _alive(pid: int | None) -> bool:
    return pid is not None and Path(f"/proc/{pid}").exists()


def test_extract_vmlinux_gives_elf(vmlinux: Path) -> None:
    head = vmlinux.read_bytes()[:20]
    assert head[:4] == b"\x7fELF"
    assert head[4] == 2  # 64-bit
    assert vmlinux.stat().st_size > _debian_vmlinuz().stat().st_size  # it was compressed


def test_extract_vmlinux_rejects_non_kernel(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(os.urandom(4096))
    from sandboxes.types import SandboxError

    with pytest.raises(SandboxError):
        extract_vmlinux(junk, tmp_path / "out")


def test_cpio_is_readable_by_gnu_cpio(tmp_path: Path) -> None:
    archive = write_cpio(
        [
            CpioEntry("etc", 0o040755),
            CpioEntry("etc/hello.txt", 0o100644, b"hi there\n"),
            CpioEntry("bin/sh", 0o120777, b"busybox"),
        ],
        tmp_path / "a.cpio",
    )
    listing = subprocess.run(
        ["cpio", "-it", "--quiet"], stdin=archive.open("rb"), capture_output=True, text=True
    )
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.split() == ["etc", "etc/hello.txt", "bin/sh"]
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], cwd=out, stdin=archive.open("rb"), check=True)
    assert (out / "etc/hello.txt").read_text() == "hi there\n"


async def test_boot_runs_init_and_exits(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(tmp_path, "echo HELLO-FROM-INIT $(busybox uname -r)\nbusybox poweroff -f\n")
    log = tmp_path / "console.log"
    res = await run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=90, log_path=log))
    assert res.status is VMStatus.EXITED, res.console[-2000:]
    assert "HELLO-FROM-INIT 6.1" in res.console
    assert "HELLO-FROM-INIT" in log.read_text()  # streamed to the log as well
    assert "console=ttyS0" in " ".join(res.command) and "-nic" in res.command
    assert res.first_output_s is not None and res.first_output_s < res.wall_s
    if os.geteuid() == 0:  # QEMU never runs as root, nor as the candidates' uid
        assert res.uid not in (None, 0, sandbox_uid())
    assert not _alive(res.pid)


async def test_no_network_in_guest(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(
        tmp_path,
        "busybox mount -t sysfs s /sys\necho NETDEVS: $(busybox ls /sys/class/net)\n"
        "busybox poweroff -f\n",
    )
    res = await run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=90))
    line = next(ln for ln in res.console.splitlines() if ln.startswith("NETDEVS:"))
    assert line.split()[1:] in ([], ["lo"])


async def test_no_output_is_classified(vmlinux: Path, tmp_path: Path) -> None:
    # loglevel=0 silences the kernel; the init says nothing and sleeps.
    initrd = _initrd(tmp_path, "busybox sleep 100\n")
    spec = VMSpec(vmlinux, initrd, accel="tcg", cmdline="loglevel=0", wall_s=60, no_output_s=4)
    res = await run_vm(spec)
    assert res.status is VMStatus.NO_OUTPUT
    assert res.console == ""
    assert res.wall_s < spec.wall_s / 2  # ended by the silence limit, well before the wall
    assert not _alive(res.pid)


async def test_hang_is_classified(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(tmp_path, "echo GOING-QUIET\nbusybox sleep 100\n")
    res = await run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=90, hang_s=3))
    assert res.status is VMStatus.HANG
    assert "GOING-QUIET" in res.console
    assert not _alive(res.pid)


async def test_wall_timeout_kills_vm(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(tmp_path, "while true; do echo tick; busybox sleep 0.3; done\n")
    start = time.monotonic()
    # wall_s leaves room for a TCG boot on a loaded machine (~13 s at load 13)
    res = await run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=25, hang_s=30))
    assert res.status is VMStatus.WALL_TIMEOUT
    assert "tick" in res.console
    assert time.monotonic() - start < 40
    assert not _alive(res.pid)


async def test_output_cap(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(tmp_path, "busybox yes KGYM-FLOOD\n")
    res = await run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=90, output_bytes=64 << 10))
    assert res.status is VMStatus.OUTPUT_LIMIT
    assert res.truncated
    assert len(res.console.encode()) <= 64 << 10
    assert "KGYM-FLOOD" in res.console


async def test_stop_pattern_ends_vm(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(tmp_path, "echo MAGIC-STOP-42\nbusybox sleep 100\n")
    spec = VMSpec(
        vmlinux, initrd, accel="tcg", wall_s=90, stop_patterns=[r"MAGIC-STOP-\d+"], stop_grace_s=1
    )
    res = await run_vm(spec)
    assert res.status is VMStatus.STOPPED
    assert res.stop_match == "MAGIC-STOP-42"


async def test_qemu_dying_is_lost_connection(vmlinux: Path, tmp_path: Path) -> None:
    initrd = _initrd(tmp_path, "busybox poweroff -f\n")
    spec = VMSpec(vmlinux, initrd, accel="tcg", wall_s=30, extra_args=["-device", "kgym-nope"])
    res = await run_vm(spec)
    assert res.status is VMStatus.LOST_CONNECTION
    assert res.exit_code not in (0, None)
    assert res.qemu_stderr.strip()


async def test_choose_accel_measures_once_and_caches(
    vmlinux: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    accel = await choose_accel(vmlinux)
    assert accel in ("tcg", "kvm")
    cache = json.loads((tmp_path / "codegen-lab" / "qemu-accel.json").read_text())
    (entry,) = cache.values()
    assert entry["accel"] == accel
    assert entry["seconds"]["tcg"] is not None  # TCG always boots the probe
    written = (tmp_path / "codegen-lab" / "qemu-accel.json").read_text()
    assert await choose_accel(vmlinux) == accel
    # answered from the cache, no boot: a probe would have rewritten it (with its measured_at)
    assert (tmp_path / "codegen-lab" / "qemu-accel.json").read_text() == written


async def test_cancellation_leaves_no_qemu_behind(vmlinux: Path, tmp_path: Path) -> None:
    import asyncio
    import uuid

    tag = f"cancel-{uuid.uuid4().hex}.cpio"
    initrd = build_initramfs(tmp_path / tag, "#!/bin/sh\nbusybox sleep 100\n")
    task = asyncio.create_task(run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=90)))

    def running() -> list[str]:
        out = []
        for proc in Path("/proc").iterdir():
            try:
                if tag.encode() in (proc / "cmdline").read_bytes():
                    out.append(proc.name)
            except OSError:
                continue
        return out

    for _ in range(100):
        await asyncio.sleep(0.1)
        if running():
            break
    assert running(), "QEMU did not start"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert running() == []
