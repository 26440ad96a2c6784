"""Build a user's Linux git checkout at a commit (kBench records), in a git worktree so the
user's own working tree is never touched; every make runs in the sandbox (`buildrun`)."""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path

from .builders import (
    BuildResult,
    BuildStatus,
    _digest,
    _mkdir,
    apply_patch,
    cache_root,
    file_lock,
    jobs,
)
from .buildrun import (
    apply_confined,
    candidate_build_dir,
    candidate_source,
    confined_shell,
    copy_out,
    keep_objects,
    kept_objects,
    run_host,
    sandbox_can_read,
    seal_source,
)
from .patch_screen import screen_patch

__all__ = ["GitKernelBuilder"]


class GitKernelBuilder:
    """Build a user's Linux checkout at a commit with a given config, in a git worktree so
    the user's own working tree is never touched. For real kBench records (large machines).

    Objects go to an out-of-tree build directory per (worktree, config) that persists in the
    cache: the first build of a commit is a full kernel build, every candidate after it only
    recompiles what its patch touched. The worktree stays at the commit: a candidate's patch
    goes into a private copy of it (`candidate_source`, applied in the sandbox), and its make
    writes a scratch copy of the build directory."""

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
        stale = (wt / ".git").exists() and run_host(
            ["git", "rev-parse", "-q", "--verify", "HEAD"], wt
        )[0]
        if stale:
            # Left over from a repository that was since removed or recreated: start afresh.
            shutil.rmtree(wt)
            run_host(["git", "-C", str(self.repo), "worktree", "prune"], self.repo, 600)
        if not (wt / ".git").exists():
            self.root.mkdir(parents=True, exist_ok=True)
            rc, log = run_host(
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

    def _config_marker(self, out: Path) -> Path:
        return self.root / "markers" / f"{out.name}.config"

    def _configure(
        self,
        wt: Path,
        out: Path,
        config: str,
        workdir: Path | None,
        source_copy: Path | None = None,
    ) -> tuple[int, str]:
        """Write the bug's config and let olddefconfig fill in what this tree's Kconfig
        knows and the config does not; done once per build directory (a marker holds the
        digest), since rerunning it would touch include/config and rebuild more. The marker
        is ours, outside the build directory. Into a candidate's `workdir` only when the
        pristine build could not configure (then without a marker)."""
        marker = self._config_marker(out)
        if marker.exists() and marker.read_text() == _digest(config):
            return 0, ""
        script = (
            f'set -e; cp "$PWD/bug.config" {shlex.quote(str(out))}/.config; '
            f"cd {shlex.quote(str(wt))}; make O={shlex.quote(str(out))} olddefconfig"
        )
        rc, log_text = confined_shell(
            script,
            source=wt,
            out=out,
            files={"bug.config": config},
            timeout=600,
            workdir=workdir,
            source_copy=source_copy,
        )
        if rc == 0 and workdir is None:
            _mkdir(marker.parent)
            marker.write_text(_digest(config))
        return rc, log_text

    def _pristine_marker(self, out: Path) -> Path:
        # Ours, outside the build directory: the build directory holds the objects of the
        # commit as it is, built from no candidate's input.
        return self.root / "markers" / f"{out.name}.pristine"

    def build(
        self,
        commit: str,
        config: str,
        patch_text: str = "",
        *,
        use_cache: bool = True,
    ) -> BuildResult:
        """The image of `commit` with `patch_text` applied. The first build of a commit is
        its pristine one (a full kernel build) in the build directory; a candidate's build
        recompiles what its patch touched, in a scratch copy of that directory
        (`candidate_build_dir`), so nothing one candidate's make leaves is reused by the next."""
        start = time.monotonic()
        refused = screen_patch(patch_text)
        if refused:
            return BuildResult(BuildStatus.PATCH_APPLY_FAILED, refused)
        cached = self.artifact_path(commit, config, patch_text)
        if use_cache and cached.exists():
            objects = kept_objects(cached.parent / "objects")
            return BuildResult(BuildStatus.OK, "", {"kernel": cached}, 0.0, True, objects)
        out = self.build_dir(commit, config)
        # One candidate at a time per worktree: they share its files and build directory.
        with file_lock(self._lock(commit)):
            wt = self._worktree(commit)
            marker = self._pristine_marker(out)
            if not (marker.exists() and marker.read_text() == _digest(config)):
                # No pristine build on record: whatever the directory holds (an older
                # version's candidate builds wrote into it) is of unknown provenance.
                shutil.rmtree(out, ignore_errors=True)
                self._config_marker(out).unlink(missing_ok=True)
                base = self._build_in(wt, commit, config, "", out, None, start)
                # Failed or not, what it left came from the commit alone.
                _mkdir(marker.parent)
                marker.write_text(_digest(config))
                if not patch_text.strip():
                    return base
            if not patch_text.strip():
                return self._build_in(wt, commit, config, "", out, None, start)
            with candidate_build_dir(wt, out) as work:
                return self._build_in(wt, commit, config, patch_text, out, work, start)

    def _build_in(
        self,
        wt: Path,
        commit: str,
        config: str,
        patch_text: str,
        out: Path,
        workdir: Path | None,
        start: float | None = None,
    ) -> BuildResult:
        """One build of `wt` at `commit` plus `patch_text`, with make writing `workdir` (seen
        as `out`), under the worktree's lock; the image goes to the artifact cache. A patch
        goes into a private copy of the worktree, never the worktree."""
        start = time.monotonic() if start is None else start
        # The worktree as committed (an older version patched it in place).
        run_host(["git", "checkout", "--force", "--detach", commit], wt, 600)
        # -x as well: an O= build refuses a source tree with a .config or objects in it.
        run_host(["git", "clean", "-ffdxq"], wt, 600)
        if not patch_text.strip():
            return self._make_image(wt, commit, config, patch_text, out, workdir, None, start)
        if not (sandbox_can_read(wt) and sandbox_can_read(out.parent)):
            return self._build_unconfined(wt, commit, config, patch_text, out, workdir, start)
        with candidate_source(wt, out) as src:
            ok, log = apply_confined(src, [patch_text], at=wt.resolve())
            if not ok:
                return BuildResult(
                    BuildStatus.PATCH_APPLY_FAILED, log, wall_s=time.monotonic() - start
                )
            changed = seal_source(src, wt)
            return self._make_image(
                wt, commit, config, patch_text, out, workdir, src, start, changed
            )

    def _build_unconfined(
        self,
        wt: Path,
        commit: str,
        config: str,
        patch_text: str,
        out: Path,
        workdir: Path | None,
        start: float,
    ) -> BuildResult:
        """Where the sandbox's uid cannot reach the worktree (confined_shell then builds on
        the host, with a warning): the patch goes into the worktree itself, and git puts
        every file back afterwards."""
        ok, log = apply_patch(wt, patch_text)
        try:
            if not ok:
                return BuildResult(
                    BuildStatus.PATCH_APPLY_FAILED, log, wall_s=time.monotonic() - start
                )
            return self._make_image(wt, commit, config, patch_text, out, workdir, None, start)
        finally:
            run_host(["git", "checkout", "--force", "--detach", commit], wt, 600)
            run_host(["git", "clean", "-ffdxq"], wt, 600)

    def _make_image(
        self,
        wt: Path,
        commit: str,
        config: str,
        patch_text: str,
        out: Path,
        workdir: Path | None,
        source_copy: Path | None,
        start: float,
        changed: list[str] | None = None,
    ) -> BuildResult:
        cached = self.artifact_path(commit, config, patch_text)
        rc, log = self._configure(wt, out, config, workdir, source_copy)
        if rc == 0:
            script = (
                f"cd {shlex.quote(str(wt))} && make O={shlex.quote(str(out))} "
                f"-j{jobs()} {shlex.quote(self.target)}"
            )
            rc, more = confined_shell(
                script,
                source=wt,
                out=out,
                timeout=4 * 3600,
                workdir=workdir,
                source_copy=source_copy,
            )
            log += more
        objects = []
        if changed and workdir is not None:
            shutil.rmtree(cached.parent, ignore_errors=True)  # use_cache=False, or a killed run
            objects = keep_objects(out, workdir, changed, cached.parent / "objects")
        if rc != 0 or not copy_out(workdir or out, self.image, cached):  # the image last
            return BuildResult(BuildStatus.BUILD_FAILED, log, wall_s=time.monotonic() - start)
        return BuildResult(
            BuildStatus.OK, log, {"kernel": cached}, time.monotonic() - start,
            changed_objects=objects,
        )  # fmt: skip
