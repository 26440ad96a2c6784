"""Emit a self-checking testbench for a `Problem`.

The testbench instantiates `RefModule` and `TopModule` side by side, feeds both the same
directed and seeded-random stimulus and compares every output bit:

* combinational problems: apply a vector, wait 5 time units, compare (one sample per step);
* sequential problems: inputs change on the falling edge of clk, outputs are compared just
  before the inputs change (registered behaviour) and again 1 unit after (combinational paths
  from inputs, and asynchronous resets, which are asserted mid-cycle on purpose).

Comparison is X-aware: a reference bit that is X or Z is a don't-care (registers before their
first reset); a candidate X where the reference has 0/1 is a mismatch.

Verdict integrity: every name in the testbench carries the token ``__TAG__``, which the scorer
replaces with a fresh random tag per run (defence in depth: the screen of the compiled design,
screen.py, is what rejects any reference into the testbench). The summary line carries a
per-run nonce that only arrives at run time as ``+cge_nonce=<hex>`` on the vvp command line,
and the candidate may call no system task that could read or print it. The human-readable
``Mismatches: N in M samples`` line is printed as well but never parsed.
"""

from __future__ import annotations

import re

from .spec import CANDIDATE_TOP, REFERENCE_TOP, Port, Problem

TAG = "__TAG__"
NONCE_PLUSARG = "cge_nonce"
VERDICT_PREFIX = "CGE-VERDICT"
OUTPUT_PREFIX = "CGE-OUTPUT"
HALF_PERIOD = 5


def _n(name: str) -> str:
    return f"{name}_{TAG}"


def _vec(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def _random_expr(port: Port) -> str:
    seed = _n("seed")
    if port.stim:
        subs = {
            "SELF": _n("in_" + port.name),
            "U": f"$unsigned($random({seed}))",
            "R": f"$random({seed})",
        }
        return re.sub(r"\b(SELF|U|R)\b", lambda m: subs[m.group(1)], port.stim)
    if port.role == "reset":
        # Rare resets mid-run (about 1 cycle in 32) so the design spends most time running.
        hit = f"(($random({seed}) & 31) == 0)"
        return f"!{hit}" if port.active_low else hit
    return f"$random({seed})"


def _inactive(port: Port) -> str:
    return "1'b1" if port.active_low else "1'b0"


def _active(port: Port) -> str:
    return "1'b0" if port.active_low else "1'b1"


def generate_testbench(problem: Problem) -> str:
    """The testbench template (with ``__TAG__`` placeholders) for `problem`."""
    p = problem
    L: list[str] = ["`timescale 1ns/1ps", f"module {_n('tb')};"]
    L.append(f"  reg [127:0] {_n('nonce')};")
    L.append(f"  integer {_n('seed')} = {p.seed};")
    L.append(f"  integer {_n('errors')} = 0;")
    L.append(f"  integer {_n('samples')} = 0;")
    L.append(f"  reg {_n('done')} = 0;")
    for o in p.outputs:
        L.append(f"  integer {_n('err_' + o.name)} = 0;")
        L.append(f"  integer {_n('first_' + o.name)} = -1;")
        L.append(f"  wire {_vec(o.width)}{_n('ref_' + o.name)};")
        L.append(f"  wire {_vec(o.width)}{_n('dut_' + o.name)};")
    for i in p.inputs:
        init = " = 0" if i.role == "clock" else ""
        L.append(f"  reg {_vec(i.width)}{_n('in_' + i.name)}{init};")

    def conns(prefix: str) -> str:
        parts = [f".{i.name}({_n('in_' + i.name)})" for i in p.inputs]
        parts += [f".{o.name}({_n(prefix + o.name)})" for o in p.outputs]
        return ", ".join(parts)

    L.append(f"  {REFERENCE_TOP} {_n('ref')} ({conns('ref_')});")
    L.append(f"  {CANDIDATE_TOP} {_n('dut')} ({conns('dut_')});")

    # Bitwise X-aware comparison on up to 64 bits; both sides are zero-extended alike.
    L += [
        f"  function automatic bit {_n('differs')}(input logic [63:0] r, input logic [63:0] d,",
        "                                            input integer w);",
        "    integer k;",
        "    begin",
        f"      {_n('differs')} = 0;",
        "      for (k = 0; k < w; k = k + 1)",
        "        if (r[k] !== 1'bx && r[k] !== 1'bz && d[k] !== r[k]) " + f"{_n('differs')} = 1;",
        "    end",
        "  endfunction",
        f"  task automatic {_n('check')};",
        "    reg bad;",
        "    begin",
        "      bad = 0;",
        f"      {_n('samples')} = {_n('samples')} + 1;",
    ]
    for o in p.outputs:
        r, d, e, f = (_n(x + o.name) for x in ("ref_", "dut_", "err_", "first_"))
        L.append(f"      if ({_n('differs')}({r}, {d}, {o.width})) begin")
        L.append(f"        bad = 1; {e} = {e} + 1; if ({f} < 0) {f} = $time;")
        L.append("      end")
    L += [
        f"      if (bad) {_n('errors')} = {_n('errors')} + 1;",
        "    end",
        "  endtask",
    ]

    # report: the only place the verdict is printed
    L += [f"  task automatic {_n('report')}(input integer timed_out);", "    begin"]
    L.append(f"      if (!{_n('done')}) begin")
    L.append(f"        {_n('done')} = 1;")
    for o in p.outputs:
        L.append(
            f'        $display("{OUTPUT_PREFIX} %032h {o.name} %0d %0d", {_n("nonce")}, '
            f"{_n('err_' + o.name)}, {_n('first_' + o.name)});"
        )
    L.append(
        f'        $display("{VERDICT_PREFIX} %032h errors=%0d samples=%0d timeout=%0d", '
        f"{_n('nonce')}, {_n('errors')}, {_n('samples')}, timed_out);"
    )
    L.append(
        f'        $display("Mismatches: %0d in %0d samples", {_n("errors")}, {_n("samples")});'
    )
    L += ["        $finish;", "      end", "    end", "  endtask"]

    def apply(vec: dict[str, int] | None, force_reset: bool = False) -> list[str]:
        out: list[str] = []
        for i in p.inputs:
            if i.role == "clock":
                continue
            if force_reset and i.role == "reset":
                val = _active(i)
            elif vec is not None:
                if i.name in vec:
                    val = f"{i.width}'d{vec[i.name] & ((1 << i.width) - 1)}"
                else:
                    val = _inactive(i) if i.role == "reset" else f"{i.width}'d0"
            else:
                val = _random_expr(i)
            out.append(f"{_n('in_' + i.name)} = {val};")
        return out

    if p.sequential:
        clk = _n("in_" + p.clock.name)  # type: ignore[union-attr]
        L.append(f"  always #{HALF_PERIOD} {clk} = ~{clk};")

        def step(body: list[str]) -> list[str]:
            return [
                f"    @(negedge {clk}); {_n('check')}();",
                "    " + " ".join(body),
                f"    #1 {_n('check')}();",
            ]
    else:

        def step(body: list[str]) -> list[str]:
            return ["    " + " ".join(body), f"    #{HALF_PERIOD} {_n('check')}();"]

    L += ["  initial begin", f'    if (!$value$plusargs("{NONCE_PLUSARG}=%h", {_n("nonce")}))']
    L.append(f"      {_n('nonce')} = 0;")
    # Start from defined inputs so the first comparison is meaningful.
    L.append("    " + " ".join(apply({})))
    if p.sequential and p.resets:
        for _ in range(p.reset_cycles):
            L += step(apply(None, force_reset=True))
    for vec in p.directed:
        L += step(apply(vec))
    if p.n_random:
        L.append(f"    repeat ({p.n_random}) begin")
        L += ["  " + s for s in step(apply(None))]
        L.append("    end")
    if p.sequential:
        L.append(f"    @(negedge {_n('in_' + p.clock.name)});")  # type: ignore[union-attr]
    L += [f"    {_n('report')}(0);", "  end"]

    # Watchdog in simulated time: twice the planned length. A design that loops in zero time
    # never lets time advance; the scorer's wall-clock limit catches that one.
    period = 2 * HALF_PERIOD if p.sequential else HALF_PERIOD
    L.append(f"  initial begin #({2 * (p.steps + 2) * period + 100}); {_n('report')}(1); end")
    L.append("endmodule")
    return "\n".join(L) + "\n"
