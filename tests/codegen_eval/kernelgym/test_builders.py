"""Builders on real tools: patch, make against Debian's headers, git worktrees."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codegen_eval.kernelgym.builders import (
    BuildStatus,
    ModuleBuilder,
    apply_patch,
    debian_kernel,
)
from codegen_eval.kernelgym.git_builder import GitKernelBuilder
from codegen_eval.kernelgym.records import bundled_bug


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELGYM_CACHE", str(tmp_path / "cache"))


def test_debian_kernel_is_resolved_without_uname() -> None:
    dk = debian_kernel()
    assert dk.vmlinuz.exists()
    assert (dk.headers / "Makefile").exists()
    assert Path("/lib/modules", dk.release).is_dir()


def test_apply_patch_is_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("one\ntwo\nthree\n")
    (tmp_path / "b.c").write_text("x\n")
    good = "--- a/a.c\n+++ b/a.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    bad = "--- a/b.c\n+++ b/b.c\n@@ -1 +1 @@\n-nope\n+y\n"
    ok, out = apply_patch(tmp_path, good + bad)
    assert not ok and "FAILED" in out
    assert (tmp_path / "a.c").read_text() == "one\ntwo\nthree\n"  # the good hunk left no trace
    ok, _ = apply_patch(tmp_path, good)
    assert ok and "TWO" in (tmp_path / "a.c").read_text()
    ok, _ = apply_patch(tmp_path, good, reverse=True)
    assert ok and (tmp_path / "a.c").read_text() == "one\ntwo\nthree\n"


def test_module_patch_that_does_not_apply() -> None:
    bug = bundled_bug("t0-null-deref")
    dk = debian_kernel()
    bad = "--- a/kgym_null.c\n+++ b/kgym_null.c\n@@ -1,1 +1,1 @@\n-no such line\n+x\n"
    res = ModuleBuilder(dk.headers).build(bug.source_dir, bad)  # type: ignore[arg-type]
    assert res.status is BuildStatus.PATCH_APPLY_FAILED
    assert "hunk" in res.log.lower() or "FAILED" in res.log


def test_module_that_does_not_compile_reports_errors() -> None:
    bug = bundled_bug("t0-null-deref")
    dk = debian_kernel()
    src = (bug.source_dir / "kgym_null.c").read_text().splitlines()  # type: ignore[operator]
    idx = src.index("\te->value++;")
    broken = (
        f"--- a/kgym_null.c\n+++ b/kgym_null.c\n@@ -{idx + 1},1 +{idx + 1},1 @@\n"
        "-\te->value++;\n+\te->valeu++;\n"
    )
    res = ModuleBuilder(dk.headers).build(bug.source_dir, broken)  # type: ignore[arg-type]
    assert res.status is BuildStatus.BUILD_FAILED
    assert "valeu" in res.errors and "error" in res.errors


def test_module_builds_and_is_cached() -> None:
    bug = bundled_bug("t0-warn")
    dk = debian_kernel()
    builder = ModuleBuilder(dk.headers, key=dk.release)
    first = builder.build(bug.source_dir)  # type: ignore[arg-type]
    assert first.ok and not first.cached
    ko = first.artifacts["module"]
    info = subprocess.run(["modinfo", "-F", "vermagic", str(ko)], capture_output=True, text=True)
    assert info.stdout.startswith(dk.release)  # built against the booted kernel's ABI
    again = builder.build(bug.source_dir)  # type: ignore[arg-type]
    assert again.ok and again.cached and again.artifacts["module"] == ko


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def stand_in_repo(at: Path, makefile: str, main_c: str) -> tuple[Path, str]:
    """A git repo `at`/linux whose Makefile stands in for Linux (it honours O= like Kbuild:
    objects and .config go to the build directory), with one commit; (repo, commit)."""
    repo = at / "linux"
    repo.mkdir()
    (repo / "Makefile").write_text(makefile)
    (repo / "main.c").write_text(main_c)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "buggy")
    return repo, _git(repo, "rev-parse", "HEAD")


def test_git_kernel_builder_on_a_stand_in_repo(tmp_path: Path) -> None:
    """A tiny git repo whose Makefile stands in for Linux: olddefconfig and a vmlinux target
    (the real thing, a Linux tree at a commit built to a bzImage, is in test_kbench_git.py)."""
    repo, bug_commit = stand_in_repo(
        tmp_path,
        ".PHONY: olddefconfig vmlinux\n"
        "olddefconfig:\n\tgrep -q CONFIG_ $(O)/.config && echo CONFIG_OLDDEF=y >> $(O)/.config\n"
        "vmlinux:\n\tgcc -o $(O)/vmlinux main.c\n",
        "int main(void) { return BUGGY; }\n",
    )
    (repo / "main.c").write_text("int main(void) { return 0; }\n")
    _git(repo, "commit", "-qam", "later work in the user's tree")

    builder = GitKernelBuilder(repo, root=tmp_path / "wt", target="vmlinux")
    res = builder.build(bug_commit, "CONFIG_X=y\n")
    assert res.status is BuildStatus.BUILD_FAILED and "BUGGY" in res.errors

    fix = "--- a/main.c\n+++ b/main.c\n@@ -1 +1 @@\n-int main(void) { return BUGGY; }\n+int main(void) { return 7; }\n"
    res = builder.build(bug_commit, "CONFIG_X=y\n", fix)
    assert res.ok
    assert subprocess.run([str(res.artifacts["kernel"])]).returncode == 7
    again = builder.build(bug_commit, "CONFIG_X=y\n", fix)
    assert again.ok and again.cached and again.artifacts == res.artifacts
    wt = builder.worktree(bug_commit)
    out = builder.build_dir(bug_commit, "CONFIG_X=y\n")
    assert "CONFIG_OLDDEF=y" in (out / ".config").read_text()
    assert not (wt / "vmlinux").exists()  # out of tree
    # The candidate built in a scratch copy of the build directory, gone now: the directory
    # holds only what the commit itself built (here: nothing, it does not compile).
    assert not (out / "vmlinux").exists()
    assert not list(out.parent.glob(f".{out.name}.candidate-*"))
    assert "BUGGY" in (wt / "main.c").read_text()  # reverted for the next candidate
    assert "return 0" in (repo / "main.c").read_text()  # the user's checkout untouched

    res = builder.build(bug_commit, "CONFIG_X=y\n", fix.replace("BUGGY", "NOPE"))
    assert res.status is BuildStatus.PATCH_APPLY_FAILED


async def test_a_cancelled_build_kills_its_process_tree(tmp_path: Path) -> None:
    """Ctrl-C during a kernel build: the task is cancelled, and the build's whole process
    group (make and what it started) is killed, so the worker thread returns at once instead
    of keeping the interpreter alive until make would have finished."""
    import asyncio
    import time

    from codegen_eval.kernelgym.buildrun import in_build_thread, run_host

    marker = tmp_path / "grandchild.pid"
    cmd = ["sh", "-c", f"sleep 300 & echo $! > {marker}; wait"]
    task = asyncio.ensure_future(in_build_thread(run_host, cmd, tmp_path, 600))
    grandchild = await asyncio.to_thread(_pid_from, marker)
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # the worker thread is free again, and the grandchild is gone (SIGKILL to the group)
    assert await asyncio.wait_for(asyncio.to_thread(_gone, grandchild), 20)
    assert time.monotonic() - t0 < 30


def _pid_from(marker: Path, timeout: float = 20) -> int:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text())
        time.sleep(0.05)
    raise AssertionError("the build never started")


def _gone(pid: int, timeout: float = 5) -> bool:
    """The process exited (or is a zombie waiting for init to reap it)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_a_build_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    from codegen_eval.kernelgym.buildrun import run_host

    marker = tmp_path / "grandchild.pid"
    rc, log = run_host(["sh", "-c", f"sleep 300 & echo $! > {marker}; wait"], tmp_path, timeout=1)
    assert rc == 124 and "timeout after 1s" in log
    assert _gone(_pid_from(marker))
