"""The vvp reader and the screen's model of the harness, on iverilog's real output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from codegen_eval.suites.verilog.screen import HarnessModel, harness_model, screen
from codegen_eval.suites.verilog.vvp import VvpSyntaxError, parse

TB = """`timescale 1ns/1ps
module RefModule(input a, input b, output y);
  assign y = a & b;
endmodule
module stim(output reg a, output reg b);
  parameter N = 8;
  initial begin repeat (N) begin {a, b} = $random; #5; end end
endmodule
module tb;
  wire a, b, yr, yd;
  integer errors = 0;
  stim s1 (.a(a), .b(b));
  RefModule good1 (.a(a), .b(b), .y(yr));
  TopModule top1 (.a(a), .b(b), .y(yd));
  always #5 if (yr !== (yr ^ yd ^ yr)) errors = errors + 1;
  initial begin #100 $display("Mismatches: %0d in 20 samples", errors); $finish; end
endmodule
"""


def compile_design(tmp: Path, cand: str):
    (tmp / "tb.sv").write_text(TB)
    (tmp / "c.sv").write_text(cand)
    r = subprocess.run(["iverilog", "-g2012", "-s", "tb", "-o", str(tmp / "s.vvp"),
                        str(tmp / "tb.sv"), str(tmp / "c.sv")], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = (tmp / "s.vvp").read_text()
    return parse(text), text


def test_names_that_look_like_syntax_stay_inside_their_statement(tmp_path: Path) -> None:
    cand = (
        "module TopModule(input a, input b, output y);\n"
        '  wire \\x";%vpi_call#q ;\n  assign \\x";%vpi_call#q = a;\n'
        '  function automatic \\f;#x" (input p); \\f;#x" = p; endfunction\n'
        '  reg [63:0] s;\n  initial s = "a\\"b;#";\n'
        '  assign y = \\f;#x" (\\x";%vpi_call#q ) & b;\nendmodule\n'
    )
    d, text = compile_design(tmp_path, cand)
    assert '"x\\";%vpi_call#q"' in text  # iverilog escapes the quote, not the rest
    top = next(s for s in d.scopes.values() if s.type == "TopModule")
    assert top.path == "tb.top1" and [p[2] for p in top.ports] == ["a", "b", "y"]
    assert [p[0] for p in top.ports] == ["INPUT", "INPUT", "OUTPUT"]
    names = {d.net_name(lab) for lab, st in d.defs.items() if st.scope == top.label}
    assert 'x";%vpi_call#q' in names
    calls = [st.syscall() for st in d.stmts if st.syscall()]
    assert "$display" in calls and "$finish" in calls and "$random" in calls
    assert not any(st.syscall() for st in d.stmts if st.scope == top.label)  # no fake call


def test_statements_follow_vvps_lexical_rules() -> None:
    text = (
        '#! /usr/bin/vvp\n:ivl_version "11.0";\n'
        'S_1 .scope module, "m" "m" 2 1;\n'
        'v1_0 .var "r", 0 0;\n'
        "L_2 .functor AND 1, v1_0,\n    v1_0, C4<1>, C4<1>;  a trailing comment ; more\n"
        "    .scope S_1;\nT_0 ;\n    %load/vec4 v1_0; # a comment\n    %end;\n    .thread T_0;\n"
    )
    d = parse(text)
    assert d.scopes["S_1"].path == "m"
    assert d.refs(d.defs["L_2"]) == ["v1_0", "v1_0"]  # the statement went on a second line
    assert [st.head for st in d.stmts if st.scope == "S_1"][-3:] == [
        "%load/vec4",
        "%end",
        ".thread",
    ]
    with pytest.raises(VvpSyntaxError):
        parse('S_1 .scope module, "m" "m" 2 1;\n    %vpi_call/w 2 1 "$display, "x" {0 0 0};\n')
    with pytest.raises(VvpSyntaxError):
        parse('S_1 .scope module, "m" "m" 2 1;\nv1_0 .var "r", 0 0\n')


def test_harness_model_is_stable_and_sees_defparam(tmp_path: Path) -> None:
    ref = "module TopModule(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
    d0, _ = compile_design(tmp_path, ref)
    model = harness_model(d0, top="TopModule", tb_top="tb", tag=None)
    assert model.dut_path == "tb.top1" and ("INPUT", "a") in model.ports
    assert set(model.harness_types) == {"tb", "RefModule", "stim"}
    again = HarnessModel.from_json(json.loads(json.dumps(model.to_json())))
    # a different but honest design leaves the harness exactly as it was
    alt = (
        "module TopModule(input a, input b, output y);\n  Inner u(.*);\nendmodule\n"
        "module Inner(input a, input b, output y);\n  reg r;\n  always @* r = a & b;\n"
        "  assign y = r;\nendmodule\n"
    )
    d1, _ = compile_design(tmp_path, alt)
    assert screen(d1, top="TopModule", tb_top="tb", tag=None, model=again) == []
    cheat = ref.replace("  assign", "  defparam tb.s1.N = 1;\n  assign")
    d2, _ = compile_design(tmp_path, cheat)
    found = screen(d2, top="TopModule", tb_top="tb", tag=None, model=again)
    assert [f.failure_class for f in found] == ["tamper:harness_changed"]
    assert "tb.s1" in found[0].message
