"""Our hardened docker backend as Inspect AI's sandbox `codegen-docker`.

What it adds over Inspect's own `docker`: no compose project and no long-lived container;
every exec is a fresh container of our image (`codegen-lab-sandbox`, built offline by
scripts/docker-local.sh) with bwrap's seccomp rule list as its profile, our non-dumpable
init as pid 1, every capability dropped, a read-only root, no network, an unprivileged uid,
our per-run cgroup as its parent (whole-tree memory, pids and CPU accounting), output cut
while it is read, and the wall limit a kill from outside. The sample's state is the same
two host directories as under `bwrap` (sandboxes/inspect_sandbox.py): the working
directory `/sandbox` and `/tmp`, bind-mounted into each container. The image's userland
(its /usr) is what the programs see, not the host's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai.util import sandboxenv

from . import _inspect_files as files
from .docker_backend import WORKDIR, DockerSandbox
from .inspect_sandbox import _CWD, TMP, SampleSandboxEnvironment
from .types import ExecResult, ExecStatus, SandboxError


class _CwdDocker(DockerSandbox):
    """The backend with the sample's /tmp bound in (instead of a per-container tmpfs), a
    per-exec working directory (_CWD), and stdin that reaches EOF."""

    def __init__(self, *, tmp_dir: str, **options: Any) -> None:
        super().__init__(**options)
        self._tmp_dir = tmp_dir

    def _missing_cwd(self, cwd: str) -> bool:
        """A cwd in the sample's directories that is not there. Docker would create it, as
        root, inside our run directory; bwrap fails the exec instead, and so do we."""
        parts = [p for p in cwd.split("/") if p]
        roots = {WORKDIR: self.run_dir, TMP: Path(self._tmp_dir)}
        root = roots.get("/" + parts[0]) if parts else None
        return root is not None and files.dir_state(root, parts[1:]) is False

    def _run(self, kwargs: dict[str, Any], *args: Any, **kw: Any) -> ExecResult:
        # _exec_blocking runs in a thread of asyncio.to_thread, which carries the context
        if "tmpfs" not in kwargs or "volumes" not in kwargs or "working_dir" not in kwargs:
            raise SandboxError("docker options lack tmpfs/volumes/working_dir: update this")
        kwargs = dict(kwargs)
        kwargs["tmpfs"] = {k: v for k, v in kwargs["tmpfs"].items() if k != TMP}
        kwargs["volumes"] = {**kwargs["volumes"], self._tmp_dir: {"bind": TMP, "mode": "rw"}}
        kwargs["working_dir"] = cwd = _CWD.get() or WORKDIR
        if self._missing_cwd(cwd):
            return ExecResult(
                status=ExecStatus.NONZERO_EXIT,
                exit_code=1,
                signal=None,
                stdout="",
                stderr=f"codegen-docker: can't chdir to {cwd}: No such directory\n",
                truncated=False,
                wall_s=0.0,
                cpu_s=None,
                peak_memory_mb=None,
                backend=self.backend,
            )
        return super()._run(kwargs, *args, **kw)


@sandboxenv(name="codegen-docker")
class CodegenDockerSandboxEnvironment(SampleSandboxEnvironment):
    """Inspect's sandbox `codegen-docker`: our docker backend (needs a local engine and the
    image: `scripts/docker-local.sh up`)."""

    NAME = "codegen-docker"

    def _backend(self, tmp_dir: str) -> DockerSandbox:
        return _CwdDocker(
            tmp_dir=tmp_dir,
            extra_ro_binds=self.config.extra_ro_binds,
            run_dir_mb=self.config.run_dir_mb,
        )
