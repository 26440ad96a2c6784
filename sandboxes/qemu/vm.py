"""Boot a kernel in QEMU with its serial console captured, under a watchdog.

One call = one VM: `await run_vm(spec)` starts QEMU (no network, no display, serial console on
stdout) confined like any payload (confine.py: a uid of its own, bubblewrap, seccomp, a
cgroup), streams the console into memory (capped) and optionally a log file, and ends it as a
whole process group when it exits, when nothing is printed at all for `no_output_s`, when the
output stops for `hang_s`, at `wall_s`, at the output cap, or shortly after a `stop_patterns`
match. What the guest did is a `VMResult`; only a broken host (QEMU missing) raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from sandboxes.qemu import confine
from sandboxes.qemu.image import build_initramfs
from sandboxes.types import SandboxError

QEMU = "qemu-system-x86_64"


class Accel(StrEnum):
    AUTO = "auto"
    TCG = "tcg"
    KVM = "kvm"


class VMStatus(StrEnum):
    EXITED = "exited"  # the guest powered off or rebooted (panic=-1 + -no-reboot) by itself
    STOPPED = "stopped"  # a stop pattern matched and the VM was ended after a grace period
    NO_OUTPUT = "no_output"  # nothing at all on the console within no_output_s
    HANG = "hang"  # console output stopped for hang_s
    WALL_TIMEOUT = "wall_timeout"
    OUTPUT_LIMIT = "output_limit"
    LOST_CONNECTION = "lost_connection"  # QEMU itself died (signal or error exit)


@dataclass(slots=True)
class VMSpec:
    kernel: str | os.PathLike[str]
    initrd: str | os.PathLike[str] | None = None
    cmdline: str = ""  # appended to the base command line below
    memory_mb: int = 512
    cpus: int = 1
    accel: Accel | str = Accel.AUTO
    wall_s: float = 120.0
    no_output_s: float = 30.0
    hang_s: float = 60.0
    output_bytes: int = 4 << 20
    panic_on_oops: bool = True
    panic_on_warn: bool = False
    stop_patterns: Sequence[str] = ()  # regexes; first match ends the VM after stop_grace_s
    stop_grace_s: float = 3.0
    log_path: str | os.PathLike[str] | None = None  # console streamed here as it arrives
    # True: confined (confine.py). False: a bare QEMU as the calling user, in its
    # namespaces (debugging only; refused as root: QEMU parses guest-controlled data).
    unprivileged: bool = True
    extra_args: Sequence[str] = ()

    def full_cmdline(self) -> str:
        # panic=-1 reboots at once on panic; with -no-reboot QEMU then exits: a crash ends the VM.
        parts = ["console=ttyS0", "panic=-1", "nokaslr", "rdinit=/init", "tsc=reliable"]
        if self.panic_on_oops:
            parts.append("oops=panic")
        if self.panic_on_warn:
            parts.append("panic_on_warn=1")
        if self.cmdline:
            parts.append(self.cmdline)
        return " ".join(parts)


@dataclass(slots=True)
class VMResult:
    status: VMStatus
    console: str
    exit_code: int | None
    wall_s: float
    truncated: bool
    accel: str
    first_output_s: float | None = None
    stop_match: str | None = None
    qemu_stderr: str = ""
    command: list[str] = field(default_factory=list)
    pid: int | None = None
    uid: int | None = None  # the uid QEMU ran as (a VM uid of its own when started by root)
    notes: list[str] = field(default_factory=list)  # e.g. KVM not usable, TCG used instead

    @property
    def ok(self) -> bool:
        return self.status is VMStatus.EXITED


def qemu_available() -> bool:
    return shutil.which(QEMU) is not None


def _stage(spec: VMSpec, workdir: Path) -> tuple[Path, Path | None]:
    """Put kernel and initrd where the unprivileged QEMU can read them (the originals often
    live under /root or a 0700 temp dir)."""
    workdir.chmod(0o755)
    out: list[Path | None] = []
    for src in (spec.kernel, spec.initrd):
        if src is None:
            out.append(None)
            continue
        dst = workdir / Path(src).name
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
        dst.chmod(0o644)
        out.append(dst)
    assert out[0] is not None
    return out[0], out[1]


def build_command(
    spec: VMSpec, accel: str, kernel: Path, initrd: Path | None, *, confined: bool = False
) -> list[str]:
    cmd = [
        QEMU,
        "-machine",
        f"q35,accel={accel}",
        "-cpu",
        "host" if accel == "kvm" else "max",
        "-m",
        str(spec.memory_mb),
        "-smp",
        str(spec.cpus),
        "-nic",
        "none",
        "-display",
        "none",
        "-vga",
        "none",
        "-monitor",
        "none",
        "-serial",
        "stdio",
        "-no-reboot",
        "-kernel",
        str(kernel),
        "-append",
        spec.full_cmdline(),
    ]
    if initrd is not None:
        cmd += ["-initrd", str(initrd)]
    if confined:  # QEMU's own seccomp filter, on top of the sandbox's
        cmd += ["-sandbox", confine.QEMU_SANDBOX]
    return cmd + list(spec.extra_args)


def _proc_uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return int(line.split()[2])  # effective uid
    except OSError:
        return None
    return None


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


async def run_vm(spec: VMSpec) -> VMResult:
    """Boot `spec` and return what happened. QEMU never outlives this call (cancellation too)."""
    if not qemu_available():
        raise SandboxError(f"{QEMU} not found (apt-get install qemu-system-x86)")
    accel = str(spec.accel)
    if accel == Accel.AUTO:
        accel = await choose_accel(spec.kernel)
    stops = [re.compile(p) for p in spec.stop_patterns]
    with tempfile.TemporaryDirectory(prefix="qemu-vm-") as tmp:
        workdir = Path(tmp)
        kernel, initrd = await asyncio.to_thread(_stage, spec, workdir)
        if spec.unprivileged:
            return await _run_confined(spec, accel, stops, workdir, kernel, initrd)
        if os.geteuid() == 0:
            raise SandboxError("an unconfined QEMU (unprivileged=False) is refused as root")
        cmd = build_command(spec, accel, kernel, initrd)
        start = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            start_new_session=True,  # one process group: killed as a whole
        )
        uid = _proc_uid(proc.pid)
        try:
            result = await _watch(proc, spec, stops, start, accel, cmd, lambda: _kill_group(proc))
            result.pid, result.uid = proc.pid, uid
            return result
        finally:
            if proc.returncode is None:
                await _kill_group(proc)


async def _run_confined(
    spec: VMSpec,
    accel: str,
    stops: list[re.Pattern[str]],
    workdir: Path,
    kernel: Path,
    initrd: Path | None,
) -> VMResult:
    inside = Path(confine.GUEST_DIR)
    cmds: dict[bool, list[str]] = {}

    def program(kvm: bool) -> list[str]:
        a = accel if kvm or accel != Accel.KVM else Accel.TCG
        cmds[kvm] = build_command(
            spec,
            a,
            inside / kernel.name,
            None if initrd is None else inside / initrd.name,
            confined=True,
        )
        return cmds[kvm]

    start = time.monotonic()
    async with confine.confined(
        program, workdir, want_kvm=accel == Accel.KVM, memory_mb=spec.memory_mb
    ) as cp:
        used = Accel.KVM if cp.kvm else (Accel.TCG if accel == Accel.KVM else accel)
        finder = asyncio.create_task(_find_qemu(cp.proc.pid))
        try:
            result = await _watch(cp.proc, spec, stops, start, str(used), cmds[cp.kvm], cp.stop)
        finally:
            finder.cancel()
        qpid = finder.result() if finder.done() and not finder.cancelled() else None
        result.pid, result.notes = qpid, cp.notes
        result.uid = (_proc_uid(qpid) if qpid else None) or cp.uid
        return result


async def _find_qemu(launcher: int) -> int | None:
    """The QEMU process itself (below the launcher, bwrap and our init), for the record."""
    for _ in range(200):
        if (pid := confine.find_descendant(launcher, "qemu-system")) is not None:
            return pid
        await asyncio.sleep(0.05)
    return None


async def _first_bytes(stream: asyncio.StreamReader, cap: int) -> bytes:
    """The first `cap` bytes, read to EOF: a pipe left unread is paused short of EOF, and
    asyncio's `Process.wait()` (3.11) waits for EOF on every pipe."""
    buf = bytearray()
    while chunk := await stream.read(65536):
        buf += chunk[: max(0, cap - len(buf))]
    return bytes(buf)


async def _watch(
    proc: asyncio.subprocess.Process,
    spec: VMSpec,
    stops: list[re.Pattern[str]],
    start: float,
    accel: str,
    cmd: list[str],
    kill: Callable[[], Awaitable[None]],
) -> VMResult:
    assert proc.stdout is not None and proc.stderr is not None
    buf = bytearray()
    state: dict[str, float | None] = {"first": None, "last": None}
    truncated = False
    log = await asyncio.to_thread(open, spec.log_path, "wb") if spec.log_path else None

    async def read_console() -> None:
        nonlocal truncated
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            now = time.monotonic()
            state["first"] = state["first"] or now
            state["last"] = now
            room = spec.output_bytes - len(buf)
            if room <= 0:
                truncated = True
                continue  # keep draining so QEMU never blocks on a full pipe
            buf.extend(chunk[:room])
            truncated = truncated or len(chunk) > room
            if log:
                log.write(chunk[:room])
                log.flush()

    stderr_task = asyncio.create_task(_first_bytes(proc.stderr, 1 << 16))
    reader = asyncio.create_task(read_console())
    status: VMStatus | None = None
    stop_match: str | None = None
    stop_deadline: float | None = None
    try:
        while True:
            done, _ = await asyncio.wait({reader}, timeout=0.1)
            now = time.monotonic()
            if done and proc.returncode is None:
                await asyncio.wait_for(proc.wait(), timeout=5)
            if proc.returncode is not None and reader.done():
                break
            if stop_deadline is None and stops:
                text = buf.decode(errors="replace")
                for pattern in stops:
                    if m := pattern.search(text):
                        stop_match, stop_deadline = m.group(0), now + spec.stop_grace_s
                        break
            if stop_deadline is not None and now >= stop_deadline:
                status = VMStatus.STOPPED
            elif truncated:
                status = VMStatus.OUTPUT_LIMIT
            elif now - start >= spec.wall_s:
                status = VMStatus.WALL_TIMEOUT
            elif state["first"] is None and now - start >= spec.no_output_s:
                status = VMStatus.NO_OUTPUT
            elif state["last"] is not None and now - state["last"] >= spec.hang_s:
                status = VMStatus.HANG
            if status is not None:
                await kill()
                break
    finally:
        if proc.returncode is None:
            await kill()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(reader, timeout=5)
        reader.cancel()
        if log:
            log.close()
    stderr = b""
    with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
        stderr = await asyncio.wait_for(stderr_task, timeout=2)
    stderr_task.cancel()
    if status is None:
        # QEMU ended by itself: 0 is a guest poweroff/reboot, anything else is QEMU dying.
        status = VMStatus.EXITED if proc.returncode == 0 else VMStatus.LOST_CONNECTION
    first = state["first"]
    return VMResult(
        status=status,
        console=buf.decode(errors="replace"),
        exit_code=proc.returncode,
        wall_s=time.monotonic() - start,
        truncated=truncated,
        accel=accel,
        first_output_s=None if first is None else first - start,
        stop_match=stop_match,
        qemu_stderr=stderr.decode(errors="replace"),
        command=cmd,
    )


def run_vm_sync(spec: VMSpec) -> VMResult:
    """Thin sync wrapper for scripts and the CLI."""
    return asyncio.run(run_vm(spec))


# -- the accelerator, chosen by measurement ----------------------------------------------------
# Choose TCG or KVM by measurement, never by assumption.
#
# On some hosts /dev/kvm exists but guests under it run over 100x slower than TCG (nested
# virtualisation without hardware help). `choose_accel` boots the given kernel to a one-line init
# under TCG, then under KVM with a deadline of a few times the TCG time, and caches the winner
# per (QEMU version, host kernel, /dev/kvm present) in a small JSON file.
# (Here rather than in a module of its own: the probe boots a VM and a VM asked for
# Accel.AUTO runs the probe, so the two halves would import each other.)

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
