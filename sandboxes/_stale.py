"""Garbage collection of what a killed caller left behind: run directories and per-run
cgroups. Their names carry the owner's pid and start time (``bwrap-<pid>.<start>-xxxx``,
``run-<pid>.<start>-xxxx``): names are set by us as root, so a payload cannot forge them,
and the start time tells a dead owner from a recycled pid. Whatever belongs to a live
process, this one or a concurrent one, is never touched.

Also removed: prepared /etc copies no longer current (older than ten minutes) and
half-built temporaries. Cgroups named by older code (no owner) are removed only when empty
and older than a minute (rmdir of a cgroup with tasks fails anyway).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import signal
import time
from pathlib import Path

log = logging.getLogger(__name__)

_OWNED = re.compile(r"-(\d+)\.(\d+)-[A-Za-z0-9_]+$")
_LEGACY_CGROUP = re.compile(r"^run-[0-9a-f]{16}$")
_SWEEP_EVERY_S = 600.0
_last_sweep: dict[int, float] = {}  # pid -> monotonic time (fork-safe)


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


def _rm_cgroup(d: Path) -> bool:
    for _ in range(20):
        try:
            procs = [int(x) for x in (d / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            procs = []
        for pid in procs:  # a dead owner's payload (PDEATHSIG should have got it already)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return False
        except OSError:
            time.sleep(0.01)
    log.warning("stale cgroup %s could not be removed", d)
    return False


def sweep(base: Path, cgroup_parents: list[Path]) -> list[Path]:
    """Remove stale state; returns what was removed."""
    removed: list[Path] = []
    now = time.time()
    with contextlib.suppress(OSError):
        for e in os.scandir(base):
            p = Path(e.path)
            if e.is_dir(follow_symlinks=False) and owner_alive(e.name) is False:
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
            elif e.name.startswith(".etc-build-"):
                if now - e.stat(follow_symlinks=False).st_mtime > 600:
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p)
    for parent in cgroup_parents:
        with contextlib.suppress(OSError):
            for e in os.scandir(parent):
                if not e.is_dir(follow_symlinks=False):
                    continue
                alive = owner_alive(e.name)
                if alive is False or (
                    alive is None
                    and _LEGACY_CGROUP.match(e.name)
                    and now - e.stat().st_mtime > 60
                    and not (Path(e.path) / "cgroup.procs").read_text().strip()
                ):
                    if _rm_cgroup(Path(e.path)):
                        removed.append(Path(e.path))
    return removed


def sweep_etc_copies(base: Path, current_fingerprint: str) -> list[Path]:
    """Prepared /etc copies (``.etc-<uid>-<fingerprint>``) that are not current and were not
    used for ten minutes (users touch theirs every few seconds)."""
    removed = []
    now = time.time()
    with contextlib.suppress(OSError):
        for e in os.scandir(base):
            if (
                re.fullmatch(r"\.etc-\d+-[0-9a-f]{16}", e.name)
                and not e.name.endswith("-" + current_fingerprint)
                and now - e.stat(follow_symlinks=False).st_mtime > 600
            ):
                shutil.rmtree(e.path, ignore_errors=True)
                removed.append(Path(e.path))
    return removed


def maybe_sweep(base: Path) -> None:
    """Sweep once per process, then at most every ten minutes (called when a sandbox opens,
    from a worker thread)."""
    pid, now = os.getpid(), time.monotonic()
    last = _last_sweep.get(pid)
    if last is not None and now - last < _SWEEP_EVERY_S:
        return
    _last_sweep[pid] = now
    from .bwrap import _etc_fingerprint
    from .cgroups import layout

    lay = layout()
    parents = sorted({p for p in (lay.memory, lay.pids, lay.cpu, lay.cpuacct) if p is not None})
    try:
        gone = sweep(base, parents) + sweep_etc_copies(base, _etc_fingerprint())
        if gone:
            log.info("removed %d stale sandbox directories/cgroups", len(gone))
    except Exception:  # never let housekeeping break a sandbox
        log.exception("stale sandbox sweep failed")
