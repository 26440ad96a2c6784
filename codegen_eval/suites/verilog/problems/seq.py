"""Registers, counters and shift registers (written for this suite)."""

from __future__ import annotations

from ..spec import CLK, Problem, async_reset, inp, out, sync_reset

# Enables that are on most of the time make counters actually reach their wrap points.
_MOSTLY_ON = "((U % 8) != 0)"

REGISTERS: list[Problem] = [
    Problem(
        "p26_dff8_sync_reset",
        "register",
        "An 8-bit register: on every rising clock edge q takes the value of d, except that "
        "when rst is 1 at the edge q becomes 0.",
        (CLK, sync_reset(), inp("d", 8), out("q", 8)),
        "  always @(posedge clk) q <= rst ? 8'd0 : d;",
        n_random=100,
        seed=36,
    ),
    Problem(
        "p27_dff8_async_reset",
        "register",
        "An 8-bit register that loads d on every rising clock edge. While arst_n is 0 the "
        "register is cleared to 0 immediately, without waiting for the clock.",
        (CLK, async_reset(), inp("d", 8), out("q", 8)),
        "  always @(posedge clk or negedge arst_n)\n    if (!arst_n) q <= 8'd0; else q <= d;",
        n_random=150,
        seed=37,
    ),
    Problem(
        "p28_reg16_enable",
        "register",
        "A 16-bit register with load enable. At a rising clock edge: if rst is 1, q becomes 0; "
        "otherwise if en is 1, q takes d; otherwise q keeps its value.",
        (CLK, sync_reset(), inp("en"), inp("d", 16), out("q", 16)),
        "  always @(posedge clk)\n    if (rst) q <= 16'd0;\n    else if (en) q <= d;",
        n_random=150,
        seed=38,
    ),
    Problem(
        "p29_reg16_byte_enable",
        "register",
        "A 16-bit register without reset and with byte write enables. At a rising clock edge, "
        "if we[0] is 1 the low byte q[7:0] takes d[7:0], and if we[1] is 1 the high byte "
        "q[15:8] takes d[15:8]; bytes whose enable is 0 keep their value.",
        (CLK, inp("we", 2), inp("d", 16), out("q", 16)),
        "  always @(posedge clk) begin\n    if (we[0]) q[7:0] <= d[7:0];\n"
        "    if (we[1]) q[15:8] <= d[15:8];\n  end",
        n_random=150,
        seed=39,
    ),
    Problem(
        "p30_edge_detect",
        "register",
        "Detect edges of the 1-bit input sig, sampled on rising clock edges. At each rising "
        "edge, rise becomes 1 if sig is 1 now and was 0 at the previous rising edge, and fall "
        "becomes 1 if sig is 0 now and was 1 at the previous edge; otherwise each becomes 0. "
        "Reset clears rise, fall and the remembered previous value (treated as 0).",
        (CLK, sync_reset(), inp("sig"), out("rise"), out("fall")),
        "  reg prev;\n  always @(posedge clk)\n"
        "    if (rst) begin prev <= 1'b0; rise <= 1'b0; fall <= 1'b0; end\n"
        "    else begin rise <= sig & ~prev; fall <= ~sig & prev; prev <= sig; end",
        n_random=150,
        seed=40,
    ),
    Problem(
        "p31_accumulator16",
        "register",
        "A 16-bit accumulator. At a rising clock edge: rst clears acc to 0; otherwise when en "
        "is 1 the unsigned 8-bit input x is added to acc (wrapping modulo 2^16); otherwise acc "
        "holds.",
        (CLK, sync_reset(), inp("en", stim=_MOSTLY_ON), inp("x", 8), out("acc", 16)),
        "  always @(posedge clk)\n    if (rst) acc <= 16'd0;\n    else if (en) acc <= acc + x;",
        n_random=400,
        seed=41,
    ),
]

COUNTERS: list[Problem] = [
    Problem(
        "p32_counter8_enable",
        "counter",
        "An 8-bit up counter. At a rising clock edge: rst sets count to 0; otherwise when en "
        "is 1 count increments by one, wrapping from 255 to 0; otherwise it holds.",
        (CLK, sync_reset(), inp("en", stim=_MOSTLY_ON), out("count", 8)),
        "  always @(posedge clk)\n    if (rst) count <= 8'd0;\n    else if (en) count <= count + 8'd1;",
        n_random=600,
        seed=42,
    ),
    Problem(
        "p33_updown4",
        "counter",
        "A 4-bit up/down counter. At a rising clock edge: rst sets q to 0; otherwise if en is 1, "
        "q increments when up is 1 and decrements when up is 0, wrapping around in both "
        "directions; if en is 0, q holds.",
        (CLK, sync_reset(), inp("en", stim=_MOSTLY_ON), inp("up"), out("q", 4)),
        "  always @(posedge clk)\n    if (rst) q <= 4'd0;\n"
        "    else if (en) q <= up ? q + 4'd1 : q - 4'd1;",
        n_random=300,
        seed=43,
    ),
    Problem(
        "p34_mod12_counter",
        "counter",
        "A counter that counts 0, 1, ..., 11, 0, 1, ... advancing at every rising clock edge "
        "when en is 1 and holding otherwise; rst sets it to 0. Output last is 1 whenever "
        "count is 11 (combinationally, regardless of en).",
        (CLK, sync_reset(), inp("en", stim=_MOSTLY_ON), out("count", 4), out("last")),
        "  always @(posedge clk)\n    if (rst) count <= 4'd0;\n"
        "    else if (en) count <= (count == 4'd11) ? 4'd0 : count + 4'd1;\n"
        "  assign last = (count == 4'd11);",
        n_random=200,
        seed=44,
    ),
    Problem(
        "p35_bcd_counter_2digit",
        "counter",
        "A two-digit decimal counter from 00 to 99. ones and tens are BCD digits. At a rising "
        "clock edge: rst sets both to 0; otherwise when en is 1 the value increments by one, "
        "and after 99 it returns to 00; otherwise it holds.",
        (CLK, sync_reset(), inp("en", stim=_MOSTLY_ON), out("tens", 4), out("ones", 4)),
        "  always @(posedge clk)\n    if (rst) begin tens <= 4'd0; ones <= 4'd0; end\n"
        "    else if (en) begin\n      if (ones == 4'd9) begin\n        ones <= 4'd0;\n"
        "        tens <= (tens == 4'd9) ? 4'd0 : tens + 4'd1;\n      end\n"
        "      else ones <= ones + 4'd1;\n    end",
        n_random=500,
        seed=45,
    ),
    Problem(
        "p36_load_down_counter",
        "counter",
        "A loadable 8-bit down counter that stops at zero. At a rising clock edge: rst sets "
        "count to 0; otherwise if load is 1, count takes din; otherwise if count is not 0 it "
        "decrements by one, and at 0 it stays 0. Output zero is 1 whenever count is 0.",
        (
            CLK,
            sync_reset(),
            inp("load", stim="((U % 16) == 0)"),
            inp("din", 8, stim="(U % 24)"),
            out("count", 8),
            out("zero"),
        ),
        "  always @(posedge clk)\n    if (rst) count <= 8'd0;\n    else if (load) count <= din;\n"
        "    else if (count != 8'd0) count <= count - 8'd1;\n  assign zero = (count == 8'd0);",
        n_random=300,
        seed=46,
    ),
    Problem(
        "p37_johnson4",
        "counter",
        "A 4-bit Johnson (twisted ring) counter. rst sets q to 0000. At every rising clock edge "
        "when rst is 0, q shifts left by one place and the inverse of the old q[3] enters at "
        "q[0], giving 0000, 0001, 0011, 0111, 1111, 1110, 1100, 1000, 0000, ...",
        (CLK, sync_reset(), out("q", 4)),
        "  always @(posedge clk)\n    if (rst) q <= 4'd0;\n    else q <= {q[2:0], ~q[3]};",
        n_random=60,
        seed=47,
    ),
]

SHIFT_REGISTERS: list[Problem] = [
    Problem(
        "p38_sipo8",
        "shift",
        "A serial-in, parallel-out 8-bit shift register. At a rising clock edge: rst clears q; "
        "otherwise when en is 1 the register shifts towards the most significant bit and "
        "sin enters at q[0]; otherwise q holds.",
        (CLK, sync_reset(), inp("en", stim=_MOSTLY_ON), inp("sin"), out("q", 8)),
        "  always @(posedge clk)\n    if (rst) q <= 8'd0;\n    else if (en) q <= {q[6:0], sin};",
        n_random=200,
        seed=48,
    ),
    Problem(
        "p39_piso8",
        "shift",
        "A parallel-in, serial-out 8-bit shift register. At a rising clock edge: rst clears "
        "the register; otherwise if load is 1 the register takes din; otherwise it shifts "
        "towards the most significant bit with 0 entering at bit 0. sout always shows the "
        "register's most significant bit.",
        (CLK, sync_reset(), inp("load", stim="((U % 9) == 0)"), inp("din", 8), out("sout")),
        "  reg [7:0] sr;\n  always @(posedge clk)\n    if (rst) sr <= 8'd0;\n"
        "    else if (load) sr <= din;\n    else sr <= {sr[6:0], 1'b0};\n  assign sout = sr[7];",
        n_random=300,
        seed=49,
    ),
    Problem(
        "p40_lfsr16_galois",
        "shift",
        "A 16-bit Galois LFSR. rst loads state with 16'h0001. At every rising clock edge "
        "when rst is 0, the state shifts right by one; if the bit shifted out (the old state[0]) was 1, "
        "the shifted value is then XORed with 16'hB400.",
        (CLK, sync_reset(), out("state", 16)),
        "  always @(posedge clk)\n    if (rst) state <= 16'h0001;\n"
        "    else state <= (state >> 1) ^ (state[0] ? 16'hB400 : 16'h0000);",
        n_random=300,
        seed=50,
    ),
    Problem(
        "p41_universal_shift8",
        "shift",
        "An 8-bit universal shift register controlled by mode, acting at rising clock edges: "
        "0: hold; 1: shift towards the most significant bit with sin entering at q[0]; "
        "2: shift towards the least significant bit with sin entering at q[7]; 3: load d. "
        "rst clears q and has priority.",
        (CLK, sync_reset(), inp("mode", 2), inp("sin"), inp("d", 8), out("q", 8)),
        "  always @(posedge clk)\n    if (rst) q <= 8'd0;\n    else case (mode)\n"
        "      2'd1: q <= {q[6:0], sin};\n      2'd2: q <= {sin, q[7:1]};\n"
        "      2'd3: q <= d;\n      default: q <= q;\n    endcase",
        n_random=300,
        seed=51,
    ),
    Problem(
        "p42_delay3",
        "shift",
        "Delay the 4-bit input x by three clock cycles: after each rising clock edge, y "
        "equals the value x had at the third most recent rising edge (including this one). "
        "There is no reset.",
        (CLK, inp("x", 4), out("y", 4)),
        "  reg [3:0] s1, s2;\n  always @(posedge clk) begin\n"
        "    s1 <= x;\n    s2 <= s1;\n    y <= s2;\n  end",
        n_random=100,
        seed=52,
    ),
]
