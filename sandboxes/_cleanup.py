"""Removing and inspecting what a payload left in its run directory, whatever it did there.

The payload owns the tree: any depth (a 5,000-level chain overflowed the recursive
`shutil.rmtree` and `os.walk`, and paths that deep exceed PATH_MAX), directories it made
unreadable or unwritable (mode 000), FIFOs, sockets, millions of entries. So everything here
works on directory descriptors (openat/unlinkat, never a full path), iteratively, keeps one
descriptor open at a time (a deep chain must not exhaust RLIMIT_NOFILE), climbs back with
".." checked against the inode it came from, never follows a symlink, and never raises:
what it cannot remove is reported and left for the stale-state sweep.

Run directories of root callers are size- and inode-capped tmpfs mounts (see base.py): for
those, removal is one lazy unmount whatever the payload made inside.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MNT_DETACH = 2
_MS_NOSUID, _MS_NODEV = 2, 4
_libc = ctypes.CDLL(None, use_errno=True)


# -- tmpfs run directories -------------------------------------------------------------------
def mount_tmpfs(path: Path, *, size_mb: int, inodes: int, uid: int) -> str | None:
    """Mount a tmpfs capped at size_mb and `inodes` files on path (mode 0700, owned by uid;
    executables allowed, no setuid, no devices). None on success, else why not."""
    opts = f"size={size_mb}m,nr_inodes={inodes},mode=0700,uid={uid},gid={uid}"
    rc = _libc.mount(
        b"codegen-sandbox", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts.encode()
    )
    if rc != 0:
        return os.strerror(ctypes.get_errno())
    return None


def is_mount_point(path: Path) -> bool:
    try:
        st, parent = os.lstat(path), os.lstat(path.parent)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_dev != parent.st_dev


def unmount(path: Path) -> str | None:
    """Lazy unmount (MNT_DETACH: a process still inside cannot keep it busy). None on
    success, else why not."""
    if _libc.umount2(os.fsencode(path), _MNT_DETACH) != 0:
        return os.strerror(ctypes.get_errno())
    return None


def run_dir_full(path: Path) -> bool:
    """Whether a capped run directory has no space or no inodes left."""
    try:
        v = os.statvfs(path)
    except OSError:
        return False
    return v.f_bavail == 0 or (v.f_files > 0 and v.f_favail == 0)


# -- removal ---------------------------------------------------------------------------------
def _make_writable(dfd: int) -> None:
    """Give the owner back rwx on a directory the payload locked (only needed without root;
    root's DAC override ignores modes)."""
    with contextlib.suppress(OSError):
        os.fchmod(dfd, 0o700)


def remove_tree(path: Path) -> list[str]:
    """Remove path and everything beneath it. Never raises; returns one line per thing it
    could not remove (empty: all gone)."""
    problems: list[str] = []
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return problems
    except OSError as exc:
        return [f"{path}: {exc.strerror}"]
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(path)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror}")
        return problems
    try:
        fd = _open_dir(str(path), None)
    except OSError as exc:
        return [f"{path}: {exc.strerror}"]
    # The chain from the root to the directory `fd` is: names[i] inside idents[i].
    idents: list[tuple[int, int]] = [(st.st_dev, st.st_ino)]
    names: list[str] = []
    stuck: set[tuple[int, int]] = set()  # directories we gave up on: do not enter again
    try:
        while True:
            child = _empty_or_descend(fd, stuck, problems)
            if child is not None:
                name, cfd = child
                cst = os.fstat(cfd)
                os.close(fd)
                fd = cfd
                names.append(name)
                idents.append((cst.st_dev, cst.st_ino))
                continue
            if not names:
                break
            # Climb: the parent through "..", verified to be the directory we came from.
            name, me = names.pop(), idents.pop()
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            pst = os.fstat(parent)
            os.close(fd)
            fd = parent
            if (pst.st_dev, pst.st_ino) != idents[-1]:
                problems.append(f"{path}: the tree changed under the removal; stopped")
                return problems
            try:
                os.rmdir(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                stuck.add(me)  # something in it stayed (already reported): not again
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    problems.append(f"{path}/.../{name}: {exc.strerror}")
    except OSError as exc:
        problems.append(f"{path}: {exc.strerror}")
        return problems
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"{path}: {exc.strerror}")
    return problems


def _open_dir(name: str, dfd: int | None) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dfd)
    except PermissionError:
        # A directory the payload made unreadable (mode 000): we own it or are root.
        os.chmod(name, 0o700, dir_fd=dfd)
        return os.open(name, _DIR_FLAGS, dir_fd=dfd)


def _empty_or_descend(
    dfd: int, stuck: set[tuple[int, int]], problems: list[str]
) -> tuple[str, int] | None:
    """Remove every entry of the directory dfd that is removable as is, streaming (a million
    names are never held at once); return the first non-empty subdirectory (name, opened
    fd) to descend into, or None when nothing is left to do here."""
    fixed = False
    dev = os.fstat(dfd).st_dev
    while True:
        locked = False  # the payload took write permission away from this directory
        with os.scandir(dfd) as it:
            for e in it:
                name = e.name
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                try:
                    if not is_dir:
                        try:
                            os.unlink(name, dir_fd=dfd)
                            continue
                        except IsADirectoryError:
                            pass
                    cst = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    ident = (cst.st_dev, cst.st_ino)
                    if ident in stuck:
                        continue
                    if cst.st_dev != dev:  # a mount point: never descend into it
                        stuck.add(ident)
                        problems.append(f"{name}: a mount point; left alone")
                        continue
                    try:
                        os.rmdir(name, dir_fd=dfd)
                        continue
                    except OSError as exc:
                        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                            raise
                    try:
                        return name, _open_dir(name, dfd)
                    except OSError as exc:
                        stuck.add(ident)
                        problems.append(f"{name}: {exc.strerror}")
                except FileNotFoundError:
                    continue
                except PermissionError as exc:
                    if not fixed:
                        locked = True
                        break
                    problems.append(f"{name}: {exc.strerror}")
                except OSError as exc:
                    problems.append(f"{name}: {exc.strerror}")
        if not locked:
            return None
        _make_writable(dfd)
        fixed = True


def remove_run_dir(path: Path) -> list[str]:
    """Unmount a tmpfs run directory (lazily) or remove a plain one, then the mount point.
    Never raises; returns what could not be removed."""
    if is_mount_point(path):
        why = unmount(path)
        if why is not None:
            return [f"{path}: cannot unmount ({why})"]
    return remove_tree(path)


# -- inspection ------------------------------------------------------------------------------
def any_file_at_least(root: str, size: int, *, budget: int = 200_000) -> bool:
    """True when some regular file under root is at least `size` bytes. Iterative, never
    raises, and looks at no more than `budget` entries (a payload's million files must not
    stall the classification of its own exit)."""
    stack = [root]
    seen = 0
    while stack and seen < budget:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    seen += 1
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif (
                            e.is_file(follow_symlinks=False)
                            and e.stat(follow_symlinks=False).st_size >= size
                        ):
                            return True
                    except OSError:
                        continue
        except OSError:  # unreadable, vanished, or a path past PATH_MAX
            continue
    return False
