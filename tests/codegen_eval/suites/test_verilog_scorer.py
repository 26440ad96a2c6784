"""Deliberately broken candidates get the right failure class from the real toolchain."""

from __future__ import annotations

import dataclasses

import pytest

from codegen_eval.suites.verilog import (
    ALL_PROBLEMS,
    VerilogScorer,
    forbidden_constructs,
    parse_verdict,
    problem_sample,
)
from codegen_eval.types import Candidate, Sample

GATES = next(p for p in ALL_PROBLEMS if p.id == "p01_basic_gates")
ASYNC_DFF = next(p for p in ALL_PROBLEMS if p.id == "p27_dff8_async_reset")
HEAD = (
    "module TopModule (input logic a, input logic b, output logic y_and, output logic y_or,\n"
    "                  output logic y_xor, output logic y_nand);\n"
)
GOOD_BODY = "  assign y_and = a & b;\n  assign y_or = a | b;\n  assign y_xor = a ^ b;\n"


def _s(code: str, sample: Sample | None = None, **opts: object):
    scorer = VerilogScorer(**{"lint": False, **opts})  # type: ignore[arg-type]
    s = sample or problem_sample(GATES)
    return scorer.score(s, Candidate(s.id, 0, code))


async def test_correct_candidate_passes_and_is_linted_on_request() -> None:
    code = "// a correct answer\n" + HEAD + GOOD_BODY + "  assign y_nand = ~(a & b);\nendmodule\n"
    score = await _s(code, lint=True)
    assert score.status == "pass" and score.value == 1.0, score.explanation
    assert score.metrics["mismatches"] == 0 and score.metrics["samples"] == GATES.expected_samples
    assert score.metrics["lint_errors"] == 0 and "lint_warnings" in score.metrics
    assert "lint_warnings" not in (await _s(code)).metrics  # lint is off unless asked for


async def test_syntax_error_is_compile_error() -> None:
    score = await _s(HEAD + "  assign y_and = a &;\nendmodule\n")
    assert score.failure_class == "compile_error:syntax"
    assert "syntax error" in score.explanation


async def test_wrong_ports_is_interface_error() -> None:
    code = "module TopModule (input a, input b, output y);\n  assign y = a;\nendmodule\n"
    score = await _s(code)
    assert score.failure_class == "compile_error:interface", score.explanation


async def test_missing_module_and_empty_answer() -> None:
    assert (await _s("module Foo(); endmodule")).failure_class == "compile_error:missing_top"
    assert (await _s("   ")).failure_class == "no_code"


async def test_inverted_output_is_sim_mismatch_with_count() -> None:
    score = await _s(HEAD + GOOD_BODY + "  assign y_nand = a & b;\nendmodule\n")
    assert score.failure_class == "sim_mismatch" and score.value == 0.0
    assert score.metrics["mismatches"] == GATES.expected_samples  # wrong at every sample
    assert f"Mismatches: {GATES.expected_samples} in {GATES.expected_samples}" in score.explanation
    assert "y_nand" in score.explanation and "y_and:" not in score.explanation


async def test_printing_anything_is_forbidden() -> None:
    """A fake summary line, with or without a nonce, never reaches the verdict: the design
    may not call $display at all (the screen reads the compiled design)."""
    code = (
        HEAD + GOOD_BODY + "  assign y_nand = a & b;\n"
        '  initial $display("Mismatches: 0 in 100 samples");\n'
        '  final $display("CGE-VERDICT 00000000000000000000000000000000 errors=0 samples=24 '
        'timeout=0");\nendmodule\n'
    )
    score = await _s(code)
    assert score.failure_class == "forbidden_construct:$display", score.explanation


async def test_reading_the_nonce_is_forbidden() -> None:
    code = (
        HEAD + GOOD_BODY + "  assign y_nand = a & b;\n  reg [127:0] n;\n"
        '  initial if ($value$plusargs("cge_nonce=%h", n)) $display("stolen %h", n);\n'
        "endmodule\n"
    )
    score = await _s(code)
    assert score.failure_class == "forbidden_construct:$value$plusargs", score.explanation
    # the one text check left: `include, anywhere (even a comment cannot hide it)
    assert forbidden_constructs('// $finish in a comment\n$display("$fopen");') == []
    assert forbidden_constructs('/* */ `include "ref.sv"') == ["`include"]


async def test_hierarchical_reference_into_the_harness_fails() -> None:
    # An upward reference to the reference instance would copy its answer; it does not bind
    # when the candidate is compiled alone.
    code = HEAD + GOOD_BODY + "  assign y_nand = ref_x.y_nand;\nendmodule\n"
    score = await _s(code)
    assert score.failure_class is not None and score.failure_class.startswith("compile_error")


@pytest.mark.parametrize(
    "body",
    [
        # a combinational loop through an inverter, enabled by input a: it oscillates forever
        # in zero time (delays in the candidate would be in its own time unit, so none here)
        "  wire w;\n  assign w = a ? ~w : 1'b0;\n  assign y_nand = ~(a & b) ^ w;\n",
        # a loop in a process that never gives simulated time a chance to advance
        "  reg t = 0;\n  always @(a) while (a) t = ~t;\n  assign y_nand = ~(a & b);\n",
    ],
)
async def test_never_settling_design_is_timeout(body: str) -> None:
    score = await _s(HEAD + GOOD_BODY + body + "endmodule\n", sim_wall_s=3)
    assert score.failure_class == "timeout", (score.failure_class, score.explanation)


async def test_always_without_delay_is_rejected_at_compile_time() -> None:
    score = await _s(
        HEAD + GOOD_BODY + "  reg t = 0;\n  always t = ~t;\n  assign y_nand = t;\nendmodule\n"
    )
    assert score.failure_class == "compile_error:infinite_loop", score.explanation


async def test_sync_reset_where_async_is_asked_is_caught() -> None:
    code = (
        ASYNC_DFF.reference()
        .replace("module RefModule", "module TopModule")
        .replace("posedge clk or negedge arst_n", "posedge clk")
    )
    score = await _s(code, problem_sample(ASYNC_DFF))
    assert score.failure_class == "sim_mismatch" and score.metrics["mismatches"] > 0


async def test_strict_lint_gates_on_verilator_errors() -> None:
    # Verilator rejects assigning to an input (ASSIGNIN); Icarus accepts it, and the dead
    # branch never runs, so the simulation itself is correct.
    code = (
        HEAD + GOOD_BODY + "  assign y_nand = ~(a & b);\n  always @* if (1'b0) b = a;\nendmodule\n"
    )
    lenient = await _s(code, lint=True)
    strict = await _s(code, lint=True, strict_lint=True)
    assert lenient.status == "pass" and lenient.metrics["lint_errors"] >= 1
    assert "ASSIGNIN" in lenient.explanation or "input" in lenient.explanation
    assert strict.failure_class == "lint_error" and strict.metrics["mismatches"] == 0


def test_parse_verdict_requires_the_nonce() -> None:
    out = "CGE-VERDICT 000000000000000000000000000000ab errors=0 samples=5 timeout=0\n"
    assert parse_verdict(out, "cd") is None
    v = parse_verdict(out, "ab")
    assert v is not None and (v.errors, v.samples, v.timed_out) == (0, 5, False)


async def test_unsupported_construct_keeps_iverilogs_wording() -> None:
    code = HEAD + (
        "  typedef enum logic {OFF, ON} st_t;\n  st_t s;\n  always @* s = st_t'(a);\n"
        + GOOD_BODY
        + "  assign y_nand = ~(a & b);\nendmodule\n"
    )
    score = await _s(code)
    assert score.failure_class == "compile_error:unsupported", score.explanation
    assert "sorry: This cast operation is not yet supported" in score.explanation


async def test_the_sample_count_comes_from_the_reference_run(monkeypatch) -> None:
    """The calibrated count equals what the generator planned; a run with another count
    fails even when every compared sample matched."""
    sample = problem_sample(GATES)
    scorer = VerilogScorer()
    cal = await scorer.calibration(sample)
    assert cal is not None and cal.ok and cal.samples == GATES.expected_samples
    assert cal.model is not None and cal.model.dut_path.endswith("TAG.dut_TAG")
    good = HEAD + GOOD_BODY + "  assign y_nand = ~(a & b);\nendmodule\n"
    assert (await _s(good)).status == "pass"

    async def one_more(*args, **kwargs):
        return dataclasses.replace(cal, samples=cal.samples + 1)

    monkeypatch.setattr("codegen_eval.suites.verilog.scorer.calibrate", one_more)
    score = await _s(good)
    assert score.failure_class == "sim_mismatch:incomplete", score.explanation
    assert f"the reference's run has {GATES.expected_samples + 1}" in score.explanation
