"""Red-team attempts on Verilog batches (suites/verilog/batch.py, vguard.c): a candidate that
tries to reach its neighbours through the shared sandbox, or to bend its own verdict through
what the batch's trusted shell reads back.

The attempts that fail are ordinary tests that assert they fail. The four that worked (the
red team of 2026-11-28: a compile's exit code read as a signal, 256 errors read as success,
`line moving blame onto the harness, a compiler-output cap unlike the single path's) were
closed the same night; their tests now assert the fix.
"""

from __future__ import annotations

import re

from codegen_eval.suites.verilog import VerilogScorer, batch
from codegen_eval.suites.verilog.judge import judge
from codegen_eval.suites.verilog.scorer import harness_spec
from codegen_eval.types import Candidate, Score
from sandboxes import open_sandbox

from .test_verilog_adversarial import (  # noqa: F401  (_calibration_cache: autouse)
    BUILTIN,
    HEAD,
    RIGHT,
    WRONG,
    E,
    _calibration_cache,
)
from .test_verilog_batch import passthrough  # noqa: F401  (the fixture, used by name)


def _errors(n: int) -> str:
    """A right design plus n undeclared names: iverilog reports two errors for each and
    exits with its error count, which the shell sees modulo 256."""
    body = "".join(f"  wire w{i} = undeclared_{i};\n" for i in range(n))
    return HEAD + RIGHT + body + E


async def _batch_score(code: str) -> tuple[Score, VerilogScorer]:
    scorer = VerilogScorer(sim_wall_s=3)
    [score] = await scorer.score_batch([(BUILTIN, Candidate(BUILTIN.id, 0, code))])
    return score, scorer


async def _alone_score(code: str) -> Score:
    scorer = VerilogScorer(sim_wall_s=3)
    p = await scorer._prepared(BUILTIN, Candidate(BUILTIN.id, 0, code))
    assert not isinstance(p, Score)
    return await scorer._score_alone(p)


# -- the step's exit code is read as a signal or as vguard's own ----------------------------
async def test_152_compile_errors_are_a_compile_error_from_a_batch() -> None:
    """iverilog exits with its error count: 76 undeclared names (152 errors = 128 + SIGXCPU)
    once read as a compile timeout in a batch. A compile's $? >= 128 is now decided by the
    single path, whose sandbox reports how iverilog really ended."""
    score, scorer = await _batch_score(_errors(76))
    assert (scorer.runs["alone"], scorer.runs["batched"]) == (1, 0), scorer.runs
    assert score.failure_class == "compile_error:undeclared", score.explanation


async def test_control_alone_152_compile_errors_are_a_compile_error() -> None:
    """The single path's verdict for the same candidate: what the batch should say."""
    score = await _alone_score(_errors(76))
    assert score.failure_class == "compile_error:undeclared", score.explanation


async def test_256_compile_errors_are_a_compile_error_not_tamper() -> None:
    """256 errors make iverilog's exit status 0: both paths took the compile as done, found
    no sim.vvp and called an ordinary compile error tamper. No sim.vvp is now a failed
    compile, in a batch and alone."""
    score, scorer = await _batch_score(_errors(128))
    assert scorer.runs == {"batched": 1}, scorer.runs
    assert score.failure_class == "compile_error:undeclared", score.explanation
    alone = await _alone_score(_errors(128))
    assert alone.failure_class == "compile_error:undeclared", alone.explanation


async def test_112_compile_errors_only_send_the_candidate_to_the_single_path() -> None:
    """112 errors is vguard's own "confinement failed" code: the batch cannot tell them apart
    and hands the candidate to the single path (a second sandbox, nothing more); the verdict
    stays a compile error."""
    score, scorer = await _batch_score(_errors(56))
    assert (scorer.runs["alone"], scorer.runs["batched"]) == (1, 0), scorer.runs
    assert score.failure_class == "compile_error:undeclared", score.explanation


# -- a simulation reaching its neighbours' files, the shell's fds, /proc --------------------
# (path, mode) pairs a simulation opens; none may open behind vguard. o/0.* are the earlier
# candidate's outputs (a forged verdict appended there would be read back as its own),
# c2/w/sim.vvp the next one's compiled design, /proc/1/cmdline the batch's script (every
# candidate's nonce), /proc/self/fd/1 and /dev/stdout a way back to the trusted shell's files.
_REACH = [
    ("/sandbox/o/0.sout", "a"),
    ("/sandbox/o/0.serr", "a"),
    ("/sandbox/o/2.sout", "w"),
    ("../../o/0.sout", "a"),
    ("/sandbox/c0/w/sim.vvp", "a"),
    ("/sandbox/c2/w/sim.vvp", "w"),
    ("../c2/TopModule.sv", "r"),
    ("/sandbox/c1/w/sim.vvp", "a"),
    ("w/left-behind", "w"),
    ("/proc/1/cmdline", "r"),
    ("/proc/self/fd/1", "a"),
    ("/dev/stdout", "a"),
    ("/tmp/left-behind", "w"),
    ("/dev/shm/left-behind", "w"),
]
# what a pass-through "guard" lets the same simulation open (the control)
_OPEN_WITHOUT_GUARD = {"/sandbox/o/0.sout", "/sandbox/c2/w/sim.vvp", "/proc/1/cmdline"}


def _reacher() -> str:
    lines = "".join(
        f'    f = $fopen("{p}", "{m}"); $display("OPEN {p} %0d", f);\n' for p, m in _REACH
    )
    # the dump would be one more file written; -none suppresses it
    dump = '    $dumpfile("/sandbox/o/0.sout"); $dumpvars;\n'
    return HEAD + RIGHT + "  integer f;\n  initial begin\n" + lines + dump + "  end\n" + E


async def _reach(g: batch.Guard) -> tuple[dict[str, int], list[str]]:
    """Candidate 1 reaches for candidates 0 and 2 (both wrong): what each open returned, and
    the neighbours' judged verdicts."""
    spec = harness_spec(BUILTIN)
    items = [(spec, HEAD + WRONG + E), (spec, _reacher()), (spec, HEAD + WRONG + E)]
    async with open_sandbox(None, extra_ro_binds=(str(g.root),)) as sb:
        outs = await batch.compile_and_run_batch(sb, items, g, compile_wall_s=30, sim_wall_s=10)
    assert outs[1] is not None
    opened = {
        m[1]: int(m[2]) for m in re.finditer(r"^OPEN (\S+) (-?\d+)$", outs[1].sim_stdout, re.M)
    }
    verdicts = []
    for out in (outs[0], outs[2]):
        assert out is not None
        s = judge(out, spec, sim_wall_s=10, model=None, expected_samples=24)
        verdicts.append(f"{s.status} {s.failure_class}")
    return opened, verdicts


async def test_a_simulation_opens_nothing_of_its_neighbours_or_the_shell() -> None:
    g = await batch.usable(None)
    assert g is not None
    opened, verdicts = await _reach(g)
    assert set(opened) == {p for p, _ in _REACH}, opened
    assert {p: f for p, f in opened.items() if f != 0} == {}
    assert verdicts == ["fail sim_mismatch", "fail sim_mismatch"]


async def test_control_without_the_guard_the_same_opens_succeed(passthrough: batch.Guard) -> None:  # noqa: F811
    opened, _ = await _reach(passthrough)
    assert all(opened[p] != 0 for p in _OPEN_WITHOUT_GUARD), opened


# -- `line: the candidate names the file its errors are reported in -------------------------
def _line(name: str) -> str:
    return HEAD + RIGHT + f'`line 1 "{name}" 0\n  wire w = undeclared_q;\n' + E


async def test_line_cannot_move_a_compile_error_onto_the_harness() -> None:
    """`line made iverilog report the candidate's own errors in a file it named (the
    testbench's), so its compile error read as the harness's (`interface`); it could also
    put "No space left" in its log and be sent to the single path at will. Refused now."""
    for name in ("tb.sv", "No space left"):
        score, scorer = await _batch_score(_line(name))
        assert score.failure_class == "forbidden_construct:`line", score.explanation
        assert not scorer.runs, scorer.runs  # refused before anything runs


# -- the compiler's output: a file of 32 MiB in a batch, 1 MiB of the exec's stderr alone ----
def _chatty() -> str:
    """A right design whose 16,000 implicit nets make iverilog -Wall write ~1.2 MB of
    warnings: over the single path's stderr cap, under the batch's cap on o/<i>.cerr."""
    nets = "".join(f"  assign implicit_net_number_{i} = a;\n" for i in range(16000))
    return HEAD + RIGHT + nets + E


async def test_compiler_warnings_get_the_same_verdict_batched_and_alone() -> None:
    """The batch capped iverilog's output at its 32 MiB file cap, the single path at the
    exec's 1 MiB stderr: 1.2 MB of warnings passed batched and failed alone. The batch now
    applies the single path's cap."""
    batched, scorer = await _batch_score(_chatty())
    assert scorer.runs == {"batched": 1}, scorer.runs
    assert batched.failure_class == "resource_limit:output", batched.explanation[:300]
    alone = await _alone_score(_chatty())
    assert (batched.status, batched.failure_class) == (alone.status, alone.failure_class), (
        batched.explanation[:200],
        alone.explanation[:200],
    )


# -- leaving pages in the run directory (a tmpfs charged to the exec's memory) --------------
async def test_a_design_over_the_batch_cap_leaves_its_neighbour_alone() -> None:
    """80,000 generated registers compile to a sim.vvp over BATCH_VVP_MAX_BYTES: iverilog dies
    of SIGXFSZ with 32 MiB written (those pages stay in the run directory), the batch hands
    the design to the single path, and the right design after it still passes, batched."""
    g = await batch.usable(None)
    assert g is not None
    hog = (
        HEAD + RIGHT + "  genvar i;\n  generate for (i = 0; i < 80000; i = i + 1) begin : g\n"
        "    reg [7:0] r;\n    wire [7:0] w = r + 8'd1;\n  end endgenerate\n" + E
    )
    spec = harness_spec(BUILTIN)
    async with open_sandbox(None, extra_ro_binds=(str(g.root),)) as sb:
        items = [(spec, hog), (spec, HEAD + RIGHT + E)]
        outs = await batch.compile_and_run_batch(sb, items, g, compile_wall_s=30, sim_wall_s=10)
        [left] = await sb.read_files(["c0/w/sim.vvp"], max_bytes=batch.VVP_MAX_BYTES)
    assert isinstance(left, bytes) and len(left) == batch.BATCH_VVP_MAX_BYTES
    assert outs[0] is None
    assert outs[1] is not None
    s = judge(outs[1], spec, sim_wall_s=10, model=None, expected_samples=24)
    assert (s.status, s.failure_class) == ("pass", None), s.explanation
