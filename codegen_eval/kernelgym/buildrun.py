"""How the gym's builds run: our own steps on the host in a process group of their own, and
every step on candidate input (a patched tree's make, a module's Makefile) in the bubblewrap
sandbox. Cancelling an `in_build_thread` call stops either kind at once.

A candidate patch is code the build host runs: make reads a module's Makefile and kernel
builds compile and run host programs from the tree. So `confined_shell` runs such a step as
the sandbox's unprivileged uid, without network, with the tree read-only and its build
directory writable (a scratch copy per candidate: `candidate_build_dir`), and `copy_out`
takes products out without following links.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from sandboxes import ExecResult, Limits, open_sandbox, read_beneath, sandbox_uid

__all__ = [
    "GYM_BACKEND",
    "PATCH_CMD",
    "TREE_BUILD_LIMITS",
    "apply_confined",
    "candidate_build_dir",
    "candidate_source",
    "confined_shell",
    "copy_out",
    "exec_log",
    "in_build_thread",
    "keep_objects",
    "kept_objects",
    "run_async",
    "run_host",
    "sandbox_can_read",
    "seal_source",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

# The gym's sandbox backend, whatever a run's --sandbox says: its steps bind host directories
# into the sandbox (the kernel tree and object directories read-only, a candidate's source
# copy and build directory writable through extra_rw_binds, which only bwrap offers) and run
# the host's own compilers and make on them, at the paths the kernel build recorded; docker's
# image has neither, and unsafe-local would let a candidate's Makefile run as root.
GYM_BACKEND = "bwrap"


# How to stop the builds started under one `in_build_thread` call: one callable per running
# process group or sandboxed job (a contextvar: asyncio.to_thread copies the context into its
# worker thread, so the set is shared with the coroutine).
_BUILD_STOPPERS: contextvars.ContextVar[set[Callable[[], None]] | None] = contextvars.ContextVar(
    "kgym_build_stoppers", default=None
)


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_host(cmd: list[str], cwd: Path | str, timeout: float = 3600) -> tuple[int, str]:
    """Run a build command in a process group of its own, so that a timeout or a cancelled
    build (see in_build_thread) kills make and every compiler it started, not make alone."""
    stoppers = _BUILD_STOPPERS.get()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace", start_new_session=True,
    )  # fmt: skip
    kill = functools.partial(_kill_tree, proc)
    if stoppers is not None:
        stoppers.add(kill)
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
        if stoppers is not None:
            stoppers.discard(kill)
    return proc.returncode, out


def run_async(job: Callable[[], Awaitable[T]]) -> T:
    """Run an async job (a sandboxed build) to completion from a build thread. Cancelling
    the `in_build_thread` call cancels the job, and the sandbox kills what it started."""

    async def main() -> T:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        stoppers = _BUILD_STOPPERS.get()

        def kill() -> None:
            with contextlib.suppress(RuntimeError):  # the loop has already finished
                loop.call_soon_threadsafe(task.cancel)

        if stoppers is not None:
            stoppers.add(kill)
        try:
            return await job()
        finally:
            if stoppers is not None:
                stoppers.discard(kill)

    return asyncio.run(main())


async def in_build_thread(fn: Callable[..., T], *args: Any) -> T:
    """`await asyncio.to_thread(fn, *args)` for a build: when the awaiting task is cancelled
    (Ctrl-C, a timeout), the build's processes are killed, so the worker thread returns at
    once instead of holding the interpreter's exit until make finishes (minutes for a
    kernel). A build its own process group does not see the terminal's Ctrl-C by itself."""
    stoppers: set[Callable[[], None]] = set()
    token = _BUILD_STOPPERS.set(stoppers)
    try:
        return await asyncio.to_thread(fn, *args)
    except asyncio.CancelledError:
        for kill in list(stoppers):
            kill()
        raise
    finally:
        _BUILD_STOPPERS.reset(token)


def sandbox_can_read(path: Path) -> bool:
    """Whether the sandbox's unprivileged uid can reach and read `path` (bubblewrap binds it
    as that uid). Not root: the sandbox runs as us. Root: every ancestor must let others
    through (a home directory of mode 0700 does not) and the directory must be readable."""
    if os.geteuid() != 0:
        return os.access(path, os.R_OK | os.X_OK)
    path = path.resolve()
    for p in (*reversed(path.parents), path):
        try:
            mode = p.stat().st_mode
        except OSError:
            return False
        if not mode & 0o001 or (p == path and not mode & 0o004):
            return False
    return True


def exec_log(r: ExecResult) -> str:
    tail = f"\n[{r.status}{f' (exit {r.exit_code})' if r.exit_code else ''}]" if not r.ok else ""
    return f"{r.stdout}{r.stderr}{tail}"


# A kernel build in the sandbox: make -j, gcc, the linker on a vmlinux of some 100 MB.
TREE_BUILD_LIMITS = Limits(
    wall_s=7200, memory_mb=8192, pids=1024, output_bytes=16 << 20, file_bytes=2 << 30,
    tmp_mb=1024, nofile=4096,
)  # fmt: skip


def hand_over(build_dir: Path) -> None:
    """As root: give the build directory to the sandbox uid, which writes it. Its files came
    from earlier sandboxed makes or from us (mkdir); lchown, never through a link."""
    if os.geteuid() != 0:
        return
    uid = sandbox_uid()
    for root, dirs, files in os.walk(build_dir):
        for name in (*dirs, *files):
            p = os.path.join(root, name)
            if os.lstat(p).st_uid != uid:
                os.lchown(p, uid, uid)
    os.lchown(build_dir, uid, uid)


def _reachable(source: Path, out: Path) -> bool:
    return sandbox_can_read(source.resolve()) and sandbox_can_read(out.parent)


@contextlib.contextmanager
def candidate_build_dir(source: Path, out: Path) -> Iterator[Path]:
    """Where one candidate's make writes: a scratch copy of the build directory `out`, which
    the sandbox sees at `out`'s own path (pass it to confined_shell as `workdir`), deleted
    afterwards. So `out` keeps the objects of the trusted build it holds, and nothing a
    candidate's build leaves there (an object, a generated header, a makefile fragment) can
    be picked up by the next candidate's incremental build or by a module built against the
    tree. Where the build runs on the host instead (see confined_shell) make writes `out`
    itself, which is put back from a copy afterwards. Copying costs about a second per
    150 MB (benchmarks/kgym_build_confinement.py); `--reflink=auto` makes it free on
    copy-on-write file systems. Call it under the build directory's lock: copies that a
    killed run left beside it are removed first."""
    for stale in out.parent.glob(f".{out.name}.candidate-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = _copy_of(out)
    try:
        if _reachable(source, out):
            yield work
            return
        try:
            yield out
        finally:
            shutil.rmtree(out)
            work.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _copy_of(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.candidate-", dir=out.parent))
    # -a: links stay links, owners and times stay (make must see the objects as fresh).
    rc, log_text = run_host(["cp", "-a", "--reflink=auto", f"{out}/.", str(work)], out.parent)
    if rc != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"could not copy the build directory {out}: {log_text}")
    return work


def confined_shell(
    script: str,
    *,
    source: Path,
    out: Path,
    files: dict[str, str] | None = None,
    timeout: float = 7200,
    workdir: Path | None = None,
    source_copy: Path | None = None,
) -> tuple[int, str]:
    """Run a build `script` (sh) in the sandbox: `source` read-only, `out` (an O= directory)
    writable, `files` in the sandbox's own directory ($PWD), nothing else of the host: no
    repository, no home, no network, not root. Every make on a tree a candidate patched runs
    here: the build directory holds makefile fragments (include/config/auto.conf.cmd) that
    a candidate's earlier build could have rewritten, so no host make ever reads it again.
    `workdir` (from candidate_build_dir): the host directory the sandbox sees at `out`.
    `source_copy` (from candidate_source, sealed): the host directory it sees at `source`.

    Where the sandbox's uid cannot reach `source` or `out` (a cache under root's 0700 home),
    the script runs on the host with a warning instead."""
    out.mkdir(parents=True, exist_ok=True)
    source = source.resolve()
    if not _reachable(source, out):
        if source_copy is not None:
            raise RuntimeError("a candidate's source copy is only ever built in the sandbox")
        log.warning(
            "building a kernel on the host, unconfined: the sandbox's uid cannot reach %s or "
            "%s (set $KERNELGYM_CACHE to a world-traversable directory)",
            source,
            out,
        )
        with tempfile.TemporaryDirectory(prefix="kgym-sh-") as tmp:
            for name, text in (files or {}).items():
                Path(tmp, name).write_text(text)
            return run_host(["sh", "-c", f"cd {tmp} && {script}"], source, timeout)
    work = (workdir or out).resolve()
    hand_over(work)
    rw: list[tuple[str, str]] = [(str(work), str(out.resolve()))]
    ro: tuple[str, ...] = (str(source),)
    if source_copy is not None:
        # A rw bind (binds take no other destination), read-only by ownership: seal_source
        # gave every entry of the copy back to root, and the pristine inodes are root's.
        rw.insert(0, (str(source_copy.resolve()), str(source)))
        ro = ()
    binds = {"extra_ro_binds": ro, "extra_rw_binds": tuple(rw)}

    async def job() -> tuple[int, str]:
        async with open_sandbox(GYM_BACKEND, **binds) as sb:
            r = await sb.exec(
                ["sh", "-c", script],
                files=files,
                limits=dataclasses.replace(TREE_BUILD_LIMITS, wall_s=timeout),
            )
        return (0 if r.ok else r.exit_code or 1), exec_log(r)

    return run_async(job)


def copy_out(out: Path, relpath: str, dest: Path) -> bool:
    """Copy a build product out of a build directory a candidate's make wrote: never through
    a symlink (on any component), regular files only. False when it is not there."""
    try:
        data = read_beneath(str(out), relpath, 1 << 31)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
    tmp.write_bytes(data)
    with contextlib.suppress(OSError):  # keep an executable product executable (not setuid)
        tmp.chmod(0o755 if os.lstat(out / relpath).st_mode & 0o100 else 0o644)
    tmp.replace(dest)
    return True


# ---------------------------------------------------------------- a candidate's source tree

# --unified: never read the text as an ed script (patch would run ed on it). --fuzz=0: a hunk
# applies where its context matches exactly or not at all (an offset is still allowed).
PATCH_CMD = ("patch", "-p1", "--unified", "--batch", "--no-backup-if-mismatch", "--fuzz=0")
SOURCE_PATCH_LIMITS = Limits(wall_s=120, memory_mb=512, pids=16, output_bytes=1 << 20)


def source_copy_prefix(out: Path) -> str:
    """Name prefix of the source copies made for builds into `out` (beside it)."""
    return f".{out.name}.source-"


@contextlib.contextmanager
def candidate_source(source: Path, out: Path) -> Iterator[Path]:
    """A private copy of the pristine tree `source` for one candidate's patches and build
    (into `out`): the shared tree is never patched, so nothing a candidate's patch does (a
    hunk applied at an offset, a section applied before a later one failed, a `.rej`, a new
    file) can reach the next candidate, and nothing has to be reverted. Placed beside `out`
    and removed afterwards; call it under `out`'s lock (copies a killed run left are removed).

    As root, a tree of hard links to the pristine files (about a second for a kernel tree)
    in directories the sandbox uid owns: patch (run as that uid by apply_confined) replaces
    a file by renaming a new one over its link, and can never write a pristine inode, which
    is root's and not writable by others (checked here; a full copy otherwise). Not root,
    the sandbox runs as us and could write any inode we own: a full copy
    (`cp -a --reflink=auto`, free on copy-on-write file systems)."""
    source = source.resolve()
    for stale in out.parent.glob(source_copy_prefix(out) + "*"):
        remove_tree(stale)
    for trash in out.parent.glob(f".{out.name}.trash-*"):
        try:
            age = time.time() - trash.lstat().st_mtime
        except FileNotFoundError:  # the earlier candidate's remover finished it meanwhile
            continue
        if age > 600:  # not one still being removed
            remove_tree(trash)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=source_copy_prefix(out), dir=out.parent))
    try:
        _fill_source_copy(source, work)
        yield work
    finally:
        _discard(work, out.parent / f".{out.name}.trash-{work.name.rsplit('-', 1)[-1]}")


def remove_tree(path: Path) -> None:
    """rm -rf, never through a link (Python's rmtree takes 3x as long on a kernel tree)."""
    rc, _ = run_host(["rm", "-rf", "--one-file-system", "--", str(path)], path.parent, 1800)
    if rc != 0:
        shutil.rmtree(path, ignore_errors=True)


def _discard(work: Path, trash: Path) -> None:
    """Unlinking some 80,000 entries of a kernel tree's copy takes 5-15 s on a loaded
    machine (measured): out of the candidate's way, the copy is renamed (so no later build
    can see it) and removed by a detached rm."""
    try:
        work.rename(trash)
    except OSError:
        remove_tree(work)
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(
            ["rm", "-rf", "--one-file-system", "--", str(trash)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


def _linkable(source: Path) -> bool:
    """Whether no entry of `source` could be written by the sandbox uid through a link."""
    if os.geteuid() != 0:
        return False
    uid = str(sandbox_uid())
    rc, found = run_host(
        ["find", str(source), "(", "-user", uid, "-o", "!", "-type", "l", "(", "-perm", "-o+w",
         "-o", "-group", uid, "-perm", "-g+w", ")", ")", "-print", "-quit"], source, 600,
    )  # fmt: skip
    return rc == 0 and not found.strip()


def _fill_source_copy(source: Path, work: Path) -> None:
    os.chmod(work, 0o755)
    linked = _linkable(source)
    cmd = ["cp", "-al" if linked else "-a", *([] if linked else ["--reflink=auto"])]
    rc, log_text = run_host([*cmd, f"{source}/.", str(work)], work.parent, 1800)
    if rc != 0:
        raise RuntimeError(f"could not copy the source tree {source}: {log_text[-2000:]}")
    if linked:  # directories the patch may add to and rename in; the files stay root's
        uid = str(sandbox_uid())
        rc, log_text = run_host(
            ["find", str(work), "-type", "d", "-exec", "chown", "-h", f"{uid}:{uid}", "{}", "+"],
            work, 600,
        )  # fmt: skip
        if rc != 0:
            raise RuntimeError(f"could not hand the source copy {work} over: {log_text[-2000:]}")


def apply_confined(tree: Path, patches: list[str], *, at: Path) -> tuple[bool, str]:
    """Apply `patches` in order to `tree` (a candidate_source copy, seen at `at`) in the
    sandbox, as its uid: strict (no fuzz, never reversed, never an ed script). A patch that
    fails part way leaves a half-patched copy, which the caller discards: all or nothing."""
    patches = [p for p in patches if p.strip()]
    if not patches:
        return True, ""
    steps = " && ".join(
        f'{shlex.join(PATCH_CMD)} --forward -i "$d/p{i}.patch"' for i in range(len(patches))
    )
    script = f'd="$PWD"; cd {shlex.quote(str(at))} && {steps}'
    files = {f"p{i}.patch": p for i, p in enumerate(patches)}

    async def job() -> tuple[bool, str]:
        async with open_sandbox(GYM_BACKEND, extra_rw_binds=((str(tree), str(at)),)) as sb:
            r = await sb.exec(["sh", "-c", script], files=files, limits=SOURCE_PATCH_LIMITS)
        return r.ok, exec_log(r)

    ok, log_text = run_async(job)
    # patch's note on every linked (root's, read-only) file it replaces: noise to an agent.
    quiet = (ln for ln in log_text.splitlines(keepends=True) if not ln.endswith(_READ_ONLY_NOTE))
    return ok, "".join(quiet)


_READ_ONLY_NOTE = " is read-only; trying to patch anyway\n"


def seal_source(work: Path, source: Path) -> list[str]:
    """After apply_confined: the files of `work` the patches changed or added (relative
    paths, sorted), and `work` made read-only to the sandbox (everything given back to
    root) so that make cannot change its own sources. Hard-linked copy: exactly the
    entries the sandbox uid owns. Full copy (not root): the files whose size or mtime
    differ from the pristine tree's (patch stamps what it writes)."""
    if os.geteuid() != 0 or not _linkable(source):
        return _changed_by_stat(work, source)
    uid = str(sandbox_uid())
    rc, listing = run_host(["find", str(work), "-user", uid, "-printf", "%y %P\\0"], work, 600)
    if rc != 0:
        raise RuntimeError(f"could not list the source copy {work}: {listing[-2000:]}")
    changed = []
    for entry in filter(None, listing.split("\0")):
        kind, rel = entry[0], entry[2:]
        path = work / rel if rel else work
        os.lchown(path, 0, 0)
        if kind == "f":
            changed.append(rel)
    return sorted(changed)


def _changed_by_stat(work: Path, source: Path) -> list[str]:
    changed = []
    for root, _dirs, names in os.walk(work):
        for name in names:
            p = Path(root, name)
            rel = p.relative_to(work)
            st = p.lstat()
            try:
                old = (source / rel).lstat()
            except OSError:
                changed.append(str(rel))
                continue
            if (st.st_size, st.st_mtime_ns) != (old.st_size, old.st_mtime_ns):
                changed.append(str(rel))
    return sorted(changed)


def keep_objects(
    pristine_out: Path, work: Path, changed: list[str], dest: Path
) -> list[tuple[Path | None, Path]]:
    """Copy out the objects of the changed C files: (pristine object or None for a file the
    pristine build has none of, candidate object), under `dest`/pristine and
    `dest`/candidate, kept as long as the image they came with."""
    pairs: list[tuple[Path | None, Path]] = []
    for rel in changed:
        if not rel.endswith(".c"):
            continue
        obj = rel[:-2] + ".o"
        cand = dest / "candidate" / obj
        if not copy_out(work, obj, cand):
            continue  # not compiled in this configuration
        pristine = dest / "pristine" / obj
        pairs.append((pristine if copy_out(pristine_out, obj, pristine) else None, cand))
    return pairs


def kept_objects(dest: Path) -> list[tuple[Path | None, Path]]:
    """The pairs keep_objects left under `dest` (for a cached build)."""
    pairs: list[tuple[Path | None, Path]] = []
    for cand in sorted((dest / "candidate").rglob("*.o")):
        pristine = dest / "pristine" / cand.relative_to(dest / "candidate")
        pairs.append((pristine if pristine.is_file() else None, cand))
    return pairs
