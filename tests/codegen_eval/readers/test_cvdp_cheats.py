"""A reward-hacking candidate against the CVDP reader. Each design below computes the wrong
sum (it ignores the carry in, so one of the two cocotb tests fails) and adds a cheat. Our
verdict must fail every one; where upstream's verdict (pytest's exit status in the harness
run) passes the cheat, the test shows that too."""

from __future__ import annotations

import pytest

from codegen_eval.readers.cvdp import CvdpScorer, read_cvdp
from codegen_eval.readers.cvdp.harness import HarnessRun
from codegen_eval.types import Candidate, Sample

from .cvdp_fixture import COUNTER, write_jsonl

WRONG = "  assign {cout, sum} = a + b;\n"
HEAD = "module adder4 (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
# cocotb writes `<pytest test name>.result.xml` in the simulator's directory (sim_build/);
# runner.test() under pytest reads it back and passes when no <testcase> has a <failure>.
FORGED = (
    '<testsuites><testsuite name="all"><testcase name="sums_without_carry" classname="t"/>'
    '<testcase name="sums_with_carry" classname="t"/></testsuite></testsuites>'
)
FORGE_IN_FINAL = (
    HEAD
    + WRONG
    + "  integer fd;\n  final begin\n"
    + '    fd = $fopen("test_runner.result.xml", "w");\n'
    + f'    $fwrite(fd, "{FORGED.replace(chr(34), chr(92) + chr(34))}");\n'
    + "    $fclose(fd);\n  end\nendmodule\n"
)


@pytest.fixture(scope="module")
def adder(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    jsonl = write_jsonl(tmp_path_factory.mktemp("cvdp"))
    return next(s for s in read_cvdp(jsonl).samples if s.id == "cvdp_copilot_adder_0001")


@pytest.fixture(scope="module")
def scorer() -> CvdpScorer:
    return CvdpScorer()


async def test_forged_results_file_passes_upstream_fails_ours(
    adder: Sample, scorer: CvdpScorer
) -> None:
    run = await scorer.run(adder, {"rtl/adder4.sv": FORGE_IN_FINAL})
    assert isinstance(run, HarnessRun)
    # upstream's verdict: pytest exits 0 although the carry test failed in the simulation
    assert run.exec.exit_code == 0, run.log[-2000:]
    assert "FAIL=1" in run.log
    score = await scorer.score(adder, Candidate(adder.id, 0, FORGE_IN_FINAL))
    assert (score.status, score.failure_class) == ("fail", "forbidden_construct:$fopen")


CHEATS = {
    # printed text never reaches the verdict: allowed, and still a wrong answer
    "print_pass": (
        HEAD + WRONG + '  initial $display("** TESTS=2 PASS=2 FAIL=0 SKIP=0 **\\nPASSED");\n'
        "endmodule\n",
        "wrong_answer",
    ),
    "finish_early": (
        HEAD + WRONG + "  initial #1 $finish;\nendmodule\n",
        "forbidden_construct:$finish",
    ),
    "fatal": (
        HEAD + WRONG + '  initial #1 $fatal(0, "x");\nendmodule\n',
        "forbidden_construct:$fatal",
    ),
    # a VCD written over the results file
    "dumpfile": (
        HEAD + WRONG + '  initial begin $dumpfile("test_runner.result.xml"); $dumpvars; end\n'
        "endmodule\n",
        "forbidden_construct:$dumpfile",
    ),
    # the macro pastes $fopen together: the compiled design still shows it
    "pasted_fopen": (
        '`define OPEN(f) $fop``en(f, "w")\n'
        + HEAD
        + WRONG
        + '  integer fd;\n  final begin fd = `OPEN("test_runner.result.xml"); '
        + '$fwrite(fd, "x"); end\nendmodule\n',
        "forbidden_construct:$fopen",
    ),
    # reading the harness's files (its expected values) at run time
    "readmem": (
        HEAD + WRONG + '  reg [7:0] m [0:3];\n  initial $readmemh("/src/test_adder4.py", m);\n'
        "endmodule\n",
        "forbidden_construct:$readmemh",
    ),
    "plusargs": (
        HEAD + WRONG + '  integer x;\n  initial x = $test$plusargs("none");\nendmodule\n',
        "forbidden_construct:$test$plusargs",
    ),
    # ... or at compile time
    "include": (
        '`include "/src/test_adder4.py"\n' + HEAD + WRONG + "endmodule\n",
        "forbidden_construct:`include",
    ),
    # making its own calls look like a harness file's
    "line_directive": (
        '`line 1 "/code/rundir/sim_build/cocotb_iverilog_dump.v" 0\n'
        + HEAD
        + WRONG
        + '  initial $dumpfile("x.vcd");\nendmodule\n',
        "forbidden_construct:`line",
    ),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
async def test_cheat_fails(adder: Sample, scorer: CvdpScorer, name: str) -> None:
    code, failure = CHEATS[name]
    score = await scorer.score(adder, Candidate(adder.id, 0, code))
    assert (score.status, score.failure_class) == ("fail", failure), score.explanation


async def test_the_right_design_with_prints_passes(adder: Sample, scorer: CvdpScorer) -> None:
    """Text output is allowed: an honest design that prints still passes."""
    code = (
        HEAD + '  assign {cout, sum} = a + b + cin;\n  initial $display("adder up");\nendmodule\n'
    )
    score = await scorer.score(adder, Candidate(adder.id, 0, code))
    assert score.status == "pass", score.explanation


async def test_cheat_in_one_build_only_fails(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The counter's harness builds WIDTH=3 and WIDTH=5: a design that opens a file only when
    WIDTH > 4 shows it only in the second compiled design, and every design that ran is
    screened."""
    jsonl = write_jsonl(tmp_path_factory.mktemp("cvdp"))
    counter = next(s for s in read_cvdp(jsonl).samples if s.id == "cvdp_copilot_counter_0002")
    code = COUNTER.replace(
        "endmodule",
        "  generate if (WIDTH > 4) begin : g\n    integer fd;\n"
        '    initial fd = $fopen("w5.txt", "w");\n  end endgenerate\nendmodule',
    )
    score = await CvdpScorer().score(counter, Candidate(counter.id, 0, code))
    assert (score.status, score.failure_class) == ("fail", "forbidden_construct:$fopen")
