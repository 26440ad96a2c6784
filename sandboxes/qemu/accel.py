"""Choose TCG or KVM by measurement, never by assumption.

On some hosts /dev/kvm exists but guests under it run over 100x slower than TCG (nested
virtualisation without hardware help). `choose_accel` boots the given kernel to a one-line init
under TCG, then under KVM with a deadline of a few times the TCG time, and caches the winner
per (QEMU version, host kernel, /dev/kvm present) in a small JSON file.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from sandboxes.qemu.image import build_initramfs

_LOCK = asyncio.Lock()


def cache_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "codegen-lab" / "qemu-accel.json"


def _host_key() -> str:
    try:
        version = subprocess.run(
            ["qemu-system-x86_64", "--version"], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        version = "unknown"
    # "confined": measured with QEMU in its sandbox (confine.py); older entries measured a
    # bare QEMU, which may have had /dev/kvm when the sandboxed one has not.
    return f"{version}|{platform.release()}|kvm={os.path.exists('/dev/kvm')}|confined"


async def _probe(kernel: str | os.PathLike[str], accel: str, wall_s: float) -> float | None:
    """Seconds for a boot to a trivial init that powers off; None if it did not finish."""
    from sandboxes.qemu.vm import VMSpec, VMStatus, run_vm

    with tempfile.TemporaryDirectory(prefix="qemu-probe-") as tmp:
        initrd = build_initramfs(
            Path(tmp) / "probe.cpio", "#!/bin/sh\necho PROBE-OK\n/bin/busybox poweroff -f\n"
        )
        spec = VMSpec(
            kernel=kernel,
            initrd=initrd,
            accel=accel,
            wall_s=wall_s,
            no_output_s=wall_s,
            hang_s=wall_s,
            memory_mb=256,
        )
        start = time.monotonic()
        result = await run_vm(spec)
        if result.status is VMStatus.EXITED and "PROBE-OK" in result.console:
            return time.monotonic() - start
        return None


def _kvm_present() -> bool:
    return os.path.exists("/dev/kvm")


async def measure_accels(kernel: str | os.PathLike[str]) -> dict[str, float | None]:
    tcg = await _probe(kernel, "tcg", 120.0)
    kvm: float | None = None
    if _kvm_present():
        # A KVM that is slower than 3x TCG loses anyway: do not wait longer than that.
        kvm = await _probe(kernel, "kvm", max(10.0, 3 * (tcg or 20.0)))
    return {"tcg": tcg, "kvm": kvm}


async def choose_accel(kernel: str | os.PathLike[str], *, refresh: bool = False) -> str:
    async with _LOCK:
        path, key = cache_path(), _host_key()
        cache: dict[str, dict[str, object]] = {}
        if path.exists():
            try:
                cache = json.loads(path.read_text())
            except (OSError, ValueError):
                cache = {}
        if not refresh and key in cache:
            return str(cache[key]["accel"])
        times = await measure_accels(kernel)
        tcg, kvm = times["tcg"], times["kvm"]
        accel = "kvm" if kvm is not None and (tcg is None or kvm < tcg) else "tcg"
        cache[key] = {"accel": accel, "seconds": times, "measured_at": time.time()}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cache, indent=1))
        tmp.replace(path)
        return accel
