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
import logging
import os
import re
import signal
import time
from pathlib import Path

from ._cleanup import remove_run_dir, remove_tree
from ._host import etc_fingerprint, owner_alive, owner_token  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

_LEGACY_CGROUP = re.compile(r"^run-[0-9a-f]{16}$")
_SWEEP_EVERY_S = 600.0
_last_sweep: dict[int, float] = {}  # pid -> monotonic time (fork-safe)


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


def sweep(base: Path, cgroup_parents: list[Path], skipped: list[str] | None = None) -> list[Path]:
    """Remove stale state; returns what was removed. Whatever cannot be removed (or makes
    the removal fail in any way) is skipped, described in `skipped`, logged, and the sweep
    goes on with the next entry: one bad directory must not block the sweep for good."""
    removed: list[Path] = []
    problems: list[str] = [] if skipped is None else skipped
    now = time.time()

    def drop(p: Path) -> None:
        try:
            left = remove_run_dir(p)
        except Exception as exc:  # remove_run_dir does not raise; belt and braces
            left = [f"{p}: {type(exc).__name__}: {exc}"]
        if left:
            problems.append(f"{p}: {len(left)} entries left, first: {left[0]}")
        else:
            removed.append(p)

    try:
        entries = list(os.scandir(base))
    except OSError as exc:
        entries = []
        problems.append(f"{base}: {exc.strerror}")
    for e in entries:
        try:
            p = Path(e.path)
            if e.is_dir(follow_symlinks=False) and owner_alive(e.name) is False:
                drop(p)
            elif e.name.startswith(".etc-build-"):
                if now - e.stat(follow_symlinks=False).st_mtime > 600:
                    drop(p)
        except Exception as exc:
            problems.append(f"{e.path}: {type(exc).__name__}: {exc}")
    for parent in cgroup_parents:
        try:
            cg_entries = list(os.scandir(parent))
        except OSError:
            continue
        for e in cg_entries:
            try:
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
                    else:
                        problems.append(f"{e.path}: cgroup could not be removed")
            except Exception as exc:
                problems.append(f"{e.path}: {type(exc).__name__}: {exc}")
    for problem in problems[:20]:
        log.warning("stale sandbox sweep skipped %s", problem)
    return removed


def sweep_etc_copies(base: Path, current_fingerprint: str) -> list[Path]:
    """Prepared /etc copies (``.etc-<uid>-<fingerprint>``) that are not current and were not
    used for ten minutes (users touch theirs every few seconds)."""
    removed = []
    now = time.time()
    with contextlib.suppress(OSError):
        for e in os.scandir(base):
            with contextlib.suppress(OSError):
                if (
                    re.fullmatch(r"\.etc-\d+-[0-9a-f]{16}", e.name)
                    and not e.name.endswith("-" + current_fingerprint)
                    and now - e.stat(follow_symlinks=False).st_mtime > 600
                    and not remove_tree(Path(e.path))
                ):
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
    from .cgroups import PARENT, layout
    from .cgroups import ROOT as CGROUP_ROOT

    lay = layout()
    parents = {p for p in (lay.memory, lay.pids, lay.cpu, lay.cpuacct) if p is not None}
    if lay.version == 1:  # docker's runc makes our per-run parents in every hierarchy
        parents |= {p for p in CGROUP_ROOT.glob(f"*/{PARENT}") if p.is_dir()}
    try:
        gone = sweep(base, sorted(parents)) + sweep_etc_copies(base, etc_fingerprint())
        if gone:
            log.info("removed %d stale sandbox directories/cgroups", len(gone))
    except Exception:  # never let housekeeping break a sandbox
        log.exception("stale sandbox sweep failed")
