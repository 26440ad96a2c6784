"""Tier 0 end to end: every bundled module bug crashes Debian's kernel with its expected title
when unpatched, and its developer fix resolves it (K clean runs, clean end of boot)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codegen_eval.kernelgym import KernelGym, Outcome, PatchScorer, ReproConfig, bundled_bugs

TIER0 = bundled_bugs(tier=0)


@pytest.fixture(scope="module")
def scorer() -> PatchScorer:
    return PatchScorer(ReproConfig(runs=2, accel="auto"))


@pytest.mark.parametrize("bug", TIER0, ids=lambda b: b.id)
async def test_bug_reproduces_then_fix_resolves(bug, scorer: PatchScorer) -> None:  # type: ignore[no-untyped-def]
    base = await scorer.score(bug, "")
    assert base.outcome is Outcome.REPRODUCED, base.detail + base.console_excerpt[-3000:]
    assert base.title == bug.expected_title
    assert base.matches_expected
    assert bug.kgym["module"] in base.console_excerpt  # the report points into the module

    fixed = await scorer.score(bug, bug.developer_patch)
    assert fixed.outcome is Outcome.RESOLVED, fixed.detail + fixed.console_excerpt[-3000:]
    assert fixed.completed_runs == 2
    assert fixed.crashes == []
    assert "KGYM-FUNC-FAIL" not in fixed.console_excerpt  # the fix keeps the module working


async def test_environment_api_records_every_step(tmp_path: Path) -> None:
    log = tmp_path / "steps.jsonl"
    env = KernelGym(runs=2, log_path=log)
    obs = await env.areset("t0-null-deref")
    assert obs.title == "BUG: unable to handle kernel NULL pointer dereference in kgym_null_write"
    assert "kgym_null_write" in obs.crash_report
    assert obs.files == ["Makefile", "kgym_null.c"]
    body = obs.source.read_function("kgym_null_write")
    assert body is not None and body.startswith("// kgym_null.c:") and "e->value++" in body
    assert "kgym_null_lookup" in obs.source.read_file("kgym_null.c", 1, 200)

    # A patch against lines that do not exist.
    res = await env.astep("--- a/kgym_null.c\n+++ b/kgym_null.c\n@@ -1,1 +1,1 @@\n-nope\n+x\n")
    assert res.outcome is Outcome.APPLY_FAILED

    # A patch that does not compile: the compiler's error comes back.
    src = obs.source.read_file("kgym_null.c").splitlines()
    n = src.index("\te->value++;") + 1
    res = await env.astep(
        f"--- a/kgym_null.c\n+++ b/kgym_null.c\n@@ -{n},1 +{n},1 @@\n-\te->value++;\n+\te->vlaue++;\n"
    )
    assert res.outcome is Outcome.BUILD_FAILED and "vlaue" in res.detail

    # A module whose init fails: the kernel boots but the bug cannot even be exercised.
    m = src.index('\tif (!proc_create("kgym_null", 0222, NULL, &kgym_null_ops))') + 1
    res = await env.astep(
        f"--- a/kgym_null.c\n+++ b/kgym_null.c\n@@ -{m},1 +{m},1 @@\n"
        f'-\tif (!proc_create("kgym_null", 0222, NULL, &kgym_null_ops))\n'
        f"+\tif (1)\n"
    )
    assert res.outcome is Outcome.BOOT_ERROR and "insmod" in res.detail

    res = await env.astep(env.bugs["t0-null-deref"].developer_patch)
    assert res.outcome is Outcome.RESOLVED and env.solved
    env.close()

    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events] == ["reset", "step", "step", "step", "step"]
    assert [e["result"]["outcome"] for e in events[1:]] == [
        "apply_failed",
        "build_failed",
        "boot_error",
        "resolved",
    ]
    assert events[0]["observation"]["baseline"]["outcome"] == "reproduced"


async def test_a_fix_that_refuses_the_work_is_function_broken(scorer: PatchScorer) -> None:
    # What both local models sent for t0-hung-task: return before the lock, so nothing can
    # hang - and nothing is ever stored either. No crash, but not a fix.
    bug = next(b for b in TIER0 if b.id == "t0-hung-task")
    src = (bug.source_dir / "kgym_hung.c").read_text().splitlines()  # type: ignore[operator]
    n = src.index("\tmutex_lock(&kgym_lock);") + 1
    hack = (
        f"--- a/kgym_hung.c\n+++ b/kgym_hung.c\n@@ -{n},1 +{n},2 @@\n"
        "+\treturn -EINVAL;\n \tmutex_lock(&kgym_lock);\n"
    )
    step = await scorer.score(bug, hack)
    assert step.outcome is Outcome.FUNCTION_BROKEN, step.detail + step.console_excerpt[-3000:]
    assert re.search(r"cmd \d+ returned -1, must be accepted", step.detail), step.detail


def _edited(bug, name: str, old: str, new: str) -> str:  # type: ignore[no-untyped-def]
    """The unified diff that replaces the text `old` (once in the file) of `name` by `new`."""
    import difflib

    before = (bug.source_dir / name).read_text()
    assert before.count(old) == 1, old
    after = before.replace(old, new)
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            f"a/{name}", f"b/{name}",
        )
    )  # fmt: skip


# Near misses the 1.5B kernel agent sent, which the gym scored `resolved` until the
# reproducers checked the boundary and the refusal (docs/agents.md).
NEAR_MISSES = [
    # off by one: 8 == KGYM_RING still loops forever
    ("t0-soft-lockup", "kgym_lockup.c", "\tspin_lock(&kgym_lock);\n",
     "\tif (end > KGYM_RING)\n\t\treturn -EINVAL;\n\tspin_lock(&kgym_lock);\n", "reproduced"),
    # the full stack drops the value and the write still reports success
    ("t0-bug-on", "kgym_bugon.c", "\tBUG_ON(kgym_depth >= KGYM_STACK_MAX);\n",
     "\tif (kgym_depth >= KGYM_STACK_MAX)\n\t\treturn;\n", "function_broken"),
    # no peek: the popped job 0 is reported as the next one (only the kernel log shows it)
    ("t0-gpf", "kgym_gpf.c",
     "\t/* peek at the job that is now at the head of the queue */\n"
     "\tjob = list_entry(job->node.next, struct kgym_job, node);\n", "", "function_broken"),
    # never true for a node never initialised: nothing is ever registered
    ("t0-list-corruption", "kgym_list.c", "\tlist_add(&h->node, &kgym_registry);\n",
     "\tif (list_empty(&h->node))\n\t\tlist_add(&h->node, &kgym_registry);\n",
     "function_broken"),
    # unlink and link again (the agent's patch): the only handler, registered twice, is lost
    ("t0-list-corruption", "kgym_list.c", "\tlist_add(&h->node, &kgym_registry);\n",
     "\tif (list_empty(&kgym_registry)) {\n\t\tlist_add(&h->node, &kgym_registry);\n"
     "\t} else {\n\t\tstruct kgym_handler *existing;\n"
     "\t\tlist_for_each_entry(existing, &kgym_registry, node) {\n"
     "\t\t\tif (strcmp(existing->name, h->name) == 0) {\n"
     "\t\t\t\tlist_del(&existing->node);\n\t\t\t\tbreak;\n\t\t\t}\n\t\t}\n"
     "\t\tif (!list_empty(&kgym_registry))\n\t\t\tlist_add(&h->node, &kgym_registry);\n"
     "\t\telse\n\t\t\tprintk(KERN_ERR \"List is full\\n\");\n\t}\n",
     "function_broken"),
    # the report silenced: the second start goes through
    ("t0-warn", "kgym_warn.c", "\tWARN_ON(kgym_state != KGYM_IDLE);\n", "", "function_broken"),
    # Red team (2026-11-27): accept every write and do none of the work. The return codes
    # alone were satisfied; the kernel log now has to show the work done.
    ("t0-null-deref", "kgym_null.c", "\tstrim(key);\n", "\tstrim(key);\n\treturn len;\n",
     "function_broken"),
    ("t0-divide-error", "kgym_div.c", "\tmutex_lock(&kgym_lock);\n",
     "\treturn len;\n\tmutex_lock(&kgym_lock);\n", "function_broken"),
    ("t0-hung-task", "kgym_hung.c", "\tmutex_lock(&kgym_lock);\n",
     "\tif (v < 0)\n\t\treturn -EINVAL;\n\treturn len;\n\tmutex_lock(&kgym_lock);\n",
     "function_broken"),
    ("t0-refcount", "kgym_ref.c", "\tmutex_lock(&kgym_lock);\n",
     "\tkfree(s);\n\treturn len;\n\tmutex_lock(&kgym_lock);\n", "function_broken"),
    ("t0-soft-lockup", "kgym_lockup.c", "\tspin_lock(&kgym_lock);\n",
     "\tif (end >= KGYM_RING)\n\t\treturn -EINVAL;\n\treturn len;\n\tspin_lock(&kgym_lock);\n",
     "function_broken"),
    # Do the work, but kill the reproducer on the trigger, or put it to sleep until its
    # timeout: no crash, no failed check, every run "ends". Since 2026-11-28 both are refused
    # before boot, by what the module imports (send_sig, schedule_timeout_interruptible);
    # the exit-code check that made them function_broken is in test_scoring_decisions.
    ("t0-null-deref", "kgym_null.c", "\tstrim(key);\n",
     '\tstrim(key);\n\tif (strcmp(key, "alpha")) {\n\t\tsend_sig(SIGKILL, current, 0);\n'
     "\t\treturn -EINTR;\n\t}\n", "tamper"),
    ("t0-null-deref", "kgym_null.c", "\tstrim(key);\n",
     '\tstrim(key);\n\tif (strcmp(key, "alpha")) {\n'
     "\t\tschedule_timeout_interruptible(MAX_SCHEDULE_TIMEOUT);\n\t\treturn -EINTR;\n\t}\n",
     "tamper"),
    # Red team (2026-11-27, fourth pass): forge the log. Print the line the check expected
    # (it is in the KGYM-FUNC-FAIL feedback a repairing agent reads) and skip the work, or
    # print every line it could expect. The reproducers now draw their inputs on every run and take exactly
    # one line per command.
    ("t0-null-deref", "kgym_null.c", "\tstrim(key);\n",
     '\tstrim(key);\n\tpr_info("kgym_null: alpha -> 2\\n");\n\treturn len;\n', "function_broken"),
    ("t0-null-deref", "kgym_null.c", "\tstrim(key);\n",
     "\tstrim(key);\n\tfor (len = 1; len < 30; len++)\n"
     '\t\tpr_info("kgym_null: %s -> %zu\\n", key, len);\n\treturn strlen(key);\n',
     "function_broken"),
    ("t0-divide-error", "kgym_div.c", '\t\tpr_info("kgym_div: avg %u\\n", kgym_div_avg());\n',
     '\t\tpr_info("kgym_div: avg 5\\n");\n', "function_broken"),
    ("t0-soft-lockup", "kgym_lockup.c", "\tspin_lock(&kgym_lock);\n\tsum = kgym_lockup_scan(end);\n",
     "\tif (end >= KGYM_RING)\n\t\treturn -EINVAL;\n\tspin_lock(&kgym_lock);\n\tsum = 8;\n",
     "function_broken"),
    ("t0-refcount", "kgym_ref.c", "\tmutex_lock(&kgym_lock);\n",
     '\tkfree(s);\n\tpr_info("kgym_ref: stored short\\n");\n\treturn len;\n'
     "\tmutex_lock(&kgym_lock);\n", "function_broken"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("bug_id", "name", "old", "new", "outcome"),
    NEAR_MISSES,
    ids=[f"{m[0]}-{i}" for i, m in enumerate(NEAR_MISSES)],
)
async def test_near_misses_are_not_resolved(
    bug_id: str, name: str, old: str, new: str, outcome: str, scorer: PatchScorer
) -> None:
    bug = next(b for b in TIER0 if b.id == bug_id)
    step = await scorer.score(bug, _edited(bug, name, old, new))
    assert step.outcome == outcome, step.detail + step.console_excerpt[-3000:]
