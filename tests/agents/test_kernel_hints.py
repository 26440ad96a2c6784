"""Crash-kind readings: in the briefing and after a step that still crashes, by title wording."""

from __future__ import annotations

import pytest

from agents.kernel.agent import feedback
from agents.kernel.hints import crash_hint
from codegen_eval.kernelgym.scoring import Outcome, StepResult


@pytest.mark.parametrize(
    ("title", "words"),
    [
        ("INFO: task hung in kgym_div_write", "without unlocking"),
        ("BUG: soft lockup in proc_reg_write", "loop bound"),
        ("BUG: unable to handle kernel NULL pointer dereference in f", "can be NULL"),
        ("divide error in f", "divisor"),
        ("WARNING: refcount bug in f", "reference"),  # before the generic WARNING
        ("WARNING in f", "WARN_ON"),
        ("kernel BUG in f", "BUG_ON"),
        ("KASAN: use-after-free Read in f", "after it was freed"),
        ("KASAN: slab-out-of-bounds Write in f", "past the end"),
        ("BUG: corrupted list in f", "added twice"),
        ("general protection fault in f", "bad pointer"),
    ],
)
def test_each_kind_reads_as_a_kernel_developer_reads_it(title: str, words: str) -> None:
    assert words in crash_hint(title)


def test_unknown_titles_get_no_hint_and_a_reproduced_step_gets_its_own() -> None:
    assert crash_hint("something else") == "" and crash_hint(None) == ""
    step = StepResult(Outcome.REPRODUCED, title="INFO: task hung in kgym_div_write")
    text = feedback(step, "", None)  # type: ignore[arg-type]  # obs unused for this outcome
    assert "What such a report usually means: A task waited forever" in text
