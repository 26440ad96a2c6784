"""The trusted side's binaries: the host of each (problem, family), the guard and the
no-dump preload library, compiled from our sources only (never with candidate code) into a
cache directory that sandboxes see read-only (``Sandbox(extra_ro_binds=...)``), so a payload
can neither replace them between two runs nor plant anything next to them.

The cache lives under the system temp directory (the sandbox uid must be able to traverse
it for the bind), in a per-user directory that must be ours and not writable by anyone else.
Entries are keyed by the hash of their sources, flags and compiler version, built into a
temporary directory and renamed into place, so concurrent scorers never see half a build.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HARNESS_DIR = Path(__file__).parent / "harness"
PROBLEMS_DIR = Path(__file__).parent / "problems"
CACHE_ENV = "CODEGEN_HPCK_CACHE"
FAMILIES = ("shared", "mpi", "cuda")

# Sources each build depends on (relative to the harness or problem directory).
_HOST_SOURCES = ("host_main.c", "hpck.h", "hpck_proto.h", "siphash.h")
_GUARD_SOURCES = ("guard.c", "hpck_proto.h", "nodump.c")
_PROBLEM_HOST_SOURCES = ("problem.h", "reference.c")
_BASE_SOURCES = ("guest_main.c", "hpck.h", "hpck_proto.h")
_PROBLEM_BASE_SOURCES = ("problem.h", "call.c", "serial.c")


class TrustedBuildError(RuntimeError):
    """Our own harness failed to build: a broken toolchain or a bug of ours, never the
    candidate's doing."""


@dataclass(frozen=True, slots=True)
class TrustedBinaries:
    root: Path  # bind this read-only into the sandbox
    host: Path
    guard: Path
    nodump: Path
    base: Path  # our sequential reference built as a guest: the baseline every speedup divides


def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    root = Path(env) if env else Path(tempfile.gettempdir()) / f"codegen-lab-hpck-{os.geteuid()}"
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise TrustedBuildError(
            f"{root} must be a directory owned by uid {os.geteuid()} and writable only by it "
            f"(set ${CACHE_ENV} to another place)"
        )
    return root


@cache
def _compiler_id() -> str:
    import subprocess

    try:
        out = subprocess.run(
            ["gcc", "--version"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise TrustedBuildError(f"gcc is needed to build the hpc-kernels harness: {exc}") from exc
    return out.stdout.splitlines()[0] if out.stdout else "gcc"


def _digest(parts: list[tuple[Path, str]], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for base, name in parts:
        h.update(name.encode() + b"\0" + (base / name).read_bytes() + b"\0")
    return h.hexdigest()[:20]


async def _run(cmd: list[str], cwd: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *cmd, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise TrustedBuildError(f"{' '.join(cmd)} failed:\n{out.decode(errors='replace')[-2000:]}")


_locks: dict[str, asyncio.Lock] = {}


def _publish(tmp: Path, final: Path) -> None:
    """Make a finished build readable by the sandbox uid and move it into place."""
    (tmp / ".complete").write_text("")
    for p in tmp.iterdir():
        p.chmod(0o755 if os.access(p, os.X_OK) else 0o644)
    tmp.chmod(0o755)
    try:
        os.rename(tmp, final)
    except OSError:  # another process finished the same build first
        if not (final / ".complete").exists():
            raise


async def _build_once(name: str, build: Callable[[Path], Awaitable[None]]) -> Path:
    """The cache entry `name`, built by `build(tmpdir)` the first time."""
    root = cache_root()
    final = root / name
    done = final / ".complete"
    if done.exists():
        return final
    async with _locks.setdefault(name, asyncio.Lock()):
        if done.exists():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        try:
            await build(tmp)
            _publish(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful rename
    return final


async def trusted_binaries(problem: str, family: str) -> TrustedBinaries:
    """Build (once) and return the trusted binaries for `problem` in `family`."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}")
    pdir = PROBLEMS_DIR / problem
    cc = _compiler_id()
    guard_key = _digest([(HARNESS_DIR, s) for s in _GUARD_SOURCES], cc)
    host_key = _digest(
        [(HARNESS_DIR, s) for s in _HOST_SOURCES] + [(pdir, s) for s in _PROBLEM_HOST_SOURCES],
        f"{cc}|{family}",
    )

    async def build_guard(out: Path) -> None:
        inc = f"-I{HARNESS_DIR}"
        await _run(
            ["gcc", "-O2", "-static", inc, str(HARNESS_DIR / "guard.c"), "-o", "hpck_guard"],
            out,
        )
        await _run(
            [
                "gcc",
                "-O2",
                "-shared",
                "-fPIC",
                str(HARNESS_DIR / "nodump.c"),
                "-o",
                "hpck_nodump.so",
            ],
            out,
        )

    async def build_host(out: Path) -> None:
        await _run(
            [
                "gcc", "-O2", "-std=gnu11", "-DHPCK_HOST", f"-DHPCK_FAMILY_{family.upper()}",
                f"-I{HARNESS_DIR}", f"-I{pdir}",
                str(HARNESS_DIR / "host_main.c"), str(pdir / "reference.c"),
                "-o", "hpck_host", "-lm",
            ],
            out,
        )  # fmt: skip

    base_key = _digest(
        [(HARNESS_DIR, s) for s in _BASE_SOURCES] + [(pdir, s) for s in _PROBLEM_BASE_SOURCES],
        cc,
    )

    async def build_base(out: Path) -> None:
        # the shared-family guest: the families' layouts and params agree at one rank, so
        # the same baseline serves serial, OpenMP, MPI (np=1 layout) and CUDA hosts
        await _run(
            [
                "gcc", "-O2", "-std=gnu11", "-DHPCK_GUEST", "-DHPCK_FAMILY_SHARED",
                f"-I{HARNESS_DIR}", f"-I{pdir}",
                str(HARNESS_DIR / "guest_main.c"), str(pdir / "call.c"), str(pdir / "serial.c"),
                "-o", "hpck_base", "-lm",
            ],
            out,
        )  # fmt: skip

    guard_dir = await _build_once(f"guard-{guard_key}", build_guard)
    base_dir = await _build_once(f"base-{problem}-{base_key}", build_base)
    host_dir = await _build_once(f"host-{problem}-{family}-{host_key}", build_host)
    with contextlib.suppress(OSError):  # mtime = last use
        os.utime(host_dir)
    return TrustedBinaries(
        root=cache_root(),
        host=host_dir / "hpck_host",
        guard=guard_dir / "hpck_guard",
        nodump=guard_dir / "hpck_nodump.so",
        base=base_dir / "hpck_base",
    )


def guest_files(problem: str, variant: str) -> dict[str, str]:
    """The sources the candidate's build needs besides its own file (paths in the sandbox).
    Never the host side (reference.c): a candidate could #include it at compile time."""
    pdir = PROBLEMS_DIR / problem
    ext = "cu" if variant == "cuda" else "c"
    return {
        "p/hpck.h": (HARNESS_DIR / "hpck.h").read_text(),
        "p/hpck_proto.h": (HARNESS_DIR / "hpck_proto.h").read_text(),
        f"p/guest_main.{ext}": (HARNESS_DIR / "guest_main.c").read_text(),
        "p/problem.h": (pdir / "problem.h").read_text(),
        f"p/call.{ext}": (pdir / "call.c").read_text(),
    }
