"""The HumanEval checker's files, kept where candidate code cannot change them.

Everything the checker runs lives in a cache directory that sandboxes see read-only
(``open_sandbox(..., extra_ro_binds=(root,))``): the static guard built from he_guard.c, the
Python runners (rpc_trusted.py, rpc_candidate.py, rpc_codec.py and tagging.py, copied), and
one compiled checker per C/C++ problem. The root is a directory under the system temp
directory (the sandbox uid must be able to traverse it for the bind) that must be ours and
writable by nobody else. Entries are named by the hash of what went into them, built in a
temporary directory and renamed into place, so concurrent scorers never see half an entry.

The C/C++ checker is compiled from the user's problem file (prompt and test), so it is built
inside a sandbox of its own, never with candidate code, then copied here execute-only (0711):
when we run as root the sandbox uid can run it but not read it, so a candidate cannot pull
the test's expected values out of the binary.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from codegen_eval import tagging
from codegen_eval.trusted_cache import (
    SHARED_C_DIR,
    TrustedBuildError,
    digest,
    entry,
    gcc_id,
    run_checked,
)
from codegen_eval.trusted_cache import cache_root as _cache_root

__all__ = [
    "C_HEADERS",
    "PCH_FLAGS",
    "PythonHarness",
    "TrustedBuildError",
    "cache_root",
    "candidate_pch",
    "compiled_checker",
    "header_text",
    "python_harness",
]

HERE = Path(__file__).parent
HARNESS = HERE / "harness"
CACHE_ENV = "CODEGEN_HUMANEVAL_CACHE"
PY_FILES = ("rpc_trusted.py", "rpc_candidate.py", "rpc_codec.py")
C_HEADERS = ("he_core.h", "he_rpc.hpp", "siphash.h")


class _BuildFailed(Exception):
    """A build from the user's problem file failed (the scorer falls back)."""


@dataclass(frozen=True, slots=True)
class PythonHarness:
    root: Path  # bind this read-only into the sandbox
    guard: Path
    trusted: Path  # rpc_trusted.py
    candidate: Path  # rpc_candidate.py


def cache_root() -> Path:
    return _cache_root("codegen-lab-he", CACHE_ENV)


def header_text(name: str) -> str:
    return ((SHARED_C_DIR if name == "siphash.h" else HARNESS) / name).read_text()


async def _entry(name: str, build: Callable[[Path], Awaitable[dict[str, int]]]) -> Path:
    return await entry(cache_root(), name, build)


async def python_harness() -> PythonHarness:
    """The guard and the Python runners, built/copied once per version of their sources."""
    sources = [HARNESS / "he_guard.c", *(HERE / f for f in PY_FILES), Path(tagging.__file__)]
    key = digest(
        gcc_id().encode(),
        (SHARED_C_DIR / "confine.h").read_bytes(),
        *(p.read_bytes() for p in sources),
    )

    async def build(out: Path) -> dict[str, int]:
        await run_checked(
            ["gcc", "-O2", "-static", f"-I{SHARED_C_DIR}", str(HARNESS / "he_guard.c"),
             "-o", "he_guard"],
            cwd=out,
        )  # fmt: skip
        for p in sources[1:]:
            shutil.copyfile(p, out / p.name)
        return {"he_guard": 0o755}

    root = await _entry(f"py-{key}", build)
    return PythonHarness(
        root=cache_root(),
        guard=root / "he_guard",
        trusted=root / "rpc_trusted.py",
        candidate=root / "rpc_candidate.py",
    )


def _backend(backend: str | None) -> bytes:
    """Builds made in one backend's sandbox run in that backend (its compiler, its libs): the
    one `open_sandbox(backend)` opens here, so the cache key names what was really used."""
    from sandboxes import current_backend

    return (backend or current_backend()).encode()


_failed: dict[str, str] = {}  # checker builds that failed in this process: key -> reason
PCH_FLAGS = ["-std=c++17", "-O2", "-DHE_CANDIDATE=1"]


async def candidate_pch(backend: str | None) -> Path | None:
    """he_rpc.hpp precompiled for the candidate's build (its many standard headers cost
    ~0.5 s per sample otherwise), or None where it does not build. Compiled in a sandbox so
    that it matches the sandbox's compiler; g++ ignores a stale one and reads the text."""
    from sandboxes import Limits, open_sandbox

    key = digest(
        b"pch", _backend(backend), gcc_id().encode(), " ".join(PCH_FLAGS).encode(),
        *(header_text(h).encode() for h in C_HEADERS),
    )  # fmt: skip
    if key in _failed:
        return None

    async def build(out: Path) -> dict[str, int]:
        async with open_sandbox(backend) as sb:
            r = await sb.exec(
                ["g++", *PCH_FLAGS, "-x", "c++-header", "he_rpc.hpp", "-o", "he_rpc.hpp.gch"],
                files={h: header_text(h) for h in C_HEADERS},
                limits=Limits(wall_s=120, memory_mb=2048),
            )
            if not r.ok:
                raise _BuildFailed(r.stderr[-1500:] or r.status)
            (out / "he_rpc.hpp.gch").write_bytes(await sb.read_file("he_rpc.hpp.gch"))
        for h in C_HEADERS:
            (out / h).write_text(header_text(h))
        return {}

    try:
        return await _entry(f"pch-{key}", build) / "he_rpc.hpp"
    except _BuildFailed as exc:
        _failed[key] = str(exc)
        return None


async def compiled_checker(
    source: str, lang: str, flags: list[str], libs: list[str], backend: str | None
) -> tuple[Path | None, str]:
    """(path of the compiled checker, "") or (None, why it could not be built). Built in a
    sandbox of its own from the problem's prompt and test and our headers, never from
    candidate code."""
    from sandboxes import Limits, open_sandbox

    cc, src = ("gcc", "checker.c") if lang == "c" else ("g++", "checker.cpp")
    key = digest(
        lang.encode(), source.encode(), " ".join(flags + libs).encode(), _backend(backend),
        gcc_id().encode(),
        *(header_text(h).encode() for h in C_HEADERS),
    )  # fmt: skip
    if key in _failed:
        return None, _failed[key]

    async def build(out: Path) -> dict[str, int]:
        files = {src: source, **{h: header_text(h) for h in C_HEADERS}}
        async with open_sandbox(backend) as sb:
            r = await sb.exec(
                [cc, *flags, "-o", "he_checker", src, *libs],
                files=files,
                limits=Limits(wall_s=120, memory_mb=2048),
            )
            if r.status == "nonzero_exit":  # the problem's code: fall back for it
                raise _BuildFailed(r.stderr[-1500:])
            if not r.ok:  # a limit hit while building is no reason to trust less
                raise TrustedBuildError(f"building the checker: {r.status}\n{r.stderr[-500:]}")
            (out / "he_checker").write_bytes(await sb.read_file("he_checker"))
        return {"he_checker": 0o711}

    try:
        root = await _entry(f"cx-{key}", build)
    except _BuildFailed as exc:
        _failed[key] = f"the checker does not build: {exc}"
        return None, _failed[key]
    return root / "he_checker", ""
