"""Builders: turn (sources, candidate patch) into a bootable kernel and/or a module.

- `ModuleBuilder`: an out-of-tree module against Debian's installed linux-headers (tier 0),
  or against a `KernelTree`'s build directory (tier 1 modules).
- `KernelTree`: Debian's linux-source-6.1 unpacked once into the cache, built per config
  fragment (tinyconfig + fragment) into its own O= directory; a patch is applied, built
  incrementally and reverted.
- `GitKernelBuilder`: a user's own Linux git checkout at a bug's commit (git worktree, the
  bug's config, olddefconfig), for real kBench records on larger machines.

A patch that does not apply and a build that fails are results, never exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from sandboxes.qemu import extract_vmlinux

T = TypeVar("T")


class BuildStatus(StrEnum):
    OK = "ok"
    PATCH_APPLY_FAILED = "patch_apply_failed"
    BUILD_FAILED = "build_failed"


@dataclass(slots=True)
class BuildResult:
    status: BuildStatus
    log: str = ""
    artifacts: dict[str, Path] = field(default_factory=dict)  # kernel, module, repro
    wall_s: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.status is BuildStatus.OK

    @property
    def errors(self) -> str:
        """Compiler/linker error lines, the part worth showing to an agent."""
        keep = [
            ln
            for ln in self.log.splitlines()
            if re.search(r"\b(error|Error \d|undefined reference|FAILED|hunk)\b", ln)
        ]
        return "\n".join(keep[:60]) or self.log[-3000:]


def cache_root() -> Path:
    env = os.environ.get("KERNELGYM_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codegen-lab" / "kernelgym"


def jobs() -> int:
    return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# The build processes started under one `in_build_thread` call (a contextvar: asyncio.to_thread
# copies the context into its worker thread, so the set is shared with the coroutine).
_BUILD_PROCS: contextvars.ContextVar[set[subprocess.Popen[str]] | None] = contextvars.ContextVar(
    "kgym_build_procs", default=None
)


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _run(cmd: list[str], cwd: Path | str, timeout: float = 3600) -> tuple[int, str]:
    """Run a build command in a process group of its own, so that a timeout or a cancelled
    build (see in_build_thread) kills make and every compiler it started, not make alone."""
    procs = _BUILD_PROCS.get()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace", start_new_session=True,
    )  # fmt: skip
    if procs is not None:
        procs.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        out, _ = proc.communicate()
        return 124, f"{out or ''}\ntimeout after {timeout:.0f}s: {' '.join(cmd)}"
    except BaseException:  # Ctrl-C in this thread: the group does not get the terminal's
        _kill_tree(proc)
        proc.wait()
        raise
    finally:
        if procs is not None:
            procs.discard(proc)
    return proc.returncode, out


async def in_build_thread(fn: Callable[..., T], *args: Any) -> T:
    """`await asyncio.to_thread(fn, *args)` for a build: when the awaiting task is cancelled
    (Ctrl-C, a timeout), the build's processes are killed, so the worker thread returns at
    once instead of holding the interpreter's exit until make finishes (minutes for a
    kernel). A build its own process group does not see the terminal's Ctrl-C by itself."""
    procs: set[subprocess.Popen[str]] = set()
    token = _BUILD_PROCS.set(procs)
    try:
        return await asyncio.to_thread(fn, *args)
    except asyncio.CancelledError:
        for proc in list(procs):
            _kill_tree(proc)
        raise
    finally:
        _BUILD_PROCS.reset(token)


def apply_patch(tree: Path, patch_text: str, *, reverse: bool = False) -> tuple[bool, str]:
    """`patch -p1` in `tree`, all or nothing: a dry run first so a failed hunk leaves no trace."""
    if not patch_text.strip():
        return True, ""
    base = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch"]
    if reverse:
        base = ["patch", "-p1", "-R", "--batch", "--no-backup-if-mismatch"]
    for extra in (["--dry-run"], []):
        try:
            proc = subprocess.run(
                base + extra,
                cwd=tree,
                input=patch_text,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False, "patch timed out"
        if proc.returncode != 0:
            return False, proc.stdout + proc.stderr
    return True, proc.stdout


def touched_files(patch_text: str) -> list[str]:
    files = re.findall(r"^\+\+\+ b/(\S+)", patch_text, flags=re.M)
    return list(dict.fromkeys(files))


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- Debian's installed kernel


@dataclass(frozen=True, slots=True)
class DebianKernel:
    release: str
    vmlinuz: Path
    headers: Path

    def vmlinux(self) -> Path:
        """The uncompressed kernel (boots ~2x faster under TCG), cut out once and cached."""
        return extract_vmlinux(self.vmlinuz, cache_root() / "debian" / f"vmlinux-{self.release}")


def debian_kernel() -> DebianKernel:
    """The installed Debian image that also has matching headers and modules. Never uname -r:
    the host may run a different kernel than the one we boot."""
    candidates = sorted(Path("/boot").glob("vmlinuz-*"), key=lambda p: p.name, reverse=True)
    for vmlinuz in candidates:
        release = vmlinuz.name.removeprefix("vmlinuz-")
        headers = Path("/usr/src") / f"linux-headers-{release}"
        if headers.is_dir() and Path("/lib/modules", release).is_dir():
            return DebianKernel(release, vmlinuz, headers)
    raise FileNotFoundError(
        "no /boot/vmlinuz-* with matching /usr/src/linux-headers-* and /lib/modules/*: "
        "apt-get install linux-image-amd64 linux-headers-amd64"
    )


# ---------------------------------------------------------------- modules and reproducers


class ModuleBuilder:
    """Build an out-of-tree module (a directory with a Kbuild Makefile) against `kdir`
    (headers dir, or a kernel source dir plus `obj_dir` for O=). Results are cached by
    content so that resetting a bug twice does not rebuild."""

    def __init__(self, kdir: Path, obj_dir: Path | None = None, key: str = "") -> None:
        self.kdir, self.obj_dir, self.key = kdir, obj_dir, key or str(kdir)

    def build(self, src: Path, patch_text: str = "", *, use_cache: bool = True) -> BuildResult:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kgym-mod-") as tmp:
            work = Path(tmp) / "src"
            shutil.copytree(src, work)
            ok, out = apply_patch(work, patch_text)
            if not ok:
                return BuildResult(
                    BuildStatus.PATCH_APPLY_FAILED, out, wall_s=time.monotonic() - start
                )
            files = sorted(p for p in work.rglob("*") if p.is_file())
            key = _digest(
                self.key,
                *(f"{p.relative_to(work)}" for p in files),
                *(p.read_bytes() for p in files),
            )
            cached_dir = cache_root() / "modules" / key
            if use_cache and cached_dir.is_dir() and any(cached_dir.glob("*.ko")):
                kos = sorted(cached_dir.glob("*.ko"))
                return BuildResult(
                    BuildStatus.OK,
                    (cached_dir / "build.log").read_text(errors="replace"),
                    {"module": kos[0]},
                    time.monotonic() - start,
                    cached=True,
                )
            cmd = ["make", "-C", str(self.kdir), f"M={work}", f"-j{jobs()}", "modules"]
            if self.obj_dir is not None:
                cmd.insert(3, f"O={self.obj_dir}")
            rc, log = _run(cmd, work, timeout=900)
            kos = sorted(work.glob("*.ko"))
            if rc != 0 or not kos:
                return BuildResult(BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start)
            cached_dir.mkdir(parents=True, exist_ok=True)
            for ko in kos:
                shutil.copy2(ko, cached_dir / ko.name)
            (cached_dir / "build.log").write_text(log)
            return BuildResult(
                BuildStatus.OK,
                log,
                {"module": cached_dir / kos[0].name},
                time.monotonic() - start,
            )


# Headers every reproducer may include (the bundled ones share kgym_repro.h); their contents
# are part of each reproducer's cache key.
REPRO_INCLUDE_DIR = Path(__file__).parent / "bugs" / "include"


def build_reproducer(source: str, *, use_cache: bool = True) -> BuildResult:
    """A static C reproducer (static: the initramfs has no libc)."""
    start = time.monotonic()
    headers = sorted(REPRO_INCLUDE_DIR.glob("*.h"))
    key = _digest(source, *(h.name for h in headers), *(h.read_bytes() for h in headers))
    out_dir = cache_root() / "repro" / key
    exe = out_dir / "repro"
    if use_cache and exe.exists():
        return BuildResult(BuildStatus.OK, "", {"repro": exe}, time.monotonic() - start, True)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "repro.c").write_text(source)
    rc, log = _run(
        ["gcc", "-static", "-O1", "-pthread", "-I", str(REPRO_INCLUDE_DIR), "-o", "repro.tmp",
         "repro.c"], out_dir, 300,
    )  # fmt: skip
    if rc != 0:
        return BuildResult(BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start)
    (out_dir / "repro.tmp").replace(exe)
    return BuildResult(BuildStatus.OK, log, {"repro": exe}, time.monotonic() - start)


# ---------------------------------------------------------------- linux-source-6.1 trees


def _ensure_source(tarball: Path, dest: Path) -> Path:
    """Unpack Debian's linux-source tarball once (atomic rename, so a killed run retries)."""
    if (dest / "Makefile").exists():
        return dest
    with file_lock(dest.parent / ".extract.lock"):
        if (dest / "Makefile").exists():
            return dest
        tmp = dest.parent / f"tmp-extract-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(tarball) as tf:
            tf.extractall(tmp, filter="fully_trusted")
        (top,) = list(tmp.iterdir())
        top.rename(dest)
        tmp.rmdir()
    return dest


class KernelTree:
    """A cached kernel tree built from `tarball` with a config fragment (tinyconfig base)."""

    def __init__(
        self,
        fragment: Path,
        *,
        tarball: Path = Path("/usr/src/linux-source-6.1.tar.xz"),
        root: Path | None = None,
    ) -> None:
        self.root = root or cache_root()
        self.tarball = tarball
        self.fragment = fragment
        name = tarball.name.split(".tar")[0]
        self.source = self.root / "src" / name
        self.build_dir = (
            self.root / "build" / f"{name}-{fragment.stem}-{_digest(fragment.read_text())}"
        )
        self._lock = self.build_dir.parent / f"{self.build_dir.name}.lock"

    @property
    def image(self) -> Path:
        # bzImage, not vmlinux: a KASAN kernel entered through PVH triple-faults at once
        # (measured), while the gzip bzImage reaches /init in ~2 s under TCG.
        return self.build_dir / "arch" / "x86" / "boot" / "bzImage"

    @property
    def pristine(self) -> Path:
        """A copy of the unpatched image: the build dir's own one follows the last patch."""
        return self.root / "kernels" / self.build_dir.name / "pristine" / "bzImage"

    def is_built(self) -> bool:
        return (self.build_dir / ".kgym-built").exists()

    def _configure(self) -> tuple[int, str]:
        self.build_dir.mkdir(parents=True, exist_ok=True)
        o = f"O={self.build_dir}"
        logs = []
        for cmd in (
            ["make", o, "tinyconfig"],
            [
                "scripts/kconfig/merge_config.sh",
                "-m",
                "-O",
                str(self.build_dir),
                str(self.build_dir / ".config"),
                str(self.fragment),
            ],
            ["make", o, "olddefconfig"],
        ):
            rc, log = _run(cmd, self.source, 600)
            logs.append(log)
            if rc != 0:
                return rc, "\n".join(logs)
        return 0, "\n".join(logs)

    def _make(self) -> tuple[int, str]:
        return _run(
            ["make", f"O={self.build_dir}", f"-j{jobs()}", "bzImage", "modules"],
            self.source,
            7200,
        )

    def ensure_built(self) -> BuildResult:
        """Build once per (tarball, fragment); later calls return at once."""
        start = time.monotonic()
        _ensure_source(self.tarball, self.source)
        with file_lock(self._lock):
            if self.is_built() and self.pristine.exists():
                return BuildResult(BuildStatus.OK, "", {"kernel": self.pristine}, 0.0, True)
            rc, log = self._configure()
            if rc == 0:
                rc, more = self._make()
                log += more
            if rc != 0 or not self.image.exists():
                return BuildResult(BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start)
            self.pristine.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.image, self.pristine)
            (self.build_dir / ".kgym-built").write_text(time.ctime())
            return BuildResult(
                BuildStatus.OK, log, {"kernel": self.pristine}, time.monotonic() - start
            )

    def build_patched(self, patches: list[str] | str, *, use_cache: bool = True) -> BuildResult:
        """Apply `patches` in order (e.g. an injected bug, then a candidate fix), build
        incrementally, keep a copy of vmlinux (cached by the patches), revert in reverse order.
        The tree is locked for the whole cycle: one patched build at a time. Reverting changes
        mtimes, so the next build recompiles those files (seconds)."""
        todo = [p for p in ([patches] if isinstance(patches, str) else patches) if p.strip()]
        base = self.ensure_built()
        if not base.ok or not todo:
            return base
        start = time.monotonic()
        cached = self.root / "kernels" / self.build_dir.name / _digest(*todo) / "bzImage"
        if use_cache and cached.exists():
            return BuildResult(BuildStatus.OK, "", {"kernel": cached}, 0.0, True)
        with file_lock(self._lock):
            applied: list[str] = []
            try:
                for patch in todo:
                    ok, out = apply_patch(self.source, patch)
                    if not ok:
                        return BuildResult(
                            BuildStatus.PATCH_APPLY_FAILED, out, wall_s=time.monotonic() - start
                        )
                    applied.append(patch)
                rc, log = self._make()
                if rc != 0:
                    return BuildResult(
                        BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start
                    )
                cached.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.image, cached)
                return BuildResult(
                    BuildStatus.OK, log, {"kernel": cached}, time.monotonic() - start
                )
            finally:
                for patch in reversed(applied):
                    reverted, rout = apply_patch(self.source, patch, reverse=True)
                    if not reverted:
                        raise RuntimeError(f"could not revert a patch in {self.source}: {rout}")

    def module_builder(self) -> ModuleBuilder:
        return ModuleBuilder(self.source, self.build_dir, key=str(self.build_dir))


# ---------------------------------------------------------------- a user's Linux git checkout


class GitKernelBuilder:
    """Build a user's Linux checkout at a commit with a given config, in a git worktree so
    the user's own working tree is never touched. For real kBench records (large machines).

    Objects go to an out-of-tree build directory per (worktree, config) that persists in the
    cache: the first build of a commit is a full kernel build, every candidate after it only
    recompiles what its patch touched (the worktree is reset with `git checkout --force`,
    which rewrites just the files that differ, so make sees only those as new)."""

    def __init__(
        self,
        repo: Path,
        *,
        root: Path | None = None,
        target: str = "bzImage",
        image: str | None = None,
    ) -> None:
        self.repo, self.target = Path(repo), target
        # Where make leaves the bootable file, relative to the build directory.
        self.image = image or ("arch/x86/boot/bzImage" if target == "bzImage" else target)
        self.root = root or cache_root() / "worktrees"

    def worktree_name(self, commit: str) -> str:
        return f"{self.repo.name}-{commit[:12]}"

    def _lock(self, commit: str) -> Path:
        # Not with_suffix(".lock"): the names have dots ("linux-6.1-...").
        return self.root / f"{self.worktree_name(commit)}.lock"

    def worktree(self, commit: str) -> Path:
        """The worktree at `commit`, added on first use (under the worktree's lock)."""
        with file_lock(self._lock(commit)):
            return self._worktree(commit)

    def _worktree(self, commit: str) -> Path:
        wt = self.root / self.worktree_name(commit)
        if (wt / ".git").exists() and _run(["git", "rev-parse", "-q", "--verify", "HEAD"], wt)[0]:
            # Left over from a repository that was since removed or recreated: start afresh.
            shutil.rmtree(wt)
            _run(["git", "-C", str(self.repo), "worktree", "prune"], self.repo, 600)
        if not (wt / ".git").exists():
            self.root.mkdir(parents=True, exist_ok=True)
            rc, log = _run(
                [
                    "git",
                    "-C",
                    str(self.repo),
                    "worktree",
                    "add",
                    "--detach",
                    "--force",
                    str(wt),
                    commit,
                ],
                self.repo,
                1800,
            )
            if rc != 0:
                raise RuntimeError(f"git worktree add failed: {log}")
        return wt

    def build_dir(self, commit: str, config: str) -> Path:
        return self.root / "build" / f"{self.worktree_name(commit)}-{_digest(config)}"

    def artifact_path(self, commit: str, config: str, patch_text: str) -> Path:
        key = f"{commit[:12]}-{_digest(self.target, config, patch_text)}"
        return self.root / "artifacts" / key / Path(self.image).name

    def _configure(self, wt: Path, out: Path, config: str) -> tuple[int, str]:
        """Write the bug's config and let olddefconfig fill in what this tree's Kconfig
        knows and the config does not; done once per build directory (a marker holds the
        digest), since rerunning it would touch include/config and rebuild more."""
        marker = out / ".kgym-config"
        if marker.exists() and marker.read_text() == _digest(config):
            return 0, ""
        out.mkdir(parents=True, exist_ok=True)
        (out / ".config").write_text(config)
        rc, log = _run(["make", f"O={out}", "olddefconfig"], wt, 600)
        if rc == 0:
            marker.write_text(_digest(config))
        return rc, log

    def build(
        self,
        commit: str,
        config: str,
        patch_text: str = "",
        *,
        use_cache: bool = True,
    ) -> BuildResult:
        start = time.monotonic()
        cached = self.artifact_path(commit, config, patch_text)
        if use_cache and cached.exists():
            return BuildResult(BuildStatus.OK, "", {"kernel": cached}, 0.0, cached=True)
        out = self.build_dir(commit, config)
        # One candidate at a time per worktree: they share its files and build directory.
        with file_lock(self._lock(commit)):
            wt = self._worktree(commit)
            _run(["git", "checkout", "--force", "--detach", commit], wt, 600)
            # -x as well: an O= build refuses a source tree with a .config or objects in it.
            _run(["git", "clean", "-ffdxq"], wt, 600)
            ok, log = apply_patch(wt, patch_text)
            if not ok:
                return BuildResult(
                    BuildStatus.PATCH_APPLY_FAILED, log, wall_s=time.monotonic() - start
                )
            try:
                rc, log = self._configure(wt, out, config)
                if rc == 0:
                    rc, more = _run(["make", f"O={out}", f"-j{jobs()}", self.target], wt, 4 * 3600)
                    log += more
                artifact = out / self.image
                if rc != 0 or not artifact.exists():
                    return BuildResult(
                        BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start
                    )
                cached.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(artifact, cached)
                return BuildResult(
                    BuildStatus.OK, log, {"kernel": cached}, time.monotonic() - start
                )
            finally:
                # Leave the worktree at the pristine commit for the next candidate.
                _run(["git", "checkout", "--force", "--detach", commit], wt, 600)
                _run(["git", "clean", "-ffdq"], wt, 600)
