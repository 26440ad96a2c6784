"""File access for the Inspect sandbox `bwrap` (sandboxes/inspect_sandbox.py), host side.

Inspect reads and writes files by path as the sandbox sees it. The two directories that
persist between execs of one sample (the working directory `/sandbox` and `/tmp`) are host
directories, so a plain path in them is read and written here, without an exec. We are
root and the payload is not, so the kernel's permission checks would not apply to us: the
sandbox user's access is checked from the mode bits instead (a file the payload made
unreadable must stay unreadable through `read_file`, as Inspect's conformance suite checks).

The walk opens every component with O_NOFOLLOW and never follows a symlink: a path that
meets one, or holds `..`, raises `Resolve`, and the caller lets the sandbox resolve it in
an exec as the sandbox user, inside its own mounts, where a planted `out -> /etc/shadow`
can reach only what the payload could read anyway.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
R, W, X = 4, 2, 1


class Resolve(Exception):
    """The path needs the sandbox's own resolution (a symlink or `..` on it)."""


@dataclass(frozen=True, slots=True)
class Who:
    """The identity execs run as: its uid, gids, and the owner new files get (None: ours)."""

    uid: int
    gids: frozenset[int]
    owner: tuple[int, int] | None


def may(st: os.stat_result, who: Who, want: int) -> bool:
    """Whether `who` has `want` (R/W/X bits) on an inode, as the kernel decides for a
    process without capabilities: owner bits, else group bits, else the others' bits."""
    if st.st_uid == who.uid:
        bits = st.st_mode >> 6
    elif st.st_gid in who.gids:
        bits = st.st_mode >> 3
    else:
        bits = st.st_mode
    return bits & want == want


def _err(cls: type[OSError], code: int, shown: str, why: str | None = None) -> OSError:
    # the path as the caller wrote it: Inspect's checks look for it in the message
    return cls(code, why or os.strerror(code), shown)


def _walk(root: Path, parts: list[str], who: Who, shown: str, *, create: bool) -> int:
    """A descriptor of the directory holding parts[-1], every directory on the way
    searchable by `who` (created, owned by `who`, when `create`)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            if not may(os.fstat(fd), who, X):
                raise _err(PermissionError, errno.EACCES, shown)
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise _err(FileNotFoundError, errno.ENOENT, shown) from None
                if not may(os.fstat(fd), who, W | X):
                    raise _err(PermissionError, errno.EACCES, shown) from None
                os.mkdir(name, 0o755, dir_fd=fd)
                if who.owner:
                    os.chown(name, *who.owner, dir_fd=fd, follow_symlinks=False)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise Resolve(shown)
            if not stat.S_ISDIR(st.st_mode):
                raise _err(NotADirectoryError, errno.ENOTDIR, shown)
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:  # replaced by a symlink since the stat: resolve inside
                raise Resolve(shown) from exc
            os.close(fd)
            fd = nfd
        if not may(os.fstat(fd), who, X):
            raise _err(PermissionError, errno.EACCES, shown)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _lstat(name: str, dfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


class TooLarge(Exception):
    """The file is larger than the read limit."""


def read(root: Path, parts: list[str], who: Who, shown: str, limit: int) -> bytes:
    """The bytes of root/parts as `who` may read them; raises FileNotFoundError,
    IsADirectoryError, PermissionError, TooLarge, or Resolve."""
    if not parts:
        raise _err(IsADirectoryError, errno.EISDIR, shown)
    dfd = _walk(root, parts, who, shown, create=False)
    try:
        st = _lstat(parts[-1], dfd)
        if st is None:
            raise _err(FileNotFoundError, errno.ENOENT, shown)
        if stat.S_ISLNK(st.st_mode):
            raise Resolve(shown)
        if stat.S_ISDIR(st.st_mode):
            raise _err(IsADirectoryError, errno.EISDIR, shown)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block us; a device is not a file
            raise _err(PermissionError, errno.EACCES, shown, "not a regular file")
        if not may(st, who, R):
            raise _err(PermissionError, errno.EACCES, shown)
        if st.st_size > limit:
            raise TooLarge(shown)
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a symlink since the stat
                raise Resolve(shown) from exc
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _err(PermissionError, errno.EACCES, shown, "not a regular file")
            chunks, total = [], 0
            # one byte past the limit tells a file that grew since the stat
            while total <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - total))):
                chunks.append(chunk)
                total += len(chunk)
            if total > limit:
                raise TooLarge(shown)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def write(root: Path, parts: list[str], who: Who, shown: str, data: bytes) -> None:
    """Write root/parts as `who` may, creating parent directories. An existing file is
    replaced (its mode kept), never written through: it may be a hard link the payload
    made. Raises IsADirectoryError, PermissionError, NotADirectoryError, or Resolve."""
    if not parts:
        raise _err(IsADirectoryError, errno.EISDIR, shown)
    dfd = _walk(root, parts, who, shown, create=True)
    try:
        name = parts[-1]
        st = _lstat(name, dfd)
        mode = 0o644
        if st is not None:
            if stat.S_ISLNK(st.st_mode):
                raise Resolve(shown)
            if stat.S_ISDIR(st.st_mode):
                raise _err(IsADirectoryError, errno.EISDIR, shown)
            if not stat.S_ISREG(st.st_mode):
                raise _err(PermissionError, errno.EACCES, shown, "not a regular file")
            if not may(st, who, W):
                raise _err(PermissionError, errno.EACCES, shown)
            mode = stat.S_IMODE(st.st_mode) & 0o777  # never carry set-id bits over
        if not may(os.fstat(dfd), who, W | X):
            raise _err(PermissionError, errno.EACCES, shown)
        if st is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dfd)
        fd = os.open(
            name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode,
            dir_fd=dfd,
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if who.owner:
                os.fchown(fd, *who.owner)
            os.fchmod(fd, mode)  # the umask narrowed it at creation
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def dir_state(root: Path, parts: list[str]) -> bool | None:
    """Whether root/parts is a directory, walking without following symlinks: True, False
    (missing or not a directory), or None when a symlink is on the way (undecided here)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return False
            if stat.S_ISLNK(st.st_mode):
                return None
            if not stat.S_ISDIR(st.st_mode):
                return False
            nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return True
    finally:
        os.close(fd)
