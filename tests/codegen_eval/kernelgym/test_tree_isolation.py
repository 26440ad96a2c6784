"""Tier-1 `tree` candidates share one cached kernel source tree. Each candidate's patches
now go into a private copy of it (applied in the sandbox, strict, all or nothing), so no
candidate can change the tree another candidate builds from. The stand-in tree below is
built by the real KernelTree (tarball, configure, make in the sandbox) with real patch;
its "kernel" is a program that prints its lines, so an image shows the source it came from.

Each of the first three tests is an issue's reproducer: on the old code (patch the shared
tree, revert with `patch -R`) the tree kept a candidate's change, or the revert raised."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import io
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen_eval.kernelgym import builders
from codegen_eval.kernelgym.builders import BuildResult, BuildStatus, KernelTree
from codegen_eval.kernelgym.buildrun import in_build_thread

MAKEFILE = """\
O ?= .
SRCS := $(sort $(wildcard kernel/*.c))
OBJS := $(patsubst %.c,$(O)/%.o,$(SRCS))
.PHONY: tinyconfig olddefconfig bzImage modules
tinyconfig:
\techo CONFIG_STAND_IN=y > $(O)/.config
olddefconfig modules:
\t@true
bzImage: $(O)/arch/x86/boot/bzImage
$(O)/%.o: %.c
\t@mkdir -p $(dir $@)
\tif grep -q SLOW_BUILD $<; then sleep 317; fi
\tgcc -c -o $@ $<
$(O)/arch/x86/boot/bzImage: $(OBJS)
\t@mkdir -p $(dir $@)
\tgcc -o $@ $^
"""
# Line numbers matter to the reproducers: L(x) is line 4, L(y) 5, L(k) 6, L(m) 10.
GROUPS_C = """\
#include <stdio.h>
#define L(s) puts(#s);
int main(void) {
L(x)
L(y)
L(k)
L(a1)
L(a2)
L(a3)
L(m)
L(b)
L(b1)
L(b2)
L(b3)
return 0; }
"""


def _diff(path: str, *hunks: str) -> str:
    return "".join(f"--- a/{path}\n+++ b/{path}\n{h}" for h in hunks)


# An honest candidate: one line changed, with full context.
HONEST = _diff("kernel/groups.c", "@@ -12,3 +12,3 @@\n L(b1)\n-L(b2)\n+L(fixed)\n L(b3)\n")
HONEST_OUTPUT = "x y k a1 a2 a3 m b b1 fixed b3"


def _tarball(at: Path, victim: Path) -> Path:
    """linux-standin.tar: the tree above, plus links a hostile patch may try to go through."""
    buf = at / "linux-standin.tar"
    files = {
        "Makefile": MAKEFILE,
        "scripts/kconfig/merge_config.sh": "#!/bin/sh\nexit 0\n",
        "kernel/groups.c": GROUPS_C,
        "kernel/main2.c": "void unused(void) {}\n",
    }
    links = {"lib/outside": str(victim), "lib/groups.c": "../kernel/groups.c"}
    with tarfile.open(buf, "w") as tf:
        for name, text in files.items():
            info = tarfile.TarInfo(f"linux-standin/{name}")
            data = text.encode()
            info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
            tf.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(f"linux-standin/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return buf


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory the sandbox's uid can reach (pytest's tmp_path sits under a 0700 one)."""
    d = Path(tempfile.mkdtemp(prefix="kgym-tree-", dir="/var/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def tree(open_dir: Path) -> KernelTree:
    victim = open_dir / "victim"
    victim.mkdir()
    (victim / "keep.c").write_text("int keep;\n")
    fragment = open_dir / "stand-in.config"
    fragment.write_text("CONFIG_X=y\n")
    t = KernelTree(fragment, tarball=_tarball(open_dir, victim), root=open_dir / "cache")
    base = t.ensure_built()
    assert base.ok, base.log
    return t


def _digest(root: Path) -> str:
    """Every entry of a tree: names, file contents, link targets (a .rej would show)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode() + b"\0")
        if p.is_symlink():
            h.update(b"L" + str(p.readlink()).encode())
        elif p.is_file():
            h.update(b"F" + p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _output(res: BuildResult) -> str:
    assert res.ok, res.log
    exe = res.artifacts["kernel"]
    return " ".join(subprocess.run([str(exe)], capture_output=True, text=True).stdout.split())


def _honest_still_right(tree: KernelTree, pristine: str) -> None:
    assert _digest(tree.source) == pristine
    assert _output(tree.build_patched([HONEST], use_cache=False)) == HONEST_OUTPUT
    assert _digest(tree.source) == pristine
    assert not list(tree.build_dir.parent.glob(f".{tree.build_dir.name}.source-*"))


def test_an_offset_hunk_is_never_reverted_elsewhere(tree: KernelTree) -> None:
    """Issue: a zero-context hunk applied at an offset (L(x) claimed at line 8, found at 4)
    was reverted at another place (the L(y) nearest line 8, line 5), rc 0: the tree kept
    L(y) L(y) -> L(y) L(x), two lines swapped for every later candidate."""
    pristine = _digest(tree.source)
    swap = _diff("kernel/groups.c", "@@ -8 +8 @@\n-L(x)\n+L(y)\n")
    assert _output(tree.build_patched([swap])) == "y y k a1 a2 a3 m b b1 b2 b3"
    _honest_still_right(tree, pristine)


def test_a_patch_that_fails_half_way_leaves_no_trace(tree: KernelTree) -> None:
    """Issue: two sections for one file each passed --dry-run against the original; the
    second failed in the real run, the candidate was refused, but its first section stayed
    applied (plus a .rej), compiled into every later kernel."""
    pristine = _digest(tree.source)
    two = _diff("kernel/groups.c", "@@ -4 +4 @@\n-L(x)\n+L(planted)\n") + _diff(
        "kernel/groups.c", "@@ -4 +4 @@\n-L(x)\n+L(z)\n"
    )
    res = tree.build_patched([two])
    assert res.status is BuildStatus.PATCH_APPLY_FAILED
    assert "FAILED" in res.log
    _honest_still_right(tree, pristine)


# Applies and builds (L(k) claimed at line 14, found at 6). Reverted with `patch -R`, its
# first section lands on the L(m) nearest line 14 (line 10), the second's context, so the
# second fails part way through.
REVERSE_BREAKER = _diff("kernel/groups.c", "@@ -14 +14 @@\n-L(k)\n+L(m)\n") + _diff(
    "kernel/groups.c",
    "@@ -8,7 +8,7 @@\n L(a2)\n L(a3)\n L(m)\n-L(b)\n+L(c)\n L(b1)\n L(b2)\n L(b3)\n",
)


def test_a_candidate_whose_revert_would_fail_breaks_nothing(tree: KernelTree) -> None:
    """Issue: a reverse that failed half way raised `RuntimeError: could not revert a
    patch` and left the next candidate (the developer fix) `patch_apply_failed`."""
    pristine = _digest(tree.source)
    res = tree.build_patched([REVERSE_BREAKER])
    assert _output(res) == "x y m a1 a2 a3 m c b1 b2 b3"
    _honest_still_right(tree, pristine)


def test_hunks_apply_without_fuzz(tree: KernelTree) -> None:
    """A hunk whose context does not match (L(b0) is not in the tree) is refused, not
    applied with its outer context lines dropped (patch's default fuzz of 2)."""
    pristine = _digest(tree.source)
    fuzzy = _diff("kernel/groups.c", "@@ -11,3 +11,3 @@\n L(b0)\n-L(b1)\n+L(q)\n L(b2)\n")
    res = tree.build_patched([fuzzy])
    assert res.status is BuildStatus.PATCH_APPLY_FAILED, res.log
    _honest_still_right(tree, pristine)


def test_a_new_file_stays_with_its_candidate(tree: KernelTree) -> None:
    """A patch creating a file the pristine tree lacks: that candidate's build compiles it
    (its object is reported without a pristine twin), the next candidate never sees it."""
    pristine = _digest(tree.source)
    new = (
        "--- /dev/null\n+++ b/kernel/extra.c\n@@ -0,0 +1,2 @@\n+#include <stdio.h>\n"
        '+__attribute__((constructor)) static void hi(void) { puts("extra"); }\n'
    )
    res = tree.build_patched([new, HONEST])
    assert _output(res) == "extra " + HONEST_OUTPUT
    pairs = {c.relative_to(c.parents[1]).as_posix(): p for p, c in res.changed_objects}
    assert set(pairs) == {"kernel/extra.o", "kernel/groups.o"}
    assert pairs["kernel/extra.o"] is None
    assert pairs["kernel/groups.o"] is not None
    assert not (tree.source / "kernel" / "extra.c").exists()
    _honest_still_right(tree, pristine)


def test_changed_objects_pair_the_pristine_and_the_candidates_object(tree: KernelTree) -> None:
    """For helper checks on what a candidate's object references: each changed C file's
    (pristine object, candidate object), kept with the image and returned from the cache."""
    res = tree.build_patched([HONEST])
    assert res.ok and not res.cached
    ((pristine, candidate),) = res.changed_objects
    assert pristine is not None and pristine.name == candidate.name == "groups.o"
    assert pristine.read_bytes() == (tree.build_dir / "kernel" / "groups.o").read_bytes()
    assert candidate.read_bytes() != pristine.read_bytes()
    again = tree.build_patched([HONEST])
    assert again.cached and again.changed_objects == res.changed_objects


@pytest.mark.parametrize(
    "hostile",
    [
        # Through an absolute link in the tree to a host directory.
        "--- /dev/null\n+++ b/lib/outside/new.c\n@@ -0,0 +1 @@\n+int planted;\n",
        _diff("lib/outside/keep.c", "@@ -1 +1 @@\n-int keep;\n+int planted;\n"),
        # Through a relative link to a tree file, and up out of the tree.
        _diff("lib/groups.c", "@@ -4 +4 @@\n-L(x)\n+L(planted)\n"),
        _diff("kernel/../../victim/keep.c", "@@ -1 +1 @@\n-int keep;\n+int planted;\n"),
    ],
)
def test_links_and_dotdot_paths_reach_neither_the_tree_nor_the_host(
    tree: KernelTree, open_dir: Path, hostile: str
) -> None:
    pristine = _digest(tree.source)
    victim = _digest(open_dir / "victim")
    res = tree.build_patched([hostile])
    if res.ok:  # patch wrote somewhere in the candidate's own copy
        assert "planted" not in _output(res)
    assert _digest(open_dir / "victim") == victim
    _honest_still_right(tree, pristine)


def test_two_candidates_at_once_get_their_own_images(tree: KernelTree) -> None:
    pristine = _digest(tree.source)
    other = _diff("kernel/groups.c", "@@ -6,3 +6,3 @@\n L(k)\n-L(a1)\n+L(other)\n L(a2)\n")
    results: dict[str, BuildResult] = {}

    def build(name: str, patch: str) -> None:
        results[name] = tree.build_patched([patch], use_cache=False)

    threads = [
        threading.Thread(target=build, args=("honest", HONEST)),
        threading.Thread(target=build, args=("other", other)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert _output(results["honest"]) == HONEST_OUTPUT
    assert _output(results["other"]) == "x y k other a2 a3 m b b1 b2 b3"
    assert _digest(tree.source) == pristine


async def test_a_candidate_cancelled_mid_build_leaves_the_tree_pristine(tree: KernelTree) -> None:
    """Ctrl-C while a candidate's make runs (the copy is patched, the build half done)."""
    pristine = _digest(tree.source)
    slow = _diff("kernel/groups.c", "@@ -4 +4 @@\n-L(x)\n+L(SLOW_BUILD)\n")
    task = asyncio.ensure_future(
        in_build_thread(functools.partial(tree.build_patched, [slow], use_cache=False))
    )
    await asyncio.sleep(4)  # patched and sleeping in make
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(_honest_still_right, tree, pristine)


def test_a_candidate_interrupted_after_its_patch_leaves_the_tree_pristine(
    tree: KernelTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C between the (real, sandboxed) apply and the build."""
    pristine = _digest(tree.source)
    real_apply = builders.apply_confined

    def apply_then_interrupt(*args: object, **kwargs: object) -> tuple[bool, str]:
        ok, out = real_apply(*args, **kwargs)  # type: ignore[arg-type]
        assert ok, out
        raise KeyboardInterrupt

    monkeypatch.setattr(builders, "apply_confined", apply_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        tree.build_patched([_diff("kernel/groups.c", "@@ -4 +4 @@\n-L(x)\n+L(stuck)\n")])
    monkeypatch.setattr(builders, "apply_confined", real_apply)
    _honest_still_right(tree, pristine)


def test_a_kbench_candidate_builds_in_a_copy_of_the_worktree(open_dir: Path) -> None:
    """GitKernelBuilder the same way: the patch goes into a private copy of the worktree
    (in the sandbox), which stays at its commit; the changed file's objects are paired."""
    from codegen_eval.kernelgym.git_builder import GitKernelBuilder

    from .test_builders import stand_in_repo

    repo, commit = stand_in_repo(
        open_dir,
        ".PHONY: olddefconfig vmlinux\nolddefconfig:\n\ttrue\n"
        "vmlinux: $(O)/main.o\n\tgcc -o $(O)/vmlinux $(O)/main.o\n"
        "$(O)/main.o: main.c\n\tgcc -c -o $@ main.c\n",
        "int main(void) { return 1; }\n",
    )
    builder = GitKernelBuilder(repo, root=open_dir / "wt", target="vmlinux")
    half = _diff(
        "main.c", "@@ -1 +1 @@\n-int main(void) { return 1; }\n+int main(void) { return 2; }\n"
    )
    half += _diff(
        "main.c", "@@ -1 +1 @@\n-int main(void) { return 1; }\n+int main(void) { return 3; }\n"
    )
    assert builder.build(commit, "C=y\n", half).status is BuildStatus.PATCH_APPLY_FAILED
    wt = builder.worktree(commit)
    fix = "--- a/main.c\n+++ b/main.c\n@@ -1 +1 @@\n-int main(void) { return 1; }\n+int main(void) { return 7; }\n"
    res = builder.build(commit, "C=y\n", fix)
    assert res.ok, res.log
    assert subprocess.run([str(res.artifacts["kernel"])]).returncode == 7
    ((pristine, candidate),) = res.changed_objects
    assert pristine is not None and pristine.name == candidate.name == "main.o"
    assert pristine.read_bytes() != candidate.read_bytes()
    assert (wt / "main.c").read_text() == "int main(void) { return 1; }\n"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=wt, capture_output=True, text=True
    )
    assert status.stdout == ""


def test_a_tree_an_older_version_patched_is_unpacked_again(tree: KernelTree) -> None:
    """Caches from before this change may hold a tree a candidate's revert left changed (two
    lines swapped, a .rej): one that no version of ours vouched for is compared with the
    tarball, and unpacked again, with every build made from it dropped."""
    pristine = _digest(tree.source)
    marker = tree.source.parent / f".{tree.source.name}.pristine"
    assert marker.exists()  # unpacked by this version: vouched for
    groups = tree.source / "kernel" / "groups.c"
    groups.write_text(GROUPS_C.replace("L(x)\nL(y)\n", "L(y)\nL(x)\n"))
    (tree.source / "kernel" / "groups.c.rej").write_text("@@ -1 +1 @@\n")
    marker.unlink()
    base = tree.ensure_built()
    assert base.ok and not base.cached, base.log  # the pristine kernel was built again
    assert _digest(tree.source) == pristine
    assert _output(tree.build_patched([HONEST])) == HONEST_OUTPUT
    marker.unlink()
    assert tree.ensure_built().cached  # an unchanged tree is only compared, not unpacked
    assert marker.exists()
