"""The C launcher (launcher.c) and the sandbox init (init.c): built once per machine with the
system C compiler into a root-owned cache directory, keyed by the source's hash, then exec'd
for every payload (the init inside the sandbox, as its pid 1; see init.c for why).

Why: a ``preexec_fn`` forces CPython to fork() the whole interpreter (no vfork) and blocks
the event loop meanwhile (~20 ms here); the launcher is spawned with vfork, joins the cgroup,
sets the rlimits and drops the uid in its own tiny child, then execs bwrap. It also stays as
a child subreaper that reaps whatever bwrap orphans (no zombies left to a non-reaping PID 1).

``$CODEGEN_SANDBOX_LAUNCHER=python`` selects the old preexec_fn path (benchmarks compare
both); without a C compiler that path is the fallback.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import resource
import shutil
import stat
import subprocess
from pathlib import Path

from ._host import base_dir

log = logging.getLogger(__name__)

ENV = "CODEGEN_SANDBOX_LAUNCHER"
SOURCE = Path(__file__).with_name("launcher.c")
INIT_SOURCE = Path(__file__).with_name("init.c")


def _safe_dir(d: Path) -> bool:
    """Ours and writable only by us: we exec what is in it as root."""
    st = os.lstat(d)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


@functools.cache
def _built(source: Path = SOURCE) -> str | None:
    src = source.read_bytes()
    digest = hashlib.sha256(src).hexdigest()[:16]
    d = base_dir() / ".launcher"
    with contextlib.suppress(FileExistsError):
        d.mkdir(mode=0o755)
    if not (_safe_dir(d.parent) and _safe_dir(d)):
        log.warning("sandbox %s: %s is not safely owned; falling back", source.stem, d)
        return None
    exe = d / f"{source.stem}-{digest}"
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(exe)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
            return str(exe)
        exe.unlink()  # not ours, or not a plain file: rebuild
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        log.warning("sandbox %s: no C compiler; falling back", source.stem)
        return None
    tmp = d / f".build-{digest}-{os.getpid()}"
    errors = ""
    # Static first (no dynamic loader at each exec), dynamic if libc.a is missing.
    for extra in (["-static"], []):
        p = subprocess.run(
            [cc, "-O2", *extra, "-o", str(tmp), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        if p.returncode == 0:
            os.chmod(tmp, 0o755)
            os.replace(tmp, exe)  # atomic: concurrent builders race harmlessly
            return str(exe)
        errors = p.stderr
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    log.warning("sandbox %s: build failed (%s); falling back", source.stem, errors[-500:])
    return None


def init_path() -> str | None:
    """The sandbox init binary (pid 1 inside bwrap), or None without a C compiler (bwrap's
    own pid 1 is used then, whose memory a payload can read: see init.c)."""
    return _built(INIT_SOURCE)


def launcher_path() -> str | None:
    """The launcher binary, or None where the Python preexec path is to be used."""
    if os.environ.get(ENV, "c").lower() in ("python", "preexec", "0", "off"):
        return None
    return _built()


def launcher_argv(
    exe: str,
    argv: list[str],
    *,
    cgroup_procs: list[str],
    rlimits: list[tuple[int, int, int]],
    uid: int | None,
    gid: int | None,
) -> list[str]:
    a = [exe, str(os.getpid())]
    for p in cgroup_procs:
        a += ["-c", p]
    for res, soft, hard in rlimits:

        def v(x: int) -> int:
            return -1 if x == resource.RLIM_INFINITY or x < 0 else x

        a += ["-r", f"{res}:{v(soft)}:{v(hard)}"]
    if uid is not None and gid is not None:
        a += ["-u", str(uid), "-g", str(gid)]
    return [*a, "--", *argv]
