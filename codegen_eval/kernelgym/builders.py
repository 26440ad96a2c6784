"""Builders: turn (sources, candidate patch) into a bootable kernel and/or a module.

- `ModuleBuilder`: an out-of-tree module against Debian's installed linux-headers (tier 0),
  or against a `KernelTree`'s build directory (tier 1 modules). The candidate's patch is
  applied and make runs inside the bubblewrap sandbox (unprivileged uid, no network, only
  the headers visible): a module's Makefile is the candidate's to change, and make runs it.
- `KernelTree`: Debian's linux-source-6.1 unpacked once into the cache, built per config
  fragment (tinyconfig + fragment) into its own O= directory; a candidate's patches are
  applied to a private copy of the source and built incrementally in a copy of that
  directory, both in the sandbox (the shared tree and build directory are never written).
- `GitKernelBuilder`: a user's own Linux git checkout at a bug's commit (git worktree, the
  bug's config, olddefconfig), for real kBench records on larger machines.

A patch that does not apply and a build that fails are results, never exceptions. Every
candidate patch first passes `patch_screen.screen_patch` (C sources and headers only).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from sandboxes import Limits, open_sandbox
from sandboxes.qemu import extract_vmlinux

from .buildrun import (
    GYM_BACKEND,
    PATCH_CMD,
    apply_confined,
    candidate_build_dir,
    candidate_source,
    confined_shell,
    copy_out,
    exec_log,
    keep_objects,
    kept_objects,
    remove_tree,
    run_async,
    run_host,
    sandbox_can_read,
    seal_source,
)
from .patch_screen import screen_patch

T = TypeVar("T")
log = logging.getLogger(__name__)


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
    # Tree and kBench builds: (pristine object or None, candidate object) for each C file
    # the applied patches changed or added and the build compiled; kept with the image.
    changed_objects: list[tuple[Path | None, Path]] = field(default_factory=list)

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


ROOT_CACHE = Path("/var/cache/codegen-lab/kernelgym")


def cache_root() -> Path:
    """$KERNELGYM_CACHE, else ~/.cache/codegen-lab/kernelgym, and for root
    /var/cache/codegen-lab/kernelgym: the kernel trees must be readable by the sandbox's
    unprivileged uid, which cannot pass root's 0700 home (see confined_shell)."""
    env = os.environ.get("KERNELGYM_CACHE")
    if env:
        return Path(env)
    if os.geteuid() == 0 and not os.environ.get("XDG_CACHE_HOME"):
        return ROOT_CACHE
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


def apply_patch(tree: Path, patch_text: str, *, reverse: bool = False) -> tuple[bool, str]:
    """`patch -p1` in `tree`, all or nothing: a dry run first so a failed hunk leaves no trace."""
    if not patch_text.strip():
        return True, ""
    base = [*PATCH_CMD, "-R" if reverse else "--forward"]
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


# A module build in the sandbox: make and a handful of gcc processes, a .ko of a few MB.
MODULE_BUILD_LIMITS = Limits(
    wall_s=900, memory_mb=4096, pids=512, output_bytes=4 << 20, file_bytes=256 << 20,
    tmp_mb=512, nofile=1024,
)  # fmt: skip
PATCH_LIMITS = Limits(wall_s=120, memory_mb=512, pids=16, output_bytes=1 << 20)
# Applied inside the sandbox: all or nothing (a dry run first), never as an ed script.
_PATCH_SCRIPT = (
    f'set -e; cd src; for dry in --dry-run ""; do {shlex.join(PATCH_CMD)} --forward $dry '
    "-i ../candidate.patch; done"
)


class ModuleBuilder:
    """Build an out-of-tree module (a directory with a Kbuild Makefile) against `kdir`
    (headers dir, or a kernel source dir plus `obj_dir` for O=). Results are cached by
    content so that resetting a bug twice does not rebuild.

    The candidate's patch is applied and make runs in the bubblewrap sandbox, which sees
    `kdir`/`obj_dir` read-only and nothing else of the host. Where the sandbox's uid cannot
    read them (a cache under root's 0700 home), the build runs on the host, screened only,
    with a warning: point $KERNELGYM_CACHE at a world-traversable directory to avoid it."""

    def __init__(self, kdir: Path, obj_dir: Path | None = None, key: str = "") -> None:
        self.kdir, self.obj_dir, self.key = kdir, obj_dir, key or str(kdir)

    @property
    def confined(self) -> bool:
        return all(sandbox_can_read(p) for p in (self.kdir, self.obj_dir) if p is not None)

    def _make_cmd(self, module_dir: str) -> list[str]:
        cmd = ["make", "-C", str(self.kdir), f"M={module_dir}", f"-j{jobs()}", "modules"]
        if self.obj_dir is not None:
            cmd.insert(3, f"O={self.obj_dir}")
        return cmd

    def build(self, src: Path, patch_text: str = "", *, use_cache: bool = True) -> BuildResult:
        start = time.monotonic()
        refused = screen_patch(patch_text)
        if refused:
            return BuildResult(BuildStatus.PATCH_APPLY_FAILED, refused, wall_s=0.0)
        sources = {
            str(p.relative_to(src)): p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()
        }
        key = _digest(self.key, *sources, *sources.values(), patch_text.strip())
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
        if self.confined:
            status, log_text, modules = run_async(
                functools.partial(self._build_confined, sources, patch_text)
            )
        else:
            log.warning(
                "building a candidate module on the host, unconfined: the sandbox's uid "
                "cannot read %s (set $KERNELGYM_CACHE to a world-traversable directory)",
                self.kdir,
            )
            status, log_text, modules = self._build_on_host(sources, patch_text)
        if status is not BuildStatus.OK:
            return BuildResult(status, log_text, wall_s=time.monotonic() - start)
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=_mkdir(cache_root() / "modules")))
        for name, data in modules.items():
            (tmp / name).write_bytes(data)
        (tmp / "build.log").write_text(log_text)
        module = cached_dir / sorted(modules)[0]
        try:  # whole or not at all, for a concurrent reader of the cache
            tmp.rename(cached_dir)
        except OSError:
            if module.is_file():  # there already (same inputs): keep the one others may use
                shutil.rmtree(tmp, ignore_errors=True)
            else:  # a leftover without its module
                shutil.rmtree(cached_dir, ignore_errors=True)
                tmp.rename(cached_dir)
        return BuildResult(
            BuildStatus.OK,
            log_text,
            {"module": module},
            time.monotonic() - start,
        )

    async def _build_confined(
        self, sources: dict[str, bytes], patch_text: str
    ) -> tuple[BuildStatus, str, dict[str, bytes]]:
        binds = tuple(
            str(p.resolve())
            for p in (self.kdir, self.obj_dir)
            if p is not None and not str(p.resolve()).startswith("/usr/")
        )
        async with open_sandbox(GYM_BACKEND, extra_ro_binds=binds) as sb:
            for name, data in sources.items():
                await sb.write_file(f"src/{name}", data)
            if patch_text.strip():
                await sb.write_file("candidate.patch", patch_text)
                r = await sb.exec(["sh", "-c", _PATCH_SCRIPT], limits=PATCH_LIMITS)
                if not r.ok:
                    return BuildStatus.PATCH_APPLY_FAILED, exec_log(r), {}
            # M= must be the path inside the sandbox: the shell knows it as $PWD.
            cmd = " ".join(self._make_cmd('"$PWD/src"'))
            r = await sb.exec(["sh", "-c", cmd], limits=MODULE_BUILD_LIMITS)
            assert sb.run_dir is not None
            out = sb.run_dir / "src"  # the build could have swapped it for a symlink
            built = [] if out.is_symlink() else sorted(p.name for p in out.glob("*.ko"))
            if not r.ok or not built:
                return BuildStatus.BUILD_FAILED, exec_log(r), {}
            # read_file refuses symlinks and other non-regular files the build may have left.
            modules = {name: await sb.read_file(f"src/{name}") for name in built}
            return BuildStatus.OK, exec_log(r), modules

    def _build_on_host(
        self, sources: dict[str, bytes], patch_text: str
    ) -> tuple[BuildStatus, str, dict[str, bytes]]:
        with tempfile.TemporaryDirectory(prefix="kgym-mod-") as tmp:
            work = Path(tmp) / "src"
            for name, data in sources.items():
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                (work / name).write_bytes(data)
            ok, out = apply_patch(work, patch_text)
            if not ok:
                return BuildStatus.PATCH_APPLY_FAILED, out, {}
            rc, log_text = run_host(self._make_cmd(str(work)), work, timeout=900)
            kos = sorted(work.glob("*.ko"))
            if rc != 0 or not kos:
                return BuildStatus.BUILD_FAILED, log_text, {}
            return BuildStatus.OK, log_text, {ko.name: ko.read_bytes() for ko in kos}


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


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
    rc, log = run_host(
        ["gcc", "-static", "-O1", "-pthread", "-I", str(REPRO_INCLUDE_DIR), "-o", "repro.tmp",
         "repro.c"], out_dir, 300,
    )  # fmt: skip
    if rc != 0:
        return BuildResult(BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start)
    (out_dir / "repro.tmp").replace(exe)
    return BuildResult(BuildStatus.OK, log, {"repro": exe}, time.monotonic() - start)


# ---------------------------------------------------------------- linux-source-6.1 trees


def _ensure_source(tarball: Path, dest: Path) -> Path:
    """Unpack Debian's linux-source tarball once (atomic rename, so a killed run retries).
    A tree no version of ours has vouched for (older versions patched it in place and
    reverted with `patch -R`, which could leave a candidate's lines behind) is compared with
    the tarball once; changed, it is unpacked again and every build made from it dropped."""
    marker = dest.parent / f".{dest.name}.pristine"
    if (dest / "Makefile").exists() and marker.exists():
        return dest
    with file_lock(dest.parent / ".extract.lock"):
        if (dest / "Makefile").exists():
            if marker.exists():
                return dest
            if _matches_tarball(tarball, dest):
                marker.write_text(time.ctime())
                return dest
            log.warning(
                "%s differs from %s: unpacking it again, dropping its builds", dest, tarball
            )
            _drop_builds(dest)
            remove_tree(dest)
        tmp = dest.parent / f"tmp-extract-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(tarball) as tf:
            tf.extractall(tmp, filter="fully_trusted")
        (top,) = list(tmp.iterdir())
        top.rename(dest)
        tmp.rmdir()
        marker.write_text(time.ctime())
    return dest


def _matches_tarball(tarball: Path, dest: Path) -> bool:
    """Every file and link of the tarball is in `dest` as unpacked (size and mtime, link
    target), and `dest` holds nothing else but directories. Reads the tarball once (~30 s)."""
    expected = 0
    with tarfile.open(tarball) as tf:
        for m in tf:
            rel = m.name.partition("/")[2].strip("/")
            if not rel or m.isdir():
                continue
            expected += 1
            try:
                st = (dest / rel).lstat()
            except OSError:
                return False
            if m.isreg() and (st.st_size, int(st.st_mtime)) != (m.size, int(m.mtime)):
                return False
            if m.issym() and os.readlink(dest / rel) != m.linkname:
                return False
    found = 0
    for root, dirs, files in os.walk(dest):
        found += len(files) + sum(1 for d in dirs if os.path.islink(os.path.join(root, d)))
    return found == expected


def _drop_builds(source: Path) -> None:
    """The build directories and kept kernels made from `source` (cache/src/NAME): under
    cache/build and cache/kernels, named NAME-<fragment>-<digest>."""
    root = source.parent.parent
    for sub in ("build", "kernels"):
        for d in (root / sub).glob(f"{source.name}-*"):
            if d.is_dir() and not d.is_symlink():
                remove_tree(d)


IMAGE_RELPATH = "arch/x86/boot/bzImage"


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
        """Where make leaves the image (a candidate's make writes there: read it with
        copy_out). bzImage, not vmlinux: a KASAN kernel entered through PVH triple-faults at
        once (measured), while the gzip bzImage reaches /init in ~2 s under TCG."""
        return self.build_dir / IMAGE_RELPATH

    @property
    def pristine(self) -> Path:
        """A copy of the unpatched image, kept apart from the build directory's own."""
        return self.root / "kernels" / self.build_dir.name / "pristine" / "bzImage"

    @property
    def _built_marker(self) -> Path:
        # Not in the build directory: the candidates' makes write there.
        return self.pristine.parent / ".kgym-built"

    def is_built(self) -> bool:
        return self._built_marker.exists()

    def _configure(self) -> tuple[int, str]:
        src, out = shlex.quote(str(self.source)), shlex.quote(str(self.build_dir))
        # merge_config.sh makes its temporary files in its working directory: the build
        # directory, since the source is read-only to the sandbox.
        script = (
            f'set -e; fragment="$PWD/fragment.config"; cd {out}; make -C {src} O={out} '
            f"tinyconfig; {src}/scripts/kconfig/merge_config.sh -m -O {out} {out}/.config "
            f'"$fragment"; make -C {src} O={out} olddefconfig'
        )
        return self._confined(script, {"fragment.config": self.fragment.read_text()}, 600)

    def _make(
        self, workdir: Path | None = None, source_copy: Path | None = None
    ) -> tuple[int, str]:
        src, out = shlex.quote(str(self.source)), shlex.quote(str(self.build_dir))
        script = f"make -C {src} O={out} -j{jobs()} bzImage modules"
        return confined_shell(
            script,
            source=self.source,
            out=self.build_dir,
            timeout=7200,
            workdir=workdir,
            source_copy=source_copy,
        )

    def _confined(
        self,
        script: str,
        files: dict[str, str] | None,
        timeout: float,
    ) -> tuple[int, str]:
        return confined_shell(
            script, source=self.source, out=self.build_dir, files=files, timeout=timeout
        )

    def ensure_built(self) -> BuildResult:
        """Build once per (tarball, fragment); later calls return at once."""
        start = time.monotonic()
        _ensure_source(self.tarball, self.source)
        with file_lock(self._lock):
            if self.is_built() and self.pristine.exists():
                return BuildResult(BuildStatus.OK, "", {"kernel": self.pristine}, 0.0, True)
            rc, log_text = self._configure()
            if rc == 0:
                rc, more = self._make()
                log_text += more
            if rc != 0 or not copy_out(self.build_dir, IMAGE_RELPATH, self.pristine):
                return BuildResult(
                    BuildStatus.BUILD_FAILED, log_text, wall_s=time.monotonic() - start
                )
            self._built_marker.write_text(time.ctime())
            return BuildResult(
                BuildStatus.OK, log_text, {"kernel": self.pristine}, time.monotonic() - start
            )

    def build_patched(self, patches: list[str] | str, *, use_cache: bool = True) -> BuildResult:
        """Apply `patches` in order (e.g. an injected bug, then a candidate fix) to a private
        copy of the source (`candidate_source`), in the sandbox, and build it incrementally in
        the sandbox, in a scratch copy of the pristine build directory (`candidate_build_dir`);
        keep a copy of the image and of the changed files' objects (cached by the patches).
        The shared source tree and build directory are never written, so no candidate's patch
        or build can reach the next one, and nothing is reverted. One build per tree at a
        time (the tree's lock)."""
        todo = [p for p in ([patches] if isinstance(patches, str) else patches) if p.strip()]
        base = self.ensure_built()
        if not base.ok or not todo:
            return base
        start = time.monotonic()
        keep = self.root / "kernels" / self.build_dir.name / _digest(*todo)
        cached = keep / "bzImage"
        if use_cache and cached.exists():
            return BuildResult(
                BuildStatus.OK, "", {"kernel": cached}, 0.0, True, kept_objects(keep / "objects")
            )
        if not (sandbox_can_read(self.source) and sandbox_can_read(self.build_dir.parent)):
            return BuildResult(
                BuildStatus.BUILD_FAILED,
                f"a patched tree builds only in the sandbox, whose uid cannot reach {self.root}:"
                " set $KERNELGYM_CACHE to a world-traversable directory",
            )
        with file_lock(self._lock), candidate_source(self.source, self.build_dir) as src:
            ok, out = apply_confined(src, todo, at=self.source.resolve())
            if not ok:
                return BuildResult(
                    BuildStatus.PATCH_APPLY_FAILED, out, wall_s=time.monotonic() - start
                )
            changed = seal_source(src, self.source)
            shutil.rmtree(keep, ignore_errors=True)  # a killed run's part, or use_cache=False
            with candidate_build_dir(self.source, self.build_dir) as work:
                rc, log_text = self._make(work, src)
                objects = keep_objects(self.build_dir, work, changed, keep / "objects")
                built = rc == 0 and copy_out(work, IMAGE_RELPATH, cached)  # the image last
            if not built:
                return BuildResult(
                    BuildStatus.BUILD_FAILED, log_text, wall_s=time.monotonic() - start
                )
            return BuildResult(
                BuildStatus.OK, log_text, {"kernel": cached}, time.monotonic() - start,
                changed_objects=objects,
            )  # fmt: skip

    def module_builder(self) -> ModuleBuilder:
        return ModuleBuilder(self.source, self.build_dir, key=str(self.build_dir))
