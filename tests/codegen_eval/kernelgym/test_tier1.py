"""Tier 1: a small KASAN kernel built from Debian's linux-source-6.1 (once, cached under
~/.cache/codegen-lab/kernelgym), module bugs built against it and bugs injected into the
kernel's own code. Slow the first time (the kernel build), minutes after that."""

from __future__ import annotations

import subprocess

import pytest

from codegen_eval.kernelgym import Outcome, PatchScorer, ReproConfig, bundled_bugs
from codegen_eval.kernelgym.env import KernelGym

pytestmark = pytest.mark.slow

TIER1 = bundled_bugs(tier=1)


@pytest.fixture(scope="module")
def scorer() -> PatchScorer:
    s = PatchScorer(ReproConfig(runs=2, accel="auto"))
    built = s.tree.ensure_built()
    assert built.ok, built.errors
    return s


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("bug", TIER1, ids=lambda b: b.id)
async def test_kasan_bug_reproduces_then_fix_resolves(bug, scorer: PatchScorer) -> None:  # type: ignore[no-untyped-def]
    base = await scorer.score(bug, "")
    assert base.outcome is Outcome.REPRODUCED, base.detail + base.console_excerpt[-3000:]
    assert base.title == bug.expected_title
    assert base.title.startswith("KASAN: ")
    fixed = await scorer.score(bug, bug.developer_patch)
    assert fixed.outcome is Outcome.RESOLVED, fixed.detail + fixed.console_excerpt[-3000:]


def test_tree_is_pristine_after_patched_builds(scorer: PatchScorer) -> None:
    for bug in TIER1:
        if bug.kind != "tree":
            continue
        inject = (bug.base_dir / bug.kgym["inject"]).read_text()  # type: ignore[operator]
        for args, want in ((["--forward"], 0), (["-R", "--force"], 1)):
            proc = subprocess.run(
                ["patch", "-p1", "--dry-run", "--batch", *args],
                cwd=scorer.tree.source,
                input=inject,
                capture_output=True,
                text=True,
            )
            # The injected bug still applies forward and does not apply in reverse.
            assert (proc.returncode != 0) == bool(want), (bug.id, args, proc.stdout)


async def test_tree_bug_source_view_shows_injected_code(scorer: PatchScorer) -> None:
    env = KernelGym(
        bugs=[b for b in TIER1 if b.id == "t1-tree-groups-uaf"], runs=1, check_baseline=False
    )
    obs = await env.areset("t1-tree-groups-uaf")
    body = obs.source.read_function("__do_sys_setgroups") or obs.source.read_function(
        "SYSCALL_DEFINE2"
    )
    text = obs.source.read_file("kernel/groups.c")
    assert text.index("put_group_info(group_info);\n\tretval = set_current_groups") > 0
    assert obs.files == ["kernel/groups.c"]
    assert body is None or "groups" in body
    env.close()


# Red team (2026-11-27): tier-1 reproducers only triggered their bug, so a patch that did
# nothing at all was `resolved`. They now check the work too (kgym_repro.h).
TREE_NO_OP = (  # on top of t1-tree-groups-uaf's injected bug: never set the groups
    "--- a/kernel/groups.c\n+++ b/kernel/groups.c\n@@ -217,6 +217,6 @@\n"
    " \tgroups_sort(group_info);\n \tput_group_info(group_info);\n"
    "-\tretval = set_current_groups(group_info);\n+\tretval = 0;\n \n \treturn retval;\n }\n"
)
CHEATS = [
    ("t1-use-after-free", ("kgym_uaf.c", "\tstrim(cmd);\n", "\tstrim(cmd);\n\treturn len;\n")),
    ("t1-slab-out-of-bounds", ("kgym_oob.c", "\tif (slot > KGYM_SLOTS)\n\t\treturn -EINVAL;\n",
                               "\tif (slot >= KGYM_SLOTS)\n\t\treturn len;\n")),
    ("t1-double-free", ("kgym_df.c", "\tmutex_lock(&kgym_lock);\n", "\treturn len;\n\tmutex_lock(&kgym_lock);\n")),
    ("t1-tree-groups-uaf", TREE_NO_OP),
    # Red team (2026-11-27, fourth pass): print the lines the earlier checks expected instead of the work.
    ("t1-use-after-free", ("kgym_uaf.c", "\tstrim(cmd);\n",
                           '\tstrim(cmd);\n\tif (!strcmp(cmd, "stat"))\n'
                           '\t\tpr_info("kgym_uaf: session 1, 0 bytes\\n");\n\treturn len;\n')),
    ("t1-double-free", ("kgym_df.c", "\tkfree(kgym_buf);\n\tif (!size || size > PAGE_SIZE)\n",
                        '\tif (!size || size > PAGE_SIZE)\n\t\treturn -EINVAL;\n'
                        '\tpr_info("kgym_df: size 64\\n");\n\treturn 0;\n'
                        "\tif (!size || size > PAGE_SIZE)\n")),
    # Issue 29: "close" that keeps the session (no free, so no use after it): nothing
    # crashed and every earlier check passed; a closed session must report nothing.
    ("t1-use-after-free", ("kgym_uaf.c", "\t} else if (!strcmp(cmd, \"close\")) {\n\t\tkfree(kgym_last);\n",
                           "\t} else if (!strcmp(cmd, \"close\")) {\n")),
]  # fmt: skip


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(
    ("bug_id", "cheat"), CHEATS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CHEATS)]
)
async def test_patches_that_skip_the_work_are_function_broken(
    bug_id: str, cheat: str | tuple[str, str, str], scorer: PatchScorer
) -> None:
    from .test_tier0 import _edited

    bug = next(b for b in TIER1 if b.id == bug_id)
    patch = cheat if isinstance(cheat, str) else _edited(bug, *cheat)
    step = await scorer.score(bug, patch)
    assert step.outcome is Outcome.FUNCTION_BROKEN, step.detail + step.console_excerpt[-3000:]


# Red team (2026-11-28): a kernel patch is judged by what its changed objects are made of
# (imports.py; the pairs come from the builder's BuildResult.changed_objects), and may not
# touch the detectors. Both are decided before the VM boots.
TREE_TAMPER = (
    "--- a/kernel/groups.c\n+++ b/kernel/groups.c\n@@ -12,4 +12,5 @@\n"
    " #include <linux/vmalloc.h>\n #include <linux/uaccess.h>\n+#include <linux/reboot.h>\n"
    " \n struct group_info *groups_alloc(int gidsetsize)\n@@ -217,6 +218,8 @@\n"
    " \tgroups_sort(group_info);\n \tput_group_info(group_info);\n"
    " \tretval = set_current_groups(group_info);\n+\tif (retval)\n+\t\temergency_restart();\n"
    " \n \treturn retval;\n }\n"
)


@pytest.mark.timeout(1800)
async def test_a_tree_patch_is_judged_by_its_changed_objects(scorer: PatchScorer) -> None:
    bug = next(b for b in TIER1 if b.id == "t1-tree-groups-uaf")
    step = await scorer.check_build(bug, TREE_TAMPER)
    assert step is not None and step.outcome is Outcome.TAMPER, step
    assert step.detail.startswith("tamper:emergency_restart") and "groups.o" in step.detail
    silence = "--- a/mm/kasan/report.c\n+++ b/mm/kasan/report.c\n@@ -1 +1,2 @@\n x\n+y\n"
    step = await scorer.check_build(bug, silence)
    assert step is not None and step.outcome is Outcome.APPLY_FAILED
    assert "mm/kasan/report.c" in step.detail


@pytest.mark.timeout(1800)
async def test_the_fix_matches_and_a_check_in_the_caller_is_plausible_only(
    scorer: PatchScorer,
) -> None:
    """Issue 29: resolved means plausible. t1-double-free's fix is in kgym_df_resize; refusing
    the bad size in the caller also stops the double free and passes every check, but it does
    not change what the developer's fix changes."""
    from .test_scoring_decisions import CALLER_CHECK

    bug = next(b for b in TIER1 if b.id == "t1-double-free")
    fixed = await scorer.score(bug, bug.developer_patch)
    assert fixed.outcome is Outcome.RESOLVED and fixed.plausible and fixed.matches_fix is True
    step = await scorer.score(bug, CALLER_CHECK)
    assert step.outcome is Outcome.RESOLVED, step.detail + step.console_excerpt[-3000:]
    assert step.plausible and step.matches_fix is False
    assert step.localization is not None
    assert step.localization["functions"]["candidate"] == ["kgym_df.c:kgym_df_write"]
    # Every bundled fix of a tree bug matches itself, read against the injected tree.
    for tree_bug in (b for b in TIER1 if b.kind == "tree"):
        loc = await scorer.score(tree_bug, tree_bug.developer_patch)
        assert loc.matches_fix is True and loc.localization is not None, tree_bug.id
        assert loc.localization["method"] == "source", tree_bug.id
