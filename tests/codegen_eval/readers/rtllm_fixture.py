"""A small RTLLM 2.0 copy in the real layout, with designs written for these tests.

It reproduces what the real checkout asks of a reader: `<category>/<group>/<design>/` with
`design_description.txt`, `makefile`, `testbench.v` in RTLLM's style (an error counter, one
`$display("===========Your Design Passed===========")` under `if (error == 0)`, some
without `$finish`, a commented-out pass message, expected values read with `$readmemh` from
a data file next to it) and `verified_<name>.v` whose module is `verified_<name>` (one named
after an older design, as two real references are), and a `_chatgpt4/t1/` answers folder
that is not a design. Two designs fail on iverilog 11 the way real ones do: a testbench
with `break` (`sorry: break statements not supported`) and a reference whose outputs the
testbench's checks reject.
"""

from __future__ import annotations

from pathlib import Path

DESC = """Please act as a professional verilog designer.

{what}

Module name:
    {name}
{ports}
Give me the complete code.
"""

ADDER_TB = """`timescale 1ns / 1ps

module testbench;
  reg [3:0] a;
  reg [3:0] b;
  reg cin;
  wire [3:0] sum;
  wire cout;
  integer i;
  integer error = 0;

  adder_4bit uut (.a(a), .b(b), .cin(cin), .sum(sum), .cout(cout));

  initial begin
    for (i = 0; i < 64; i = i + 1) begin
      a = $random & 4'hf;
      b = $random & 4'hf;
      cin = $random & 1'b1;
      #10;
      error = ({cout, sum} !== a + b + cin) ? error + 1 : error;
      // $display("Passed %d + %d", a, b);
    end
    if (error == 0) begin
      $display("===========Your Design Passed===========");
    end
    else begin
      $display("===========Test completed with %d /64 failures===========", error);
    end
  end
endmodule
"""

ADDER_REF = """module verified_adder_4bit(input [3:0] a, b, input cin,
                          output [3:0] sum, output cout);
  wire [4:0] c;
  assign c[0] = cin;
  genvar k;
  generate
    for (k = 0; k < 4; k = k + 1) begin : fa
      full_adder u (.a(a[k]), .b(b[k]), .cin(c[k]), .sum(sum[k]), .cout(c[k + 1]));
    end
  endgenerate
  assign cout = c[4];
endmodule

module full_adder(input a, b, cin, output sum, cout);
  assign {cout, sum} = a + b + cin;
endmodule
"""

COUNTER_TB = """`timescale 1ns/1ns
module counter_tb;
  reg clk, rst_n;
  wire [2:0] q;
  reg [7:0] expected [0:15];
  integer error = 0;
  integer i;

  counter_mod6 dut (.clk(clk), .rst_n(rst_n), .q(q));

  always #5 clk = ~clk;

  initial begin
    $readmemh("expected.txt", expected);
    clk = 0; rst_n = 0;
    #12 rst_n = 1;
    for (i = 0; i < 16; i = i + 1) begin
      @(negedge clk);
      error = (q == expected[i]) ? error : error + 1;
    end
    if (error == 0)
      $display("=========== Your Design Passed ===========");
    else
      $display("=========== Failed ===========", error);
    $finish;
  end
endmodule
"""

COUNTER_REF = """module verified_counter6(input clk, input rst_n, output reg [2:0] q);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) q <= 3'd0;
    else if (q == 3'd5) q <= 3'd0;
    else q <= q + 3'd1;
endmodule
"""

SHIFT_TB = """`timescale 1ns/1ns
module shift_tb;
  reg clk, d;
  wire [3:0] q;
  integer error = 0;
  integer i;

  shift_reg4 dut (.clk(clk), .d(d), .q(q));

  always #5 clk = ~clk;

  initial begin
    clk = 0; d = 1;
    for (i = 0; i < 8; i = i + 1) begin
      @(negedge clk);
      if (q == 4'b1111) break;
    end
    error = (q == 4'b1111) ? error : error + 1;
    if (error == 0) $display("=========== Your Design Passed ===========");
    else $display("=========== Failed ===========");
    $finish;
  end
endmodule
"""

SHIFT_REF = """module verified_shift_reg4(input clk, input d, output reg [3:0] q = 0);
  always @(posedge clk) q <= {q[2:0], d};
endmodule
"""

PARITY_TB = """`timescale 1ns/1ns
module parity_tb;
  reg [7:0] data;
  wire p;
  integer error = 0;
  integer i;
  parity8 dut (.data(data), .p(p));
  initial begin
    for (i = 0; i < 32; i = i + 1) begin
      data = i * 37;
      #5 error = (p !== ^data) ? error + 1 : error;
    end
    if (error == 0) $display("===========Your Design Passed===========");
    else $display("===========Test completed with %d failures===========", error);
    $finish;
  end
endmodule
"""

# An inverted parity: the testbench's checks reject its own reference, as two real ones do.
PARITY_REF = """module verified_parity8(input [7:0] data, output p);
  assign p = ~^data;
endmodule
"""

MAKEFILE = """.PHONY: vcs sim clean

TEST_DESIGN = {name}

vcs:
\t\tvcs -sverilog +v2k -timescale=1ns/1ns -debug_all -l compile.log ${{TEST_DESIGN}}.v testbench.v

sim:
\t\t./simv -l run.log
"""

DESIGNS = {
    "Arithmetic/Adder/adder_4bit": (
        "Implement a 4-bit ripple-carry adder.",
        "Input ports:\n    a[3:0], b[3:0], cin\nOutput ports:\n    sum[3:0], cout\n",
        ADDER_TB,
        ("verified_adder_4bit.v", ADDER_REF),
        {},
    ),
    "Control/Counter/counter_mod6": (
        "Implement a counter from 0 to 5 that wraps to 0, with an active-low async reset.",
        "Input ports:\n    clk, rst_n\nOutput ports:\n    q[2:0]\n",
        COUNTER_TB,
        ("verified_counter_mod6.v", COUNTER_REF),
        {"expected.txt": "".join(f"{(k + 1) % 6:02x}\n" for k in range(16))},
    ),
    "Memory/Shifter/shift_reg4": (
        "Implement a 4-bit shift register shifting d in at the bottom on each rising clk.",
        "Input ports:\n    clk, d\nOutput ports:\n    q[3:0]\n",
        SHIFT_TB,
        ("verified_shift_reg4.v", SHIFT_REF),
        {},
    ),
    "Miscellaneous/Others/parity8": (
        "Implement the even parity bit of an 8-bit word (p = XOR of all bits).",
        "Input ports:\n    data[7:0]\nOutput ports:\n    p\n",
        PARITY_TB,
        ("verified_parity8.v", PARITY_REF),
        {},
    ),
}

# Answers that are right: a different structure than the references.
ADDER_OK = """module adder_4bit(input [3:0] a, input [3:0] b, input cin,
                  output [3:0] sum, output cout);
  assign {cout, sum} = a + b + cin;
endmodule
"""
ADDER_WRONG = """module adder_4bit(input [3:0] a, input [3:0] b, input cin,
                  output [3:0] sum, output cout);
  assign {cout, sum} = a + b;  // forgets the carry in
endmodule
"""
COUNTER_OK = """module counter_mod6(input clk, input rst_n, output reg [2:0] q);
  always @(posedge clk or negedge rst_n)
    q <= !rst_n ? 3'd0 : (q >= 3'd5 ? 3'd0 : q + 1'b1);
endmodule
"""


def write_rtllm(root: Path) -> Path:
    """Write the fixture checkout under `root`; returns `root`."""
    for rel, (what, ports, tb, (ref_name, ref), data) in DESIGNS.items():
        d = root / rel
        d.mkdir(parents=True, exist_ok=True)
        name = d.name
        (d / "design_description.txt").write_text(DESC.format(what=what, name=name, ports=ports))
        (d / "testbench.v").write_text(tb)
        (d / ref_name).write_text(ref)
        (d / "makefile").write_text(MAKEFILE.format(name=name))
        for fname, text in data.items():
            (d / fname).write_text(text)
    answers = root / "_chatgpt4" / "t1"
    answers.mkdir(parents=True, exist_ok=True)
    (answers / "adder_4bit.v").write_text(ADDER_OK)
    (root / "auto_run.py").write_text("# upstream's runner (not read)\n")
    return root
