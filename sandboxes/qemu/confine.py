"""QEMU confined like any other payload.

QEMU parses guest-controlled data (device models, the TCG translator), and a kernel-gym guest
runs a candidate's kernel patch: an escape from QEMU must land in a sandbox, not on the host.
So each VM's QEMU runs

- as a uid of its own, one per running VM from a range ($CODEGEN_QEMU_UID_BASE, default
  `DEFAULT_UID_BASE`, `UID_SLOTS` of them), never the candidates' sandbox uid: an escaped QEMU
  owns no candidate's run directory and no other VM's process (uid 65534, shared with every
  candidate, could rewrite a running candidate's files and read its environment);
- in bubblewrap with every namespace unshared (no network: QEMU's own ``-nic none`` is a
  second layer; no view of host processes), a read-only /usr, no /etc but the loader cache,
  a private size-capped /tmp, a /dev with /dev/kvm added only when KVM is used, the kernel
  and initramfs read-only in /vm, our non-dumpable init as pid 1, every capability dropped,
  no new privileges;
- under the sandbox seccomp filter (sandboxes/seccomp.py: no ptrace, io_uring, namespaces,
  AF_VSOCK ...) and QEMU's own ``-sandbox`` filter on top;
- in a per-VM cgroup (memory: guest RAM plus QEMU's own, pids) with rlimits, through the same
  C launcher as every payload, which kills and reaps the whole tree at the end.

The serial console is QEMU's stdout, read by the host process: QEMU itself writes no file.
KVM: /dev/kvm is used through its group (the VM's gid is /dev/kvm's group); where the VM's
uid cannot open it the VM falls back to TCG and says so in `VMResult.notes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import resource
import signal
import stat
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes import _launcher, seccomp
from sandboxes.base import base_dir, sandbox_uid
from sandboxes.cgroups import RunCgroup, layout
from sandboxes.types import SandboxError

UID_BASE_ENV = "CODEGEN_QEMU_UID_BASE"
# Far above system, login and subordinate (100000-165535 per user) uid ranges.
DEFAULT_UID_BASE = 1_500_000_000
UID_SLOTS = 256
KVM = "/dev/kvm"
GUEST_DIR = "/vm"  # where the kernel and initramfs appear inside
INIT = "/.sandbox-init"
# QEMU's own seccomp filter: no obsolete calls, no set*uid, no fork/exec, no priority or
# affinity changes.
QEMU_SANDBOX = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"
_STOP_S = 5.0  # the launcher kills and reaps its tree at once; never wait longer on it
_QEMU_OVERHEAD_MB = 768  # QEMU's own memory beyond guest RAM (the TCG code cache mostly)


def uid_base() -> int:
    return int(os.environ.get(UID_BASE_ENV, str(DEFAULT_UID_BASE)))


@contextlib.contextmanager
def _claim_uid() -> Iterator[int]:
    """A VM uid no other VM on this machine holds (an flock per uid under the sandbox base
    directory, so concurrent processes agree), never the candidates' sandbox uid."""
    d = base_dir() / ".qemu-uids"
    with contextlib.suppress(FileExistsError):
        d.mkdir(mode=0o700)
    taken = sandbox_uid()
    for uid in range(uid_base(), uid_base() + UID_SLOTS):
        if uid in (0, taken):
            continue
        fd = os.open(d / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield uid
        finally:
            os.close(fd)
        return
    raise SandboxError(f"all {UID_SLOTS} VM uids from {uid_base()} are in use")


def kvm_access(uid: int | None) -> tuple[bool, int | None]:
    """(whether `uid` can open /dev/kvm read-write, the gid to give it for that). `uid` None:
    ourselves."""
    try:
        st = os.stat(KVM)
    except OSError:
        return False, None
    if not stat.S_ISCHR(st.st_mode):
        return False, None
    if uid is None:
        return os.access(KVM, os.R_OK | os.W_OK), None
    if st.st_mode & 0o006 == 0o006:
        return True, None
    if st.st_mode & 0o060 == 0o060 and st.st_gid != 0:
        return True, st.st_gid  # through /dev/kvm's group (kvm), never root's
    return False, None


@dataclass(slots=True)
class ConfinedProcess:
    proc: asyncio.subprocess.Process
    uid: int  # the uid QEMU runs as
    kvm: bool  # /dev/kvm is in the sandbox
    notes: list[str] = field(default_factory=list)
    _cgroup: RunCgroup | None = None

    async def stop(self) -> None:
        """End the whole tree: the launcher SIGKILLs its child's group and reaps it."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
        if self._cgroup is not None:
            self._cgroup.kill_all()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout=_STOP_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


def bwrap_args(workdir: Path, *, kvm: bool, init: str | None, seccomp_fd: int | None) -> list[str]:
    from sandboxes.bwrap import _system_binds

    a = ["--unshare-all", "--new-session", "--die-with-parent", "--cap-drop", "ALL"]
    a += ["--hostname", "vm", *_system_binds()]
    a += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    a += ["--proc", "/proc", "--dev", "/dev"]
    if kvm:
        a += ["--dev-bind", KVM, KVM]
    a += ["--perms", "1777", "--size", str(16 << 20), "--tmpfs", "/tmp"]
    a += ["--ro-bind", str(workdir), GUEST_DIR, "--chdir", GUEST_DIR]
    if init is not None:
        a += ["--as-pid-1", "--ro-bind", init, INIT]
    a += ["--remount-ro", "/", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]
    if seccomp_fd is not None:
        a += ["--seccomp", str(seccomp_fd)]
    return a


def _rlimits() -> list[tuple[int, int, int]]:
    return [(resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_NOFILE, 1024, 1024)]


@contextlib.asynccontextmanager
async def confined(
    program: Callable[[bool], list[str]], workdir: Path, *, want_kvm: bool, memory_mb: int
) -> AsyncIterator[ConfinedProcess]:
    """Start `program(kvm)` (QEMU's argv for KVM or TCG, paths under GUEST_DIR) confined as
    described above, with `workdir` read-only at GUEST_DIR; stdout and stderr are pipes. The
    tree is ended and reaped when the block exits, however it exits."""
    from sandboxes.bwrap import bwrap_path

    root = os.geteuid() == 0
    with contextlib.ExitStack() as stack:
        uid = stack.enter_context(_claim_uid()) if root else os.getuid()
        notes: list[str] = []
        kvm, kvm_gid = kvm_access(uid if root else None)
        if want_kvm and not kvm:
            notes.append(f"{KVM} is not usable by the VM's uid {uid}: TCG instead of KVM")
        kvm = kvm and want_kvm
        gid = (kvm_gid or uid) if root else None
        cg = RunCgroup(layout()) if root else None
        sfd = seccomp.filter_fd()
        if sfd is None:
            raise SandboxError("QEMU is not started without the sandbox seccomp filter")
        stack.callback(os.close, sfd)
        init = _launcher.init_path()
        args = bwrap_args(workdir, kvm=kvm, init=init, seccomp_fd=sfd)
        inner = [INIT, *program(kvm)] if init is not None else program(kvm)
        argv = [bwrap_path(), *args, "--", *inner]
        if cg is not None:
            try:
                mem = max(2 * memory_mb, memory_mb + _QEMU_OVERHEAD_MB)
                cg.create(memory_bytes=mem << 20, pids=512, cpus=None)
            except OSError as exc:
                cg.remove()
                raise SandboxError(f"cannot create the VM's cgroup: {exc}") from exc
            stack.callback(cg.remove)
        exe = _launcher.launcher_path()
        if exe is None:
            raise SandboxError("the sandbox launcher could not be built (no C compiler?)")
        full = _launcher.launcher_argv(
            exe,
            argv,
            cgroup_procs=cg.procs_files() if cg else [],
            rlimits=_rlimits(),
            uid=uid if root else None,
            gid=gid,
        )
        proc = await asyncio.create_subprocess_exec(
            *full,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            start_new_session=True,
            pass_fds=(sfd,),
        )
        cp = ConfinedProcess(proc, uid, kvm, notes, cg)
        try:
            yield cp
        finally:
            await asyncio.shield(cp.stop())


def find_descendant(pid: int, comm_prefix: str) -> int | None:
    """The first process below `pid` whose name starts with `comm_prefix` (QEMU, under the
    launcher, bwrap and our init), or None."""
    todo = [pid]
    while todo:
        p = todo.pop(0)
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            continue
        if p != pid and comm.startswith(comm_prefix):
            return p
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                todo += [int(x) for x in (task / "children").read_text().split()]
    return None
