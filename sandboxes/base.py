"""The `Sandbox` seam, its run directory, the per-backend concurrency limit and
`open_sandbox()`.

Every sandbox owns one fresh run directory (created on open, removed on close). Files are
written into it and read back through descriptors opened component by component with
O_NOFOLLOW, because the payload may have planted symlinks there (``out.txt -> /etc/shadow``)
and we read as root.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import contextvars
import errno
import logging
import os
import stat
import tempfile
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ._cleanup import mount_tmpfs, remove_run_dir
from ._host import (
    _RESERVED,
    BASE_DIR_ENV,
    DEFAULT_BACKEND,
    DEFAULT_RUN_DIR_MB,
    RUN_DIR_MB_ENV,
    UID_ENV,
    FileContent,
    base_dir,
    owner_token,
    sandbox_uid,
)
from ._stale import maybe_sweep
from .types import ExecResult, Limits, SandboxError

# The seam's public names, those kept in _host.py included (importable from here).
__all__ = [
    "BACKEND_ENV",
    "BASE_DIR_ENV",
    "DEFAULT_BACKEND",
    "DEFAULT_RUN_DIR_MB",
    "RUN_DIR_MB_ENV",
    "UID_ENV",
    "FileContent",
    "Sandbox",
    "backends",
    "base_dir",
    "concurrency",
    "current_backend",
    "open_sandbox",
    "owner_token",
    "read_beneath",
    "register_backend",
    "sandbox_uid",
    "set_concurrency",
    "use_backend",
    "write_beneath",
]

log = logging.getLogger(__name__)

_BACKENDS: dict[str, type[Sandbox]] = {}
_S = TypeVar("_S", bound="type[Sandbox]")


def register_backend(name: str) -> Callable[[_S], _S]:
    """Class decorator: `open_sandbox(name)` makes this backend. The package imports every
    built-in backend module once (sandboxes/__init__.py), so the registry here never imports
    a backend and no backend module imports another."""

    def add(cls: _S) -> _S:
        if _BACKENDS.get(name, cls) is not cls:
            raise SandboxError(f"sandbox backend {name!r} is registered twice")
        _BACKENDS[name] = cls
        return cls

    return add


def backends() -> tuple[str, ...]:
    """The names `open_sandbox` accepts, in registration order."""
    return tuple(_BACKENDS)


# -- which backend when none is named ----------------------------------------------------------
# The user's default, read only when a caller names no backend: the CLI reads it once at parse
# time and passes the result on explicitly; nothing in the project writes it.
BACKEND_ENV = "CODEGEN_SANDBOX"
# The backend of the innermost `use_backend` block. A context variable, not the environment:
# it is scoped to the block and to the asyncio tasks and `asyncio.to_thread` calls started in
# it, so two runs in one process (one after the other, or side by side) never see each other's.
_scoped_backend: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sandboxes_backend", default=None
)


def current_backend() -> str:
    """The backend `open_sandbox()` opens when given none: the innermost `use_backend`
    block's, else $CODEGEN_SANDBOX (the user's default), else "bwrap"."""
    return _scoped_backend.get() or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND


@contextlib.contextmanager
def use_backend(name: str | None) -> Iterator[str]:
    """Within the block, `open_sandbox()` called without a backend opens `name` (None: the
    choice around the block stands). Yields the backend in force.

    Scoped, never process-wide: the choice holds in this thread's context and in the asyncio
    tasks and `asyncio.to_thread` calls started inside the block (they copy the context), and
    ends with the block. A plain `threading.Thread` does not inherit it: pass the backend
    explicitly there. Raises `SandboxError` for a name no backend is registered under."""
    if name is None:
        yield current_backend()
        return
    if name not in _BACKENDS:
        names = ", ".join(_BACKENDS) or "none registered"
        raise SandboxError(f"unknown sandbox backend {name!r} ({names})")
    token = _scoped_backend.set(name)
    try:
        yield name
    finally:
        _scoped_backend.reset(token)


# -- concurrency -----------------------------------------------------------------------------
_limits: dict[str, int] = {}
_sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def set_concurrency(backend: str, n: int) -> None:
    """Bound simultaneous execs of one backend across the process (default: CPU count, or
    $CODEGEN_SANDBOX_CONCURRENCY). Takes effect for event loops that have not used it yet."""
    if n < 1:
        raise ValueError("concurrency must be >= 1")
    _limits[backend] = n
    for sems in _sems.values():
        sems.pop(backend, None)


def concurrency(backend: str) -> int:
    if backend in _limits:
        return _limits[backend]
    env = os.environ.get("CODEGEN_SANDBOX_CONCURRENCY")
    return int(env) if env else (os.cpu_count() or 1)


def _semaphore(backend: str) -> asyncio.Semaphore:
    # asyncio primitives bind to one loop, so keep one semaphore per (loop, backend).
    loop = asyncio.get_running_loop()
    sems = _sems.setdefault(loop, {})
    if backend not in sems:
        sems[backend] = asyncio.Semaphore(concurrency(backend))
    return sems[backend]


# -- path-safe file access -------------------------------------------------------------------
def _parts(relpath: str) -> list[str]:
    p = relpath.replace("\\", "/")
    if p.startswith("/"):
        raise ValueError(f"sandbox paths are relative to the run directory: {relpath!r}")
    parts = [x for x in p.split("/") if x not in ("", ".")]
    if not parts or any(x == ".." for x in parts):
        raise ValueError(f"bad sandbox path: {relpath!r}")
    return parts


def _open_parent(
    root: str, parts: list[str], *, create: bool, owner: tuple[int, int] | None
) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(root, flags)
    try:
        for name in parts[:-1]:
            if create:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                    if owner:
                        os.chown(name, *owner, dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                if not create or exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                # The payload put a symlink (or a file) where we write a directory: replace
                # it by a real directory, never write through it.
                os.unlink(name, dir_fd=fd)
                os.mkdir(name, 0o755, dir_fd=fd)
                if owner:
                    os.chown(name, *owner, dir_fd=fd, follow_symlinks=False)
                nfd = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def write_beneath(
    root: str, relpath: str, data: bytes, owner: tuple[int, int] | None, mode: int = 0o644
) -> None:
    """Write `data` at `relpath` beneath the directory `root`, as `Sandbox.write_file` does:
    parents created (owned by `owner`, a (uid, gid) or None), every component opened without
    following a symlink (a symlink or file where a directory goes is replaced by a directory),
    the file itself replaced, never written through. ValueError for an absolute or escaping
    `relpath`."""
    parts = _parts(relpath)
    dfd = _open_parent(root, parts, create=True, owner=owner)
    try:
        # Replace rather than truncate: the old name may be a hard link the payload made.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=dfd)
        fd = os.open(
            parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dfd
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if owner:
                os.fchown(fd, *owner)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def read_beneath(root: str, relpath: str, max_bytes: int) -> bytes:
    """At most `max_bytes` of the regular file at `relpath` beneath the directory `root`,
    read without following a symlink on any component: for reading what a payload wrote into
    a directory it could write (a run directory, a build tree bound into the sandbox), as root,
    safely. Raises ValueError for an absolute or escaping `relpath` (``..``),
    FileNotFoundError when it is not there, NotADirectoryError when a directory on the way is
    a symlink or a file, PermissionError when the file is a symlink or not a regular file (a
    FIFO would block the reader forever)."""
    parts = _parts(relpath)
    dfd = _open_parent(root, parts, create=False, owner=None)
    try:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PermissionError(f"{relpath!r} is a symlink; not followed") from exc
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would block us forever
                raise PermissionError(f"{relpath!r} is not a regular file")
            chunks, total = [], 0
            while total < max_bytes and (chunk := os.read(fd, min(1 << 20, max_bytes - total))):
                chunks.append(chunk)
                total += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def _check_binds(paths: Sequence[str]) -> None:
    for p in paths:
        if not os.path.exists(p):
            raise ValueError(f"extra_ro_binds: {p} does not exist")


# -- the seam --------------------------------------------------------------------------------
class Sandbox(abc.ABC):
    """A run directory plus a way to execute commands inside it under `Limits`.

    `exec` never raises for what the payload does; only a broken sandbox raises
    `SandboxError`. `read_file` returns bytes (use `read_text` for str)."""

    backend: str = ""

    def __init__(
        self, *, extra_ro_binds: Sequence[str] = (), run_dir_mb: int | None = None
    ) -> None:
        """extra_ro_binds: host directories the payload sees read-only at the same absolute
        path (e.g. trusted harness binaries that candidate code must not be able to
        replace between two execs). Every backend honours it.

        run_dir_mb: as root, the run directory is a tmpfs of this size (default
        $CODEGEN_SANDBOX_RUN_DIR_MB or 1024; 0: a plain directory on the host's disk) with
        an inode cap of 128 per MB, so a payload can fill neither the disk nor the inode
        table, and removal is one unmount. Its pages count against the memory limit of the
        exec that writes them."""
        self.run_dir: Path | None = None
        self.run_dir_capped = False  # the run directory is a size/inode-capped tmpfs
        self._owner: tuple[int, int] | None = None
        if run_dir_mb is None:
            run_dir_mb = int(os.environ.get(RUN_DIR_MB_ENV) or DEFAULT_RUN_DIR_MB)
        if run_dir_mb < 0:
            raise ValueError(f"run_dir_mb must be >= 0, not {run_dir_mb}")
        self.run_dir_mb = run_dir_mb
        self.extra_ro_binds: tuple[str, ...] = tuple(str(Path(p)) for p in extra_ro_binds)
        for p in self.extra_ro_binds:
            if not os.path.isabs(p):
                raise ValueError(f"extra_ro_binds takes absolute host paths: {p!r}")
            # They appear at the same path inside: never over the sandbox's own mounts.
            if p == "/" or any(p == r or p.startswith(r + "/") for r in _RESERVED):
                raise ValueError(f"extra_ro_binds: {p!r} would hide the sandbox's own {p}")

    # lifecycle
    async def start(self) -> None:

        _check_binds(self.extra_ro_binds)
        await asyncio.to_thread(maybe_sweep, base_dir())
        # The owner's pid and start time in the name: a later sweep removes the directory
        # if this process dies without closing the sandbox (SIGKILL).
        self.run_dir = Path(
            tempfile.mkdtemp(prefix=f"{self.backend}-{owner_token()}-", dir=base_dir())
        )
        if os.geteuid() == 0:
            uid = sandbox_uid()
            self._owner = (uid, uid)
            if self.run_dir_mb > 0:
                why = mount_tmpfs(
                    self.run_dir, size_mb=self.run_dir_mb, inodes=self.run_dir_mb * 128, uid=uid
                )
                self.run_dir_capped = why is None
                if why is not None:
                    log.warning("run directory stays on disk (tmpfs mount failed: %s)", why)
            os.chown(self.run_dir, uid, uid)
        os.chmod(self.run_dir, 0o700)

    async def close(self) -> None:
        """Remove the run directory. Never raises for what the payload left there: what
        cannot be removed is logged and left to the stale-state sweep."""
        if self.run_dir is not None:
            d, self.run_dir = self.run_dir, None
            problems = await asyncio.to_thread(remove_run_dir, d)
            for p in problems[:20]:
                log.warning("sandbox cleanup: %s", p)

    def _root(self) -> str:
        if self.run_dir is None:
            raise SandboxError("sandbox is closed")
        return str(self.run_dir)

    # files
    async def write_file(
        self, path: str, content: FileContent, *, executable: bool = False
    ) -> None:
        """Write `content` at `path` under the run directory (parents created), owned by the
        payload's uid. Raises ValueError for an absolute path or one leaving the directory,
        and PermissionError for a symlink (planted by an earlier exec) or a non-regular file
        in the way: it is never followed."""
        data = content.encode() if isinstance(content, str) else bytes(content)
        write_beneath(self._root(), path, data, self._owner, 0o755 if executable else 0o644)

    async def read_file(self, path: str, *, max_bytes: int = 256 << 20) -> bytes:
        """The file's bytes (at most max_bytes). Raises FileNotFoundError / PermissionError
        (symlinks and non-regular files are refused)."""
        return await asyncio.to_thread(read_beneath, self._root(), path, max_bytes)

    async def read_files(
        self, paths: Sequence[str], *, max_bytes: int = 256 << 20
    ) -> list[bytes | OSError | ValueError]:
        """Several files in one call (one thread hop for all, where read_file takes one
        each): per path, in order, its bytes (at most max_bytes) or the error read_file
        would raise for it."""
        root = self._root()

        def read_all() -> list[bytes | OSError | ValueError]:
            out: list[bytes | OSError | ValueError] = []
            for path in paths:
                try:
                    out.append(read_beneath(root, path, max_bytes))
                except (OSError, ValueError) as exc:
                    out.append(exc)
            return out

        return await asyncio.to_thread(read_all)

    async def read_text(self, path: str, *, max_bytes: int = 256 << 20) -> str:
        return (await self.read_file(path, max_bytes=max_bytes)).decode("utf-8", errors="replace")

    async def exists(self, path: str) -> bool:
        try:
            await self.read_file(path, max_bytes=0)
            return True
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return False

    # execution
    async def exec(
        self,
        cmd: Sequence[str],
        *,
        files: Mapping[str, FileContent] | None = None,
        limits: Limits | None = None,
        stdin: FileContent | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `cmd` in the run directory (the payload's cwd, seen inside as /sandbox) under
        `limits`, as an unprivileged uid, with no network unless `limits.network`.

        files: written into the run directory first (relative paths; a planted symlink on
        the way is refused, never followed). stdin: fed to the process, then closed.
        env: the whole environment besides a minimal PATH/HOME/LANG the backend sets.

        Returns an `ExecResult` for everything the payload does: exit 0 (`ok`), a non-zero
        exit, a signal, any limit reached (the status names which one; the whole process
        tree is killed), a CUDA binary with no GPU (`skipped_no_gpu`). Output beyond
        `limits.output_bytes` is cut and `truncated` set.

        Raises only for the caller's or the host's fault, never for the payload's:
        `ValueError` for an empty command or a malformed environment variable,
        `SandboxError` when the sandbox cannot run anything (backend missing or broken,
        sandbox closed, a launcher that lost contact). Cancelling the call kills the
        process tree and waits for it to be reaped before the cancellation propagates.
        At most `concurrency(backend)` execs of one backend run at once per event loop.
        """
        if not cmd:
            raise ValueError("empty command")
        for k, v in (env or {}).items():
            if not k or "=" in k or "\0" in k or "\0" in v:
                raise ValueError(f"bad environment variable for the sandbox: {k!r}")
        for name, content in (files or {}).items():
            await self.write_file(name, content)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        async with _semaphore(self.backend):
            return await self._exec(list(cmd), limits or Limits(), data, dict(env or {}))

    @abc.abstractmethod
    async def _exec(
        self, cmd: list[str], limits: Limits, stdin: bytes | None, env: dict[str, str]
    ) -> ExecResult: ...

    def gpu_visible(self) -> bool:
        """Whether a CUDA binary could run here (an NVIDIA device node exists)."""
        return any(Path("/dev").glob("nvidia[0-9]*"))

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _make(backend: str, **options: Any) -> Sandbox:
    cls = _BACKENDS.get(backend)
    if cls is None:
        names = ", ".join(_BACKENDS) or "none registered"
        raise SandboxError(f"unknown sandbox backend {backend!r} ({names})")
    return cls(**options)


@contextlib.asynccontextmanager
async def open_sandbox(backend: str | None = None, **options: object) -> AsyncIterator[Sandbox]:
    """A started sandbox with a fresh run directory, closed (directory removed) on exit.
    backend: "bwrap", "docker", "unsafe-local"; None: `current_backend()` (the innermost
    `use_backend` block's, else $CODEGEN_SANDBOX, else "bwrap")."""
    sb = _make(backend or current_backend(), **options)
    try:
        await sb.start()
    except BaseException:
        await sb.close()
        raise
    try:
        yield sb
    finally:
        await sb.close()
