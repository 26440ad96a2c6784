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

from dataclasses import dataclass
from pathlib import Path

from codegen_eval.trusted_cache import (
    SHARED_C_DIR,
    TrustedBuildError,
    cache_root,
    digest,
    entry,
    gcc_id,
)
from codegen_eval.trusted_cache import run_checked as _run

__all__ = ["TrustedBinaries", "TrustedBuildError", "guest_files", "trusted_binaries"]

HARNESS_DIR = Path(__file__).parent / "harness"
PROBLEMS_DIR = Path(__file__).parent / "problems"
CACHE_ENV = "CODEGEN_HPCK_CACHE"
FAMILIES = ("shared", "mpi", "cuda")

# Sources each build depends on (relative to the harness or problem directory).
_HOST_SOURCES = ("host_main.c", "hpck.h", "hpck_proto.h", "execctl.h", "census.h")
_GUARD_SOURCES = ("guard.c", "hpck_proto.h", "nodump.c", "netconfine.h")
_SHARED_C = ("confine.h", "siphash.h")
_PROBLEM_HOST_SOURCES = ("problem.h", "reference.c")
_BASE_SOURCES = ("guest_main.c", "hpck.h", "hpck_proto.h")
_PROBLEM_BASE_SOURCES = ("problem.h", "call.c", "serial.c")


@dataclass(frozen=True, slots=True)
class TrustedBinaries:
    root: Path  # bind this read-only into the sandbox
    host: Path
    guard: Path
    nodump: Path
    base: Path  # our sequential reference built as a guest: the baseline every speedup divides


def _root() -> Path:
    return cache_root("codegen-lab-hpck", CACHE_ENV)


def _key(parts: list[tuple[Path, str]], extra: str) -> str:
    return digest(
        extra.encode(), *(name.encode() + (base / name).read_bytes() for base, name in parts)
    )


async def trusted_binaries(problem: str, family: str) -> TrustedBinaries:
    """Build (once) and return the trusted binaries for `problem` in `family`."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}")
    pdir = PROBLEMS_DIR / problem
    cc = gcc_id()
    shared = [(SHARED_C_DIR, s) for s in _SHARED_C]
    guard_key = _key([(HARNESS_DIR, s) for s in _GUARD_SOURCES] + shared, cc)
    host_key = _key(
        [(HARNESS_DIR, s) for s in _HOST_SOURCES]
        + shared
        + [(pdir, s) for s in _PROBLEM_HOST_SOURCES],
        f"{cc}|{family}",
    )

    async def build_guard(out: Path) -> None:
        inc = f"-I{SHARED_C_DIR}"
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
                f"-I{HARNESS_DIR}", f"-I{SHARED_C_DIR}", f"-I{pdir}",
                str(HARNESS_DIR / "host_main.c"), str(pdir / "reference.c"),
                "-o", "hpck_host", "-lm",
            ],
            out,
        )  # fmt: skip

    base_key = _key(
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

    root = _root()
    guard_dir = await entry(root, f"guard-{guard_key}", build_guard)
    base_dir = await entry(root, f"base-{problem}-{base_key}", build_base)
    host_dir = await entry(root, f"host-{problem}-{family}-{host_key}", build_host)
    return TrustedBinaries(
        root=root,
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
