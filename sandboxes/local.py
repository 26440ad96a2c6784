"""`unsafe-local`: a plain subprocess in the run directory with rlimits, a process-group kill
and (as root) the uid drop and per-run cgroup. NOT a sandbox: the payload sees the host
filesystem and network. Only used when asked for by name, with a warning."""

from __future__ import annotations

import asyncio
import logging
import os
import warnings

from ._runner import LaunchSpec, rlimits_for, run, sweep_file_size
from .base import Sandbox, register_backend, sandbox_uid
from .cgroups import RunCgroup, layout
from .types import ExecResult, ExecStatus, Limits, SandboxError

log = logging.getLogger(__name__)
_warned = False
_MESSAGE = (
    "sandbox backend 'unsafe-local' runs untrusted code without isolation "
    "(host filesystem and network visible); use 'bwrap' for anything hostile"
)


@register_backend("unsafe-local")
class UnsafeLocalSandbox(Sandbox):
    backend = "unsafe-local"

    async def start(self) -> None:
        global _warned
        if not _warned:
            _warned = True
            log.warning(_MESSAGE)
            warnings.warn(_MESSAGE, RuntimeWarning, stacklevel=4)
        await super().start()

    async def _exec(
        self, cmd: list[str], limits: Limits, stdin: bytes | None, env: dict[str, str]
    ) -> ExecResult:
        root_mode = os.geteuid() == 0
        cg = RunCgroup(layout()) if root_mode else None
        if cg is not None:
            cg.create(memory_bytes=limits.memory_mb << 20, pids=limits.pids, cpus=limits.cpus)
        try:
            mem_cg = bool(cg and cg.enforced["memory"])
            enforced = dict(cg.enforced) if cg else {"memory": False, "pids": False}
            enforced.update(
                {
                    "seccomp": False,
                    "uid_drop": root_mode,
                    "network_isolated": False,
                    "rlimits": True,
                    "run_dir_capped": self.run_dir_capped,
                }
            )
            enforced["address_space"] = limits.address_space_mb is not None or not mem_cg
            full_env = {
                "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
                "HOME": self._root(),
                "TMPDIR": self._root(),
                "LANG": "C.UTF-8",
            }
            full_env.update(env)
            uid = sandbox_uid() if root_mode else None
            spec = LaunchSpec(
                argv=cmd,
                env=full_env,
                cwd=self._root(),
                uid=uid,
                gid=uid,
                rlimits=rlimits_for(
                    limits, memory_cgroup=mem_cg, pids_cgroup=bool(cg and cg.enforced["pids"])
                ),
                cgroup=cg,
                enforced=enforced,
            )
            res = await run(spec, limits, stdin, self.backend)
        finally:
            if cg is not None:
                cg.remove()
        if res.exit_code == 127 and res.stderr.startswith("sandbox-launcher: "):
            # The launcher could not gate or exec the program (e.g. it does not exist).
            raise SandboxError(f"cannot start {cmd[0]!r}: {res.stderr.strip()}")
        if res.status is ExecStatus.NONZERO_EXIT and await asyncio.to_thread(
            sweep_file_size, self._root(), limits.file_bytes
        ):
            res.status = ExecStatus.FILE_SIZE_LIMIT
        return res
