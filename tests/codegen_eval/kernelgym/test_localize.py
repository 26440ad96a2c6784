"""Localization: which files and functions a candidate changes against the developer's fix,
read from the two diffs and the pre-image source (no VM)."""

from __future__ import annotations

import difflib
import subprocess
import time
from pathlib import Path

import pytest

from codegen_eval.kernelgym import bundled_bugs
from codegen_eval.kernelgym.localize import changes, function_spans, localize
from codegen_eval.kernelgym.records import BugRecord, bundled_bug, load_record
from codegen_eval.kernelgym.scoring import PatchScorer

DATA = Path(__file__).parent / "data"
MODULE_BUGS = [b for b in bundled_bugs() if b.kind == "module"]


def edited(bug: BugRecord, name: str, old: str, new: str) -> str:
    """The unified diff replacing the text `old` (once in the file) of `name` by `new`."""
    assert bug.source_dir is not None
    before = (bug.source_dir / name).read_text()
    assert before.count(old) == 1, old
    after = before.replace(old, new)
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            f"a/{name}", f"b/{name}",
        )
    )  # fmt: skip


def _reader(bug: BugRecord):  # type: ignore[no-untyped-def]
    return lambda path: PatchScorer().pre_image(bug, path)


@pytest.mark.parametrize("bug", MODULE_BUGS, ids=lambda b: b.id)
def test_each_developer_fix_covers_itself_and_names_a_function(bug: BugRecord) -> None:
    loc = localize(bug.developer_patch, bug.developer_patch, _reader(bug))
    d = loc.to_dict()
    assert loc.covers_fix is True and d["method"] == "source"
    assert d["files"]["fix"] == bug.modified_files
    assert d["functions"]["fix"] and all(f.startswith(bug.modified_files[0] + ":")
                                         for f in d["functions"]["fix"])  # fmt: skip
    assert d["functions"]["overlap"] == d["functions"]["fix"]


def test_a_check_in_the_caller_is_not_the_fix_in_the_callee() -> None:
    # t1-double-free: the fix moves kfree after the size check in kgym_df_resize; refusing the
    # bad size in the caller (kgym_df_write) stops the double free too, in another function.
    bug = bundled_bug("t1-double-free")
    caller = edited(bug, "kgym_df.c", "\tmutex_lock(&kgym_lock);\n",
                    "\tif (!size || size > PAGE_SIZE)\n\t\treturn -EINVAL;\n"
                    "\tmutex_lock(&kgym_lock);\n")  # fmt: skip
    loc = localize(caller, bug.developer_patch, _reader(bug)).to_dict()
    assert loc["functions"] == {
        "candidate": ["kgym_df.c:kgym_df_write"],
        "fix": ["kgym_df.c:kgym_df_resize"],
        "overlap": [],
    }
    assert loc["files"]["overlap"] == ["kgym_df.c"]
    assert loc["covers_fix"] is False


def test_a_comment_in_the_fixs_function_does_not_count() -> None:
    bug = bundled_bug("t0-null-deref")
    elsewhere = edited(bug, "kgym_null.c", "\treturn NULL;\n}\n",
                       "\treturn &kgym_table[0];\n}\n")  # fmt: skip
    comment = edited(bug, "kgym_null.c", "\tstrim(key);\n", "\tstrim(key); /* checked */\n")
    both = elsewhere + comment.split("\n", 2)[2]  # one file header, two hunks
    loc = localize(both, bug.developer_patch, _reader(bug)).to_dict()
    assert loc["functions"]["candidate"] == ["kgym_null.c:kgym_null_lookup"]
    assert loc["covers_fix"] is False
    # Whitespace alone is no change either; a real edit there is.
    spaces = edited(bug, "kgym_null.c", "\tstrim(key);\n", "\tstrim( key );\n")
    assert localize(spaces, bug.developer_patch, _reader(bug)).candidate.functions == []
    real = edited(bug, "kgym_null.c", "\te->value++;\n", "\tif (e)\n\t\te->value++;\n")
    assert localize(real, bug.developer_patch, _reader(bug)).covers_fix is True


def test_a_new_function_after_the_fixs_function_is_not_inside_it() -> None:
    bug = bundled_bug("t0-null-deref")
    src = (bug.source_dir / "kgym_null.c").read_text()  # type: ignore[operator]
    end = src.index("\treturn len;\n}\n") + len("\treturn len;\n}\n")
    after = src[:end] + "\nstatic int kgym_unused(void)\n{\n\treturn 0;\n}\n" + src[end:]
    diff = "".join(difflib.unified_diff(src.splitlines(True), after.splitlines(True),
                                        "a/kgym_null.c", "b/kgym_null.c", n=1))  # fmt: skip
    assert localize(diff, bug.developer_patch, _reader(bug)).candidate.functions == []


def test_a_forged_hunk_header_is_no_evidence() -> None:
    bug = bundled_bug("t1-double-free")
    forged = (
        "--- a/kgym_df.c\n+++ b/kgym_df.c\n"
        "@@ -52,3 +52,4 @@ static int kgym_df_resize(size_t size)\n"
        ' \tif (!proc_create("kgym_df", 0222, NULL, &kgym_df_ops))\n'
        ' \t\treturn -ENOMEM;\n+\tpr_info("kgym_df: up\\n");\n \treturn 0;\n'
    )
    # With the source at hand the header is ignored: the change is in kgym_df_init.
    loc = localize(forged, bug.developer_patch, _reader(bug))
    assert loc.candidate.functions == ["kgym_df.c:kgym_df_init"] and loc.covers_fix is False
    # Without it the header is all there is: reported, but it never makes a match.
    loc = localize(forged, bug.developer_patch, lambda _path: None)
    assert loc.candidate.functions == ["kgym_df.c:kgym_df_resize"]
    assert loc.covers_fix is None and loc.to_dict()["method"] == "hunk headers"


def test_syscalls_are_named_as_syzbot_names_them() -> None:
    text = (
        "static int helper(int x)\n{\n\treturn x;\n}\n\n"
        "SYSCALL_DEFINE2(setgroups, int, gidsetsize, gid_t __user *, grouplist)\n{\n"
        "\treturn helper(gidsetsize);\n}\n"
        "COMPAT_SYSCALL_DEFINE1(foo, int, x)\n{\n\treturn 0;\n}\n"
        "static const struct x_ops ops = {\n\t.f = helper,\n};\nDEFINE_MUTEX(m);\n"
        "int proto(void);\nstatic inline int one(void) { return 1; }\n"
    )
    spans = {s.name: (s.first, s.last) for s in function_spans(text)}
    assert spans == {"helper": (1, 4), "sys_setgroups": (6, 9), "compat_sys_foo": (10, 13),
                     "one": (19, 19)}  # fmt: skip


@pytest.mark.slow
def test_tree_bugs_read_the_tree_with_the_injected_change() -> None:
    from codegen_eval.kernelgym.builders import _ensure_source

    scorer = PatchScorer()
    _ensure_source(scorer.tree.tarball, scorer.tree.source)
    for bug_id, func in (("t1-tree-groups-oob", "groups_alloc"),
                         ("t1-tree-groups-uaf", "sys_setgroups")):  # fmt: skip
        bug = bundled_bug(bug_id)
        pre = scorer.pre_image(bug, "kernel/groups.c")
        assert pre is not None
        loc = localize(bug.developer_patch, bug.developer_patch, _reader(bug))
        assert loc.fix.functions == [f"kernel/groups.c:{func}"] and loc.covers_fix, bug_id
    # groups-uaf's fix, made in set_current_groups instead (take a reference there).
    bug = bundled_bug("t1-tree-groups-uaf")
    pre = scorer.pre_image(bug, "kernel/groups.c") or ""
    n = pre.split("\n").index("\tnew = prepare_creds();") + 1
    other = (
        f"--- a/kernel/groups.c\n+++ b/kernel/groups.c\n@@ -{n},1 +{n},2 @@\n"
        " \tnew = prepare_creds();\n+\tget_group_info(group_info);\n"
    )
    assert changes(other)[0].first == n + 1
    loc = localize(other, bug.developer_patch, _reader(bug))
    assert loc.candidate.functions == ["kernel/groups.c:set_current_groups"]
    assert loc.covers_fix is False


def test_kbench_record_reads_the_commits_file_from_git(tmp_path: Path) -> None:
    repo = tmp_path / "linux"
    (repo / "drivers/foo").mkdir(parents=True)
    (repo / "drivers/foo/foo.c").write_text(
        "#include <foo.h>\n\nstatic void foo_queue_put(struct foo_queue *q)\n{\n\tkfree(q);\n}\n"
        "\n\n\nstatic void foo_release(struct foo *f)\n{\n\tstruct foo_queue *q = f->q;\n\n"
        "\tkfree(f);\n\tfoo_queue_put(q);\n}\n"
    )

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    record = load_record(DATA / "kbench_sample.json")
    record.raw["parent_of_fix_commit"] = git("rev-parse", "HEAD")
    scorer = PatchScorer(linux_tree=repo)
    assert scorer.pre_image(record, "drivers/foo/foo.c") is not None
    assert scorer.pre_image(record, "../etc/passwd") is None
    caller = (
        "--- a/drivers/foo/foo.c\n+++ b/drivers/foo/foo.c\n@@ -4,3 +4,4 @@ x\n"
        " {\n+\tif (q)\n \tkfree(q);\n }\n"
    )
    loc = localize(caller, record.developer_patch, lambda p: scorer.pre_image(record, p))
    assert loc.fix.functions == ["drivers/foo/foo.c:foo_release"]
    assert loc.candidate.functions == ["drivers/foo/foo.c:foo_queue_put"]
    assert loc.covers_fix is False


def test_a_hostile_diff_is_read_in_bounded_time() -> None:
    bug = bundled_bug("t0-null-deref")
    huge = "--- a/kgym_null.c\n+++ b/kgym_null.c\n" + ("@@ -1,1 +1,1 @@ f(\n-x\n+y\n" * 300_000)
    t0 = time.process_time()
    loc = localize(huge, bug.developer_patch, _reader(bug))
    assert time.process_time() - t0 < 10
    assert len(loc.candidate.functions) <= 64


def _applied(bug: BugRecord, diff: str, tmp: Path) -> str:
    """The module source after the real `patch`, as the gym applies it (no fuzz, offsets)."""
    import shutil

    assert bug.source_dir is not None
    shutil.copytree(bug.source_dir, tmp, dirs_exist_ok=True)
    subprocess.run(["patch", "-p1", "--unified", "--batch", "--fuzz=0"], cwd=tmp, input=diff,
                   text=True, check=True, capture_output=True)  # fmt: skip
    return (tmp / bug.modified_files[0]).read_text()


def test_hunks_are_placed_where_patch_applies_them(tmp_path: Path) -> None:
    from .test_scoring_decisions import CALLER_CHECK

    bug = bundled_bug("t1-double-free")
    # Honest: the fix with line numbers 12 off (models get them wrong); patch finds the place.
    shifted = bug.developer_patch.replace("@@ -15,9 +15,10 @@", "@@ -3,9 +3,10 @@")
    assert _applied(bug, shifted, tmp_path / "a") == _applied(bug, bug.developer_patch,
                                                              tmp_path / "b")  # fmt: skip
    assert localize(shifted, bug.developer_patch, _reader(bug)).covers_fix is True
    # Hostile: lines stated inside the fix's function (kgym_df_resize, 15-29), context that
    # matches only in the caller; patch applies it in the caller, and so does the localizer.
    forged = CALLER_CHECK.replace("@@ -37,4 +37,6 @@", "@@ -18,4 +18,6 @@")
    assert _applied(bug, forged, tmp_path / "c") == _applied(bug, CALLER_CHECK, tmp_path / "d")
    loc = localize(forged, bug.developer_patch, _reader(bug))
    assert loc.candidate.functions == ["kgym_df.c:kgym_df_write"] and loc.covers_fix is False


def test_locating_hunks_in_a_large_file_is_bounded() -> None:
    big = "int f(void)\n{\n" + "\n" * 50_000 + "}\n"  # 50,000 blank lines in one function
    hunk = "@@ -10,3 +10,3 @@\n \n \n-\n+x;\n"  # blank lines everywhere: many places to try
    diff = "--- a/big.c\n+++ b/big.c\n" + hunk * 5000
    t0 = time.process_time()
    loc = localize(diff, diff, lambda _path: big)
    assert time.process_time() - t0 < 10
    assert loc.candidate.functions == ["big.c:f"]


def test_macro_lines_and_attributes_before_a_definition() -> None:
    text = (
        'SEC("cgroup/skb")\nint prog(struct __sk_buff *skb)\n{\n\treturn 1;\n}\n'  # 1-5
        "void __attribute__((weak)) copy32(void *to)\n{\n\t*(int *)to = 0;\n}\n"  # 6-9
        "static void give(struct m *m)\n__releases(m->lock)\n{\n\tspin_unlock(&m->lock);\n}\n"
        "#ifdef A\nint twin(int x)\n#else\nint twin(long x)\n#endif\n{\n\treturn 0;\n}\n"
    )
    spans = [(s.name, s.first, s.last) for s in function_spans(text)]
    assert spans == [("prog", 2, 5), ("copy32", 6, 9), ("give", 10, 14), ("twin", 16, 22)]
