"""Leaf facts about the host that every sandbox module needs: where run directories live, the
uid payloads run as, the owner tokens in the names of what a process creates, and the
fingerprint of the /etc entries mirrored into sandboxes. It imports no other module of the
package, so the backends, the registry and the sweeper can all depend on it without a cycle.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

DEFAULT_BACKEND = "bwrap"
BASE_DIR_ENV = "CODEGEN_SANDBOX_DIR"
UID_ENV = "CODEGEN_SANDBOX_UID"
RUN_DIR_MB_ENV = "CODEGEN_SANDBOX_RUN_DIR_MB"
DEFAULT_RUN_DIR_MB = 1024
FileContent = str | bytes
# Mount points every backend owns inside the sandbox (extra_ro_binds may not cover them).
_RESERVED = ("/sandbox", "/proc", "/dev", "/etc")


def sandbox_uid() -> int:
    """The unprivileged uid payloads run as when we are root (default 65534, nobody)."""
    return int(os.environ.get(UID_ENV, "65534"))


def base_dir() -> Path:
    d = Path(os.environ.get(BASE_DIR_ENV) or Path(tempfile.gettempdir()) / "codegen-sandboxes")
    d.mkdir(mode=0o711, parents=True, exist_ok=True)
    return d


# The few /etc entries toolchains need, copied into one prepared directory mounted as /etc
# (see bwrap._sandbox_etc); passwd/group/hostname are generated.
ETC_MIRRORED = (
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


def etc_fingerprint() -> str:
    """Changes whenever a mirrored /etc entry does (apt, ldconfig, update-alternatives):
    lstat of each entry and, in directories, of each file and subdirectory. Symlinks inside
    directories (alternatives) are replaced by rename, which changes the directory's mtime."""
    h = hashlib.sha256()

    def add(p: str) -> None:
        try:
            st = os.lstat(p)
        except OSError:
            h.update(f"{p}:-\n".encode())
            return
        h.update(f"{p}:{st.st_mode}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        if stat.S_ISDIR(st.st_mode):
            with contextlib.suppress(OSError), os.scandir(p) as it:
                for e in sorted(it, key=lambda e: e.name):
                    if e.is_dir(follow_symlinks=False) or e.is_file(follow_symlinks=False):
                        add(e.path)

    for name in ETC_MIRRORED:
        add(f"/etc/{name}")
    return h.hexdigest()[:16]


_OWNED = re.compile(r"-(\d+)\.(\d+)-[A-Za-z0-9_]+$")


def _start_time(pid: int) -> int | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Field 22 (starttime); field 2 (comm) may contain spaces and parentheses.
    return int(data[data.rindex(b")") + 2 :].split()[19])


@functools.cache
def _token(pid: int) -> str:
    return f"{pid}.{_start_time(pid) or 0}"


def owner_token() -> str:
    """``<pid>.<start time>`` of this process, embedded in the names of what it creates."""
    return _token(os.getpid())


def owner_alive(name: str) -> bool | None:
    """Whether the process that created `name` still runs; None if the name has no owner."""
    m = _OWNED.search(name)
    if m is None:
        return None
    pid, start = int(m.group(1)), int(m.group(2))
    return _start_time(pid) == start
