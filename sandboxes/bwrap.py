"""The default backend: bubblewrap entered as an unprivileged uid.

Launch order (see docs/sandboxes.md and FACTS.md): fork; in the child, while still root,
join the per-run cgroup and set rlimits, then drop groups, gid and uid to the sandbox uid;
exec bwrap, which builds an unprivileged user namespace with every other namespace unshared
(no network), a read-only view of the system directories, a private /tmp, the run directory
as the only writable host path, all capabilities dropped, a new session (no TIOCSTI into our
terminal) and our seccomp filter. bwrap is pid 1's parent in the new pid namespace, so when
the payload's main process ends, or bwrap is killed, every process it started dies too.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
from pathlib import Path

from . import _launcher, seccomp
from ._runner import LaunchSpec, rlimits_for, run, sweep_file_size
from .base import Sandbox, base_dir, sandbox_uid
from .cgroups import RunCgroup, layout
from .types import ExecResult, ExecStatus, Limits, SandboxError

log = logging.getLogger(__name__)

WORKDIR = "/sandbox"  # where the run directory appears inside
PATH = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"

# Top-level system entries mirrored read-only (symlinks recreated as symlinks).
_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# The few /etc entries toolchains need; passwd/group/hostname are generated.
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",  # mpicc, mpirun, cc ... are alternatives symlinks
    "openmpi",
    "nsswitch.conf",
    "hosts",
    "localtime",
    "timezone",
    "gcc",
    "OpenCL",
)


@functools.cache
def bwrap_path() -> str:
    p = shutil.which("bwrap")
    if p is None:
        raise SandboxError("bubblewrap (bwrap) is not installed; apt-get install bubblewrap")
    return p


@functools.cache
def _generated_etc(uid: int) -> Path:
    """passwd/group/hostname for the sandbox user, so getpwuid() works (Open MPI asks)."""
    d = base_dir() / f".etc-{uid}"
    d.mkdir(mode=0o755, exist_ok=True)
    (d / "passwd").write_text(
        f"root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:{uid}:{uid}:sandbox:{WORKDIR}:/bin/sh\n"
    )
    (d / "group").write_text(f"root:x:0:\nsandbox:x:{uid}:\n")
    (d / "hostname").write_text("sandbox\n")
    for f in d.iterdir():
        f.chmod(0o644)
    return d


def _system_binds() -> list[str]:
    args: list[str] = []
    for name in _SYSTEM:
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), f"/{name}"]
        elif p.is_dir():
            args += ["--ro-bind", str(p), f"/{name}"]
    args += ["--dir", "/etc"]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


class BwrapSandbox(Sandbox):
    backend = "bwrap"

    def __init__(self, *, uid: int | None = None, extra_ro_binds: tuple[str, ...] = ()) -> None:
        super().__init__()
        self._uid = uid
        self._extra_ro = extra_ro_binds

    async def start(self) -> None:
        bwrap_path()
        await asyncio.to_thread(_launcher.launcher_path)  # built once per machine (~0.3 s)
        if self._uid is not None:
            os.environ.setdefault("CODEGEN_SANDBOX_UID", str(self._uid))
        await super().start()

    def _argv(
        self,
        cmd: list[str],
        limits: Limits,
        env: dict[str, str],
        seccomp_fd: int | None,
        status_fd: int,
    ) -> list[str]:
        uid = self._owner[0] if self._owner else os.getuid()
        a = [bwrap_path(), "--unshare-all"]
        if limits.network:
            a.append("--share-net")
        a += ["--new-session", "--die-with-parent", "--cap-drop", "ALL", "--hostname", "sandbox"]
        a += _system_binds()
        etc = _generated_etc(uid)
        for f in ("passwd", "group", "hostname"):
            a += ["--ro-bind", str(etc / f), f"/etc/{f}"]
        if limits.network:  # name resolution only makes sense with a network
            a += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        # CUDA lives under /usr/local (inside /usr); a /usr/local/cuda symlink may point out.
        cuda = Path("/usr/local/cuda")
        if cuda.is_symlink() and not os.path.realpath(cuda).startswith("/usr/"):
            a += ["--ro-bind", os.path.realpath(cuda), os.path.realpath(cuda)]
        for p in self._extra_ro:
            a += ["--ro-bind", p, p]
        a += ["--proc", "/proc", "--dev", "/dev"]
        a += ["--perms", "1777", "--size", str(limits.tmp_mb << 20), "--tmpfs", "/dev/shm"]
        a += ["--perms", "1777", "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
        # hwloc (Open MPI, OpenMP affinity) reads the CPU topology.
        a += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
        if limits.gpus > 0:
            for dev in sorted(Path("/dev").glob("nvidia*")):
                a += ["--dev-bind", str(dev), str(dev)]
            a += ["--ro-bind-try", "/sys/module/nvidia", "/sys/module/nvidia"]
        a += ["--bind", self._root(), WORKDIR, "--chdir", WORKDIR]
        # bwrap's root is a tmpfs the payload could otherwise write to (/etc, /): freeze it.
        a += ["--remount-ro", "/"]
        a += ["--clearenv"]
        full_env = {
            "PATH": PATH,
            "HOME": WORKDIR,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "USER": "sandbox",
            "LOGNAME": "sandbox",
        }
        full_env.update(env)
        for k, v in full_env.items():
            a += ["--setenv", k, v]
        if seccomp_fd is not None:
            a += ["--seccomp", str(seccomp_fd)]
        a += ["--json-status-fd", str(status_fd)]
        return [*a, "--", *cmd]

    async def _exec(
        self, cmd: list[str], limits: Limits, stdin: bytes | None, env: dict[str, str]
    ) -> ExecResult:
        root_mode = os.geteuid() == 0
        cg = RunCgroup(layout()) if root_mode else None
        if cg is not None:
            try:
                cg.create(memory_bytes=limits.memory_mb << 20, pids=limits.pids, cpus=limits.cpus)
            except OSError as exc:
                cg.remove()
                raise SandboxError(f"cannot create cgroup: {exc}") from exc
        status_r, status_w = os.pipe()
        try:
            sfd = seccomp.filter_fd()
            enforced = (
                dict(cg.enforced) if cg else {"memory": False, "pids": False, "cpu_account": False}
            )
            enforced.update(
                {
                    "seccomp": sfd is not None,
                    "uid_drop": root_mode,
                    "network_isolated": not limits.network,
                    "rlimits": True,
                    "pid_namespace": True,
                }
            )
            mem_cg = bool(cg and cg.enforced["memory"])
            enforced["address_space"] = limits.address_space_mb is not None or not mem_cg
            uid = sandbox_uid() if root_mode else None
            spec = LaunchSpec(
                argv=self._argv(cmd, limits, env, sfd, status_w),
                env={"PATH": PATH, "LANG": "C.UTF-8"},
                cwd=self._root(),
                uid=uid,
                gid=uid,
                rlimits=rlimits_for(
                    limits, memory_cgroup=mem_cg, pids_cgroup=bool(cg and cg.enforced["pids"])
                ),
                cgroup=cg,
                pass_fds=(status_w,) if sfd is None else (status_w, sfd),
                shell_style_signals=True,
                enforced=enforced,
            )
            res = await run(spec, limits, stdin, self.backend)
            started = _payload_started(status_r)
        finally:
            if cg is not None:
                cg.remove()
            os.close(status_r)
        if not started and res.status not in _OUR_KILLS:
            # bwrap never launched the payload: the sandbox is broken, not the program.
            msg = (
                res.stderr.strip().splitlines()[-1]
                if res.stderr.strip()
                else f"exit {res.exit_code}"
            )
            raise SandboxError(f"bubblewrap failed to start the payload: {msg}")
        if res.status is ExecStatus.NONZERO_EXIT and sweep_file_size(
            self._root(), limits.file_bytes
        ):
            res.status = ExecStatus.FILE_SIZE_LIMIT
        return res


_OUR_KILLS = (
    ExecStatus.WALL_TIMEOUT,
    ExecStatus.MEMORY_LIMIT,
    ExecStatus.PIDS_LIMIT,
    ExecStatus.CPU_LIMIT,
)


def _payload_started(fd: int) -> bool:
    """bwrap writes {"child-pid": N} to --json-status-fd once the payload is spawned."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    except BlockingIOError:
        pass
    return b'"child-pid"' in data
