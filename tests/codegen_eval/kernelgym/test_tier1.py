"""Tier 1: a small KASAN kernel built from Debian's linux-source-6.1 (once, cached under
~/.cache/codegen-lab/kernelgym), module bugs built against it and bugs injected into the
kernel's own code. Slow the first time (the kernel build), minutes after that."""

from __future__ import annotations

import subprocess

import pytest

from codegen_eval.kernelgym import Outcome, RunConfig, Scorer, bundled_bugs
from codegen_eval.kernelgym.env import KernelGym

pytestmark = pytest.mark.slow

TIER1 = bundled_bugs(tier=1)


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    s = Scorer(RunConfig(runs=2, accel="auto"))
    built = s.tree.ensure_built()
    assert built.ok, built.errors
    return s


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("bug", TIER1, ids=lambda b: b.id)
async def test_kasan_bug_reproduces_then_fix_resolves(bug, scorer: Scorer) -> None:  # type: ignore[no-untyped-def]
    base = await scorer.score(bug, "")
    assert base.outcome is Outcome.REPRODUCED, base.detail + base.console_excerpt[-3000:]
    assert base.title == bug.expected_title
    assert base.title.startswith("KASAN: ")
    fixed = await scorer.score(bug, bug.developer_patch)
    assert fixed.outcome is Outcome.RESOLVED, fixed.detail + fixed.console_excerpt[-3000:]


def test_tree_is_pristine_after_patched_builds(scorer: Scorer) -> None:
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


async def test_tree_bug_source_view_shows_injected_code(scorer: Scorer) -> None:
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
