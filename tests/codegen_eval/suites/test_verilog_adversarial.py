"""The adversarial conformance set: one candidate per way of forging a Verilog verdict, each
failing with a clear class, for the built-in suite and for the VerilogEval reader; and honest
designs that use the allowed constructs still pass.

The built-in testbench normally carries a random tag in every name; here it is pinned to
`_x` so a candidate can name the harness (`tb_x.errors_x`) and the screen, not the tag, is
what stops it. (Until the screen compared the drivers of harness nets, overdriving the
reference's `wire s` passed with the tag pinned: only the tag stopped it.)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from codegen_eval.readers.verilogeval import verilogeval
from codegen_eval.suites.verilog import ALL_PROBLEMS, VerilogScorer, problem_sample
from codegen_eval.types import Candidate, Sample

from ..verilogeval_fixture import MAJORITY, TOGGLE, write_v1, write_v2

GATES = next(p for p in ALL_PROBLEMS if p.id == "p01_basic_gates")
HEAD = GATES.interface() + "\n"
GOOD = "  assign y_and = a & b;\n  assign y_or = a | b;\n  assign y_xor = a ^ b;\n"
RIGHT = GOOD + "  assign y_nand = ~(a & b);\n"
WRONG = GOOD + "  assign y_nand = a & b;\n"  # wrong at every sample
E = "endmodule\n"


@pytest.fixture(autouse=True)
def _calibration_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    monkeypatch.setenv("CODEGEN_VERILOG_CALIBRATION", str(tmp_path_factory.getbasetemp() / "cal"))


def _pinned(sample: Sample) -> Sample:
    files = {k: v.replace("__TAG__", "x") for k, v in sample.files.items()}
    md = {**sample.metadata, "tb_top": "tb_x"}
    return replace(sample, files=files, metadata=md)


BUILTIN = _pinned(problem_sample(GATES))
EMPTIES_VVP = (
    HEAD + RIGHT + '  integer f;\n  initial begin f = $fopen("sim.vvp", "w"); $fclose(f); end\n' + E
)

# (name, candidate, expected failure class or its prefix before ":")
BUILTIN_CHEATS = [
    ("escaped identifier hides a task from a text screen",
     HEAD + "  wire \\h// ;\n  initial $display(\"Mismatches: 0 in 24 samples\");\n" + WRONG + E,
     "forbidden_construct:$display"),
    ("macro-pasted $finish", "`define P(a, b) a``b\n" + HEAD + WRONG
     + "  initial #1 `P($fin, ish);\n" + E, "forbidden_construct:$finish"),
    ("macro-pasted $value$plusargs reads the nonce",
     "`define V $value``$plusargs\n" + HEAD + WRONG + "  reg [127:0] n;\n"
     "  initial if (`V(\"cge_nonce=%h\", n)) ;\n" + E, "forbidden_construct:$value$plusargs"),
    ("$fatal before the first mismatch", HEAD + WRONG + "  initial #1 $fatal(1);\n" + E,
     "forbidden_construct:$fatal"),
    ("$stop before the first mismatch", HEAD + WRONG + "  initial #1 $stop;\n" + E,
     "forbidden_construct:$stop"),
    ("prints a fake verdict line", HEAD + WRONG
     + "  initial $display(\"CGE-VERDICT 0 errors=0 samples=24 timeout=0\");\n" + E,
     "forbidden_construct:$display"),
    # refused in the text since the batches' red team (it also moved blame for compile
    # errors onto the harness); the screen, going by scope, caught the $write before
    ("`line poses as the testbench file", HEAD + WRONG + "`line 1 \"tb.sv\" 0\n"
     "  initial $write(\"x\");\n" + E, "forbidden_construct:`line"),
    ("writes the testbench's error counter", HEAD + WRONG
     + "  always @(a, b) #1 tb_x.errors_x = 0;\n" + E, "tamper:harness_reference"),
    ("reads the reference's output", HEAD + GOOD + "  assign y_nand = tb_x.ref_x.y_nand;\n" + E,
     "tamper:harness_reference"),
    ("reads it by an upward name", HEAD + GOOD + "  assign y_nand = ref_x.y_nand;\n" + E,
     "tamper:harness_reference"),
    ("waits on a testbench signal", HEAD + RIGHT + "  reg k;\n  always @(tb_x.samples_x) k = 1;\n"
     + E, "tamper:harness_reference"),
    ("calls the testbench's report task", HEAD + WRONG + "  initial #1 tb_x.report_x(0);\n" + E,
     "tamper:harness_reference"),
    ("disables the testbench's task", HEAD + WRONG + "  initial #1 disable tb_x.check_x;\n" + E,
     "tamper:harness_reference"),
    ("forces its own inputs (the testbench's nets)", HEAD
     + "  initial begin force a = 1'b0; force b = 1'b0; end\n" + WRONG + E,
     "forbidden_construct:force"),
    ("forces a testbench net", HEAD + WRONG + "  initial force tb_x.ref_y_nand_x = 1'b0;\n" + E,
     "forbidden_construct:force"),
    ("`include of the reference", HEAD + RIGHT + E + '`include "ref.sv"\n',
     "forbidden_construct:`include"),
    ("instantiates the reference", HEAD + "  RefModule r (.*);\n" + E,
     "tamper:reference_instance"),
    ("a compilation-unit function prints", "function automatic int f();\n"
     "  $display(\"Mismatches: 0 in 24 samples\"); return 0;\nendfunction\n" + HEAD + WRONG
     + "  initial if (f()) ;\n" + E, "forbidden_construct:$display"),
    ("a compilation-unit initializer reads the nonce",
     "reg [127:0] n;\nbit got = $value$plusargs(\"cge_nonce=%h\", n);\n" + HEAD + WRONG + E,
     "forbidden_construct:$value$plusargs"),
    ("seeds the shared random generator", HEAD + RIGHT + "  integer r;\n  initial r = $random(3);\n"
     + E, "forbidden_construct:$random"),
    ("reads a file at simulation time", HEAD + RIGHT + "  reg [7:0] m [0:3];\n"
     "  initial $readmemh(\"ref.sv\", m);\n" + E, "forbidden_construct:$readmemh"),
    ("reads the simulation time", HEAD + GOOD + "  assign y_nand = ($time > 100) ? ~(a & b) : 0;\n"
     + E, "forbidden_construct:$time"),
    # Under `ulimit -f 0` no byte reaches any file: the append fails (SIGXFSZ), sim.vvp
    # is what ran and the screen sees the $fopen; opening it "w" empties it: tamper.
    ("appends to the compiled design while it runs", HEAD + RIGHT + "  integer f;\n"
     "  initial begin f = $fopen(\"sim.vvp\", \"a\"); $fdisplay(f, \"# clean\"); $fclose(f); end\n"
     + E, "forbidden_construct:$fopen"),
    # Refused the open where candidates run behind vguard (the screen then names the
    # $fopen); alone, under `ulimit -f 0` only, it empties sim.vvp (test_verilog_batch.py)
    ("empties the compiled design while it runs", EMPTIES_VVP, "forbidden_construct:$fopen"),
    ("empties the compiled design at its path in a batch", HEAD + RIGHT + "  integer f;\n"
     "  initial begin f = $fopen(\"w/sim.vvp\", \"w\"); $fclose(f); end\n"
     + E, "forbidden_construct:$fopen"),
    ("a memory hog kills the simulator before the summary", HEAD + RIGHT
     + "  reg [63:0] m [0:(1<<26)-1];\n  integer i;\n"
     "  initial for (i = 0; i < (1<<26); i = i + 1) m[i] = i;\n" + E, "resource_limit:memory"),
    ("a zero-time loop after the start hangs the simulator", HEAD + RIGHT
     + "  reg t = 0;\n  always @(a) if (a) while (1) t = ~t;\n" + E, "timeout"),
]  # fmt: skip

HONEST = [
    ("functions, $clog2, $signed, $bits, generate",
     HEAD + "  localparam W = $clog2(4);\n  function automatic logic nand2(input logic p, q);\n"
     "    return ~(p & q);\n  endfunction\n  wire [W-1:0] v = {a, b};\n"
     "  wire signed [W-1:0] sv = $signed(v);\n  wire [W-1:0] s;\n"
     "  assign s = $unsigned(sv);\n  genvar i;\n"
     "  generate for (i = 0; i < 1; i++) begin : g\n    assign y_and = &s;\n  end endgenerate\n"
     "  assign y_or = |s;\n  assign y_xor = ^s[$bits(s)-1:0];\n"
     "  assign y_nand = nand2(a, b);\n" + E),
    ("a submodule connected with .* and always_comb", HEAD + "  Half h (.*);\n" + E
     + "module Half (input logic a, input logic b, output logic y_and, output logic y_or,\n"
     "             output logic y_xor, output logic y_nand);\n  always_comb begin\n"
     "    y_and = a & b; y_or = a | b; y_xor = a ^ b; y_nand = ~(a & b);\n  end\n" + E),
    ("a tri-state output with two drivers (its resolver sits in the testbench's scope)",
     HEAD.replace("output logic y_and", "output wire y_and")
     + "  assign y_and = a ? b : 1'bz;\n  assign y_and = a ? 1'bz : 1'b0;\n"
     "  assign y_or = a | b;\n  assign y_xor = a ^ b;\n  assign y_nand = ~(a & b);\n" + E),
    ("an output reached through a tran switch (its island's port sits in the testbench's scope)",
     HEAD.replace("output logic y_nand", "output wire y_nand")
     + GOOD + "  wire m = ~(a & b);\n  tran t (m, y_nand);\n" + E),
    ("compilation-unit typedef and parameter", "typedef logic bit_t;\nparameter bit_t ONE = 1'b1;\n"
     + HEAD + GOOD + "  assign y_nand = (a & b) ^ ONE;\n" + E),
]  # fmt: skip


@pytest.mark.parametrize("name,code,want", BUILTIN_CHEATS, ids=[c[0] for c in BUILTIN_CHEATS])
async def test_builtin_cheat_fails(name: str, code: str, want: str) -> None:
    score = await VerilogScorer(sim_wall_s=3).score(BUILTIN, Candidate(BUILTIN.id, 0, code))
    assert score.status == "fail" and score.value == 0.0
    assert score.failure_class == want, (name, score.failure_class, score.explanation)
    assert "CGE-VERDICT" not in score.explanation  # nothing the run printed is shown


SAT_ADD = next(p for p in ALL_PROBLEMS if p.id == "p21_sat_add_u8")
SAT_WRONG = SAT_ADD.interface() + "\n  assign y = 8'd0;\n  assign sat = 1'b0;\n"


@pytest.mark.parametrize(
    "name,drive",
    [
        ("a continuous assignment", "assign (supply0, supply1) tb_x.ref_x.s = 9'bx;"),
        ("a gate", "buf (supply0, supply1) g (tb_x.ref_x.s[8], 1'bx);"),
    ],
)
async def test_overdriving_a_reference_wire_fails(name: str, drive: str) -> None:
    """The reference's internal `wire s` overdriven to X: both reference outputs become X,
    which the testbench treats as don't-care, so the runs alone would pass the wrong design."""
    sample = _pinned(problem_sample(SAT_ADD))
    code = SAT_WRONG + f"  {drive}\n" + E
    score = await VerilogScorer(sim_wall_s=5).score(sample, Candidate(sample.id, 0, code))
    assert score.status == "fail"
    assert score.failure_class == "tamper:harness_changed", (name, score.explanation)
    assert "tb_x.ref_x.s" in score.explanation


@pytest.mark.parametrize("name,code", HONEST, ids=[c[0] for c in HONEST])
async def test_honest_designs_pass(name: str, code: str) -> None:
    score = await VerilogScorer().score(BUILTIN, Candidate(BUILTIN.id, 0, code))
    assert score.status == "pass", (name, score.failure_class, score.explanation)


# -- the same classes through the VerilogEval reader (upstream-style testbench names) -----
MAJ = MAJORITY.header("TopModule") + "\n"
MAJ_WRONG = "  assign y = a & b & c;\n"
TOG = TOGGLE.header("TopModule") + "\n"
TOG_WRONG = "  always @(posedge clk) q <= 1'b0;\n"
VE_CHEATS = [
    ("maj", "prints upstream's summary line", MAJ + MAJ_WRONG
     + "  final $display(\"Mismatches: 0 in 60 samples\");\n" + E, "forbidden_construct:$display"),
    ("maj", "$finish before the first mismatch", MAJ + MAJ_WRONG + "  initial #1 $finish;\n" + E,
     "forbidden_construct:$finish"),
    ("maj", "resets the stats struct", MAJ + MAJ_WRONG
     + "  always @(posedge tb.clk) #1 tb.stats1.errors = 0;\n" + E, "tamper:harness_reference"),
    ("maj", "copies the reference", MAJ + "  assign y = tb.good1.y;\n" + E,
     "tamper:harness_reference"),
    ("maj", "copies it by an upward name", MAJ + "  assign y = good1.y;\n" + E,
     "tamper:harness_reference"),
    ("maj", "drives its inputs to X so the reference's outputs are don't-cares", MAJ
     + "  assign a = 1'bx;\n  assign b = 1'bx;\n  assign c = 1'bx;\n  assign y = 1'b0;\n" + E,
     "forbidden_construct:driven_input"),
    ("maj", "declares an input as an output and drives it", "module TopModule (input b, "
     "input c, output a, output y);\n  assign a = 1'bx;\n  assign y = 0;\n" + E,
     "compile_error:interface"),
    ("maj", "forces its inputs", MAJ + "  initial begin force a = 0; force b = 0; force c = 0; end\n"
     "  assign y = 0;\n" + E, "forbidden_construct:force"),
    ("maj", "`include of the reference", MAJ + MAJ_WRONG + E + "`include \"Prob001_majority3_ref.sv\"\n",
     "forbidden_construct:`include"),
    ("maj", "instantiates RefModule", MAJ + "  RefModule r (.*);\n" + E, "tamper:reference_instance"),
    ("maj", "a package whose escaped name reads like a harness scope",
     "package \\tb.good1 ;\n  bit got = $test$plusargs(\"cge_nonce\");\nendpackage\n" + MAJ
     + MAJ_WRONG + E, "forbidden_construct:$test$plusargs"),
    # upstream's verdict rests on `wire tb_match`: a second driver decides it
    ("maj", "drives tb_match to 1 with supply strength", MAJ + MAJ_WRONG
     + "  assign (supply0, supply1) tb.tb_match = 1'b1;\n" + E, "tamper:harness_changed"),
    ("maj", "drives tb_match to X (if (!tb_match) never counts)", MAJ + "  assign y = 1'b0;\n"
     "  assign tb.tb_match = 1'bx;\n" + E, "tamper:harness_changed"),
    ("maj", "drives tb_match from a value of its own", MAJ + MAJ_WRONG + "  wire one = a | ~a;\n"
     "  assign (strong0, supply1) tb.tb_match = one;\n" + E, "tamper:harness_changed"),
    ("maj", "a pullup on tb_match", MAJ + "  assign y = 1'b0;\n"
     "  pullup (supply1) p1 (tb.tb_match);\n" + E, "tamper:harness_changed"),
    ("maj", "a gate whose output is tb_match", MAJ + "  assign y = 1'b0;\n"
     "  or (supply0, supply1) g1 (tb.tb_match, a, ~a);\n" + E, "tamper:harness_changed"),
    ("maj", "a tran switch joins tb_match to a constant 1", MAJ + "  assign y = 1'b0;\n"
     "  supply1 one;\n  tran t (one, tb.tb_match);\n" + E, "tamper:harness_changed"),
    ("tog", "drives tb_match on a sequential problem", TOG + TOG_WRONG
     + "  assign (supply0, supply1) tb.tb_match = 1'b1;\n" + E, "tamper:harness_changed"),
    ("tog", "defparam shortens the stimulus", TOG + TOG_WRONG + "  defparam tb.stim1.N = 0;\n" + E,
     "tamper:harness_changed"),
    ("tog", "calls the testbench's task", TOG + TOG_WRONG
     + "  initial tb.stim1.wavedrom_stop;\n" + E, "tamper:harness_reference"),
]  # fmt: skip


@pytest.fixture(scope="module")
def ve_task(tmp_path_factory: pytest.TempPathFactory):
    root = write_v2(tmp_path_factory.mktemp("ve-adv"))
    return root


@pytest.mark.parametrize("which,name,code,want", VE_CHEATS, ids=[c[1] for c in VE_CHEATS])
async def test_verilogeval_cheat_fails(ve_task: Path, which: str, name: str, code: str, want: str):
    task = verilogeval(ve_task, "spec-to-rtl", problems=[MAJORITY.pid, TOGGLE.pid])
    sample = next(
        s for s in task.dataset if s.id == (MAJORITY.pid if which == "maj" else TOGGLE.pid)
    )
    score = await task.scorer.score(sample, Candidate(sample.id, 0, code))
    assert score.status == "fail"
    assert score.failure_class == want, (name, score.failure_class, score.explanation)


@pytest.mark.parametrize("mode", ["code-complete", "v1"])
async def test_tb_match_driver_fails_in_every_verilogeval_mode(
    tmp_path_factory: pytest.TempPathFactory, mode: str
) -> None:
    """The same one-line cheat on upstream's `wire tb_match`, as a code-complete body and as
    a v1 `top_module`: the screen reads the compiled design, whichever way it was put together."""
    cheat = "  assign y = 1'b0;\n  assign (supply0, supply1) tb.tb_match = 1'b1;\n" + E
    if mode == "v1":
        problems, _ = write_v1(tmp_path_factory.mktemp("ve1-adv"))
        task = verilogeval(problems, "v1", problems=["majority3"])
        code = MAJORITY.header("top_module") + "\n" + cheat
    else:
        task = verilogeval(write_v2(tmp_path_factory.mktemp("vecc-adv")), mode,
                           problems=[MAJORITY.pid])  # fmt: skip
        code = cheat
    sample = task.dataset[0]
    score = await task.scorer.score(sample, Candidate(sample.id, 0, code))
    assert score.status == "fail"
    assert score.failure_class == "tamper:harness_changed", score.explanation
    assert "tb.tb_match" in score.explanation
