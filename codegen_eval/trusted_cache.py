"""Where trusted harness programs live: a per-user cache directory that sandboxes see
read-only (``open_sandbox(..., extra_ro_binds=(root,))``), so a candidate can neither replace
them between two runs nor plant anything next to them. Used by the hpc-kernels host and the
HumanEval checker.

The root is under the system temp directory (the sandbox uid must be able to traverse it for
the bind) and must be ours and writable by nobody else. Entries are named by the hash of what
went into them, built in a temporary directory and renamed into place, so concurrent scorers
never see half an entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from codegen_eval.errors import CodegenEvalError

__all__ = [
    "SHARED_C_DIR",
    "TrustedBuildError",
    "cache_root",
    "digest",
    "entry",
    "gcc_id",
    "run_checked",
]

# C headers every trusted guard includes (confine.h: seccomp + Landlock; siphash.h)
SHARED_C_DIR = Path(__file__).parent / "harness_c"


class TrustedBuildError(CodegenEvalError, RuntimeError):
    """Our own harness failed to build: a missing toolchain or a bug of ours, never the
    candidate's doing."""


def cache_root(prefix: str, env: str) -> Path:
    """$env, else <tmp>/<prefix>-<uid>; created 0755 and checked to be ours alone."""
    value = os.environ.get(env)
    root = Path(value) if value else Path(tempfile.gettempdir()) / f"{prefix}-{os.geteuid()}"
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise TrustedBuildError(
            f"{root} must be a directory owned by uid {os.geteuid()} and writable only by it "
            f"(set ${env} to another place)"
        )
    return root


@functools.cache
def gcc_id() -> str:
    """The host compiler's version line (part of every build key)."""
    try:
        out = subprocess.run(
            ["gcc", "--version"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise TrustedBuildError(f"gcc is needed to build the trusted harness: {exc}") from exc
    return out.stdout.splitlines()[0] if out.stdout else "gcc"


def digest(*parts: bytes) -> str:
    """A short key over length-prefixed parts (so no two part lists collide)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little") + p)
    return h.hexdigest()[:20]


async def run_checked(cmd: list[str], cwd: Path) -> None:
    """Run a build command of ours; TrustedBuildError with its output when it fails."""
    proc = await asyncio.create_subprocess_exec(
        *cmd, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise TrustedBuildError(f"{' '.join(cmd)} failed:\n{out.decode(errors='replace')[-2000:]}")


def _publish(tmp: Path, final: Path, modes: dict[str, int] | None) -> None:
    """Give the files their modes (executables 0755 by default, data 0644), then rename the
    finished entry into place."""
    for p in tmp.iterdir():
        default = 0o755 if os.access(p, os.X_OK) else 0o644
        p.chmod((modes or {}).get(p.name, default))
    (tmp / ".complete").write_text("")
    tmp.chmod(0o755)
    try:
        os.rename(tmp, final)
    except OSError:  # another process finished the same entry first
        if not (final / ".complete").exists():
            raise


_locks: dict[str, asyncio.Lock] = {}


async def entry(
    root: Path, name: str, build: Callable[[Path], Awaitable[dict[str, int] | None]]
) -> Path:
    """The cache entry `name` under `root`, made once by `build(tmpdir)`, which may return
    file modes by name."""
    final = root / name
    done = final / ".complete"
    if not done.exists():
        async with _locks.setdefault(str(final), asyncio.Lock()):
            if not done.exists():
                tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
                try:
                    _publish(tmp, final, await build(tmp))
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)  # gone after a successful rename
    with contextlib.suppress(OSError):  # mtime = last use
        os.utime(final)
    return final
