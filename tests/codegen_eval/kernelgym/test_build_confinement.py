"""A candidate patch is hostile code for the build host too: a module's Makefile is make's
input, and make runs `$(shell ...)`. The screen refuses build machinery; module builds also
run in the bubblewrap sandbox, so what gets past the screen still cannot reach the host."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen_eval.kernelgym import Outcome, PatchScorer, ReproConfig
from codegen_eval.kernelgym.builders import (
    BuildStatus,
    ModuleBuilder,
    debian_kernel,
)
from codegen_eval.kernelgym.buildrun import confined_shell, in_build_thread, sandbox_can_read
from codegen_eval.kernelgym.git_builder import GitKernelBuilder
from codegen_eval.kernelgym.patch_screen import screen_patch
from codegen_eval.kernelgym.records import bundled_bug

from .test_builders import stand_in_repo


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELGYM_CACHE", str(tmp_path / "cache"))


def _diff(path: str, body: str = "@@ -1 +1,2 @@\n x\n+y\n") -> str:
    return f"--- a/{path}\n+++ b/{path}\n{body}"


@pytest.mark.parametrize(
    "patch, why",
    [
        (_diff("Makefile"), "build machinery"),
        (_diff("drivers/net/Kbuild"), "build machinery"),
        (_diff("mm/Kconfig"), "build machinery"),
        (_diff("arch/x86/entry/entry_64.S"), "build machinery"),
        (_diff("scripts/mod/modpost.c"), "programs the build host runs"),
        (_diff("tools/objtool/check.c"), "programs the build host runs"),
        (_diff("arch/x86/tools/relocs.c"), "programs the build host runs"),
        (_diff("usr/gen_init_cpio.c"), "programs the build host runs"),
        (_diff("../../etc/x.c"), "outside the tree"),
        ("--- /etc/x.c\n+++ /etc/x.c\n@@ -1 +1 @@\n-a\n+b\n", "outside the tree"),
        (
            "diff --git a/k.c b/k.c\nnew file mode 120000\n--- /dev/null\n+++ b/k.c\n"
            "@@ -0,0 +1 @@\n+/etc/shadow\n\\ No newline at end of file\n",
            "file mode 120000",
        ),
        ("diff --git a/k.c b/k.c\nold mode 100644\nnew mode 100755\n", "file mode 100755"),
        ("diff --git a/k.ko b/k.ko\nGIT binary patch\nliteral 3\nKcmV+\n", "binary"),
        ('1a\nsystem("id")\n.\n', "not a unified diff"),
        (
            "diff --git a/k.c b/Makefile\nsimilarity index 90%\nrename from k.c\n"
            "rename to Makefile\n",
            "build machinery",
        ),
    ],
)
def test_the_screen_refuses_anything_but_c_sources(patch: str, why: str) -> None:
    reason = screen_patch(patch)
    assert reason is not None and reason.startswith("patch refused:") and why in reason


@pytest.mark.parametrize(
    "patch",
    [
        "",
        _diff("kernel/groups.c"),
        _diff("include/linux/slab.h"),
        "diff --git a/new.c b/new.c\nnew file mode 100644\n--- /dev/null\n+++ b/new.c\n"
        "@@ -0,0 +1 @@\n+int x;\n",
    ],
)
def test_the_screen_lets_c_fixes_through(patch: str) -> None:
    assert screen_patch(patch) is None


def test_every_bundled_fix_passes_the_screen() -> None:
    from codegen_eval.kernelgym import bundled_bugs

    for bug in bundled_bugs():
        assert screen_patch(bug.developer_patch) is None, bug.id


async def test_the_scorer_refuses_a_makefile_patch_before_building(tmp_path: Path) -> None:
    marker = tmp_path / "ran-on-host"
    bug = bundled_bug("t0-null-deref")
    patch = (
        "--- a/Makefile\n+++ b/Makefile\n@@ -1 +1,2 @@\n obj-m += kgym_null.o\n"
        f"+$(shell touch {marker})\n"
    )
    step = await PatchScorer(ReproConfig(runs=1)).score(bug, patch)
    assert step.outcome is Outcome.APPLY_FAILED
    assert "build machinery" in step.detail
    assert not marker.exists()


def test_a_module_build_cannot_reach_the_host(tmp_path: Path) -> None:
    """Past the screen (called on the builder's sandboxed step directly), a Makefile's shell
    commands run as the sandbox's uid, without network, and see neither the host's files
    nor root's home."""
    dk = debian_kernel()
    builder = ModuleBuilder(dk.headers, key=dk.release)
    assert builder.confined, "Debian's headers live under /usr: the sandbox must see them"
    bug = bundled_bug("t0-null-deref")
    assert bug.source_dir is not None
    marker = tmp_path / "ran-on-host"
    probe = (
        "obj-m += kgym_null.o\n"
        "$(info KGYM-UID=$(shell id -u))\n"
        "$(info KGYM-NET=$(shell grep -c : /proc/net/dev))\n"
        "$(info KGYM-HOME=$(shell ls -d /root/.cache 2>/dev/null || echo hidden))\n"
        "$(info KGYM-REPO=$(shell ls -d " + str(Path.cwd()) + " 2>/dev/null || echo hidden))\n"
        f"$(shell touch {marker} 2>/dev/null)\n"
    )
    sources = {
        str(p.relative_to(bug.source_dir)): p.read_bytes()
        for p in bug.source_dir.rglob("*")
        if p.is_file()
    }
    sources["Makefile"] = probe.encode()
    status, log, modules = asyncio.run(builder._build_confined(sources, ""))
    assert status is BuildStatus.OK, log
    assert "kgym_null.ko" in modules
    uid = int(log.split("KGYM-UID=")[1].split()[0])
    assert uid != 0 or os.geteuid() != 0
    assert "KGYM-NET=1" in log  # loopback only
    assert "KGYM-HOME=hidden" in log
    assert "KGYM-REPO=hidden" in log
    assert not marker.exists()


def test_sandbox_can_read_follows_the_ancestors(tmp_path: Path) -> None:
    assert sandbox_can_read(Path("/usr/include"))
    private = tmp_path / "private"
    (private / "tree").mkdir(parents=True)
    private.chmod(0o700)
    (private / "tree").chmod(0o755)
    if os.geteuid() == 0:  # root's sandbox runs as another uid: it cannot pass a 0700 dir
        assert not sandbox_can_read(private / "tree")
    else:  # the sandbox runs as us
        assert sandbox_can_read(private / "tree")


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory the sandbox's uid can reach (pytest's tmp_path sits under a 0700 one)."""
    d = Path(tempfile.mkdtemp(prefix="kgym-test-", dir="/var/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_kernel_tree_build_runs_in_the_sandbox(open_dir: Path) -> None:
    """GitKernelBuilder (the same confined_shell as KernelTree): make runs as the sandbox's
    uid without network, sees the worktree but not the user's repository or root's home, and
    a product left as a symlink is not copied out."""
    repo = open_dir / "linux"
    repo, commit = stand_in_repo(
        open_dir,
        ".PHONY: olddefconfig vmlinux leak\n"
        "olddefconfig:\n\ttrue\n"
        # The probe first: the pristine build (which does not compile) leaves it in the
        # build directory; a candidate's build writes a scratch copy.
        "vmlinux:\n"
        f"\t{{ id -u; grep -c : /proc/net/dev; ls -d /root/.cache {repo} 2>&1 || true; }} > $(O)/probe\n"
        "\tgcc -o $(O)/vmlinux main.c\n"
        "leak:\n\tln -sf /etc/hostname $(O)/leak\n",
        "int main(void) { return BUGGY; }\n",
    )
    fix = "--- a/main.c\n+++ b/main.c\n@@ -1 +1 @@\n-int main(void) { return BUGGY; }\n+int main(void) { return 7; }\n"

    builder = GitKernelBuilder(repo, root=open_dir / "wt", target="vmlinux")
    res = builder.build(commit, "CONFIG_X=y\n", fix)
    assert res.ok, res.log
    assert subprocess.run([str(res.artifacts["kernel"])]).returncode == 7
    probe = (builder.build_dir(commit, "CONFIG_X=y\n") / "probe").read_text().splitlines()
    if os.geteuid() == 0:
        assert probe[0] != "0"
    assert probe[1] == "1"  # loopback only
    assert "No such file" in probe[2] and "No such file" in probe[3]  # hidden

    leak = GitKernelBuilder(repo, root=open_dir / "wt", target="leak")
    res = leak.build(commit, "CONFIG_X=y\n", fix)
    assert res.status is BuildStatus.BUILD_FAILED  # the symlink is not followed out


def test_a_candidates_build_leaves_nothing_for_the_next(open_dir: Path) -> None:
    """Red team (2026-11-27, fourth pass): kernel-tree candidates shared one build
    directory, so what one candidate's make left there (an object with a fresh mtime, a
    generated header) could be picked up by the next candidate's incremental build. Here the build machinery itself
    takes a leftover `planted` file over the compiled image, as a stale object would be; the
    first candidate leaves one. Each candidate now builds in its own copy of the pristine
    build directory."""
    repo, commit = stand_in_repo(
        open_dir,
        ".PHONY: olddefconfig vmlinux\n"
        "olddefconfig:\n\ttrue\n"
        "vmlinux:\n\tgcc -o $(O)/vmlinux main.c\n"
        "\tif grep -q PLANT main.c; then cp $(O)/vmlinux $(O)/planted; fi\n"
        "\tif [ -e $(O)/planted ]; then cp $(O)/planted $(O)/vmlinux; fi\n",
        "int main(void) { return 1; }\n",
    )

    def patch(body: str) -> str:
        return (
            f"--- a/main.c\n+++ b/main.c\n@@ -1 +1 @@\n-int main(void) {{ return 1; }}\n+{body}\n"
        )

    builder = GitKernelBuilder(repo, root=open_dir / "wt", target="vmlinux")
    out = builder.build_dir(commit, "CONFIG_X=y\n")
    (out.parent / f".{out.name}.candidate-killed").mkdir(parents=True)  # a killed run's copy
    planter = builder.build(commit, "CONFIG_X=y\n", patch("int main(void) { return 3; } // PLANT"))
    assert planter.ok, planter.log
    assert subprocess.run([str(planter.artifacts["kernel"])]).returncode == 3
    honest = builder.build(commit, "CONFIG_X=y\n", patch("int main(void) { return 7; }"))
    assert honest.ok, honest.log
    assert subprocess.run([str(honest.artifacts["kernel"])]).returncode == 7  # its own image
    assert not (out / "planted").exists()
    # The build directory holds the pristine commit's build, made before any candidate's.
    assert subprocess.run([str(out / "vmlinux")]).returncode == 1
    assert not list(out.parent.glob(f".{out.name}.candidate-*"))


def _running(argv: bytes) -> bool:
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # gone meanwhile
            if argv in p.read_bytes():
                return True
    return False


async def test_a_cancelled_sandboxed_build_stops_at_once(open_dir: Path) -> None:
    """Ctrl-C during a sandboxed make: the sandbox kills the job, the build thread returns."""
    import time

    (open_dir / "src").mkdir()
    task = asyncio.ensure_future(
        in_build_thread(
            functools.partial(
                confined_shell, "sleep 317", source=open_dir / "src", out=open_dir / "out"
            )
        )
    )
    await asyncio.sleep(3)  # the sandbox is up and sleeping
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - t0 < 30
    for _ in range(60):  # and the sandbox's process is gone, not left to its wall limit
        alive = _running(b"sleep\x00317")
        if not alive:
            break
        await asyncio.sleep(0.5)
    assert not alive
