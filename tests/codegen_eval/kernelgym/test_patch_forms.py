"""The patch screen against every diff form GNU patch acts on. Each refused form is first
applied with the real `patch -p1 --unified` in a scratch tree, to show that it really changes
something other than a C source (a symlink, a Makefile, a host program's source): the screen
must read a patch the way patch does, not the way `git diff` writes one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codegen_eval.kernelgym.builders import PATCH_CMD
from codegen_eval.kernelgym.patch_screen import screen_patch

# A valid C section: the holes below hid behind one, since a patch with no names at all was
# already refused as "not a unified diff".
C_FIX = "--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-int a;\n+int b;\n"
MAKEFILE_HUNK = "@@ -1 +1 @@\n-obj-m += x.o\n+obj-m += y.o\n"

# (id, patch, what the refusal must name). Marked `old`: the screen before this change let it
# through.
REFUSED = [
    # old: -p1 strips any first component, not only a/ and b/
    ("any-prefix-host-program", "--- x/scripts/s.c\n+++ x/scripts/s.c\n"
     "@@ -1 +1 @@\n-int s;\n+int t;\n", "programs the build host runs"),
    # old: a hunk right after a git header: patch takes the `diff --git` name
    ("git-names-only", C_FIX + "diff --git a/Makefile b/Makefile\nindex 1111111..2222222 100644\n"
     + MAKEFILE_HUNK, "Makefile"),
    # old: a header-only new file (an empty Kbuild overrides the module's Makefile)
    ("header-only-new-file", C_FIX + "diff --git a/Kbuild b/Kbuild\nnew file mode 100644\n",
     "Kbuild"),
    # old: the mode on the index line makes a symlink
    ("index-line-symlink", "diff --git a/y.c b/y.c\nnew file mode 100644\n"
     "index 0000000..1111111 120000\n--- /dev/null\n+++ b/y.c\n@@ -0,0 +1 @@\n+x.c\n",
     "file mode 120000"),
    ("quoted-escape", 'diff --git "a/Make\\146ile" "b/Make\\146ile"\n--- "a/Make\\146ile"\n'
     '+++ "b/Make\\146ile"\n' + MAKEFILE_HUNK, "Makefile"),
    ("tab-ends-name", "--- a/Makefile\t.c\n+++ b/Makefile\t.c\n" + MAKEFILE_HUNK, "Makefile"),
    ("space-ends-name", "--- a/Makefile .c\n+++ b/Makefile .c\n" + MAKEFILE_HUNK, "Makefile"),
    ("rename-to-makefile", "diff --git a/x.c b/Makefile2\nsimilarity index 100%\n"
     "rename from x.c\nrename to Makefile2\n", "Makefile2"),
    ("copy-to-kbuild", "diff --git a/x.c b/Kbuild\ncopy from x.c\ncopy to Kbuild\n", "Kbuild"),
    ("delete-makefile", "diff --git a/Makefile b/Makefile\ndeleted file mode 100644\n"
     "--- a/Makefile\n+++ /dev/null\n@@ -1 +0,0 @@\n-obj-m += x.o\n", "Makefile"),
    ("new-makefile-from-dev-null", "--- /dev/null\n+++ b/GNUmakefile\n@@ -0,0 +1 @@\n+x:\n",
     "GNUmakefile"),
    ("hunk-path-differs-from-git-path", "diff --git a/x.c b/x.c\n--- a/Makefile\n"
     "+++ b/Makefile\n" + MAKEFILE_HUNK, "Makefile"),
    ("minus-only-header", "--- a/Makefile\n" + MAKEFILE_HUNK, "Makefile"),
    ("symlink-mode", "diff --git a/k.c b/k.c\nnew file mode 120000\n--- /dev/null\n"
     "+++ b/k.c\n@@ -0,0 +1 @@\n+x.c\n\\ No newline at end of file\n", "file mode 120000"),
    ("executable-mode", C_FIX + "diff --git a/x.c b/x.c\nold mode 100644\nnew mode 100755\n",
     "file mode 100755"),
]  # fmt: skip


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "t"
    (tree / "scripts").mkdir(parents=True)
    (tree / "Makefile").write_text("obj-m += x.o\n")
    (tree / "x.c").write_text("int a;\n")
    (tree / "scripts" / "s.c").write_text("int s;\n")
    return tree


def _snapshot(tree: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for p in sorted(tree.rglob("*")):
        st = os.lstat(p)
        body = os.readlink(p) if p.is_symlink() else ("" if p.is_dir() else p.read_text())
        out[str(p.relative_to(tree))] = (st.st_mode, body)
    return out


def _non_c_changes(tmp_path: Path, patch: str) -> list[str]:
    """What the real GNU patch changes, other than regular C files' contents."""
    tree = _tree(tmp_path)
    before = _snapshot(tree)
    subprocess.run(
        [*PATCH_CMD, "--forward"], cwd=tree, input=patch, text=True, capture_output=True,
        timeout=30, check=False,
    )  # fmt: skip
    after = _snapshot(tree)
    changed = [k for k in before.keys() | after.keys() if before.get(k) != after.get(k)]
    return sorted(
        k for k in changed
        if not (k.endswith((".c", ".h")) and not k.startswith("scripts/")
                and not (tree / k).is_symlink() and (after.get(k, (0o100644,))[0] & 0o777) == 0o644)
    )  # fmt: skip


@pytest.mark.parametrize(("patch", "what"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_each_form_patch_acts_on_is_refused(tmp_path: Path, patch: str, what: str) -> None:
    assert _non_c_changes(tmp_path, patch), "the real patch changes no build machinery here"
    reason = screen_patch(patch)
    assert reason is not None and reason.startswith("patch refused:"), patch
    assert what in reason, reason


@pytest.mark.parametrize(
    "patch",
    [
        C_FIX,
        # what `git diff` writes for a C change, index line with the regular mode included
        "diff --git a/x.c b/x.c\nindex 1111111..2222222 100644\n" + C_FIX,
        # an added C line that reads "++ b/Makefile" is content, not a header
        "--- a/x.c\n+++ b/x.c\n@@ -1 +1,2 @@\n int a;\n+++ b/Makefile\n",
        # a git commit message and diffstat before the diff (git format-patch)
        "From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\nliteral value\n---\n"
        " x.c | 2 +-\n\n" + C_FIX,
        'diff --git "a/x.c" "b/x.c"\n--- "a/x.c"\n+++ "b/x.c"\n@@ -1 +1 @@\n-int a;\n+int b;\n',
        "diff --git a/x.c b/y.c\nsimilarity index 100%\nrename from x.c\nrename to y.c\n",
    ],
    ids=["plain", "git", "plus-content", "format-patch", "quoted-c", "rename-c-to-c"],
)
def test_c_only_forms_pass(tmp_path: Path, patch: str) -> None:
    assert screen_patch(patch) is None
    assert _non_c_changes(tmp_path, patch) == []


def _tree_patch(path: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n x\n+y\n"


# A tree candidate that silences the detector instead of fixing the bug: no new import, no
# instruction for the object screen; kasan_report returning early hides every KASAN report.
@pytest.mark.parametrize(
    "path",
    ["mm/kasan/report.c", "kernel/printk/printk.c", "kernel/watchdog.c", "kernel/hung_task.c",
     "drivers/tty/serial/8250/8250_port.c", "fs/exec.c", "include/linux/kasan.h",
     "arch/x86/mm/fault.c", "kernel/panic.c", "lib/list_debug.c"],
)  # fmt: skip
def test_tree_candidates_may_not_change_the_detectors_or_channels(path: str) -> None:
    from codegen_eval.kernelgym.patch_screen import screen_detectors

    reason = screen_detectors(_tree_patch(path))
    assert reason is not None and path in reason
    assert screen_detectors(_tree_patch(path), exempt=[path]) is None  # the bug's own file
    assert screen_detectors(_tree_patch("kernel/groups.c")) is None


async def test_the_scorer_refuses_a_silenced_detector_before_building() -> None:
    from codegen_eval.kernelgym import PatchScorer
    from codegen_eval.kernelgym.records import bundled_bug

    bug = bundled_bug("t1-tree-groups-oob")
    silence = "--- a/mm/kasan/report.c\n+++ b/mm/kasan/report.c\n@@ -1 +1,2 @@\n x\n+y\n"
    result, kernel, _ = PatchScorer().build(bug, silence)
    assert result.status.value == "patch_apply_failed" and kernel is None
    assert "mm/kasan/report.c" in result.log
    # Every bundled fix passes, with the files its record names as its own.
    from codegen_eval.kernelgym import bundled_bugs

    for b in bundled_bugs():
        assert screen_detectors_for(b) is None, b.id


def screen_detectors_for(bug) -> str | None:  # type: ignore[no-untyped-def]
    from codegen_eval.kernelgym.patch_screen import screen_detectors

    return screen_detectors(bug.developer_patch, bug.modified_files)
