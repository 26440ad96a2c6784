"""Our crash reader against syzkaller's own report-parser corpus (747 consoles with their
expected titles), when SYZKALLER_ROOT points at a syzkaller checkout. The corpus is not
bundled (it is syzkaller's), so without a checkout the test says so and is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codegen_eval.kernelgym.crash.corpus import CORPUS, Row, evaluate, load_corpus
from codegen_eval.kernelgym.crash.titles import generic_titles

ROOT = os.environ.get("SYZKALLER_ROOT")
pytestmark = pytest.mark.skipif(
    not ROOT or not (Path(ROOT) / CORPUS).is_dir(),
    reason=f"set SYZKALLER_ROOT to a syzkaller checkout (needs {CORPUS}/)",
)


def test_agreement_with_syzkaller_titles() -> None:
    cases = load_corpus(Path(ROOT or "."))
    result = evaluate(cases, show=3)
    assert result.clean > 0 and result.false_positives == 0, result.misses
    x86 = result.by_arch["x86-64"]
    assert x86.logs > 500
    assert x86.detected >= 0.98 * x86.logs, result.misses
    assert x86.title >= 0.90 * x86.logs, result.misses
    total = Row()
    for row in result.by_kind.values():
        total.logs += row.logs
        total.corrupted += row.corrupted
    assert total.corrupted >= 0.90 * total.logs, result.misses


def test_kind_independent_titles_are_syzkallers_alts() -> None:
    # same_bug() derives "bad-access in f", "stall in f", ... from an expected title alone:
    # they must be ALT titles syzkaller gives such a report.
    for case in load_corpus(Path(ROOT or ".")):
        if case.title:
            assert set(generic_titles(case.title)) <= set(case.alts), case.name
