"""The RTLLM 2.0 reader on a fixture of our own in RTLLM's layout (rtllm_fixture.py), with
the real iverilog in the real sandbox: prompts, instrumentation, measured exclusions, honest
answers, and cheats that upstream's `"Pass" in output` rule passes but ours fails."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from codegen_eval.readers.rtllm import (
    RtllmFormatError,
    UnsupportedTestbench,
    instrument_testbench,
    read_rtllm,
    register_rtllm,
    rtllm,
)
from codegen_eval.registry import get_suite
from codegen_eval.types import Candidate, Sample, Score, Task

from .rtllm_fixture import ADDER_OK, ADDER_TB, ADDER_WRONG, COUNTER_OK, write_rtllm

REPO = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("rtllm_bench", REPO / "benchmarks" / "rtllm.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rtllm(tmp_path_factory.mktemp("rtllm"))


@pytest.fixture(scope="module")
def task(checkout: Path) -> Task:
    return rtllm(checkout)


def _score(task: Task, sid: str, code: str) -> Score:
    sample = next(s for s in task.dataset if s.id == sid)
    return asyncio.run(task.scorer.score(sample, Candidate(sid, 0, code)))


def test_reads_the_layout(checkout: Path) -> None:
    read = read_rtllm(checkout)
    by = {s.id: s for s in read.samples}
    assert sorted(by) == ["adder_4bit", "counter_mod6", "parity8", "shift_reg4"]  # no _chatgpt4
    adder = by["adder_4bit"]
    assert (
        adder.input == (checkout / "Arithmetic/Adder/adder_4bit/design_description.txt").read_text()
    )
    assert adder.metadata["top"] == "adder_4bit" and adder.metadata["tb_top"] == "testbench"
    assert "module adder_4bit(" in adder.target and "verified_" not in adder.target
    counter = by["counter_mod6"]
    # the reference's module is named after an older design: renamed, and said so
    assert counter.metadata["reference_note"] == "reference module counter6 renamed to counter_mod6"
    assert counter.files["data/expected.txt"].startswith("01\n02\n")


def test_not_a_checkout_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RtllmFormatError, match="no RTLLM designs"):
        read_rtllm(tmp_path)
    with pytest.raises(RtllmFormatError, match="does not exist"):
        read_rtllm(tmp_path / "missing")


def test_instrumentation_uses_the_one_live_pass_message() -> None:
    tb, top = instrument_testbench(ADDER_TB)
    assert top == "testbench"
    assert tb.count("cge_passes___TAG__ + 1") == 1  # the commented `Passed` display is not it
    assert tb.startswith("`timescale 1ns/1ns\n") and tb.endswith("`resetall\n`timescale 1ns/1ns\n")
    # the testbench's own lines keep their numbers, one down for the time scale in front
    assert tb.splitlines()[1 + ADDER_TB.splitlines().index("    if (error == 0) begin")] == (
        "    if (error == 0) begin"
    )
    with pytest.raises(UnsupportedTestbench, match="found 0"):
        instrument_testbench(ADDER_TB.replace("Your Design Passed", "ok"))
    second = ADDER_TB.replace(
        '// $display("Passed %d + %d", a, b);', '$display("=== Your Design Passed ===");'
    )
    with pytest.raises(UnsupportedTestbench, match="found 2"):
        instrument_testbench(second)


def test_exclusions_are_measured_with_what_a_newer_icarus_would_do(task: Task) -> None:
    assert sorted(s.id for s in task.dataset) == ["adder_4bit", "counter_mod6"]
    excl = task.excluded
    assert set(excl) == {"parity8", "shift_reg4"}
    assert "testbench.v:16: sorry: break statements not supported" in excl["shift_reg4"]
    assert "sim_mismatch: the testbench's checks fail" in excl["parity8"]
    newer = task.metadata["newer_icarus"]
    assert newer["shift_reg4"].startswith("likely") and newer["parity8"].startswith("no")


@pytest.mark.parametrize(
    ("sid", "code"),
    [("adder_4bit", None), ("adder_4bit", ADDER_OK), ("counter_mod6", None),
     ("counter_mod6", COUNTER_OK)],
)  # fmt: skip
def test_references_and_honest_answers_pass(task: Task, sid: str, code: str | None) -> None:
    sample = next(s for s in task.dataset if s.id == sid)
    score = _score(task, sid, code or sample.target)
    assert score.status == "pass", score.explanation
    assert score.metrics["upstream_pass"] == 1.0


def test_a_wrong_answer_fails_with_the_testbenchs_words(task: Task) -> None:
    score = _score(task, "adder_4bit", ADDER_WRONG)
    assert score.failure_class == "sim_mismatch"
    assert "failures" in score.explanation and score.metrics["upstream_pass"] == 0.0


PASSED = '"===========Your Design Passed==========="'
WRONG_BODY = "  assign {cout, sum} = a + b;\n"
HEAD = (
    "module adder_4bit(input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
)
CHEATS = {
    # the upstream rule's whole test: print the word
    "print_pass": HEAD + WRONG_BODY + f"  initial $display({PASSED});\nendmodule\n",
    # print it in lower case, built from pieces, after the testbench's own output
    "print_pass_late": HEAD + WRONG_BODY
    + '  initial #100000 $display("%s", {"p", "ass"});\nendmodule\n',
    # `$finish` before the testbench reaches its failure message
    "finish_early": HEAD + WRONG_BODY + f"  initial begin $display({PASSED}); $finish; end\n"
    "endmodule\n",
    # a module nobody instantiates is a second top under VCS/iverilog without -s
    "second_root": HEAD + WRONG_BODY + f"endmodule\nmodule cheat;\n  initial $display({PASSED});\n"
    "endmodule\n",
    # reset the testbench's error counter from inside the design
    "force_error_counter": HEAD + WRONG_BODY + "  initial force testbench.error = 0;\nendmodule\n",
    "zero_error_counter": HEAD + WRONG_BODY
    + "  initial repeat (1000) #1 testbench.error = 0;\nendmodule\n",
}  # fmt: skip


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_cheats_fail_ours_and_pass_upstreams_rule(
    task: Task, checkout: Path, cheat: str, tmp_path: Path
) -> None:
    code = CHEATS[cheat]
    design = checkout / "Arithmetic/Adder/adder_4bit"
    passed_upstream, out = _bench().upstream_one(design, code, tmp_path / "work")
    assert passed_upstream, out  # upstream's own flow (its commands, iverilog) passes it
    score = _score(task, "adder_4bit", code)
    assert score.status == "fail", score.explanation
    assert score.failure_class in {
        "forbidden_construct:$display",
        "forbidden_construct:$finish",
        "forbidden_construct:force",
        "tamper:harness_reference",
        "sim_mismatch",
    }, score.failure_class


def test_cli_registration_builds_the_suite(checkout: Path) -> None:
    name = register_rtllm(checkout, name="rtllm-test-fixture")
    t = get_suite(name, calibrate=False)
    assert isinstance(t.dataset[0], Sample) and len(t.dataset) == 4
