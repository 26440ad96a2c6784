"""Plausible vs matching the developer's fix, on real tier-0 runs (Debian's kernel, QEMU): the
developer fix is both; a clean patch in another function is plausible and not matching; the
bench prints and writes both counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.kernelgym import Outcome, PatchScorer, ReproConfig, cli
from codegen_eval.kernelgym.records import bundled_bug

from .test_localize import edited

pytestmark = pytest.mark.slow

NULL = bundled_bug("t0-null-deref")
# The lookup hands out a spare entry instead of NULL: the writer no longer crashes and every
# check passes ("gamma" may be accepted), but the fix's function, the writer, is untouched.
SPARE_ENTRY = edited(
    NULL, "kgym_null.c", "\treturn NULL;\n}\n",
    "\t{\n\t\tstatic struct kgym_entry spare = { \"?\", 0 };\n\n\t\treturn &spare;\n\t}\n}\n",
)  # fmt: skip


@pytest.mark.timeout(600)
async def test_a_clean_patch_in_the_callee_is_plausible_not_the_fix() -> None:
    scorer = PatchScorer(ReproConfig(runs=2, accel="auto"))
    step = await scorer.score(NULL, SPARE_ENTRY)
    assert step.outcome is Outcome.RESOLVED, step.detail + step.console_excerpt[-2000:]
    assert step.plausible and step.matches_fix is False
    assert step.localization is not None
    assert step.localization["functions"]["candidate"] == ["kgym_null.c:kgym_null_lookup"]
    assert step.localization["functions"]["fix"] == ["kgym_null.c:kgym_null_write"]
    fixed = await scorer.score(NULL, NULL.developer_patch)
    assert fixed.outcome is Outcome.RESOLVED and fixed.plausible and fixed.matches_fix is True


@pytest.mark.timeout(600)
def test_bench_prints_and_writes_plausible_and_matching_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.json"
    rc = cli.main(["--runs", "2", "bench", "--bug", "t0-null-deref", "--json", str(out)])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0, text
    assert (
        "1/1 bugs reproduced; patched: plausible 1/1 (no crash, checks pass), "
        "matching the developer fix 1/1" in text
    )
    [row] = json.loads(out.read_text())
    assert row["plausible"] is True and row["matches_fix"] is True
    assert row["patched"]["localization"]["functions"]["fix"] == ["kgym_null.c:kgym_null_write"]


@pytest.mark.timeout(600)
def test_bench_scores_your_own_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t0-null-deref.patch").write_text(SPARE_ENTRY)
    out = tmp_path / "rows.json"
    argv = ["--runs", "2", "bench", "--bug", "t0-null-deref", "--candidates", str(tmp_path),
            "--json", str(out)]  # fmt: skip
    assert cli.main(argv) == 0  # the candidate is resolved: plausible
    text = " ".join(capsys.readouterr().out.split())
    assert "patched: plausible 1/1 (no crash, checks pass), matching the developer fix 0/1" in text
    [row] = json.loads(out.read_text())
    assert row["plausible"] is True and row["matches_fix"] is False
