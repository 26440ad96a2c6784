"""Our bubblewrap backend as Inspect AI's sandbox `bwrap` (`sandbox="bwrap"` in a task,
`--sandbox bwrap` on `inspect eval`). Registered through the `inspect_ai` entry point
(codegen_eval/inspect_registry.py); importing `sandboxes` does not import this module, so
inspect-ai stays an optional extra (`pip install .[inspect]`).

One sample gets one `BwrapSandbox` (its run directory, a capped tmpfs, is the working
directory `/sandbox`) plus a second capped tmpfs bound at `/tmp`: our execs are one-shot
namespaces, so these two are what persists between the execs of a sample. Everything else
is the backend's (docs/sandboxes.md): no network, no uid 0, no home or repository, the
system read-only, limits per exec, the whole tree killed at the end of each exec.

Inspect's contract (inspect_ai/util/_sandbox/environment.py) as kept here:
* a program that fails is an `ExecResult`; a timeout raises `TimeoutError` after the tree
  is killed; output past `SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE` raises
  `OutputLimitExceededError`; a command that cannot be executed (no permission) raises
  `PermissionError`; a sandbox that cannot start or run raises `SandboxUnavailableError`.
* `user=`: every command runs as the sandbox's one unprivileged user; any other user
  (root included) raises `SandboxUserUnsupportedError` (docs/inspect.md: the exemptions).
* files: relative paths against `/sandbox`, parent directories created on write, reads
  capped at `SandboxEnvironmentLimits.MAX_READ_FILE_SIZE`, errors as FileNotFoundError,
  IsADirectoryError, PermissionError (checked as the sandbox user, not as us).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import yaml
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import _inspect_files as files
from .base import Sandbox, sandbox_uid
from .bwrap import WORKDIR, BwrapSandbox
from .types import ExecResult as OurResult
from .types import ExecStatus, Limits, SandboxError

TMP = "/tmp"
SANDBOX_USER = "sandbox"  # the name our prepared /etc/passwd gives the sandbox uid
_HELPER_WALL_S = 120.0  # file helpers run in the sandbox (paths through a symlink, /etc ...)

# The working directory of the exec running in this task; read by _CwdBwrap._argv (the
# backend's exec has no cwd: every exec starts in /sandbox). A context variable, not an
# attribute, because Inspect may run several execs of one sample at once.
_CWD: contextvars.ContextVar[str | None] = contextvars.ContextVar("bwrap_cwd", default=None)


class BwrapConfigError(PrerequisiteError, ValueError):
    """A bad sandbox configuration: Inspect's CLI shows a PrerequisiteError as its message
    alone, one line, not a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)


class BwrapStartError(PrerequisiteError, SandboxUnavailableError):
    """The sandbox cannot run on this host at all (seen when the task starts): one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)


class BwrapConfig(BaseModel):
    """`sandbox=("bwrap", cfg)` with this model, or a YAML/JSON file of these fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_mb: int = Field(default=2048, ge=16)  # per exec, the whole tree (cgroup)
    pids: int = Field(default=256, ge=8)
    cpus: float | None = Field(default=None, gt=0)  # CPU quota in cores; None: unlimited
    file_mb: int = Field(default=1024, ge=1)  # the largest file a program may write
    default_timeout_s: int = Field(default=3600, ge=1)  # wall limit of an exec without `timeout`
    run_dir_mb: int = Field(default=1024, ge=0)  # the working directory's tmpfs (0: on disk)
    tmp_mb: int = Field(default=512, ge=0)  # /tmp's tmpfs (0: on disk)
    # trusted host directories the programs see read-only at the same path
    extra_ro_binds: tuple[str, ...] = ()

    @field_validator("extra_ro_binds")
    @classmethod
    def _not_under_tmp(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for p in v:
            if p == TMP or p.startswith(TMP + "/"):
                # the per-sample /tmp is bound over the backend's, and would hide them
                raise ValueError(f"{p!r}: the bwrap sandbox's /tmp is its own; bind elsewhere")
        return v


def load_config(config: SandboxEnvironmentConfigType | dict[str, Any] | None) -> BwrapConfig:
    """The sandbox's configuration; a BwrapConfigError (a ValueError) for a bad one."""
    if config is None:
        return BwrapConfig()
    if isinstance(config, BwrapConfig):
        return config
    try:
        if isinstance(config, str):
            path = Path(config)
            if not path.is_file():
                raise BwrapConfigError(f"bwrap sandbox config file {config!r} does not exist")
            data = yaml.safe_load(path.read_text()) or {}
            if not isinstance(data, dict):
                raise BwrapConfigError(f"bwrap sandbox config {config!r} is not a mapping")
            return BwrapConfig.model_validate(data)
        if isinstance(config, dict):
            return BwrapConfig.model_validate(config)
        return BwrapConfig.model_validate(config.model_dump())
    except ValidationError as exc:
        why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise BwrapConfigError(f"bad bwrap sandbox config {_shown(config)}: {why}") from None
    except yaml.YAMLError as exc:
        why = str(exc).splitlines()[0]
        raise BwrapConfigError(f"bad bwrap sandbox config {_shown(config)}: {why}") from None


def _shown(config: SandboxEnvironmentConfigType | dict[str, Any]) -> str:
    return repr(config) if isinstance(config, str) else type(config).__name__


class _TmpDir(Sandbox):
    """A run directory and nothing else: the sample's /tmp, which the backend that runs the
    execs binds in. Named like bwrap's run directories, so the stale-state sweep removes
    it when its owner dies."""

    backend = "bwrap"

    async def _exec(
        self, cmd: list[str], limits: Limits, stdin: bytes | None, env: dict[str, str]
    ) -> OurResult:
        raise SandboxError("the /tmp holder runs nothing")


class _CwdBwrap(BwrapSandbox):
    """The backend with a per-exec working directory: bwrap's `--chdir` (its options travel
    in the memfd blob, see BwrapSandbox._argv) points at _CWD when one is set."""

    def _argv(self, *args: Any, **kwargs: Any) -> tuple[list[str], bytes]:
        argv, blob = super()._argv(*args, **kwargs)
        cwd = _CWD.get()
        if cwd is None or cwd == WORKDIR:
            return argv, blob
        ours = b"\0--chdir\0" + os.fsencode(WORKDIR) + b"\0"
        # the first occurrence is bwrap's own option: --setenv values come after it
        if ours not in blob:
            raise SandboxError("bwrap options lack --chdir: the backend changed; update this")
        return argv, blob.replace(ours, b"\0--chdir\0" + os.fsencode(cwd) + b"\0", 1)


@dataclass
class BwrapExecResult(ExecResult[str]):
    """Inspect's result plus what our sandbox observed (`ok`, `memory_limit` ...)."""

    sandbox_status: str = ExecStatus.OK.value


# exit codes of the in-sandbox file helpers (chosen apart from common tool codes)
_IS_DIR, _MISSING, _NOT_REGULAR, _DENIED, _TOO_LARGE = 81, 82, 83, 84, 85
_READ_SH = f"""f=$1
if [ -d "$f" ]; then exit {_IS_DIR}; fi
if [ ! -e "$f" ]; then exit {_MISSING}; fi
if [ ! -f "$f" ]; then exit {_NOT_REGULAR}; fi
if [ ! -r "$f" ]; then exit {_DENIED}; fi
if [ "$(stat -L -c %s -- "$f")" -gt "$2" ]; then exit {_TOO_LARGE}; fi
exec base64 -w 0 -- "$f"
"""
_WRITE_SH = f"""f=$1
if [ -d "$f" ]; then exit {_IS_DIR}; fi
mkdir -p -- "$(dirname -- "$f")" || exit {_DENIED}
cat > "$f" || exit {_DENIED}
"""


class SampleSandboxEnvironment(SandboxEnvironment):
    """One sample's sandbox over one of our backends (see the module docstring); the
    backend comes from `_backend` (registered: `bwrap`, below; our docker backend would be
    a second subclass, see docs/inspect.md)."""

    NAME = ""  # the name Inspect knows it by

    def __init__(self, config: BwrapConfig) -> None:
        super().__init__()
        self.config = config
        self._tmp: _TmpDir | None = None  # holds /tmp's directory; never execs
        self._sb: Sandbox | None = None
        root = os.geteuid() == 0
        uid = sandbox_uid() if root else os.getuid()
        gids = frozenset({uid}) if root else frozenset({os.getgid(), *os.getgroups()})
        self._who = files.Who(uid=uid, gids=gids, owner=(uid, uid) if root else None)

    # -- lifecycle -----------------------------------------------------------------------
    @classmethod
    def config_files(cls) -> list[str]:
        # Inspect uses one of these found beside the task file when the task gives none
        return [f"{cls.NAME}.yaml", f"{cls.NAME}.json"]

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return load_config(config)

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        # Fail the task at its start, in one line, when no sample could run: no bwrap, no
        # C compiler for the launcher, no user namespaces ...
        env = cls(load_config(config))
        try:
            await env._start()
            res = await env.exec(["true"], timeout=60)
            if not res.success:
                why = res.stderr.strip()
                raise BwrapStartError(f"the {cls.NAME} sandbox cannot run `true`: {why}")
        except SandboxUnavailableError as exc:
            if isinstance(exc, BwrapStartError):
                raise
            raise BwrapStartError(str(exc)) from exc
        finally:
            await env._stop()

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        env = cls(load_config(config))
        await env._start()
        return {"default": env}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for env in environments.values():
            if isinstance(env, SampleSandboxEnvironment):
                await env._stop()

    async def _start(self) -> None:
        cfg = self.config
        try:
            self._tmp = _TmpDir(run_dir_mb=cfg.tmp_mb)
            await self._tmp.start()
            assert self._tmp.run_dir is not None
            self._sb = self._backend(str(self._tmp.run_dir))
            await self._sb.start()
        except (SandboxError, OSError, ValueError) as exc:
            await self._stop()
            raise SandboxUnavailableError(f"the {self.NAME} sandbox cannot start: {exc}") from exc

    def _backend(self, tmp_dir: str) -> Sandbox:
        """The backend, not started, showing host directory `tmp_dir` writable at /tmp and
        honouring _CWD as each exec's working directory."""
        raise NotImplementedError

    async def _stop(self) -> None:
        sb, tmp, self._sb, self._tmp = self._sb, self._tmp, None, None
        try:
            if sb is not None:
                await sb.close()
        finally:
            if tmp is not None:
                await tmp.close()

    def _live(self) -> Sandbox:
        if self._sb is None or self._sb.run_dir is None:
            raise SandboxUnavailableError(
                f"the {self.NAME} sandbox is not running (closed or not started)"
            )
        return self._sb

    # -- exec ----------------------------------------------------------------------------
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,  # noqa: ASYNC109  (Inspect's signature)
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        """Run `cmd` in a fresh namespace over this sample's /sandbox and /tmp.

        `timeout_retry` is not used: the timeout is the program's own wall limit, enforced
        by killing its tree, not a transport that may hang (Inspect's docker does not retry
        when its in-container timeout fires either). `concurrency` is not used: the
        backend's bound on simultaneous execs always holds."""
        self._check_user(user)
        wall = float(timeout) if timeout is not None else float(self.config.default_timeout_s)
        limits = self._limits(wall, SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE)
        res = await self._run(cmd, limits, input, env, self._workdir(cwd))
        if res.status is ExecStatus.WALL_TIMEOUT:
            err = TimeoutError(f"Command timed out after {timeout or wall:g} seconds")
            if res.stdout or res.stderr:
                err.truncated_output = res.stdout + res.stderr  # type: ignore[attr-defined]
            raise err
        if res.status is ExecStatus.OUTPUT_LIMIT:
            raise OutputLimitExceededError(
                SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR, res.stdout + res.stderr
            )
        if _exec_denied(res, cmd):
            raise PermissionError(f"{cmd[0]}: permission denied (cannot execute)")
        return _to_inspect(res)

    def _check_user(self, user: str | None) -> None:
        if user is None or user in (SANDBOX_USER, str(self._who.uid)):
            return
        raise SandboxUserUnsupportedError(
            f"the {self.NAME} sandbox runs every command as its unprivileged user "
            f"{SANDBOX_USER!r} (uid {self._who.uid}); it cannot run as {user!r}"
        )

    def _limits(self, wall_s: float, output_bytes: int) -> Limits:
        cfg = self.config
        return Limits(
            wall_s=wall_s,
            memory_mb=cfg.memory_mb,
            pids=cfg.pids,
            cpus=cfg.cpus,
            output_bytes=output_bytes,
            file_bytes=cfg.file_mb << 20,
        )

    def _workdir(self, cwd: str | None) -> str:
        if cwd is None:
            return WORKDIR
        if "\0" in cwd:
            # bwrap's options are NUL-separated in the memfd: a NUL here would add options
            # of the caller's (`--bind / /x`, `--share-net`) to the sandbox
            raise ValueError(f"cwd holds a NUL byte: {cwd!r}")
        return os.path.normpath(cwd if cwd.startswith("/") else f"{WORKDIR}/{cwd}")

    async def _run(
        self,
        cmd: list[str],
        limits: Limits,
        stdin: str | bytes | None,
        env: dict[str, str] | None,
        cwd: str = WORKDIR,
    ) -> OurResult:
        sb = self._live()
        token = _CWD.set(cwd)
        try:
            return await sb.exec(cmd, limits=limits, stdin=stdin, env=env)
        except SandboxError as exc:
            raise SandboxUnavailableError(f"the {self.NAME} sandbox cannot run: {exc}") from exc
        finally:
            _CWD.reset(token)

    # -- files ---------------------------------------------------------------------------
    def _host_path(self, file: str) -> tuple[Path, list[str], str] | None:
        """(host directory, components under it, the sandbox path) for a path in /sandbox
        or /tmp without `..`; None for any other path (the sandbox resolves it)."""
        sb = self._live()
        full = file if file.startswith("/") else f"{WORKDIR}/{file}"
        parts = [p for p in full.split("/") if p not in ("", ".")]
        if ".." in parts or not parts:
            return None
        top = "/" + parts[0]
        if top == WORKDIR and sb.run_dir is not None:
            return sb.run_dir, parts[1:], full
        if top == TMP and self._tmp is not None and self._tmp.run_dir is not None:
            return self._tmp.run_dir, parts[1:], full
        return None

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        data: bytes | None = None
        where = self._host_path(file)
        if where is not None:
            try:
                data = await asyncio.to_thread(
                    files.read, where[0], where[1], self._who, file, limit
                )
            except files.Resolve:
                data = None
            except files.TooLarge:
                raise _too_large() from None
        if data is None:
            data = await self._read_inside(file, limit)
        return data.decode("utf-8") if text else data

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else bytes(contents)
        where = self._host_path(file)
        if where is not None:
            with contextlib.suppress(files.Resolve):
                await asyncio.to_thread(files.write, where[0], where[1], self._who, file, data)
                return
        await self._write_inside(file, data)

    async def _read_inside(self, file: str, limit: int) -> bytes:
        full = file if file.startswith("/") else f"{WORKDIR}/{file}"
        out = 4 * (limit // 3 + 1) + 64  # base64 of `limit` bytes
        res = await self._run(
            ["/bin/sh", "-c", _READ_SH, "sh", full, str(limit)],
            self._limits(_HELPER_WALL_S, out),
            None,
            None,
        )
        if res.status is ExecStatus.OUTPUT_LIMIT or res.exit_code == _TOO_LARGE:
            raise _too_large()
        _raise_for_helper(res, file)
        try:
            return base64.b64decode(res.stdout, validate=True)
        except ValueError as exc:
            raise SandboxUnavailableError(f"reading {file!r} in the sandbox failed") from exc

    async def _write_inside(self, file: str, data: bytes) -> None:
        full = file if file.startswith("/") else f"{WORKDIR}/{file}"
        res = await self._run(
            ["/bin/sh", "-c", _WRITE_SH, "sh", full],
            self._limits(_HELPER_WALL_S, 64 << 10),
            data,
            None,
        )
        _raise_for_helper(res, file)


def _too_large() -> OutputLimitExceededError:
    return OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)


def _raise_for_helper(res: OurResult, file: str) -> None:
    """Map a file helper's end to the exception Inspect expects (nothing when it worked)."""
    if res.ok:
        return
    why = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.status.value
    code = res.exit_code
    if code == _IS_DIR:
        raise IsADirectoryError(21, "Is a directory", file)
    if code == _MISSING:
        raise FileNotFoundError(2, "No such file or directory", file)
    if code in (_NOT_REGULAR, _DENIED):
        raise PermissionError(13, f"Permission denied ({why})", file)
    if res.status is ExecStatus.WALL_TIMEOUT:
        raise TimeoutError(f"file operation on {file!r} timed out in the sandbox")
    raise SandboxUnavailableError(f"file operation on {file!r} failed in the sandbox: {why}")


def _exec_denied(res: OurResult, cmd: list[str]) -> bool:
    """The command could not be executed for lack of permission: our init (or bwrap,
    without our init) reported it as its only output, with code 126. A program can print
    the same line and exit 126; it then gets a PermissionError instead of a result, which
    decides nothing (no verdict is read from an Inspect exec of ours)."""
    if res.exit_code != 126 or res.stdout:
        return False
    line = res.stderr.strip()
    return "\n" not in line and line in (
        f"sandbox-init: execvp {cmd[0]}: Permission denied",
        f"bwrap: execvp {cmd[0]}: Permission denied",
    )


_LIMIT_NOTES = {
    ExecStatus.MEMORY_LIMIT: "killed at the memory limit",
    ExecStatus.CPU_LIMIT: "killed at the CPU time limit",
    ExecStatus.FILE_SIZE_LIMIT: "a file reached the size limit",
    ExecStatus.PIDS_LIMIT: "reached the process limit",
}


def _to_inspect(res: OurResult) -> BwrapExecResult:
    if res.exit_code is not None:
        code = res.exit_code
    elif res.signal is not None:
        code = 128 + res.signal  # as a shell reports it (Inspect's checks expect 143)
    else:
        code = 1
    stderr = res.stderr
    note = _LIMIT_NOTES.get(res.status)
    if note:  # say why to whoever reads the output (a model); the status says it to code
        stderr += f"\n[sandbox: {note} ({res.status.value})]\n"
    return BwrapExecResult(
        success=res.status is ExecStatus.OK,
        returncode=code,
        stdout=res.stdout,
        stderr=stderr,
        sandbox_status=res.status.value,
    )


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SampleSandboxEnvironment):
    """Inspect's sandbox `bwrap`: our bubblewrap backend."""

    NAME = "bwrap"

    def _backend(self, tmp_dir: str) -> Sandbox:
        return _CwdBwrap(
            extra_ro_binds=self.config.extra_ro_binds,
            extra_rw_binds=((tmp_dir, TMP),),
            run_dir_mb=self.config.run_dir_mb,
        )
