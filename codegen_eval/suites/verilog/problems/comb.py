"""Combinational logic and arithmetic problems (written for this suite)."""

from __future__ import annotations

from ..spec import Problem, inp, out

_SEG = [
    0x3F,
    0x06,
    0x5B,
    0x4F,
    0x66,
    0x6D,
    0x7D,
    0x07,
    0x7F,
    0x6F,
    0x77,
    0x7C,
    0x39,
    0x5E,
    0x79,
    0x71,
]
_SEG_TABLE = ", ".join(f"{i:X}->7'h{v:02X}" for i, v in enumerate(_SEG))
_SEG_CASES = "\n".join(f"      4'h{i:X}: seg = 7'h{v:02X};" for i, v in enumerate(_SEG))

COMBINATIONAL: list[Problem] = [
    Problem(
        "p01_basic_gates",
        "combinational",
        "Given two 1-bit inputs a and b, drive four outputs: y_and = a AND b, y_or = a OR b, "
        "y_xor = a XOR b and y_nand = NOT (a AND b).",
        (inp("a"), inp("b"), out("y_and"), out("y_or"), out("y_xor"), out("y_nand")),
        "  assign y_and = a & b;\n  assign y_or = a | b;\n  assign y_xor = a ^ b;\n"
        "  assign y_nand = ~(a & b);",
        directed=({"a": 0, "b": 0}, {"a": 0, "b": 1}, {"a": 1, "b": 0}, {"a": 1, "b": 1}),
        n_random=20,
        seed=11,
    ),
    Problem(
        "p02_mux4_byte",
        "combinational",
        "Build a 4-to-1 multiplexer for bytes: y equals d0 when sel is 0, d1 when sel is 1, "
        "d2 when sel is 2 and d3 when sel is 3.",
        (inp("sel", 2), inp("d0", 8), inp("d1", 8), inp("d2", 8), inp("d3", 8), out("y", 8)),
        "  always @* begin\n    case (sel)\n      2'd0: y = d0;\n      2'd1: y = d1;\n"
        "      2'd2: y = d2;\n      default: y = d3;\n    endcase\n  end",
        n_random=100,
        seed=12,
    ),
    Problem(
        "p03_decoder3to8_en",
        "combinational",
        "Build a 3-to-8 decoder with enable. When en is 1, exactly bit number a of y is 1 and "
        "all other bits of y are 0. When en is 0, y is all zeros.",
        (inp("en"), inp("a", 3), out("y", 8)),
        "  assign y = en ? (8'b1 << a) : 8'b0;",
        directed=(*({"en": 1, "a": k} for k in range(8)), {"en": 0, "a": 5}),
        n_random=40,
        seed=13,
    ),
    Problem(
        "p04_priority_encoder8",
        "combinational",
        "Build an 8-bit priority encoder. idx is the position (0..7) of the most significant "
        "bit of req that is 1, and valid is 1 when any bit of req is 1. When req is zero, "
        "valid is 0 and idx is 0.",
        (inp("req", 8), out("idx", 3), out("valid")),
        "  integer i;\n  always @* begin\n    idx = 3'd0;\n"
        "    for (i = 0; i < 8; i = i + 1) if (req[i]) idx = i[2:0];\n  end\n"
        "  assign valid = |req;",
        directed=({"req": 0}, {"req": 1}, {"req": 0x80}, {"req": 0x81}, {"req": 0x18}),
        n_random=100,
        seed=14,
    ),
    Problem(
        "p05_compare_unsigned8",
        "combinational",
        "Compare two unsigned 8-bit numbers a and b. Set lt when a < b, eq when a == b and "
        "gt when a > b; exactly one of the three is 1.",
        (inp("a", 8), inp("b", 8), out("lt"), out("eq"), out("gt")),
        "  assign lt = a < b;\n  assign eq = a == b;\n  assign gt = a > b;",
        directed=({"a": 5, "b": 5}, {"a": 0, "b": 255}, {"a": 255, "b": 0}),
        n_random=100,
        seed=15,
    ),
    Problem(
        "p06_compare_signed8",
        "combinational",
        "a and b are 8-bit two's complement numbers. Output lt is 1 when a is less than b as "
        "signed numbers, and ult is 1 when a is less than b as unsigned numbers.",
        (inp("a", 8), inp("b", 8), out("lt"), out("ult")),
        "  assign lt = $signed(a) < $signed(b);\n  assign ult = a < b;",
        directed=({"a": 0x80, "b": 0x7F}, {"a": 0xFF, "b": 0x00}, {"a": 3, "b": 3}),
        n_random=100,
        seed=16,
    ),
    Problem(
        "p07_parity9",
        "combinational",
        "data is a 9-bit word. even_bit is the bit that, appended to data, makes the total "
        "number of ones even; odd_bit is the bit that makes it odd.",
        (inp("data", 9), out("even_bit"), out("odd_bit")),
        "  assign even_bit = ^data;\n  assign odd_bit = ~^data;",
        directed=({"data": 0}, {"data": 1}, {"data": 0x1FF}),
        n_random=60,
        seed=17,
    ),
    Problem(
        "p08_popcount16",
        "combinational",
        "Output count is the number of bits of the 16-bit input in that are 1 (0 to 16).",
        (inp("in", 16), out("count", 5)),
        "  integer i;\n  always @* begin\n    count = 5'd0;\n"
        "    for (i = 0; i < 16; i = i + 1) count = count + in[i];\n  end",
        directed=({"in": 0}, {"in": 0xFFFF}, {"in": 0x8001}),
        n_random=100,
        seed=18,
    ),
    Problem(
        "p09_leading_zeros16",
        "combinational",
        "Output lzc is the number of consecutive zero bits in the 16-bit input x counted from "
        "the most significant bit down; when x is zero, lzc is 16.",
        (inp("x", 16, stim="(U >> (U % 32))"), out("lzc", 5)),
        "  integer i;\n  reg found;\n  always @* begin\n    lzc = 5'd16;\n    found = 0;\n"
        "    for (i = 15; i >= 0; i = i - 1)\n"
        "      if (!found && x[i]) begin lzc = 15 - i; found = 1; end\n  end",
        directed=({"x": 0}, {"x": 1}, {"x": 0x8000}, {"x": 0x00F0}),
        n_random=100,
        seed=19,
    ),
    Problem(
        "p10_bit_reverse16",
        "combinational",
        "Output out is the 16-bit input in with its bit order reversed: out[0] = in[15], "
        "out[1] = in[14], and so on up to out[15] = in[0].",
        (inp("in", 16), out("out", 16)),
        "  genvar g;\n  generate for (g = 0; g < 16; g = g + 1) begin : rev\n"
        "    assign out[g] = in[15 - g];\n  end endgenerate",
        n_random=50,
        seed=20,
    ),
    Problem(
        "p11_gray_codes8",
        "combinational",
        "Two independent 8-bit converters. gray is the reflected binary Gray code of the binary "
        "input bin. bin_out is the binary value whose Gray code is the input g.",
        (inp("bin", 8), inp("g", 8), out("gray", 8), out("bin_out", 8)),
        "  assign gray = bin ^ (bin >> 1);\n  integer i;\n  always @* begin\n"
        "    bin_out[7] = g[7];\n    for (i = 6; i >= 0; i = i - 1) bin_out[i] = bin_out[i+1] ^ g[i];\n"
        "  end",
        n_random=100,
        seed=21,
    ),
    Problem(
        "p12_hex_to_7seg",
        "combinational",
        "Drive an active-high seven-segment display from the 4-bit value hex. seg[0] is "
        "segment a, seg[1] is b, ..., seg[6] is g. The required patterns are, from value to "
        f"seg: {_SEG_TABLE}.",
        (inp("hex", 4), out("seg", 7)),
        f"  always @* begin\n    case (hex)\n{_SEG_CASES}\n      default: seg = 7'h00;\n"
        "    endcase\n  end",
        directed=tuple({"hex": k} for k in range(16)),
        n_random=20,
        seed=22,
    ),
    Problem(
        "p13_rotate16",
        "combinational",
        "Rotate the 16-bit input in by amt positions (0 to 15). When left is 1 rotate towards "
        "the most significant bit (bits leaving at the top re-enter at bit 0); when left is 0 "
        "rotate towards the least significant bit.",
        (inp("in", 16), inp("amt", 4), inp("left"), out("out", 16)),
        "  wire [31:0] dbl = {in, in};\n"
        "  wire [31:0] l = dbl << amt;\n  wire [31:0] r = dbl >> amt;\n"
        "  assign out = left ? l[31:16] : r[15:0];",
        directed=({"in": 0x8001, "amt": 1, "left": 1}, {"in": 0x8001, "amt": 1, "left": 0}),
        n_random=150,
        seed=23,
    ),
    Problem(
        "p14_onehot_check8",
        "combinational",
        "Classify the 8-bit input v: is_zero is 1 when v is zero, is_onehot is 1 when exactly "
        "one bit of v is 1, and is_pow2_or_zero is 1 when at most one bit of v is 1.",
        (
            inp("v", 8, stim="(8'd1 << (U % 9)) | ((U % 4) == 0 ? R : 0)"),
            out("is_zero"),
            out("is_onehot"),
            out("is_pow2_or_zero"),
        ),
        "  assign is_zero = (v == 8'd0);\n"
        "  assign is_pow2_or_zero = ((v & (v - 8'd1)) == 8'd0);\n"
        "  assign is_onehot = is_pow2_or_zero & ~is_zero;",
        directed=({"v": 0}, {"v": 0x40}, {"v": 0x41}),
        n_random=100,
        seed=24,
    ),
    Problem(
        "p15_abs12",
        "combinational",
        "x is a 12-bit two's complement number. mag is its absolute value as a 12-bit unsigned "
        "number (the magnitude of -2048 is 2048), and neg is 1 when x is negative.",
        (inp("x", 12), out("mag", 12), out("neg")),
        "  assign neg = x[11];\n  assign mag = x[11] ? (~x + 12'd1) : x;",
        directed=({"x": 0x800}, {"x": 0xFFF}, {"x": 0}, {"x": 0x7FF}),
        n_random=100,
        seed=25,
    ),
]

ARITHMETIC: list[Problem] = [
    Problem(
        "p16_add4_carry",
        "arithmetic",
        "Add the 4-bit unsigned numbers a and b and the carry input cin. sum is the low 4 bits "
        "of the result and cout the carry out of the most significant bit.",
        (inp("a", 4), inp("b", 4), inp("cin"), out("sum", 4), out("cout")),
        "  assign {cout, sum} = a + b + cin;",
        directed=({"a": 15, "b": 1, "cin": 0}, {"a": 15, "b": 15, "cin": 1}),
        n_random=100,
        seed=26,
    ),
    Problem(
        "p17_addsub16",
        "arithmetic",
        "A 16-bit adder/subtractor. When sub is 0, result = a + b; when sub is 1, result = a - b "
        "computed as a + ~b + 1. carry is bit 16 of that 17-bit sum (for subtraction it is 1 "
        "when no borrow occurred). overflow is 1 when the result is wrong as a signed "
        "two's complement number.",
        (inp("a", 16), inp("b", 16), inp("sub"), out("result", 16), out("carry"), out("overflow")),
        "  wire [15:0] bb = sub ? ~b : b;\n  wire [16:0] s = {1'b0, a} + {1'b0, bb} + sub;\n"
        "  assign result = s[15:0];\n  assign carry = s[16];\n"
        "  assign overflow = (a[15] == bb[15]) && (s[15] != a[15]);",
        directed=(
            {"a": 0x7FFF, "b": 1, "sub": 0},
            {"a": 0x8000, "b": 1, "sub": 1},
            {"a": 5, "b": 5, "sub": 1},
            {"a": 0, "b": 1, "sub": 1},
        ),
        n_random=150,
        seed=27,
    ),
    Problem(
        "p18_mult8_unsigned",
        "arithmetic",
        "p is the full 16-bit product of the unsigned 8-bit inputs a and b.",
        (inp("a", 8), inp("b", 8), out("p", 16)),
        "  assign p = a * b;",
        directed=({"a": 255, "b": 255}, {"a": 0, "b": 77}),
        n_random=100,
        seed=28,
    ),
    Problem(
        "p19_mult6_signed",
        "arithmetic",
        "a and b are 6-bit two's complement numbers. p is their full 12-bit two's complement "
        "product.",
        (inp("a", 6, signed=True), inp("b", 6, signed=True), out("p", 12, signed=True)),
        "  assign p = a * b;",
        directed=({"a": 0x20, "b": 0x20}, {"a": 0x1F, "b": 0x20}, {"a": 0x3F, "b": 3}),
        n_random=100,
        seed=29,
    ),
    Problem(
        "p20_alu8",
        "arithmetic",
        "An 8-bit ALU. op selects y: 0: a + b; 1: a - b; 2: a AND b; 3: a OR b; 4: a XOR b; "
        "5: a shifted left by b[2:0] (zeros in); 6: a shifted right logically by b[2:0]; "
        "7: 1 if a < b as unsigned numbers, else 0. Arithmetic wraps to 8 bits. zero is 1 "
        "when y is 0.",
        (inp("op", 3), inp("a", 8), inp("b", 8), out("y", 8), out("zero")),
        "  always @* begin\n    case (op)\n      3'd0: y = a + b;\n      3'd1: y = a - b;\n"
        "      3'd2: y = a & b;\n      3'd3: y = a | b;\n      3'd4: y = a ^ b;\n"
        "      3'd5: y = a << b[2:0];\n      3'd6: y = a >> b[2:0];\n"
        "      default: y = {7'd0, a < b};\n    endcase\n  end\n  assign zero = (y == 8'd0);",
        directed=tuple({"op": k, "a": 0x96, "b": 0x0B} for k in range(8)),
        n_random=200,
        seed=30,
    ),
    Problem(
        "p21_sat_add_u8",
        "arithmetic",
        "Add the unsigned 8-bit numbers a and b with saturation: y = a + b when that fits in "
        "8 bits, otherwise 255. sat is 1 exactly when the result was clamped.",
        (inp("a", 8), inp("b", 8), out("y", 8), out("sat")),
        "  wire [8:0] s = a + b;\n  assign sat = s[8];\n  assign y = s[8] ? 8'hFF : s[7:0];",
        directed=({"a": 200, "b": 55}, {"a": 200, "b": 56}),
        n_random=100,
        seed=31,
    ),
    Problem(
        "p22_sat_add_s8",
        "arithmetic",
        "a and b are 8-bit two's complement numbers. y is their sum clamped to the range "
        "-128..127, and sat is 1 exactly when clamping happened.",
        (inp("a", 8), inp("b", 8), out("y", 8), out("sat")),
        "  wire [8:0] s = {a[7], a} + {b[7], b};\n"
        "  assign sat = s[8] != s[7];\n"
        "  assign y = !sat ? s[7:0] : (s[8] ? 8'h80 : 8'h7F);",
        directed=({"a": 100, "b": 27}, {"a": 100, "b": 28}, {"a": 0x80, "b": 0xFF}),
        n_random=150,
        seed=32,
    ),
    Problem(
        "p23_abs_diff8",
        "arithmetic",
        "d is the absolute difference |a - b| of the unsigned 8-bit numbers a and b, and "
        "a_ge_b is 1 when a >= b.",
        (inp("a", 8), inp("b", 8), out("d", 8), out("a_ge_b")),
        "  assign a_ge_b = a >= b;\n  assign d = a_ge_b ? a - b : b - a;",
        directed=({"a": 0, "b": 255}, {"a": 9, "b": 9}),
        n_random=100,
        seed=33,
    ),
    Problem(
        "p24_bcd_digit_add",
        "arithmetic",
        "Add two BCD digits a and b (each 0 to 9) and a carry input cin. sum is the BCD digit "
        "of the result (0 to 9) and cout is 1 when the result is 10 or more. Inputs above 9 "
        "never occur.",
        (
            inp("a", 4, stim="(U % 10)"),
            inp("b", 4, stim="(U % 10)"),
            inp("cin"),
            out("sum", 4),
            out("cout"),
        ),
        "  wire [4:0] s = a + b + cin;\n  assign cout = s > 5'd9;\n"
        "  assign sum = cout ? s - 5'd10 : s[3:0];",
        directed=({"a": 9, "b": 9, "cin": 1}, {"a": 5, "b": 4, "cin": 1}, {"a": 5, "b": 4}),
        n_random=100,
        seed=34,
    ),
    Problem(
        "p25_average_round_up",
        "arithmetic",
        "avg is the average of the unsigned 8-bit numbers a and b, rounded up: "
        "(a + b + 1) / 2 computed without losing the carry.",
        (inp("a", 8), inp("b", 8), out("avg", 8)),
        "  wire [8:0] s = a + b + 9'd1;\n  assign avg = s[8:1];",
        directed=({"a": 255, "b": 255}, {"a": 0, "b": 1}),
        n_random=100,
        seed=35,
    ),
]
