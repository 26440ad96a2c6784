"""The default backend: bubblewrap entered as an unprivileged uid.

Launch order (see docs/sandboxes.md and FACTS.md): the C launcher (launcher.c) forks; in
its child, while still root, join the per-run cgroup and set rlimits, then drop groups, gid and uid to the sandbox uid;
exec bwrap, which builds an unprivileged user namespace with every other namespace unshared
(no network), a read-only view of the system directories, a private /tmp, the run directory
as the only writable host path, all capabilities dropped, a new session (no TIOCSTI into our
terminal) and our seccomp filter. bwrap is pid 1's parent in the new pid namespace, so when
the payload's main process ends, or bwrap is killed, every process it started dies too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from . import _launcher, seccomp
from ._host import _RESERVED, ETC_MIRRORED, base_dir, etc_fingerprint, sandbox_uid
from ._runner import LaunchSpec, rlimits_for, run, sweep_file_size
from .base import Sandbox, register_backend
from .cgroups import RunCgroup, layout
from .types import ExecResult, ExecStatus, Limits, SandboxError

log = logging.getLogger(__name__)

WORKDIR = "/sandbox"  # where the run directory appears inside
INIT = "/.sandbox-init"  # our pid 1 inside (init.c), bind-mounted read-only
PATH = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"

# Top-level system entries mirrored read-only (symlinks recreated as symlinks).
_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


@functools.cache
def bwrap_path() -> str:
    p = shutil.which("bwrap")
    if p is None:
        raise SandboxError("bubblewrap (bwrap) is not installed; apt-get install bubblewrap")
    return p


_ETC_RECHECK_S = 2.0  # how often the host /etc entries are re-fingerprinted
_etc_cache: dict[int, tuple[float, Path]] = {}


def _owned_dir(p: Path) -> bool:
    try:
        st = os.lstat(p)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _build_etc(uid: int, target: Path) -> None:
    """A private copy of the few /etc entries toolchains need plus generated passwd, group
    and hostname, so bwrap mounts one directory instead of ~15 (each mount costs it time)."""
    tmp = Path(tempfile.mkdtemp(prefix=".etc-build-", dir=base_dir()))
    try:
        for name in ETC_MIRRORED:
            src, dst = Path("/etc") / name, tmp / name
            try:
                if src.is_symlink():
                    os.symlink(os.readlink(src), dst)
                elif src.is_dir():
                    shutil.copytree(src, dst, symlinks=True)
                elif src.is_file():
                    shutil.copy2(src, dst)
            except OSError as exc:  # unreadable or vanished: leave it out, as --ro-bind-try did
                log.info("sandbox /etc: skipping %s (%s)", src, exc)
        (tmp / "passwd").write_text(
            f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"sandbox:x:{uid}:{uid}:sandbox:{WORKDIR}:/bin/sh\n"
        )
        (tmp / "group").write_text(f"root:x:0:\nsandbox:x:{uid}:\n")
        (tmp / "hostname").write_text("sandbox\n")
        (tmp / "resolv.conf").write_text("")  # mount point for the host's, with a network
        for f in ("passwd", "group", "hostname", "resolv.conf"):
            (tmp / f).chmod(0o644)
        tmp.chmod(0o755)
        try:
            os.rename(tmp, target)
        except OSError:  # a concurrent process built the same one first
            if not _owned_dir(target):
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _sandbox_etc(uid: int) -> Path:
    """The prepared /etc for this uid, rebuilt when the host entries change (checked at most
    every _ETC_RECHECK_S). Old copies are removed by the stale-state sweep."""
    now = time.monotonic()
    hit = _etc_cache.get(uid)
    if hit is not None and now - hit[0] < _ETC_RECHECK_S:
        return hit[1]
    d = base_dir() / f".etc-{uid}-{etc_fingerprint()}"
    if not _owned_dir(d):
        if d.exists() or d.is_symlink():
            raise SandboxError(f"{d} exists but is not a directory owned by us")
        _build_etc(uid, d)
    with contextlib.suppress(OSError):  # mtime = last use, for the sweep of old copies
        os.utime(d)
    _etc_cache[uid] = (now, d)
    return d


@functools.cache
def _system_binds() -> tuple[str, ...]:
    args: list[str] = []
    for name in _SYSTEM:
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), f"/{name}"]
        elif p.is_dir():
            args += ["--ro-bind", str(p), f"/{name}"]
    return tuple(args)


def _binds(ro: tuple[str, ...], rw: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """Bind each `ro` path on itself read-only, each `rw` (host, at) pair writable. The
    directories bwrap creates to hold a mount point belong to the payload's uid: under the
    read-only root that is harmless, but under the writable /tmp the payload could rename an
    ancestor (/tmp/a of /tmp/a/b) and put its own files at the path. So such ancestors live
    on a tmpfs of their own (a mount point cannot be renamed) that is made read-only once the
    binds are in."""
    a: list[str] = []
    shelters: list[str] = []
    targets = (*ro, *(at for _, at in rw))
    for p in targets:
        parts = p.split("/")  # "", "tmp", "a", "b"
        if parts[1] == "tmp" and len(parts) > 3:
            top = "/".join(parts[:3])  # /tmp/a
            if top not in shelters and top not in targets:
                shelters.append(top)
    for top in shelters:
        a += ["--size", str(1 << 20), "--tmpfs", top]
    for p in ro:
        a += ["--ro-bind", p, p]
    for host, at in rw:
        a += ["--bind", host, at]
    for top in shelters:
        a += ["--remount-ro", top]
    return a


@register_backend("bwrap")
class BwrapSandbox(Sandbox):
    backend = "bwrap"

    def __init__(
        self,
        *,
        uid: int | None = None,
        extra_ro_binds: tuple[str, ...] = (),
        extra_rw_binds: tuple[str | tuple[str, str], ...] = (),
        run_dir_mb: int | None = None,
    ) -> None:
        """extra_rw_binds (this backend only): host directories the payload may write, e.g. a
        kernel build directory that make updates in place; each at its own path, or a pair
        (host directory, the path the payload sees it at), e.g. a scratch copy of a build
        directory where make expects the directory itself. As root they must belong to the
        sandbox uid (`sandbox_uid()`): the payload writes them as that uid, so nothing in them
        can be a file of ours it must not touch."""
        super().__init__(extra_ro_binds=extra_ro_binds, run_dir_mb=run_dir_mb)
        self._uid = uid
        pairs = [(b, b) if isinstance(b, str) else b for b in extra_rw_binds]
        self.extra_rw_binds = tuple((str(Path(h)), str(Path(at))) for h, at in pairs)
        for host, at in self.extra_rw_binds:
            if not os.path.isabs(host) or not os.path.isdir(host) or not os.path.isabs(at):
                raise ValueError(
                    f"extra_rw_binds takes existing absolute directories: {(host, at)!r}"
                )
            if at == "/" or any(at == r or at.startswith(r + "/") for r in _RESERVED):
                raise ValueError(f"extra_rw_binds: {at!r} would hide the sandbox's own {at}")

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
        args_fd: int,
        init: str | None,
        report_fd: int | None = None,
    ) -> tuple[list[str], bytes]:
        """bwrap's argv and the NUL-separated options it reads from `args_fd` (--args).

        Only the command stays on the argv: with our init as the namespace's pid 1 (and
        --as-pid-1) bwrap itself runs outside the payload's pid namespace, and its options,
        env values included, never appear on any command line (see init.c)."""
        uid = self._owner[0] if self._owner else os.getuid()
        a = ["--unshare-all"]
        if limits.network:
            a.append("--share-net")
        a += ["--new-session", "--die-with-parent", "--cap-drop", "ALL", "--hostname", "sandbox"]
        a += _system_binds()
        a += ["--ro-bind", str(_sandbox_etc(uid)), "/etc"]
        if limits.network:  # name resolution only makes sense with a network
            a += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        # CUDA lives under /usr/local (inside /usr); a /usr/local/cuda symlink may point out.
        cuda = Path("/usr/local/cuda")
        if cuda.is_symlink() and not os.path.realpath(cuda).startswith("/usr/"):
            a += ["--ro-bind", os.path.realpath(cuda), os.path.realpath(cuda)]
        a += ["--proc", "/proc", "--dev", "/dev"]
        a += ["--perms", "1777", "--size", str(limits.tmp_mb << 20), "--tmpfs", "/dev/shm"]
        a += ["--perms", "1777", "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
        # After /tmp: binds under it must not be hidden.
        a += _binds(self.extra_ro_binds, self.extra_rw_binds)
        # hwloc (Open MPI, OpenMP affinity) reads the CPU topology.
        a += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
        if limits.gpus > 0:
            for dev in sorted(Path("/dev").glob("nvidia*")):
                a += ["--dev-bind", str(dev), str(dev)]
            a += ["--ro-bind-try", "/sys/module/nvidia", "/sys/module/nvidia"]
        a += ["--bind", self._root(), WORKDIR, "--chdir", WORKDIR]
        if init is not None:
            a += ["--as-pid-1", "--ro-bind", init, INIT]
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
        blob = b"".join(os.fsencode(x) + b"\0" for x in a)
        argv = [bwrap_path(), "--args", str(args_fd), "--"]
        # the init reports how the payload really ended on report_fd (init.c, _runner.classify)
        report = ["--report-fd", str(report_fd)] if report_fd is not None else []
        return [*argv, *([INIT, *report] if init is not None else []), *cmd], blob

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
        report_r, report_w_ = os.pipe()  # the init's report; the runner reads and closes it
        report_w: int | None = report_w_
        # bwrap's options (env values included) travel in a memfd, never on a command line.
        args_fd = os.memfd_create("codegen-bwrap-args", os.MFD_CLOEXEC)
        sfd: int | None = None
        handed_over = False  # run() closes the passed fds once the launcher is spawned
        try:
            sfd = seccomp.filter_fd()
            init = _launcher.init_path()
            if init is None:  # bwrap's own pid 1 would leave the pipe open to the payload
                os.close(report_w_)
                report_w = None
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
                    "sandbox_init": init is not None,
                    "run_dir_capped": self.run_dir_capped,
                }
            )
            mem_cg = bool(cg and cg.enforced["memory"])
            enforced["address_space"] = limits.address_space_mb is not None or not mem_cg
            uid = sandbox_uid() if root_mode else None
            argv, blob = self._argv(cmd, limits, env, sfd, status_w, args_fd, init, report_w)
            _write_all(args_fd, blob)
            os.lseek(args_fd, 0, os.SEEK_SET)
            spec = LaunchSpec(
                argv=argv,
                env={"PATH": PATH, "LANG": "C.UTF-8"},
                cwd=self._root(),
                uid=uid,
                gid=uid,
                rlimits=rlimits_for(
                    limits, memory_cgroup=mem_cg, pids_cgroup=bool(cg and cg.enforced["pids"])
                ),
                cgroup=cg,
                pass_fds=tuple(fd for fd in (status_w, sfd, args_fd, report_w) if fd is not None),
                shell_style_signals=True,
                enforced=enforced,
                report_fd=report_r,
            )
            handed_over = True
            res = await run(spec, limits, stdin, self.backend)
            started = _payload_started(status_r)
        finally:
            if not handed_over:
                for fd in (status_w, sfd, args_fd, report_w):
                    if fd is not None:
                        with contextlib.suppress(OSError):
                            os.close(fd)
            if cg is not None:
                cg.remove()
            os.close(status_r)
            os.close(report_r)
        if not started and res.status not in _OUR_KILLS:
            # bwrap never launched the payload: the sandbox is broken, not the program.
            msg = (
                res.stderr.strip().splitlines()[-1]
                if res.stderr.strip()
                else f"exit {res.exit_code}"
            )
            raise SandboxError(f"bubblewrap failed to start the payload: {msg}")
        if res.status is ExecStatus.NONZERO_EXIT and await asyncio.to_thread(
            sweep_file_size, self._root(), limits.file_bytes
        ):
            res.status = ExecStatus.FILE_SIZE_LIMIT
        return res


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
