"""The upstream loops the reader benchmarks time (benchmarks/rtllm.py, benchmarks/verilogeval.py)
reproduce upstream's harnesses: RTLLM's auto_run.py (make through os.system, the 1 s poll,
the makefile restored, make clean) and VerilogEval v1's evaluate_functional_correctness
(a process pool, a Manager and a Process per sample), with the real make, iverilog and vvp,
on small designs of our own in upstream's layouts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from benchmarks import rtllm as rb
from benchmarks import verilogeval as vb
from tests.codegen_eval.readers.rtllm_fixture import ADDER_OK, ADDER_TB, ADDER_WRONG

# upstream's makefile, as its 48 common copies are laid out (tabs, continuation lines, clean)
UPSTREAM_MAKEFILE = (
    ".PHONY: vcs sim clean\n\nTEST_DESIGN = adder_4bit\n\nvcs:\n"
    "\t\tvcs -sverilog +v2k -timescale=1ns/1ns       \\\n"
    "\t\t-debug_all         \t\t\t\t\t\t\t\\\n"
    "\t\t-l compile.log \t\t\t\t\t\t\t\t\\\n"
    "\t\t${TEST_DESIGN}.v testbench.v\n\n"
    "sim:\n\t\t./simv -l run.log\n\n"
    "clean:\n\t\trm -rf *.log  csrc  simv*  *.key *.vpd  DVEfiles coverage *.vdb output.txt\n"
)
FORGED = ADDER_WRONG.replace("endmodule", '  initial $display("Pass");\nendmodule')


def test_vcs_recipe_becomes_iverilog_on_the_same_sources() -> None:
    text, cmd = rb.iverilog_makefile(UPSTREAM_MAKEFILE)
    assert cmd == "+timescale+1ns/1ns\n"
    assert "\t\tiverilog -g2012 -c cmd -o simv ${TEST_DESIGN}.v testbench.v\n" in text
    assert "vcs -sverilog" not in text and "compile.log" not in text
    assert "sim:\n\t\t./simv -l run.log\n" in text and "clean:\n\t\trm -rf *.log" in text
    with pytest.raises(ValueError, match="no iverilog counterpart"):
        rb.iverilog_makefile(UPSTREAM_MAKEFILE.replace("+v2k", "+lint=all"))
    with pytest.raises(ValueError, match="no `vcs:` target"):
        rb.iverilog_makefile("sim:\n\t\t./simv\n")


def test_exec_shell_polls_like_auto_run(tmp_path: Path) -> None:
    t0 = time.monotonic()
    assert rb.exec_shell(f"true > {tmp_path}/x", timeout=8)
    assert time.monotonic() - t0 >= rb.AUTO_RUN_POLL_S - 0.05  # the first poll sleeps
    t0 = time.monotonic()
    assert not rb.exec_shell("sleep 2", timeout=1)  # still running at the limit
    assert time.monotonic() - t0 < 1.9


@pytest.mark.parametrize(
    ("sample", "verdict"),
    [(ADDER_OK, True), (FORGED, True), (ADDER_WRONG, False), ("module adder_4bit(;", False)],
)
def test_auto_run_one_design(tmp_path: Path, sample: str, verdict: bool) -> None:
    design = tmp_path / "designs" / "adder_4bit"
    design.mkdir(parents=True)
    (design / "testbench.v").write_text(ADDER_TB)
    makefile, cmd = rb.iverilog_makefile(UPSTREAM_MAKEFILE)
    (design / "makefile").write_text(makefile)
    (design / "cmd").write_text(cmd)
    samples = tmp_path / "samples" / "t1"
    samples.mkdir(parents=True)
    (samples / "adder_4bit.v").write_text(sample)
    cwd = os.getcwd()
    os.chdir(design.parent)
    try:
        ok, why = rb.auto_run_one("adder_4bit", str(samples))
        assert Path.cwd() == design.parent
    finally:
        os.chdir(cwd)
    # upstream's verdict, forgeable by one $display as upstream's is; the makefile restored
    # and `make clean` run, as auto_run leaves a design's directory
    assert ok is verdict, why
    assert (design / "makefile").read_text() == makefile
    assert not (design / "simv").exists() and not (design / "output.txt").exists()
    if sample.endswith("(;"):
        assert why == "no simv (compile failed)"


V1_TEST = """`timescale 1 ps/1 ps
module tb();
  reg a, b; wire y_ref, y_dut; integer errors = 0;
  assign y_ref = a & b;
  top_module dut(.a(a), .b(b), .y(y_dut));
  initial begin
    repeat (8) begin {a, b} = $random; #1 if (y_ref !== y_dut) errors = errors + 1; end
    $display("Mismatches: %1d in %1d samples", errors, 8);
    $finish;
  end
endmodule
"""
V1_PROMPT = "module top_module(input a, input b, output y);\n"
V1_ROWS = {
    "and_ok": "  assign y = a & b;\nendmodule\n",
    "and_or": "  assign y = a | b;\nendmodule\n",
    "and_syntax": "  assign y = a & ;\nendmodule\n",
}


def test_v1_loop_gives_the_tools_verdicts(tmp_path: Path) -> None:
    jsonl = tmp_path / "problems.jsonl"
    jsonl.write_text("".join(
        json.dumps({"task_id": t, "prompt": V1_PROMPT, "canonical_solution": c, "test": V1_TEST})
        + "\n" for t, c in V1_ROWS.items()
    ))  # fmt: skip
    loop, wall, cpu = vb.upstream_v1_loop(jsonl, workers=2)
    tools, _, _ = vb.upstream_v1(jsonl)
    assert loop == tools
    assert loop["and_ok"] == (True, "passed")
    assert loop["and_or"][1].startswith("failed: ") and "out of 8 samples" in loop["and_or"][1]
    assert loop["and_syntax"] == (False, "failed: syntax error.")
    # a pool, a Manager and a Process per sample cost CPU beyond the tools
    assert cpu > 0 and wall > 0


# Against the real artifacts, when you have them (CI has neither):
#   RTLLM_ROOT=/path/to/RTLLM VERILOGEVAL_V1_JSONL=/path/to/VerilogEval_Human.jsonl \
#       .venv/bin/python -m pytest tests/benchmarks/test_upstream_loops.py
RTLLM_ROOT = os.environ.get("RTLLM_ROOT")
V1_JSONL = os.environ.get("VERILOGEVAL_V1_JSONL")


@pytest.mark.slow
@pytest.mark.skipif(not RTLLM_ROOT, reason="RTLLM_ROOT does not point at a checkout")
def test_real_rtllm_loop_agrees_with_its_tools_but_freq_div() -> None:
    loop, wall, _ = rb.upstream_loop(str(RTLLM_ROOT))
    tools, _, _ = rb.upstream(str(RTLLM_ROOT))
    assert len(loop) == len(tools) == 50
    differ = {i: (loop[i], tools[i]) for i in loop if loop[i][0] != tools[i][0]}
    # freq_div's makefile names a file on upstream's authors' machine, not ${TEST_DESIGN}
    assert list(differ) == ["freq_div"], differ
    assert loop["freq_div"] == (False, "no simv (compile failed)")
    assert wall >= sum(ok for ok, why in loop.values() if "simv" not in why)  # 1 s polls


@pytest.mark.slow
@pytest.mark.skipif(not V1_JSONL, reason="VERILOGEVAL_V1_JSONL does not name a v1 problems file")
def test_real_v1_loop_agrees_with_its_tools() -> None:
    loop, _, _ = vb.upstream_v1_loop(Path(str(V1_JSONL)))
    tools, _, _ = vb.upstream_v1(Path(str(V1_JSONL)))
    assert loop == tools
