"""What `kernel-gym try` / `reproduce` print about a result: only what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_eval.kernelgym import cli
from codegen_eval.kernelgym.scoring import Outcome, StepResult

EXPECTED = "BUG: kernel NULL pointer dereference in kgym_null_lookup"


def test_a_resolved_result_claims_no_title_match() -> None:
    step = StepResult(Outcome.RESOLVED, None, EXPECTED, False, build_s=3.0, run_s=9.5,
                      vm_status="stopped", completed_runs=3)  # fmt: skip
    text = "\n".join(cli.describe_step(step))
    assert "False" not in text and "match" not in text.replace("matches", "")
    assert "crash seen: none in 3 run(s)" in text and "VM stopped" in text


def test_a_failed_build_says_the_vm_never_booted() -> None:
    step = StepResult(Outcome.BUILD_FAILED, None, EXPECTED, False, build_s=1.2)
    text = "\n".join(cli.describe_step(step))
    assert "None" not in text and "not booted (build_failed)" in text and "run " not in text


def test_a_crash_says_whether_it_is_the_expected_one() -> None:
    same = StepResult(Outcome.REPRODUCED, EXPECTED, EXPECTED, True, vm_status="crashed")
    other = StepResult(Outcome.REPRODUCED, "WARNING in foo", EXPECTED, False, vm_status="crashed")
    assert f"crash seen: {EXPECTED} (matches the expected title)" in cli.describe_step(same)
    assert "crash seen: WARNING in foo (a DIFFERENT crash)" in cli.describe_step(other)


def test_every_subcommand_argument_has_help() -> None:
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    for name, sub in subparsers.choices.items():  # type: ignore[attr-defined]
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"kernel-gym {name}: {action.dest} has no help"


def test_bench_selects_bugs_by_id(capsys) -> None:
    args = cli.build_parser().parse_args(["bench", "--bug", "t0-warn", "--bug", "t0-gpf"])
    assert sorted(b.id for b in cli._bugs(args)) == ["t0-gpf", "t0-warn"]
    assert cli.main(["bench", "--bug", "t0-nosuch"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("kernel-gym: error: unknown bug(s) t0-nosuch") and "t0-warn" in err


def test_reproduce_and_try_find_their_one_bug() -> None:
    for argv in (["reproduce", "t0-null-deref"], ["try", "t0-null-deref", "x.patch"]):
        args = cli.build_parser().parse_args(argv)
        assert [b.id for b in cli._bugs(args) if b.id == "t0-null-deref"] == ["t0-null-deref"]
        assert cli._find(args, "t0-null-deref").id == "t0-null-deref"


def test_slurm_cpu_option_has_one_name_in_both_spellings() -> None:
    args = cli.build_parser().parse_args(["bench", "--slurm-cpus-per-task", "3"])
    assert args.slurm_cpus == 3


def test_a_plausible_patch_elsewhere_says_so_and_where() -> None:
    loc = {
        "files": {"candidate": ["kgym_df.c"], "fix": ["kgym_df.c"], "overlap": ["kgym_df.c"]},
        "functions": {"candidate": ["kgym_df.c:kgym_df_write"],
                      "fix": ["kgym_df.c:kgym_df_resize"], "overlap": []},
        "covers_fix": False, "method": "source",
    }  # fmt: skip
    step = StepResult(Outcome.RESOLVED, None, EXPECTED, False, vm_status="stopped",
                      completed_runs=3, plausible=True, matches_fix=False,
                      localization=loc)  # fmt: skip
    text = "\n".join(cli.describe_step(step))
    assert "plausible: yes; matches the developer fix: no" in text
    assert "functions the fix changes: kgym_df.c:kgym_df_resize" in text
    assert "functions this patch changes: kgym_df.c:kgym_df_write" in text
    # No developer fix known: nothing claimed about it.
    bare = StepResult(Outcome.RESOLVED, None, EXPECTED, False, plausible=True)
    assert "developer fix" not in "\n".join(cli.describe_step(bare))


def test_bench_counts_plausible_and_matching_separately_for_local_and_slurm_rows() -> None:
    rows = [
        {"bug": "a", "reproduced": True, "resolved": True, "plausible": True, "matches_fix": True,
         "patched": {"outcome": "resolved", "plausible": True, "matches_fix": True}},
        {"bug": "b", "reproduced": True, "resolved": True,  # a Slurm row: the step only
         "patched": {"outcome": "resolved", "plausible": True, "matches_fix": False}},
        {"bug": "c", "reproduced": True, "resolved": False,
         "patched": {"outcome": "reproduced", "plausible": False, "matches_fix": False}},
        {"bug": "d", "reproduced": False, "error": "x", "unsupported": True},
    ]  # fmt: skip
    assert cli.bench_counts(rows) == {
        "bugs": 4, "reproduced": 3, "patched": 3, "plausible": 2, "matches_fix": 1,
    }  # fmt: skip
    assert cli.bench_summary(rows) == (
        "3/4 bugs reproduced; patched: plausible 2/3 (no crash, checks pass), "
        "matching the developer fix 1/3"
    )


def test_bench_candidates_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bench", "--candidates", str(tmp_path / "none")]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "t0-warn.txt").write_text("x")
    argv = ["bench", "--bug", "t0-warn", "--candidates", str(tmp_path)]
    assert cli.main(argv) == 2
    out = " ".join(capsys.readouterr().err.split())
    assert "no <bug id>.patch or .diff for any selected bug (e.g. t0-warn.patch)" in out
    (tmp_path / "t0-warn.patch").write_text("--- a/x\n")
    assert cli.main([*argv, "--patches", "none"]) == 2
    assert "cannot be combined with --patches none" in capsys.readouterr().err
