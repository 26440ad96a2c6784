"""A small VerilogEval copy in the real layouts, with problems written for these tests.

It reproduces what the real checkout requires of a reader: both v2 task directories with
upstream's file naming (`ProbNNN_name_{prompt.txt,ref.sv,test.sv}`, plus `_ifc.txt` in
code-complete, a `problems.txt` and a stray `.sv` file as in the real directories),
testbenches in upstream's style (stimulus_gen with wavedrom tasks, `module tb()` with a
packed stats struct, VCD dump, a final block printing `Mismatches: N in M samples`, a
TIMEOUT guard), and v1 JSONL rows (task_id, prompt = header, canonical_solution = body, test
= reference_module + testbench) with a descriptions file. Problems whose reference fails on
this toolchain, mode by mode, mirror the real ones: an enum cast iverilog 11 cannot compile
(Prob151/156), a reference that runs past the testbench's TIMEOUT (Prob082/141), and a
spec-to-rtl testbench whose port names differ from the reference (Prob099).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SPEC_DIR = "dataset_spec-to-rtl"
CC_DIR = "dataset_code-complete-iccad2023"


@dataclass(frozen=True)
class Problem:
    pid: str
    spec: str
    ports: tuple[tuple[str, str, int], ...]  # (direction, name, width)
    body: str  # the reference's body (after the port list), with endmodule
    clocked: bool
    n_samples: int = 60  # stimulus steps
    timeout_ps: int = 1000000
    tb_ports: tuple[str, ...] | None = None  # output names the testbench connects, if different
    stim_param: bool = False  # stimulus_gen has a parameter (a defparam target)

    def header(self, name: str) -> str:
        lines = []
        for d, n, w in self.ports:
            rng = f"[{w - 1}:0] " if w > 1 else ""
            kind = "logic " if d == "output" else ""  # outputs may be assigned in always blocks
            lines.append(f"  {d} {kind}{rng}{n}")
        return f"module {name} (\n" + ",\n".join(lines) + "\n);"

    def reference(self, name: str = "RefModule") -> str:
        return f"{self.header(name)}\n{self.body}"

    @property
    def inputs(self) -> list[tuple[str, int]]:
        return [(n, w) for d, n, w in self.ports if d == "input"]

    @property
    def outputs(self) -> list[tuple[str, int]]:
        return [(n, w) for d, n, w in self.ports if d == "output"]


MAJORITY = Problem(
    "Prob001_majority3",
    "Output y is 1 when at least two of a, b and c are 1.",
    (("input", "a", 1), ("input", "b", 1), ("input", "c", 1), ("output", "y", 1)),
    "  assign y = (a & b) | (a & c) | (b & c);\nendmodule\n",
    clocked=False,
)
TOGGLE = Problem(
    "Prob002_toggle_ff",
    "A T flip-flop: at a rising clock edge, reset clears q, otherwise q toggles when t is 1.",
    (("input", "clk", 1), ("input", "reset", 1), ("input", "t", 1), ("output", "q", 1)),
    "  always @(posedge clk)\n    if (reset) q <= 0;\n    else if (t) q <= ~q;\nendmodule\n",
    clocked=True,
    stim_param=True,
)
ENUM_FSM = Problem(
    "Prob151_enum_fsm",
    "A two-state machine: state flips on every rising clock edge where x is 1; z is 1 in B.",
    (("input", "clk", 1), ("input", "reset", 1), ("input", "x", 1), ("output", "z", 1)),
    "  typedef enum logic [0:0] {A = 1'b0, B = 1'b1} state_t;\n  state_t s;\n"
    "  always @(posedge clk)\n    if (reset) s <= A;\n    else if (x) s <= state_t'(~s);\n"
    "  assign z = (s == B);\nendmodule\n",
    clocked=True,
)
SLOW = Problem(
    "Prob082_slow_counter",
    "An 8-bit counter: reset clears q, otherwise q counts up on every rising clock edge.",
    (("input", "clk", 1), ("input", "reset", 1), ("output", "q", 8)),
    "  always @(posedge clk)\n    if (reset) q <= 0;\n    else q <= q + 1;\nendmodule\n",
    clocked=True,
    n_samples=400,
    timeout_ps=1500,  # the stimulus runs for ~2000 ps: even the reference hits TIMEOUT
)
PORTS = Problem(
    "Prob099_nor_pair",
    "Y1 is the NOR of a and b; Y3 is the NAND of a and b.",
    (("input", "a", 1), ("input", "b", 1), ("output", "Y1", 1), ("output", "Y3", 1)),
    "  assign Y1 = ~(a | b);\n  assign Y3 = ~(a & b);\nendmodule\n",
    clocked=False,
    tb_ports=("Y2", "Y4"),  # spec-to-rtl only, like the real Prob099
)
POLICY = Problem(
    "Prob118_xor_reduce",
    "Output p is the XOR of all bits of the 4-bit input d.",
    (("input", "d", 4), ("output", "p", 1)),
    "  assign p = ^d;\nendmodule\n",
    clocked=False,
)
PROBLEMS = (MAJORITY, TOGGLE, ENUM_FSM, SLOW, PORTS, POLICY)


def upstream_style_testbench(
    p: Problem, ref: str = "RefModule", dut: str = "TopModule", ports_of_tb=None
) -> str:
    """A testbench in the upstream style for problem p."""
    data_in = [(n, w) for n, w in p.inputs if n != "clk"]
    outs = p.outputs
    tb_names = list(ports_of_tb or [n for n, _ in outs])

    def decl(n: str, w: int) -> str:
        return f"logic {f'[{w - 1}:0] ' if w > 1 else ''}{n}"

    stim_outs = ", ".join(f"output {decl(n, w)}" for n, w in data_in)
    assigns = ", ".join(n for n, _ in data_in)
    param = f"  parameter N = {p.n_samples};\n" if p.stim_param else ""
    steps = "N" if p.stim_param else str(p.n_samples)
    reset = (
        "reset <= 1; @(negedge clk); reset <= 0;"
        if any(n == "reset" for n in assigns.split(", "))
        else ""
    )
    stim = f"""module stimulus_gen (
  input clk,
  {stim_outs},
  output reg[511:0] wavedrom_title,
  output reg wavedrom_enable
);
{param}  task wavedrom_start(input[511:0] title = "");
  endtask
  task wavedrom_stop;
    #1;
  endtask
  initial begin
    {{{assigns}}} <= 0;
    {reset}
    wavedrom_start("start");
    wavedrom_stop();
    repeat({steps}) @(posedge clk, negedge clk) {{{assigns}}} <= $random;
    #1 $finish;
  end
endmodule
"""
    fields = "".join(f"    int errors_{n};\n    int errortime_{n};\n" for n, _ in outs)
    wires = "".join(f"  {decl(n + '_ref', w)};\n  {decl(n + '_dut', w)};\n" for n, w in outs)
    ins = "".join(f"  {decl(n, w)};\n" for n, w in data_in)
    in_conns = ", ".join(f".{n}" for n, _ in p.inputs)
    ref_out = ", ".join(f".{t}({n}_ref)" for t, (n, _) in zip(tb_names, outs, strict=True))
    dut_out = ", ".join(f".{t}({n}_dut)" for t, (n, _) in zip(tb_names, outs, strict=True))
    refs = ", ".join(f"{n}_ref" for n, _ in outs)
    duts = ", ".join(f"{n}_dut" for n, _ in outs)
    hints = "".join(
        f'    if (stats1.errors_{n}) $display("Hint: Output \'%s\' has %0d mismatches.", "{n}", '
        f"stats1.errors_{n});\n"
        for n, _ in outs
    )
    per_out = "".join(
        f"    if ({n}_ref !== ({n}_ref ^ {n}_dut ^ {n}_ref)) stats1.errors_{n} = stats1.errors_{n}+1'b1;\n"
        for n, _ in outs
    )
    return f"""`timescale 1 ps/1 ps
`define OK 12
`define INCORRECT 13

{stim}
module tb();

  typedef struct packed {{
    int errors;
    int errortime;
{fields}    int clocks;
  }} stats;

  stats stats1;

  wire[511:0] wavedrom_title;
  wire wavedrom_enable;
  reg clk=0;
  initial forever
    #5 clk = ~clk;

{ins}{wires}
  initial begin
    $dumpfile("wave.vcd");
    $dumpvars(1, stim1.clk, tb_mismatch, {refs}, {duts});
  end

  wire tb_match;
  wire tb_mismatch = ~tb_match;

  stimulus_gen stim1 (.clk, .*);
  {ref} good1 ({in_conns}, {ref_out});
  {dut} top_module1 ({in_conns}, {dut_out});

  final begin
{hints}    $display("Hint: Total mismatched samples is %1d out of %1d samples\\n", stats1.errors, stats1.clocks);
    $display("Simulation finished at %0d ps", $time);
    $display("Mismatches: %1d in %1d samples", stats1.errors, stats1.clocks);
  end

  assign tb_match = ( {{ {refs} }} === ( {{ {refs} }} ^ {{ {duts} }} ^ {{ {refs} }} ) );
  always @(posedge clk, negedge clk) begin
    stats1.clocks++;
    if (!tb_match) begin
      if (stats1.errors == 0) stats1.errortime = $time;
      stats1.errors++;
    end
{per_out}  end

  initial begin
    #{p.timeout_ps}
    $display("TIMEOUT");
    $finish();
  end

endmodule
"""


def write_v2(root: Path) -> Path:
    """The v2 layout under root (a checkout with both task directories); returns root."""
    for sub in (SPEC_DIR, CC_DIR):
        d = root / sub
        d.mkdir(parents=True)
        ids = []
        for p in PROBLEMS:
            ids.append(p.pid)
            ifc = p.header("TopModule")
            if sub == SPEC_DIR:
                prompt = (
                    "I would like you to implement a module named TopModule with the following\n"
                    f"interface.\n\n{p.spec}\n"
                )
            else:
                prompt = f"\n{p.spec}\n\n{ifc}\n"
                (d / f"{p.pid}_ifc.txt").write_text(f"{ifc}\n")
            (d / f"{p.pid}_prompt.txt").write_text(prompt)
            (d / f"{p.pid}_ref.sv").write_text(p.reference())
            tb_ports = p.tb_ports if sub == SPEC_DIR else None
            (d / f"{p.pid}_test.sv").write_text(upstream_style_testbench(p, ports_of_tb=tb_ports))
        # a prompt without reference and testbench, the problem list and a stray file
        (d / "Prob005_orphan_prompt.txt").write_text("nothing else here\n")
        (d / "problems.txt").write_text("\n".join(ids) + "\n")
        (d / "Prob001_majority3.sv").write_text("// a stray file, as in the real dataset\n")
    return root


def write_v1(root: Path) -> tuple[Path, Path]:
    """(problems JSONL, descriptions JSONL) in the v1 format."""
    rows, descs = [], []
    for p, tid in ((MAJORITY, "majority3"), (TOGGLE, "toggle_ff"), (ENUM_FSM, "enum_fsm"),
                   (POLICY, "dff8")):  # fmt: skip
        test = p.reference("reference_module") + "\n" + upstream_style_testbench(p, ref="reference_module",
                                                                  dut="top_module")  # fmt: skip
        rows.append(
            {
                "task_id": tid,
                "prompt": p.header("top_module") + "\n",
                "canonical_solution": p.body,
                "test": test,
            }
        )
        descs.append({"task_id": tid, "detail_description": p.spec, "simple_description": tid})
    root.mkdir(parents=True, exist_ok=True)
    probs, dfile = root / "VerilogEval_Human.jsonl", root / "VerilogDescription_Human.jsonl"
    probs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dfile.write_text("".join(json.dumps(r) + "\n" for r in descs))
    return probs, dfile
