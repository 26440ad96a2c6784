"""Per-run cgroups for memory, pids and CPU: cgroup v2 where its controllers are usable,
else the v1 hierarchies (this machine kind is a v1 hybrid: memory, pids, cpu, cpuacct
writable, the unified mount without controllers).

A `RunCgroup` is created before the payload starts; the launcher's child joins it (while still
root, before exec) so nothing it forks can escape; after the run it reports peak memory,
OOM kills, pids-limit hits and CPU time, kills whatever is left and removes itself.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ._host import owner_token

log = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")
PARENT = "codegen-sandbox"


@dataclass(frozen=True, slots=True)
class CgroupLayout:
    """Where each controller lives. version 0 means no usable cgroups (not root, read-only)."""

    version: int
    memory: Path | None = None
    pids: Path | None = None
    cpu: Path | None = None  # v1: cpu (quota); v2: the unified dir
    cpuacct: Path | None = None  # v1 only (usage)


def _writable_dir(p: Path) -> bool:
    return p.is_dir() and os.access(p, os.W_OK)


@functools.cache
def layout() -> CgroupLayout:
    if os.geteuid() != 0 and not os.environ.get("CODEGEN_SANDBOX_CGROUP_V2_DELEGATED"):
        return CgroupLayout(0)
    # v2: the unified root has controllers we can enable for our parent directory.
    unified = ROOT if (ROOT / "cgroup.controllers").exists() else ROOT / "unified"
    ctrl = unified / "cgroup.controllers"
    if ctrl.exists():
        available = set(ctrl.read_text().split())
        if {"memory", "pids"} <= available and _writable_dir(unified):
            parent = unified / PARENT
            try:
                parent.mkdir(exist_ok=True)
                wanted = [c for c in ("memory", "pids", "cpu") if c in available]
                (unified / "cgroup.subtree_control").write_text(" ".join("+" + c for c in wanted))
                (parent / "cgroup.subtree_control").write_text(" ".join("+" + c for c in wanted))
                return CgroupLayout(2, parent, parent, parent, parent)
            except OSError as exc:
                log.info("cgroup v2 not usable (%s); trying v1", exc)
    dirs: dict[str, Path | None] = {}
    for name in ("memory", "pids", "cpu", "cpuacct"):
        base = ROOT / name
        if (base / "cgroup.procs").exists() and _writable_dir(base):
            try:
                (base / PARENT).mkdir(exist_ok=True)
                dirs[name] = base / PARENT
                continue
            except OSError:
                pass
        dirs[name] = None
    if not any(dirs.values()):
        return CgroupLayout(0)
    return CgroupLayout(1, dirs["memory"], dirs["pids"], dirs["cpu"], dirs["cpuacct"])


def _read_int(p: Path) -> int | None:
    try:
        return int(p.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_kv(p: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in p.read_text().splitlines():
            k, _, v = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[k] = int(v)
    return out


class RunCgroup:
    """One cgroup (per controller, in v1) for one exec."""

    def __init__(self, lay: CgroupLayout | None = None) -> None:
        self.layout = lay or layout()
        # Owner pid + start time: a later sweep removes it if this process dies (SIGKILL).
        self.name = f"run-{owner_token()}-{uuid.uuid4().hex[:12]}"
        self.dirs: dict[str, Path] = {}
        self.enforced: dict[str, bool] = {"memory": False, "pids": False, "cpu_account": False}

    # -- setup ---------------------------------------------------------------------------
    def create(self, *, memory_bytes: int, pids: int, cpus: float | None) -> None:
        lay = self.layout
        if lay.version == 0:
            return
        if lay.version == 2:
            d = lay.memory / self.name  # type: ignore[operator]
            d.mkdir()
            self.dirs = {"unified": d}
            self._try("memory", d / "memory.max", str(memory_bytes))
            if self.enforced["memory"]:
                with contextlib.suppress(OSError):
                    (d / "memory.swap.max").write_text("0")
                with contextlib.suppress(OSError):  # kill the whole group on OOM, not one task
                    (d / "memory.oom.group").write_text("1")
            self._try("pids", d / "pids.max", str(pids))
            self.enforced["cpu_account"] = (d / "cpu.stat").exists()
            if cpus:
                self._try("cpu_quota", d / "cpu.max", f"{int(cpus * 100_000)} 100000")
            return
        for ctl in ("memory", "pids", "cpu", "cpuacct"):
            base: Path | None = getattr(lay, ctl)
            # Joining a v1 cpu cgroup costs ~10-20 ms (an RCU grace period): only when a
            # quota is asked for. Accounting comes from cpuacct, which is cheap.
            if base is None or (ctl == "cpu" and not cpus):
                continue
            d = base / self.name
            d.mkdir()
            self.dirs[ctl] = d
        if "memory" in self.dirs:
            d = self.dirs["memory"]
            self._try("memory", d / "memory.limit_in_bytes", str(memory_bytes))
            # Without a memsw limit the payload could push its pages to swap and go on.
            with contextlib.suppress(OSError):
                (d / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        if "pids" in self.dirs:
            self._try("pids", self.dirs["pids"] / "pids.max", str(pids))
        self.enforced["cpu_account"] = "cpuacct" in self.dirs
        if cpus and "cpu" in self.dirs:
            d = self.dirs["cpu"]
            self._try("cpu_quota", d / "cpu.cfs_quota_us", str(int(cpus * 100_000)))

    def _try(self, key: str, path: Path, value: str) -> None:
        try:
            path.write_text(value)
            self.enforced[key] = True
        except OSError as exc:
            log.info("cgroup %s not enforced: %s", key, exc)
            self.enforced[key] = False

    def procs_files(self) -> list[str]:
        """Paths the child writes its pid into (from preexec_fn, before dropping root)."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    # -- measurements --------------------------------------------------------------------
    def peak_memory_bytes(self) -> int | None:
        if "unified" in self.dirs:
            return _read_int(self.dirs["unified"] / "memory.peak")
        if "memory" in self.dirs:
            return _read_int(self.dirs["memory"] / "memory.max_usage_in_bytes")
        return None

    def oom_killed(self) -> bool:
        if "unified" in self.dirs:
            ev = _read_kv(self.dirs["unified"] / "memory.events")
            return ev.get("oom_kill", 0) > 0 or ev.get("oom_group_kill", 0) > 0
        if "memory" in self.dirs:
            ctl = _read_kv(self.dirs["memory"] / "memory.oom_control")
            if "oom_kill" in ctl:
                return ctl["oom_kill"] > 0
            return (_read_int(self.dirs["memory"] / "memory.failcnt") or 0) > 0
        return False

    def pids_hit(self) -> bool:
        d = self.dirs.get("unified") or self.dirs.get("pids")
        if d is None:
            return False
        return _read_kv(d / "pids.events").get("max", 0) > 0

    def cpu_seconds(self) -> float | None:
        if "unified" in self.dirs:
            usec = _read_kv(self.dirs["unified"] / "cpu.stat").get("usage_usec")
            return None if usec is None else usec / 1e6
        if "cpuacct" in self.dirs:
            ns = _read_int(self.dirs["cpuacct"] / "cpuacct.usage")
            return None if ns is None else ns / 1e9
        return None

    def pids_alive(self) -> list[int]:
        d = self.dirs.get("unified") or self.dirs.get("pids") or self.dirs.get("memory")
        if d is None:
            return []
        try:
            return [int(x) for x in (d / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    # -- teardown ------------------------------------------------------------------------
    def kill_all(self) -> None:
        """SIGKILL every process in the group; v2 has cgroup.kill, v1 needs a loop (a fork
        bomb may fork between reading the list and the kill, hence several passes)."""
        if "unified" in self.dirs:
            with contextlib.suppress(OSError):
                (self.dirs["unified"] / "cgroup.kill").write_text("1")
        for _ in range(50):
            pids = self.pids_alive()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(100):  # rmdir fails with EBUSY until the last task is reaped
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                log.warning("could not remove cgroup %s", d)
        self.dirs = {}


def remove_everywhere(name: str) -> None:
    """rmdir `<hierarchy>/codegen-sandbox/<name>` in every mounted hierarchy: runc creates a
    container's parent cgroup in all of them (cpuset, devices, freezer, ...), not only in
    those RunCgroup made. Empty directories only; anything else stays for the sweep."""
    with contextlib.suppress(OSError):
        for h in [ROOT, *ROOT.iterdir()]:
            d = h / PARENT / name
            with contextlib.suppress(OSError):
                d.rmdir()
