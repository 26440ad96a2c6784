"""Finite state machines, a FIFO, a stack and a PWM generator (written for this suite)."""

from __future__ import annotations

from ..spec import CLK, Problem, inp, out, sync_reset

FSMS: list[Problem] = [
    Problem(
        "p43_detect_1011_moore",
        "fsm",
        "Detect the bit pattern 1, 0, 1, 1 (oldest first) on the serial input din, sampled at "
        "rising clock edges. found is a registered output: it is 1 for the clock cycle right "
        "after the edge at which the last 1 of the pattern was sampled, and 0 otherwise. "
        "Overlapping patterns count, so 1,0,1,1,0,1,1 gives two detections. rst clears found, "
        "and bits sampled before a reset never count.",
        (CLK, sync_reset(), inp("din"), out("found")),
        "  reg [2:0] hist;\n  always @(posedge clk)\n"
        "    if (rst) begin hist <= 3'd0; found <= 1'b0; end\n"
        "    else begin found <= ({hist, din} == 4'b1011); hist <= {hist[1:0], din}; end",
        directed=tuple({"din": b} for b in (1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1)),
        n_random=400,
        seed=53,
    ),
    Problem(
        "p44_detect_0110_mealy",
        "fsm",
        "A Mealy detector for the pattern 0, 1, 1, 0 (oldest first) on din. Output match is "
        "combinational: it is 1 while the last three bits sampled at rising clock edges were "
        "0, 1, 1 (oldest first) and the current value of din is 0. Overlapping patterns "
        "count. Bits sampled before a reset never count as part of a pattern.",
        (CLK, sync_reset(), inp("din"), out("match")),
        "  reg [2:0] hist;\n  always @(posedge clk)\n"
        "    if (rst) hist <= 3'b111;\n    else hist <= {hist[1:0], din};\n"
        "  assign match = (hist == 3'b011) && !din;",
        directed=tuple({"din": b} for b in (0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0)),
        n_random=400,
        seed=54,
    ),
    Problem(
        "p45_traffic_light",
        "fsm",
        "A traffic light controller for a north-south (ns) and an east-west (ew) road. Each "
        "light output uses 2'b00 for red, 2'b01 for green and 2'b10 for yellow. The controller "
        "cycles through four phases, each lasting a fixed number of clock cycles: phase 0, "
        "ns green and ew red, 4 cycles; phase 1, ns yellow and ew red, 1 cycle; phase 2, ns red "
        "and ew green, 4 cycles; phase 3, ns red and ew yellow, 1 cycle; then phase 0 again. "
        "The outputs depend only on the state. Reset puts the controller in the first cycle "
        "of phase 0.",
        (CLK, sync_reset(), out("ns", 2), out("ew", 2)),
        "  reg [3:0] t;\n  always @(posedge clk)\n"
        "    if (rst) t <= 4'd0;\n    else t <= (t == 4'd9) ? 4'd0 : t + 4'd1;\n"
        "  assign ns = (t < 4'd4) ? 2'b01 : (t == 4'd4) ? 2'b10 : 2'b00;\n"
        "  assign ew = (t >= 4'd5 && t <= 4'd8) ? 2'b01 : (t == 4'd9) ? 2'b10 : 2'b00;",
        n_random=120,
        seed=55,
    ),
    Problem(
        "p46_vending_30c",
        "fsm",
        "A vending machine for an item that costs 30 cents. coin says what was inserted in "
        "this clock cycle: 0 nothing, 1 a 5-cent coin, 2 a 10-cent coin, 3 a 25-cent coin. "
        "At each rising clock edge (without reset) the machine adds the coin to its credit. "
        "If the total reaches 30 cents or more, it sets dispense to 1, sets change to the "
        "total minus 30 (in cents) and sets credit back to 0; otherwise it sets dispense to "
        "0, change to 0 and credit to the total. All three outputs are registers; rst clears "
        "them.",
        (CLK, sync_reset(), inp("coin", 2), out("dispense"), out("change", 6), out("credit", 6)),
        "  reg [5:0] v;\n  reg [5:0] total;\n  always @* begin\n    case (coin)\n"
        "      2'd1: v = 6'd5;\n      2'd2: v = 6'd10;\n      2'd3: v = 6'd25;\n"
        "      default: v = 6'd0;\n    endcase\n    total = credit + v;\n  end\n"
        "  always @(posedge clk)\n"
        "    if (rst) begin dispense <= 0; change <= 0; credit <= 0; end\n"
        "    else if (total >= 6'd30) begin dispense <= 1; change <= total - 6'd30; credit <= 0; end\n"
        "    else begin dispense <= 0; change <= 0; credit <= total; end",
        directed=({"coin": 3}, {"coin": 3}, {"coin": 2}, {"coin": 2}, {"coin": 2}, {"coin": 1}),
        n_random=300,
        seed=56,
    ),
    Problem(
        "p47_round_robin_arbiter4",
        "fsm",
        "A round-robin arbiter for four requesters. At each rising clock edge: if any bit of "
        "req is 1, grant becomes one-hot, granting the first requester with req set when "
        "searching upwards (wrapping from 3 to 0) starting just after the requester granted "
        "most recently; that requester becomes the most recently granted one. If req is 0, "
        "grant becomes 0 and the most recently granted requester is unchanged. rst sets grant "
        "to 0 and makes requester 3 the most recently granted, so requester 0 is searched "
        "first after reset.",
        (CLK, sync_reset(), inp("req", 4), out("grant", 4)),
        "  reg [1:0] last;\n  reg [1:0] pick;\n  reg any;\n  integer k;\n  always @* begin\n"
        "    pick = last;\n    any = 0;\n    for (k = 1; k <= 4; k = k + 1)\n"
        "      if (!any && req[(last + k) % 4]) begin pick = (last + k) % 4; any = 1; end\n"
        "  end\n  always @(posedge clk)\n"
        "    if (rst) begin grant <= 4'd0; last <= 2'd3; end\n"
        "    else if (any) begin grant <= 4'd1 << pick; last <= pick; end\n"
        "    else grant <= 4'd0;",
        directed=(
            {"req": 0xF},
            {"req": 0xF},
            {"req": 0xF},
            {"req": 0xF},
            {"req": 0x5},
            {"req": 0x5},
            {"req": 0},
            {"req": 0x8},
        ),
        n_random=300,
        seed=57,
    ),
]

STORAGE: list[Problem] = [
    Problem(
        "p48_sync_fifo8x8",
        "fifo",
        "A synchronous first-in first-out queue holding up to 8 bytes. At a rising clock "
        "edge: rst empties it. Otherwise a push (push = 1) stores din if the queue is not "
        "full, and a pop (pop = 1) removes the oldest entry if the queue is not empty; both "
        "conditions are judged on the state before the edge, so a push and a pop can happen "
        "at the same edge (when full, only the pop happens; when empty, only the push). "
        "Outputs are combinational from the state: count is the number of stored entries, "
        "empty is 1 when count is 0, full is 1 when count is 8, and dout shows the oldest "
        "entry, or 0 when the queue is empty.",
        (
            CLK,
            sync_reset(),
            inp("push", stim="((U % 8) < 5)"),
            inp("pop", stim="((U % 2) == 0)"),
            inp("din", 8),
            out("dout", 8),
            out("full"),
            out("empty"),
            out("count", 4),
        ),
        "  reg [7:0] mem [0:7];\n  reg [2:0] rd, wr;\n  wire do_push = push && !full;\n"
        "  wire do_pop = pop && !empty;\n  always @(posedge clk)\n"
        "    if (rst) begin rd <= 3'd0; wr <= 3'd0; count <= 4'd0; end\n    else begin\n"
        "      if (do_push) begin mem[wr] <= din; wr <= wr + 3'd1; end\n"
        "      if (do_pop) rd <= rd + 3'd1;\n"
        "      count <= count + {3'd0, do_push} - {3'd0, do_pop};\n    end\n"
        "  assign empty = (count == 4'd0);\n  assign full = (count == 4'd8);\n"
        "  assign dout = empty ? 8'd0 : mem[rd];",
        directed=tuple({"push": 1, "din": 17 * k} for k in range(10))
        + tuple({"pop": 1} for _ in range(10))
        + ({"push": 1, "pop": 1, "din": 9}, {"push": 1, "pop": 1, "din": 10}),
        n_random=500,
        seed=58,
    ),
    Problem(
        "p49_stack4",
        "fifo",
        "A last-in first-out stack holding up to 4 bytes. At a rising clock edge: rst empties "
        "it. Otherwise, with push = 1 and pop = 0, din is pushed unless the stack is full; "
        "with pop = 1 and push = 0, the top entry is removed unless the stack is empty; with "
        "both 1, the top entry is replaced by din if the stack is not empty, and din is "
        "pushed if it is empty. top shows the top entry (0 when empty); empty and full are 1 "
        "when the stack holds 0 and 4 entries.",
        (
            CLK,
            sync_reset(),
            inp("push", stim="((U % 8) < 4)"),
            inp("pop", stim="((U % 8) < 3)"),
            inp("din", 8),
            out("top", 8),
            out("empty"),
            out("full"),
        ),
        "  reg [7:0] mem [0:3];\n  reg [2:0] n;\n  always @(posedge clk)\n"
        "    if (rst) n <= 3'd0;\n    else if (push && pop) begin\n"
        "      if (n == 3'd0) begin mem[0] <= din; n <= 3'd1; end\n"
        "      else mem[n - 3'd1] <= din;\n    end\n"
        "    else if (push && n != 3'd4) begin mem[n[1:0]] <= din; n <= n + 3'd1; end\n"
        "    else if (pop && n != 3'd0) n <= n - 3'd1;\n"
        "  assign empty = (n == 3'd0);\n  assign full = (n == 3'd4);\n"
        "  assign top = empty ? 8'd0 : mem[n - 3'd1];",
        directed=(
            *({"push": 1, "din": 3 + k} for k in range(5)),
            {"push": 1, "pop": 1, "din": 99},
            *({"pop": 1} for _ in range(5)),
        ),
        n_random=400,
        seed=59,
    ),
    Problem(
        "p50_pwm8",
        "counter",
        "A PWM generator. An internal 8-bit counter is cleared by rst and otherwise "
        "increments by one at every rising clock edge, wrapping from 255 to 0. The output pwm "
        "is 1 exactly when the counter value is less than duty (compared as unsigned numbers, "
        "combinationally), so duty = 0 gives a constant 0.",
        (CLK, sync_reset(), inp("duty", 8, stim="((U % 32) == 0 ? R : SELF)"), out("pwm")),
        "  reg [7:0] c;\n  always @(posedge clk)\n    if (rst) c <= 8'd0;\n"
        "    else c <= c + 8'd1;\n  assign pwm = c < duty;",
        directed=tuple({"duty": 100} for _ in range(20)),
        reset_cycles=2,
        n_random=600,
        seed=60,
    ),
]
