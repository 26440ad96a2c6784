"""Diff extraction and normalisation: what models actually send."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agents.kernel.diff import extract_diff, hunks, normalize_diff, touched_paths

BUGS = Path(__file__).resolve().parents[2] / "codegen_eval" / "kernelgym" / "bugs"
FIX = (BUGS / "t0-null-deref" / "fix.patch").read_text()


def _applies(diff: str, tmp_path: Path) -> bool:
    src = tmp_path / "src"
    subprocess.run(["cp", "-r", str(BUGS / "t0-null-deref" / "src"), str(src)], check=True)
    proc = subprocess.run(
        ["patch", "-p1", "--dry-run", "--batch"],
        cwd=src,
        input=diff,
        text=True,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def test_fenced_diff_block_is_extracted_as_is() -> None:
    reply = f"The lookup can fail.\n\n```diff\n{FIX}```\n\nThis returns -ENOENT."
    assert extract_diff(reply) == FIX


def test_bare_diff_in_prose() -> None:
    reply = "Here is the fix:\n" + FIX + "\nThat should do it."
    diff = extract_diff(reply)
    assert diff is not None and diff.startswith("diff --git a/kgym_null.c")
    assert "That should do it" not in diff


def test_last_diff_wins_and_other_blocks_are_ignored() -> None:
    first = FIX.replace("-ENOENT", "-EINVAL")
    reply = f"```c\nint x;\n```\nfirst try:\n```diff\n{first}```\nbetter:\n```patch\n{FIX}```"
    assert extract_diff(reply) == FIX


def test_untagged_fence_holding_a_diff() -> None:
    assert extract_diff(f"```\n{FIX}```") == FIX


def test_no_diff_gives_none() -> None:
    assert extract_diff("I think the bug is in kgym_null_write.") is None
    assert extract_diff("```c\nif (!e) return -ENOENT;\n```") is None
    assert extract_diff("") is None
    assert extract_diff("<think>--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n</think>no diff") is None


def test_wrong_counts_missing_prefixes_and_crlf_are_repaired(tmp_path: Path) -> None:
    sloppy = (
        "--- kgym_null.c\n+++ kgym_null.c\n@@ -39,9 +39,3 @@\n"
        " \t\treturn -EFAULT;\n \tstrim(key);\n \te = kgym_null_lookup(key);\n"
        "+\tif (!e)\n+\t\treturn -ENOENT;\n \te->value++;\n"
    ).replace("\n", "\r\n")
    diff = extract_diff(f"```diff\n{sloppy}```")
    assert diff is not None
    assert diff.startswith("--- a/kgym_null.c\n+++ b/kgym_null.c\n@@ -39,4 +39,6 @@")
    assert "\r" not in diff
    assert _applies(diff, tmp_path)


def test_eaten_blank_context_line_is_restored() -> None:
    diff = normalize_diff(
        "--- a/f.c\n+++ b/f.c\n@@ -1,4 +1,5 @@\n a;\n\n b;\n+c;\n c2;\n\nExplanation follows.\n"
    )
    assert "@@ -1,4 +1,5 @@\n a;\n \n b;\n+c;\n c2;\n" in diff
    assert "Explanation" not in diff


def test_developer_fix_applies_after_normalisation(tmp_path: Path) -> None:
    assert _applies(normalize_diff(FIX), tmp_path)


def test_hunks_and_paths() -> None:
    [h] = hunks(FIX)
    assert h.path == "kgym_null.c" and h.old_start == 39 and h.old_len == 6
    assert h.removed[0].strip() == "return -EFAULT;"
    assert touched_paths(FIX) == ["kgym_null.c"]
