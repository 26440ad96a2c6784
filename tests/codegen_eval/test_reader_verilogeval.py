"""VerilogEval readers on a copy in the real layouts written here (our own problems, see
verilogeval_fixture.py), scored end to end with the real toolchain: measured exclusions,
both denominators, format errors, upstream's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval import cli
from codegen_eval.readers.verilogeval import (
    POLICY_EXCLUSIONS,
    VerilogEvalFormatError,
    instrument_testbench,
    read_v1,
    read_v2,
    register_verilogeval,
    resolve_mode,
    verilogeval,
)
from codegen_eval.registry import get_suite
from codegen_eval.report import denominators, print_table, summarize
from codegen_eval.types import Candidate, Sample

from .verilogeval_fixture import (
    MAJORITY,
    PORTS,
    TOGGLE,
    upstream_style_testbench,
    write_v1,
    write_v2,
)


@pytest.fixture(autouse=True)
def _calibration_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    # One cache for the module's tests (measured once), not the user's ~/.cache.
    monkeypatch.setenv("CODEGEN_VERILOG_CALIBRATION", str(tmp_path_factory.getbasetemp() / "cal"))


@pytest.fixture(scope="module")
def v2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v2(tmp_path_factory.mktemp("ve"))


@pytest.fixture(scope="module")
def v1(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_v1(tmp_path_factory.mktemp("ve1"))


async def _score(s: Sample, scorer, code: str):
    return await scorer.score(s, Candidate(s.id, 0, code))


def _reasons(task) -> dict[str, str]:
    return dict(task.excluded)


def test_exclusions_are_measured_and_mode_aware(v2: Path) -> None:
    spec = verilogeval(v2, "spec-to-rtl")
    cc = verilogeval(v2, "code-complete")
    s_ex, c_ex = _reasons(spec), _reasons(cc)
    # measured on this toolchain, with the measured reason
    assert "compile_error:unsupported" in s_ex["Prob151_enum_fsm"]
    assert "sorry: This cast operation is not yet supported" in s_ex["Prob151_enum_fsm"]
    assert "timeout:sim_time" in s_ex["Prob082_slow_counter"]
    assert (
        "compile_error:interface" in s_ex["Prob099_nor_pair"] and "Y2" in s_ex["Prob099_nor_pair"]
    )
    assert "missing" in s_ex["Prob005_orphan"]
    # mode-aware: the code-complete testbench of Prob099 matches its reference
    assert "Prob099_nor_pair" not in c_ex and "Prob099_nor_pair" in [s.id for s in cc.dataset]
    # policy exclusions are off by default: Prob118 is upstream-discussed but scored
    assert "Prob118_xor_reduce" in [s.id for s in spec.dataset]
    assert spec.reader_facts.policy["applied"] is False
    assert "Prob118_xor_reduce" in spec.reader_facts.policy["problems"]
    # the stray .sv and problems.txt in the directory are not problems
    assert {s.id for s in spec.dataset} == {"Prob001_majority3", "Prob002_toggle_ff",
                                             "Prob118_xor_reduce"}  # fmt: skip


def test_policy_exclusions_and_include_known_bad(v2: Path) -> None:
    pol = verilogeval(v2, "spec-to-rtl", policy_exclusions=True)
    assert _reasons(pol)["Prob118_xor_reduce"].startswith("policy: ")
    assert "Prob082_slow_counter" in _reasons(pol)  # listed in both
    assert all(reason for reason in POLICY_EXCLUSIONS.values())
    inc = verilogeval(v2, "spec-to-rtl", include_known_bad=True)
    ids = {s.id for s in inc.dataset}
    assert {"Prob151_enum_fsm", "Prob082_slow_counter", "Prob099_nor_pair"} <= ids
    assert set(_reasons(inc)) == {"Prob005_orphan"}  # only what cannot be built at all
    assert "known_bad" in next(s for s in inc.dataset if s.id == "Prob151_enum_fsm").metadata


async def test_a_correct_candidate_of_an_unsupported_problem_is_not_blamed(v2: Path) -> None:
    """Included on request, a problem whose reference iverilog cannot compile fails every
    candidate as unsupported (iverilog's `sorry:`), saying the reference fails here."""
    task = verilogeval(v2, "spec-to-rtl", include_known_bad=True, problems="*enum*")
    (s,) = task.dataset
    cast_free = (
        s.target.split("typedef")[0]
        + "  reg st;\n  always @(posedge clk)\n    if (reset) st <= 0;\n    else if (x) st <= ~st;\n"
        "  assign z = st;\nendmodule\n"
    )
    score = await _score(s, task.scorer, cast_free)
    assert score.failure_class == "compile_error:unsupported", score.explanation
    assert "sorry:" in score.explanation and "the reference itself fails here" in score.explanation


async def test_v2_candidates_through_the_reader(v2: Path) -> None:
    task = verilogeval(v2, "code-complete")
    maj = next(s for s in task.dataset if s.id == MAJORITY.pid)
    tog = next(s for s in task.dataset if s.id == TOGGLE.pid)
    assert maj.metadata["interface"] == MAJORITY.header("TopModule")  # from _ifc.txt
    for s in task.dataset:  # every scorable reference passes, with the calibrated count
        score = await _score(s, task.scorer, s.target)
        assert score.status == "pass", (s.id, score.failure_class, score.explanation)
    body = MAJORITY.body
    assert (await _score(maj, task.scorer, body)).status == "pass"  # code-complete body only
    wrong = await _score(maj, task.scorer, "  assign y = a & b & c;\nendmodule\n")
    assert wrong.failure_class == "sim_mismatch" and wrong.metrics["mismatches"] > 0
    broken = await _score(tog, task.scorer, "module TopModule(input clk; endmodule")
    assert broken.failure_class == "compile_error:syntax"


async def test_upstream_rules_fail_what_upstream_fails(v2: Path, v1) -> None:
    """A design that simulates correctly but draws iverilog's 'no sensitivities' warning
    fails in v2 (sv-iv-analyze's 'n'); in v1 any stderr output fails."""
    task = verilogeval(v2, "spec-to-rtl", problems=MAJORITY.pid)
    (s,) = task.dataset
    code = MAJORITY.header("TopModule") + (
        "\n  wire t = (a & b) | (a & c) | (b & c);\n  logic k;\n  always @* k = 1'b0;\n"
        "  assign y = t;\nendmodule\n"
    )
    score = await _score(s, task.scorer, code)
    assert score.failure_class == "compile_error:no_sensitivity", score.explanation
    assert "'n'" in score.explanation
    probs, descs = v1
    t1 = verilogeval(probs, "v1", descriptions=descs, problems="majority3")
    (s1,) = t1.dataset
    implicit = MAJORITY.body.replace("assign y", "assign w = a; assign y")  # implicit net w
    s = await _score(s1, t1.scorer, implicit)
    assert s.failure_class == "compile_error:warning" and "stderr" in s.explanation


def test_instrumentation_keeps_the_testbench_and_adds_the_verdict() -> None:
    tb = instrument_testbench(upstream_style_testbench(MAJORITY))
    assert "module tb();" in tb and "stats1" in tb and "good1" in tb  # names unchanged
    assert "CGE-VERDICT" in tb and "cge_timeout = 1;" in tb and "cge_nonce" in tb


async def test_v1_jsonl_reader(v1) -> None:
    probs, descs = v1
    res = read_v1(probs, descs)
    assert [s.id for s in res.samples] == ["majority3", "toggle_ff", "enum_fsm", "dff8"]
    assert "dff8" in res.policy and res.excluded == []
    s = res.samples[0]
    assert s.input.startswith(MAJORITY.spec) and "module top_module" in s.input
    task = verilogeval(probs, "v1", descriptions=descs)
    assert "compile_error:unsupported" in _reasons(task)["enum_fsm"]
    maj = next(x for x in task.dataset if x.id == "majority3")
    assert (await _score(maj, task.scorer, maj.target)).status == "pass"
    assert (await _score(maj, task.scorer, MAJORITY.body)).status == "pass"  # body only
    bad = await _score(maj, task.scorer, "  assign y = a | b | c;\nendmodule\n")
    assert bad.failure_class == "sim_mismatch"


def test_formats_are_detected_or_named_in_one_line(v2: Path, v1, tmp_path: Path) -> None:
    probs, _ = v1
    assert resolve_mode(probs, None)[0] == "v1" and "v1 JSONL" in resolve_mode(probs, None)[1]
    assert resolve_mode(v2, None) == ("spec-to-rtl", None)
    assert resolve_mode(v2 / "dataset_code-complete-iccad2023", None)[0] == "code-complete"
    with pytest.raises(VerilogEvalFormatError, match="v2 directory, not a v1 JSONL"):
        resolve_mode(v2, "v1")
    with pytest.raises(VerilogEvalFormatError, match="use --verilogeval-mode v1"):
        resolve_mode(probs, "spec-to-rtl")
    with pytest.raises(VerilogEvalFormatError, match="v1 JSONL file"):
        read_v2(probs.parent, "spec-to-rtl")
    with pytest.raises(VerilogEvalFormatError, match="is a directory"):
        read_v1(v2)
    junk = tmp_path / "junk.jsonl"
    junk.write_text(json.dumps({"id": 1}) + "\n")
    with pytest.raises(VerilogEvalFormatError, match="neither"):
        resolve_mode(junk, None)


def test_cli_paper_cuts_are_one_line(v2: Path, v1, capsys) -> None:
    probs, _ = v1
    assert cli.main(["run", "--verilogeval", str(v2), "--verilogeval-mode", "v1",
                     "--solver", "reference"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "use --verilogeval-mode spec-to-rtl or code-complete" in err
    assert cli.main(["run", "--verilogeval", str(probs), "--verilogeval-mode", "spec-to-rtl",
                     "--solver", "reference"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--verilogeval-mode v1" in err
    assert cli.main(["run", "--verilogeval", str(v2 / "nope"), "--solver", "reference"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_run_reports_both_denominators(v2: Path, v1, tmp_path: Path, capsys) -> None:
    log = tmp_path / "ve.jsonl"
    argv = ["run", "--verilogeval", str(v2), "--solver", "reference", "--log", str(log),
            "--no-progress"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    records = [json.loads(line) for line in log.read_text().splitlines()]
    scores = {r["sample_id"]: r["status"] for r in records if r["type"] == "score"}
    assert scores == dict.fromkeys(["Prob001_majority3", "Prob002_toggle_ff",
                                    "Prob118_xor_reduce"], "pass")  # fmt: skip
    excluded = {r["sample_id"] for r in records if r["type"] == "excluded"}
    assert excluded == {"Prob005_orphan", "Prob082_slow_counter", "Prob099_nor_pair",
                        "Prob151_enum_fsm"}  # fmt: skip
    flat = " ".join(out.split())
    assert "pass@1 1.000 over 3 problems scorable here" in flat
    assert "pass@1 0.429 over all 7" in flat and "policy exclusions off" in flat
    # auto-detected v1, with the note on stderr; --include-known-bad scores the rest too
    probs, descs = v1
    log1 = tmp_path / "v1.jsonl"
    assert cli.main(["run", "--verilogeval", str(probs), "--verilogeval-descriptions", str(descs),
                     "--include-known-bad", "--solver", "reference", "--log", str(log1),
                     "--no-progress"]) == 0  # fmt: skip
    assert "reading it as mode v1" in capsys.readouterr().err
    recs = [json.loads(line) for line in log1.read_text().splitlines()]
    got = {r["sample_id"]: r["failure_class"] for r in recs if r["type"] == "score"}
    assert got == {"majority3": None, "toggle_ff": None, "dff8": None,
                   "enum_fsm": "compile_error:unsupported"}  # fmt: skip


def test_a_limited_run_counts_no_exclusions_it_never_selected(
    v2: Path, tmp_path: Path, capsys
) -> None:
    log = tmp_path / "limited.jsonl"
    argv = ["run", "--verilogeval", str(v2), "--solver", "reference", "--log", str(log),
            "--no-progress", "--limit", "2"]  # fmt: skip
    assert cli.main(argv) == 0
    flat = " ".join(capsys.readouterr().out.split())
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len([r for r in records if r["type"] == "score"]) == 2
    assert not [r for r in records if r["type"] == "excluded"]
    assert "upstream-comparable" not in flat and "over all" not in flat
    assert cli.main(["report", str(log), "-o", str(tmp_path / "r.html")]) == 0
    assert "upstream-comparable" not in " ".join(capsys.readouterr().out.split())


def test_the_policy_notice_only_names_problems_the_run_touched(
    v2: Path, tmp_path: Path, capsys
) -> None:
    argv = ["run", "--verilogeval", str(v2), "--solver", "reference", "--no-progress",
            "--log", str(tmp_path / "a.jsonl"), "--filter", "Prob001*"]  # fmt: skip
    assert cli.main(argv) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "policy exclusions" not in flat  # Prob001 is none of the problems upstream discussed
    assert "1 problems" not in flat
    argv[-1] = "Prob118*"
    argv[-3] = str(tmp_path / "b.jsonl")
    assert cli.main(argv) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "policy exclusions off" in flat and "Prob118_xor_reduce" in flat


def test_denominators_count_excluded_as_failures() -> None:
    recs = [{"suite": "ve", "sample_id": f"p{i}", "status": "pass" if i < 3 else "fail"}
            for i in range(4)]  # fmt: skip
    summary = summarize(recs, (1,))
    rows = denominators(summary, [{"suite": "ve", "sample_id": "x", "reason": "r"}] * 1, (1,))
    assert rows[0]["here"][1] == pytest.approx(0.75) and rows[0]["total"] == 5
    assert rows[0]["comparable"][1] == pytest.approx(0.6)
    from rich.console import Console

    con = Console(record=True, width=200)
    print_table(summary, (1,), [{"suite": "ve", "sample_id": "x", "reason": "r"}], console=con)
    assert "upstream-comparable" in con.export_text()


def test_registered_suite_from_a_user_path(v2: Path) -> None:
    name = register_verilogeval(v2, "code-complete", name="verilogeval-test-local")
    task = get_suite(name, problems="*majority*")
    assert [s.id for s in task.dataset] == ["Prob001_majority3"]
    assert PORTS.pid not in task.excluded  # filters apply to the exclusions too
