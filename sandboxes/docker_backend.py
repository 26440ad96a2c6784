"""`docker`: one short-lived container per exec, through the docker SDK.

No network, read-only root, a size-capped /tmp tmpfs, every capability dropped,
no-new-privileges, an unprivileged user, memory/swap/pids/CPU limits, rlimits as ulimits, the
run directory bind-mounted at /sandbox. The wall limit is enforced twice: `timeout -s KILL`
inside the container and a kill from outside. Output is read from the attached log stream
and cut at the cap while reading; OOM comes from the container state.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
from typing import Any

from .base import Sandbox, sandbox_uid
from .types import ExecResult, ExecStatus, Limits, SandboxError, cpu_limit_s

IMAGE_ENV = "CODEGEN_SANDBOX_IMAGE"
DEFAULT_IMAGE = "codegen-lab-sandbox:latest"
WORKDIR = "/sandbox"


def _endpoint() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


class DockerSandbox(Sandbox):
    backend = "docker"

    def __init__(self, *, image: str | None = None, extra_ro_binds: tuple[str, ...] = ()) -> None:
        super().__init__(extra_ro_binds=extra_ro_binds)
        self.image = image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
        self._client: Any = None

    async def start(self) -> None:
        # Fail fast and clearly with no engine (from_env fails in ~2 ms), before any
        # directory is created.
        try:
            import docker
        except ImportError as exc:  # pragma: no cover - docker is a declared dependency
            raise SandboxError("the docker SDK is not installed; pip install docker") from exc
        try:
            self._client = docker.from_env(timeout=10)
            self._client.ping()
        except Exception as exc:
            raise SandboxError(
                f"docker backend: no Docker engine reachable at {_endpoint()} "
                f"({type(exc).__name__}: {exc}). Start an engine or set DOCKER_HOST, or use "
                "backend='bwrap' (the default)."
            ) from exc
        try:
            self._client.images.get(self.image)
        except Exception as exc:
            raise SandboxError(
                f"docker image {self.image!r} not found; build it with "
                f"`docker build -t {DEFAULT_IMAGE} -f docker/Dockerfile .`"
            ) from exc
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
        return await asyncio.to_thread(self._exec_blocking, cmd, limits, stdin, env)

    def _exec_blocking(
        self, cmd: list[str], limits: Limits, stdin: bytes | None, env: dict[str, str]
    ) -> ExecResult:
        from docker.types import Ulimit

        uid = sandbox_uid()
        cpu = math.ceil(cpu_limit_s(limits))
        wall = max(1, math.ceil(limits.wall_s))
        full_env = {"HOME": WORKDIR, "TMPDIR": "/tmp", "LANG": "C.UTF-8", **env}
        t0 = time.monotonic()
        try:
            c = self._client.containers.create(
                self.image,
                command=["timeout", "-s", "KILL", str(wall), *cmd],
                user=f"{uid}:{uid}",
                working_dir=WORKDIR,
                environment=full_env,
                network_disabled=not limits.network,
                read_only=True,
                tmpfs={"/tmp": f"size={limits.tmp_mb}m,mode=1777"},
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit=limits.memory_mb << 20,
                memswap_limit=limits.memory_mb << 20,
                pids_limit=limits.pids,
                nano_cpus=int(limits.cpus * 1e9) if limits.cpus else None,
                ulimits=[
                    Ulimit(name="cpu", soft=cpu, hard=cpu + 1),
                    Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
                    Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
                    Ulimit(name="core", soft=0, hard=0),
                ],
                volumes={
                    self._root(): {"bind": WORKDIR, "mode": "rw"},
                    **{p: {"bind": p, "mode": "ro"} for p in self.extra_ro_binds},
                },
                stdin_open=stdin is not None,
                detach=True,
            )
        except Exception as exc:
            raise SandboxError(f"docker: cannot create container: {exc}") from exc
        killed: list[ExecStatus] = []
        out, err = bytearray(), bytearray()

        def kill(why: ExecStatus) -> None:
            if not killed:
                killed.append(why)
            with contextlib.suppress(Exception):
                c.kill()

        def reader(stream_stdout: bool, buf: bytearray) -> None:
            with contextlib.suppress(Exception):
                for chunk in c.logs(
                    stream=True, follow=True, stdout=stream_stdout, stderr=not stream_stdout
                ):
                    room = limits.output_bytes - len(buf)
                    if len(chunk) > room:
                        buf += chunk[:room]
                        kill(ExecStatus.OUTPUT_LIMIT)
                        return
                    buf += chunk

        try:
            if stdin is not None:
                sock = c.attach_socket(params={"stdin": 1, "stream": 1})
            c.start()
            if stdin is not None:
                with contextlib.suppress(Exception):
                    sock._sock.sendall(stdin)
                    sock._sock.shutdown(1)
            readers = [
                threading.Thread(target=reader, args=(True, out), daemon=True),
                threading.Thread(target=reader, args=(False, err), daemon=True),
            ]
            for t in readers:
                t.start()
            try:
                rc = int(c.wait(timeout=limits.wall_s + 2)["StatusCode"])
            except Exception:
                kill(ExecStatus.WALL_TIMEOUT)
                rc = int(c.wait(timeout=30)["StatusCode"])
            for t in readers:
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
        sig = rc - 128 if 128 < rc <= 192 else None
        if state.get("OOMKilled"):
            status = ExecStatus.MEMORY_LIMIT
        elif killed:
            status = killed[0]
        elif rc == 124 or (rc == 137 and wall_s >= limits.wall_s):
            status = ExecStatus.WALL_TIMEOUT  # `timeout` inside fired
        elif sig == 25:
            status = ExecStatus.FILE_SIZE_LIMIT
        elif sig == 24:
            status = ExecStatus.CPU_LIMIT
        elif sig is not None:
            status = ExecStatus.SIGNAL
        else:
            status = ExecStatus.OK if rc == 0 else ExecStatus.NONZERO_EXIT
        return ExecResult(
            status=status,
            exit_code=rc,
            signal=sig,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            truncated=status is ExecStatus.OUTPUT_LIMIT,
            wall_s=wall_s,
            cpu_s=None,
            peak_memory_mb=None,
            limits_enforced={
                "memory": True,
                "pids": True,
                "cpu_account": False,
                "seccomp": True,  # docker's default profile
                "uid_drop": True,
                "network_isolated": not limits.network,
                "rlimits": True,
            },
            backend=self.backend,
        )
