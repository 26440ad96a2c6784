"""`docker`: one short-lived container per exec, through the docker SDK.

No network (or the host's with `Limits.network`), read-only root, size-capped `/tmp` and
`/dev/shm` tmpfs, every capability dropped, no-new-privileges, bwrap's seccomp rules as the
container's profile (sandboxes/seccomp.py: no ptrace, io_uring, namespaces, AF_VSOCK ...; it
replaces docker's default), an unprivileged user, our own non-dumpable init (init.c, the one
bwrap uses) as pid 1, so the payload can neither ptrace it, read its memory nor write its
`/proc/1/oom_score_adj` (docker's tini ran as the payload's uid, dumpable), rlimits as
ulimits, the run directory bind-mounted at /sandbox, `extra_ro_binds` read-only, the host's
CUDA toolkit read-only when there is one. The wall limit is a kill from outside; output is
read from the log streams and cut at the cap while reading.

Accounting: with a local engine using the cgroupfs driver (scripts/docker-local.sh starts one)
and root, each container goes under a per-run cgroup of ours (`cgroup_parent`), the same kind
the bwrap backend uses: memory (+swap) and pids limits, peak memory, whole-tree CPU time and
the CPU watchdog then come from it and survive the container. Otherwise docker's own limits
apply and only OOM kills are observed (`limits_enforced` says which).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from . import _launcher, seccomp
from ._runner import classify, sweep_file_size
from .base import Sandbox, register_backend, sandbox_uid
from .cgroups import PARENT, RunCgroup, _read_kv, layout, remove_everywhere
from .cgroups import ROOT as CGROUP_ROOT
from .types import ExecResult, ExecStatus, Limits, SandboxError, cpu_limit_s

IMAGE_ENV = "CODEGEN_SANDBOX_IMAGE"
DEFAULT_IMAGE = "codegen-lab-sandbox:latest"
WORKDIR = "/sandbox"
INIT = "/.sandbox-init"  # our pid 1 (init.c), bind-mounted read-only, as under bwrap
_POLL_S = 0.05


def _endpoint() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _read_int(p: Path) -> int | None:
    try:
        return int(p.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class _LeafWatch:
    """The container's own cgroup, found through its init's /proc/<pid>/cgroup and read
    while it runs (docker removes it with the container): fork failures always (v1 counts
    them only there), and where no cgroup of ours is the parent (a systemd cgroup driver),
    a best-effort peak memory and CPU time too (the last reading before the exit)."""

    def __init__(self, pid: int) -> None:
        self.dirs: dict[str, Path] = {}
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
                _, ctrls, path = line.split(":", 2)
                for ctl in ctrls.split(",") if ctrls else ["unified"]:
                    base = CGROUP_ROOT if ctl == "unified" else CGROUP_ROOT / ctl
                    if ctl == "unified" and not (base / "cgroup.controllers").exists():
                        base = CGROUP_ROOT / "unified"
                    self.dirs[ctl] = base / path.lstrip("/")
        self.pids_hit = False
        self.peak: int | None = None
        self.cpu_s: float | None = None

    def poll(self) -> None:
        u, m = self.dirs.get("unified"), self.dirs.get("memory")
        p = self.dirs.get("pids") or u
        if p is not None and _read_kv(p / "pids.events").get("max", 0) > 0:
            self.pids_hit = True
        peak = None
        if m is not None:
            peak = _read_int(m / "memory.max_usage_in_bytes")
        elif u is not None:
            peak = _read_int(u / "memory.peak") or _read_int(u / "memory.current")
        if peak is not None:
            self.peak = max(peak, self.peak or 0)
        if (a := self.dirs.get("cpuacct")) is not None:
            ns = _read_int(a / "cpuacct.usage")
            self.cpu_s = self.cpu_s if ns is None else ns / 1e9
        elif u is not None:
            usec = _read_kv(u / "cpu.stat").get("usage_usec")
            self.cpu_s = self.cpu_s if usec is None else usec / 1e6


@register_backend("docker")
class DockerSandbox(Sandbox):
    backend = "docker"

    def __init__(
        self,
        *,
        image: str | None = None,
        extra_ro_binds: tuple[str, ...] = (),
        run_dir_mb: int | None = None,
    ) -> None:
        super().__init__(extra_ro_binds=extra_ro_binds, run_dir_mb=run_dir_mb)
        self.image = image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
        self._client: Any = None
        self._local_cgroups = False
        self._init: str | None = None

    async def start(self) -> None:
        # Fail fast and clearly with no engine (from_env fails in ~2 ms), before any
        # directory is created.
        try:
            import docker
        except ImportError as exc:  # pragma: no cover - docker is a declared dependency
            raise SandboxError("the docker SDK is not installed; pip install docker") from exc
        try:
            self._client = docker.from_env(timeout=30)
            self._client.ping()
        except Exception as exc:
            raise SandboxError(
                f"docker backend: no Docker engine reachable at {_endpoint()} "
                f"({type(exc).__name__}: {exc}). Start one with `scripts/docker-local.sh up` "
                "or set DOCKER_HOST, or use backend='bwrap' (the default)."
            ) from exc
        try:
            self._client.images.get(self.image)
        except Exception as exc:
            raise SandboxError(
                f"docker image {self.image!r} not found; build it with "
                "`scripts/docker-local.sh up` (offline) or "
                f"`docker build -t {DEFAULT_IMAGE} docker/`"
            ) from exc
        try:
            driver = self._client.info().get("CgroupDriver")
        except Exception:
            driver = None
        # Our per-run cgroup can be the container's parent only when the engine runs here
        # (a unix socket) and names cgroups by path (cgroupfs; systemd wants slice units).
        self._local_cgroups = (
            os.geteuid() == 0
            and _endpoint().startswith("unix://")
            and driver == "cgroupfs"
            and layout().version != 0
        )
        # Our init is a host binary: only an engine on this machine can bind it in.
        if _endpoint().startswith("unix://"):
            self._init = await asyncio.to_thread(_launcher.init_path)
        await super().start()

    async def close(self) -> None:
        await super().close()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    async def _exec(
        self, cmd: list[str], limits: Limits, stdin: bytes | None, env: dict[str, str]
    ) -> ExecResult:
        cancelled = threading.Event()
        task = asyncio.ensure_future(
            asyncio.to_thread(self._exec_blocking, cmd, limits, stdin, env, cancelled)
        )
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled.set()  # the thread kills its container and returns at once
            with contextlib.suppress(BaseException):
                await task
            raise

    # -- one container ---------------------------------------------------------------------
    def _volumes(self) -> dict[str, dict[str, str]]:
        vols = {self._root(): {"bind": WORKDIR, "mode": "rw"}}
        for p in self.extra_ro_binds:
            vols[p] = {"bind": p, "mode": "ro"}
        cuda = Path("/usr/local/cuda")
        if cuda.exists():  # nvcc from the host, as bwrap shows the host's /usr
            vols[os.path.realpath(cuda)] = {"bind": "/usr/local/cuda", "mode": "ro"}
        if self._init is not None:
            vols[self._init] = {"bind": INIT, "mode": "ro"}
        return vols

    def _exec_blocking(
        self,
        cmd: list[str],
        limits: Limits,
        stdin: bytes | None,
        env: dict[str, str],
        cancelled: threading.Event,
    ) -> ExecResult:
        from docker.types import Ulimit

        uid = sandbox_uid()
        cpu = math.ceil(cpu_limit_s(limits))
        full_env = {"HOME": WORKDIR, "TMPDIR": "/tmp", "LANG": "C.UTF-8", **env}
        cg: RunCgroup | None = None
        if self._local_cgroups:
            cg = RunCgroup(layout())
            try:
                cg.create(memory_bytes=limits.memory_mb << 20, pids=limits.pids, cpus=None)
            except OSError as exc:
                cg.remove()
                raise SandboxError(f"cannot create cgroup: {exc}") from exc
        ulimits = [
            Ulimit(name="cpu", soft=cpu, hard=cpu + 1),
            Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
            Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
            Ulimit(name="core", soft=0, hard=0),
        ]
        if limits.address_space_mb is not None:
            as_b = limits.address_space_mb << 20
            ulimits.append(Ulimit(name="as", soft=as_b, hard=as_b))
        mem_cg = bool(cg and cg.enforced["memory"])
        init = self._init is not None
        kwargs: dict[str, Any] = {
            # Our init forks the payload and exits with its status (128+N for signal N).
            "command": [INIT, *cmd] if init else cmd,
            "user": f"{uid}:{uid}",
            "working_dir": WORKDIR,
            "environment": full_env,
            "hostname": "sandbox",
            "network_mode": "host" if limits.network else "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"size={limits.tmp_mb}m,mode=1777,exec"},
            "shm_size": limits.tmp_mb << 20,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges", f"seccomp={seccomp.docker_profile_json()}"],
            # Without our init (a remote engine), tini: it reaps orphans and reports signal N
            # as exit 128+N too, but runs dumpable as the payload's uid.
            "init": not init,
            "pids_limit": limits.pids,
            "nano_cpus": int(limits.cpus * 1e9) if limits.cpus else None,
            "ulimits": ulimits,
            "volumes": self._volumes(),
            "stdin_open": stdin is not None,
            # docker-py sets StdinOnce (the container's stdin closes when we half-close the
            # attach socket) only for detach=False: with True, a program reading its input to
            # the end (`cat`) never saw EOF and ran to its wall limit. create() attaches
            # nothing itself either way.
            "detach": stdin is None,
        }
        if cg is not None:
            kwargs["cgroup_parent"] = f"/{PARENT}/{cg.name}"
        if not mem_cg:
            kwargs["mem_limit"] = kwargs["memswap_limit"] = limits.memory_mb << 20
        try:
            return self._run(kwargs, limits, stdin, cg, cancelled)
        finally:
            if cg is not None:
                cg.remove()
                remove_everywhere(cg.name)  # runc made the parent in every other hierarchy

    def _run(
        self,
        kwargs: dict[str, Any],
        limits: Limits,
        stdin: bytes | None,
        cg: RunCgroup | None,
        cancelled: threading.Event,
    ) -> ExecResult:
        t0 = time.monotonic()
        try:
            c = self._client.containers.create(self.image, **kwargs)
        except Exception as exc:
            raise SandboxError(f"docker: cannot create container: {exc}") from exc
        reason: list[ExecStatus] = []
        out, err = bytearray(), bytearray()
        leaf: _LeafWatch | None = None

        def kill(why: ExecStatus) -> None:
            if not reason:
                reason.append(why)
            with contextlib.suppress(Exception):
                c.kill()

        def reader(stdout: bool, buf: bytearray) -> None:
            with contextlib.suppress(Exception):
                for chunk in c.logs(stream=True, follow=True, stdout=stdout, stderr=not stdout):
                    room = limits.output_bytes - len(buf)
                    if len(chunk) > room:
                        buf += chunk[:room]
                        kill(ExecStatus.OUTPUT_LIMIT)
                        return
                    buf += chunk

        exit_box: dict[str, Any] = {}
        done = threading.Event()

        def waiter() -> None:
            try:
                exit_box["rc"] = int(c.wait(timeout=None)["StatusCode"])
            except Exception as exc:
                exit_box["error"] = exc
            finally:
                done.set()

        try:
            if stdin is not None:
                sock = c.attach_socket(params={"stdin": 1, "stream": 1})
            c.start()
            # The wall limit counts from the start, not from the engine's create (which a
            # busy engine can make slow).
            deadline = time.monotonic() + limits.wall_s
            if os.geteuid() == 0 and _endpoint().startswith("unix://"):
                with contextlib.suppress(Exception):
                    c.reload()
                    leaf = _LeafWatch(int(c.attrs["State"]["Pid"]))
            if stdin is not None:
                with contextlib.suppress(Exception):
                    sock._sock.sendall(stdin)
                    sock._sock.shutdown(1)
            threads = [
                threading.Thread(target=reader, args=(True, out), daemon=True),
                threading.Thread(target=reader, args=(False, err), daemon=True),
                threading.Thread(target=waiter, daemon=True),
            ]
            for t in threads:
                t.start()
            cpu_cap = limits.cpu_s if (cg is not None or leaf is not None) else None
            while not done.wait(_POLL_S):
                if leaf is not None:
                    leaf.poll()
                if cancelled.is_set():
                    kill(ExecStatus.WALL_TIMEOUT)
                elif time.monotonic() >= deadline:
                    kill(ExecStatus.WALL_TIMEOUT)
                elif cpu_cap is not None:
                    used = cg.cpu_seconds() if cg is not None else leaf.cpu_s if leaf else None
                    if used is not None and used > cpu_cap:
                        kill(ExecStatus.CPU_LIMIT)
                if reason:
                    break
            if not done.wait(30):
                raise SandboxError("docker: the container did not stop after a kill")
            if "error" in exit_box:
                raise SandboxError(f"docker: lost the container: {exit_box['error']}")
            for t in threads[:2]:
                t.join(timeout=2)
            c.reload()
            state = c.attrs.get("State", {})
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(f"docker: lost the container: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                c.remove(force=True)
        wall_s = time.monotonic() - t0
        rc = exit_box["rc"]
        if cg is not None:  # exact: our cgroup outlives the container
            cpu_s, peak = cg.cpu_seconds(), cg.peak_memory_bytes()
        else:
            cpu_s, peak = (leaf.cpu_s, leaf.peak) if leaf else (None, None)
        status, exit_code, sig = classify(
            rc,
            killed_for=reason[0] if reason else None,
            oom=bool(state.get("OOMKilled")) or bool(cg and cg.oom_killed()),
            pids_hit=bool(leaf and leaf.pids_hit) or bool(cg and cg.pids_hit()),
            cpu_s=cpu_s,
            limits=limits,
            shell_style=True,
        )
        # A size cap is decided by what is on disk (a file at the cap, a full run directory):
        # the payload may see EFBIG and exit, or die of SIGXFSZ (which it can also raise).
        capped = status is ExecStatus.NONZERO_EXIT or sig == signal.SIGXFSZ
        if capped and not reason and sweep_file_size(self._root(), limits.file_bytes):
            status = ExecStatus.FILE_SIZE_LIMIT
        return ExecResult(
            status=status,
            exit_code=exit_code,
            signal=sig,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            truncated=status is ExecStatus.OUTPUT_LIMIT,
            wall_s=wall_s,
            cpu_s=cpu_s,
            peak_memory_mb=None if peak is None else peak / (1 << 20),
            limits_enforced={
                "memory": True,
                "pids": True,
                "cpu_account": cpu_s is not None,
                "cpu_quota": bool(limits.cpus),
                "seccomp": True,  # bwrap's rules (seccomp.docker_profile)
                "uid_drop": True,
                "network_isolated": not limits.network,
                "rlimits": True,
                "pid_namespace": True,
                "address_space": limits.address_space_mb is not None,
                "sandbox_init": kwargs["command"][0] == INIT,  # else tini
                "run_dir_capped": self.run_dir_capped,
            },
            backend=self.backend,
        )
