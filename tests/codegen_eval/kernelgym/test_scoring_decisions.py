"""Reproduce/resolve decisions: same-bug matching on real consoles, corrupted reports, and a
candidate that runs clean while the unpatched build did not reproduce the bug."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codegen_eval.kernelgym import bundled_bugs
from codegen_eval.kernelgym.crash import parse_console
from codegen_eval.kernelgym.records import BugRecord
from codegen_eval.kernelgym.runner import ReproResult
from codegen_eval.kernelgym.scoring import Outcome, PatchScorer, StepResult, judge
from sandboxes.qemu import VMResult, VMStatus

CONSOLES = Path(__file__).parent / "consoles"


def _run(console: str, *, finished: bool = False) -> ReproResult:
    vm = VMResult(VMStatus.STOPPED, console, 0, 1.0, False, "tcg")
    return ReproResult(
        vm=vm,
        crashes=parse_console(console),
        booted=True,
        completed_runs=2 if finished else 0,
        finished=finished,
    )


def test_a_crash_matches_its_bug_through_alt_and_kind_independent_titles() -> None:
    run = _run((CONSOLES / "t1-tree-groups-oob.txt").read_text())
    as_printed = judge(run, "KASAN: slab-out-of-bounds Write in __x64_sys_setgroups", 2)
    assert as_printed.outcome is Outcome.REPRODUCED and as_printed.matches_expected
    # syzbot files a GPF and a KASAN report in the same function as one bug ("bad-access").
    assert judge(run, "general protection fault in sys_setgroups", 2).matches_expected
    assert not judge(run, "KASAN: slab-out-of-bounds Write in set_groups", 2).matches_expected


def test_a_mangled_report_is_reproduced_but_never_the_expected_bug() -> None:
    # A candidate that garbles the crash's stack (all frames unreliable) must not make the
    # crash count as "the bug" under some other title, nor as resolved.
    console = (CONSOLES / "t0-gpf.txt").read_text()
    lines = console.splitlines()
    mangled = "\n".join(
        line.replace("] ", "] ? ", 1) if "+0x" in line and "RIP" not in line else line
        for line in lines
    ).replace("RIP: 0010:kgym_gpf_pop", "RIP: 0010:0x0 kgym_gpf_pop")
    step = judge(_run(mangled), "general protection fault in kgym_gpf_pop", 2)
    assert step.outcome is Outcome.REPRODUCED
    assert step.title == "general protection fault in corrupted"
    assert not step.matches_expected


class _CannedScorer(PatchScorer):
    """The build and the VM replaced by canned results: what is under test is the decision
    taken from them."""

    def __init__(self, baseline: StepResult, candidate: StepResult) -> None:
        super().__init__()
        self.canned = {"": baseline, "fix": candidate}
        self.calls: list[str] = []

    async def _score(self, bug: BugRecord, patch: str) -> StepResult:
        self.calls.append(patch)
        step = self.canned[patch]
        return StepResult(step.outcome, step.title, bug.expected_title, step.matches_expected)


BUG = bundled_bugs(tier=0)[0]
CLEAN = StepResult(Outcome.RESOLVED)


def test_clean_candidate_without_a_reproducing_baseline_is_not_resolved() -> None:
    for baseline in (
        StepResult(Outcome.RESOLVED),  # the unpatched kernel did not crash at all
        StepResult(Outcome.REPRODUCED, "WARNING in elsewhere", matches_expected=False),
        StepResult(Outcome.BOOT_ERROR),
    ):
        scorer = _CannedScorer(baseline, CLEAN)
        step = asyncio.run(scorer.score(BUG, "fix"))
        assert step.outcome is Outcome.BASELINE_NOT_REPRODUCED
        assert BUG.expected_title in step.detail
        assert scorer.calls == ["fix", ""]  # the baseline was run, on demand


def test_clean_candidate_with_a_reproducing_baseline_is_resolved_and_baseline_cached() -> None:
    baseline = StepResult(Outcome.REPRODUCED, BUG.expected_title, matches_expected=True)
    scorer = _CannedScorer(baseline, CLEAN)
    assert asyncio.run(scorer.check_baseline(BUG)).matches_expected
    assert asyncio.run(scorer.score(BUG, "fix")).outcome is Outcome.RESOLVED
    assert asyncio.run(scorer.score(BUG, "fix")).outcome is Outcome.RESOLVED
    assert scorer.calls == ["", "fix", "fix"]


def test_a_candidate_that_still_crashes_stays_reproduced() -> None:
    crashing = StepResult(Outcome.REPRODUCED, BUG.expected_title, matches_expected=True)
    scorer = _CannedScorer(StepResult(Outcome.RESOLVED), crashing)
    assert asyncio.run(scorer.score(BUG, "fix")).outcome is Outcome.REPRODUCED
    assert scorer.calls == ["fix"]


def test_a_clean_run_whose_behaviour_checks_failed_is_function_broken() -> None:
    console = (
        "KGYM-BOOTED uptime=1.0\nKGYM-RUN 1\ncmd -1: -1\ncmd 7: -1\n"
        "KGYM-FUNC-FAIL cmd 7 returned -1, must be accepted\nKGYM-RUN-END 1 rc=42\n"
        "KGYM-RUN 2\ncmd -1: -1\ncmd 7: 1\nKGYM-RUN-END 2 rc=0\n"
    )
    run = _run(console, finished=True)
    run.exit_codes = [42, 0]
    run.function_failures = ["KGYM-FUNC-FAIL cmd 7 returned -1, must be accepted"]
    step = judge(run, "INFO: task hung in kgym_hung_write", 2, checks_function=True)
    assert step.outcome is Outcome.FUNCTION_BROKEN
    assert "cmd 7 returned -1" in step.detail
    # Without the bug's opt-in an exit code means nothing (syzkaller reproducers' codes are
    # arbitrary), and with every check passing the run is resolved.
    assert judge(run, "x", 2).outcome is Outcome.RESOLVED
    run.exit_codes, run.function_failures = [0, 0], []
    assert judge(run, "x", 2, checks_function=True).outcome is Outcome.RESOLVED


@pytest.mark.parametrize(("rc", "why"), [(137, "signal 9"), (143, "time limit"), (1, "error")])
def test_a_reproducer_that_never_reached_its_checks_is_function_broken(rc: int, why: str) -> None:
    """Red team: a module that kills the reproducer (or sleeps until the timeout) on the
    trigger leaves no crash and no failed check; the runs still end, the nonce still shows."""
    run = _run("KGYM-BOOTED uptime=1.0\nKGYM-RUN 1\ncmd alpha: 5\n", finished=True)
    run.exit_codes = [rc, rc]
    step = judge(run, "x", 2, checks_function=True)
    assert step.outcome is Outcome.FUNCTION_BROKEN
    assert f"exit code {rc}" in step.detail and why in step.detail
    assert judge(run, "x", 2).outcome is Outcome.RESOLVED  # kBench/syzbot: codes mean nothing


def test_the_reproducers_exit_code_for_a_broken_module_is_the_one_the_gym_reads() -> None:
    import re

    from codegen_eval.kernelgym.builders import REPRO_INCLUDE_DIR
    from codegen_eval.kernelgym.runner import FUNCTION_BROKEN_RC

    header = (REPRO_INCLUDE_DIR / "kgym_repro.h").read_text()
    assert re.search(rf"#define KGYM_FUNCTION_BROKEN_RC {FUNCTION_BROKEN_RC}\n", header)
    for bug in bundled_bugs():  # every bundled bug opts in and uses the shared checks
        assert bug.kgym.get("repro_checks_function") is True, bug.id
        assert '#include "kgym_repro.h"' in (bug.c_reproducer or ""), bug.id


# Plausible vs matching the developer's fix (issue 29 item 3): a clean run says the patch is
# plausible; the localization beside it says whether it changes what the fix changes.
DF = next(b for b in bundled_bugs() if b.id == "t1-double-free")
CALLER_CHECK = (  # refuse the bad size in kgym_df_write: stops the crash, not the fix's place
    "--- a/kgym_df.c\n+++ b/kgym_df.c\n@@ -37,4 +37,6 @@\n \tif (err)\n \t\treturn err;\n"
    "+\tif (!size || size > PAGE_SIZE)\n+\t\treturn -EINVAL;\n \tmutex_lock(&kgym_lock);\n"
    " \terr = kgym_df_resize(size);\n"
)


def _verdict(baseline: StepResult, candidate: StepResult, patch: str) -> StepResult:
    scorer = _CannedScorer(baseline, candidate)
    scorer.canned[patch] = candidate
    return asyncio.run(scorer.score(DF, patch))


REPRODUCING = StepResult(Outcome.REPRODUCED, DF.expected_title, matches_expected=True)


def test_the_developer_fix_is_plausible_and_matches_itself() -> None:
    step = _verdict(REPRODUCING, CLEAN, DF.developer_patch)
    assert step.outcome is Outcome.RESOLVED and step.plausible and step.matches_fix is True
    assert step.localization is not None
    assert step.localization["functions"]["fix"] == ["kgym_df.c:kgym_df_resize"]
    assert step.to_dict()["matches_fix"] is True  # what bench rows and logs carry


def test_a_clean_patch_in_another_function_is_plausible_but_not_the_fix() -> None:
    step = _verdict(REPRODUCING, CLEAN, CALLER_CHECK)
    assert step.outcome is Outcome.RESOLVED and step.plausible
    assert step.matches_fix is False
    assert step.localization is not None
    assert step.localization["functions"]["candidate"] == ["kgym_df.c:kgym_df_write"]


def test_a_patch_at_the_fixs_place_that_still_crashes_is_neither() -> None:
    crashing = StepResult(Outcome.REPRODUCED, DF.expected_title, matches_expected=True)
    step = _verdict(REPRODUCING, crashing, DF.developer_patch)
    assert not step.plausible and step.matches_fix is False
    assert step.localization is not None and step.localization["covers_fix"] is True
    # A clean run without a reproducing baseline proves nothing: not plausible either.
    step = _verdict(StepResult(Outcome.RESOLVED), CLEAN, DF.developer_patch)
    assert step.outcome is Outcome.BASELINE_NOT_REPRODUCED
    assert not step.plausible and step.matches_fix is False


def test_without_a_developer_fix_there_is_nothing_to_match() -> None:
    bug = DF.with_inputs()
    bug.raw.pop("patch")
    scorer = _CannedScorer(REPRODUCING, CLEAN)
    scorer.canned[CALLER_CHECK] = CLEAN
    step = asyncio.run(scorer.score(bug, CALLER_CHECK))
    assert step.plausible and step.matches_fix is None and step.localization is None
    assert asyncio.run(scorer.score(bug, "")).localization is None  # the baseline: no patch
