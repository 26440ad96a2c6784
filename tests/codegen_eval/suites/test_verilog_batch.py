"""Several Verilog candidates in one sandbox exec (suites/verilog/batch.py): the same verdicts
as one sandbox each, and no candidate can reach another's files through the batch.

The cross-candidate attacks are run twice: behind vguard (they must fail) and, as the control
that shows the attack is real, behind a pass-through "guard" that only execs the step (the
attacked candidate then passes with the attacker's design). Without that control a test of
the guard could pass because the attack was broken.
"""

from __future__ import annotations

import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen_eval.suites.verilog import VerilogScorer, batch
from codegen_eval.suites.verilog.harness import RunOutput
from codegen_eval.suites.verilog.judge import judge
from codegen_eval.suites.verilog.scorer import harness_spec
from codegen_eval.types import Candidate, Sample, Score
from sandboxes import open_sandbox

from .test_verilog_adversarial import (
    BUILTIN,
    BUILTIN_CHEATS,
    EMPTIES_VVP,
    HEAD,
    HONEST,
    RIGHT,
    WRONG,
    E,
    _calibration_cache,  # noqa: F401  (autouse: one calibration cache for these tests)
)


def _c(code: str, index: int = 0, sample: Sample = BUILTIN) -> tuple[Sample, Candidate]:
    return sample, Candidate(sample.id, index, code)


async def test_guard_is_usable_here() -> None:
    """This machine (and CI's: same kernel family) has Landlock, so batches really run; if
    this fails every other test here would only test the fallback."""
    assert await batch.usable(None) is not None


@pytest.mark.slow
async def test_a_batch_gives_every_cheat_and_honest_design_its_single_verdict() -> None:
    scorer = VerilogScorer(sim_wall_s=3)
    items = [_c(code, i) for i, (_, code, _) in enumerate(BUILTIN_CHEATS)]
    items += [_c(code, 100 + i) for i, (_, code) in enumerate(HONEST)]
    scores = await scorer.score_batch(items)
    assert len(scores) == len(items)
    for (name, _, want), score in zip(BUILTIN_CHEATS, scores, strict=False):
        assert score.status == "fail", (name, score.explanation)
        assert score.failure_class == want, (name, score.explanation)
    for (name, _), score in zip(HONEST, scores[len(BUILTIN_CHEATS) :], strict=True):
        assert score.status == "pass", (name, score.failure_class, score.explanation)
    # the memory hog is the one the batch cannot vouch for (the cgroup's OOM kill): alone;
    # the `include and `line cheats are refused before anything runs
    refused = sum(want.startswith("forbidden_construct:`") for _, _, want in BUILTIN_CHEATS)
    assert scorer.runs["alone"] <= 1, scorer.runs
    assert scorer.runs["batched"] + scorer.runs["alone"] == len(items) - refused, scorer.runs


async def test_alone_the_simulation_can_only_empty_its_design_which_is_tamper() -> None:
    """Where a candidate runs alone (docker, lint, a batch's fallback) the simulation runs
    under `ulimit -f 0`: it can write no byte, but opening sim.vvp for writing still empties
    it, and an empty compiled design is tamper."""
    scorer = VerilogScorer(sim_wall_s=3)
    p = await scorer._prepared(*_c(EMPTIES_VVP))
    assert not isinstance(p, Score)
    score = await scorer._score_alone(p)
    assert score.failure_class == "tamper:compiled_design", score.explanation


async def test_verdicts_match_one_sandbox_each_for_ordinary_outcomes() -> None:
    codes = [
        HEAD + RIGHT + E,  # pass
        HEAD + WRONG + E,  # sim_mismatch
        HEAD + "  assign y_and = a &;\n" + E,  # compile_error:syntax
        "module TopModule (input a, output y);\n  assign y = a;\nendmodule\n",  # interface
        "module Other(); endmodule\n",  # missing_top, decided before anything runs
        "   ",  # no_code
    ]
    scorer = VerilogScorer()
    items = [_c(code, i) for i, code in enumerate(codes)]
    together = await scorer.score_batch(items)
    assert scorer.runs == {"batched": 4}, scorer.runs
    one = VerilogScorer()
    alone = [
        p if isinstance(p, Score) else await one._score_alone(p)
        for p in [await one._prepared(s, c) for s, c in items]
    ]
    got = [(s.status, s.failure_class, s.metrics.get("mismatches")) for s in together]
    assert got == [(s.status, s.failure_class, s.metrics.get("mismatches")) for s in alone]
    assert got[0][0] == "pass" and got[1][1] == "sim_mismatch" and got[2][1].endswith("syntax")


async def test_a_hung_or_flooding_neighbour_does_not_touch_the_others() -> None:
    hang = HEAD + RIGHT + "  reg t = 0;\n  always @(a) if (a) while (1) t = ~t;\n" + E
    flood = HEAD + RIGHT + '  initial forever #1 $write("%0s", {64{"x"}});\n' + E
    scorer = VerilogScorer(sim_wall_s=2)
    scores = await scorer.score_batch([_c(hang), _c(HEAD + RIGHT + E, 1), _c(flood, 2)])
    assert scores[0].failure_class == "timeout", scores[0].explanation
    assert scores[1].status == "pass", scores[1].explanation
    # the flood is stopped at the output cap, and its $write is forbidden anyway
    assert scores[2].status == "fail"
    assert scorer.runs == {"batched": 3}


# -- the attacks on the batch itself ----------------------------------------------------------
def _steal(victim: int, text: str) -> str:
    """A design that, while it simulates, tries to replace candidate `victim`'s source with
    `text` and to read it, printing what each open returned."""
    path = f"/sandbox/c{victim}/TopModule.sv"
    lines = "".join(f'    $fdisplay(f, "%s", "{x}");\n' for x in text.splitlines())
    return (
        HEAD + RIGHT + "  integer f, r;\n  initial begin\n"
        f'    r = $fopen("{path}", "r");\n    $display("READ-OPEN %0d", r);\n'
        f'    f = $fopen("{path}", "w");\n    $display("WRITE-OPEN %0d", f);\n'
        f"    if (f != 0) begin\n{lines}    $fclose(f);\n    end\n  end\n" + E
    )


async def _attack(g: batch.Guard) -> list[RunOutput | None]:
    """Candidate 0 attacks candidate 1 (a wrong design) with a right one."""
    spec = harness_spec(BUILTIN)
    items = [(spec, _steal(1, HEAD + RIGHT + E)), (spec, HEAD + WRONG + E)]
    async with open_sandbox(None, extra_ro_binds=(str(g.root),)) as sb:
        return await batch.compile_and_run_batch(sb, items, g, compile_wall_s=30, sim_wall_s=10)


def _judged(out: RunOutput | None) -> str:
    assert out is not None
    score = judge(out, harness_spec(BUILTIN), sim_wall_s=10, model=None, expected_samples=None)
    return f"{score.status} {score.failure_class}"


async def test_a_candidate_cannot_rewrite_or_read_the_next_ones_source() -> None:
    g = await batch.usable(None)
    assert g is not None
    outs = await _attack(g)
    assert outs[0] is not None
    assert "READ-OPEN 0" in outs[0].sim_stdout and "WRITE-OPEN 0" in outs[0].sim_stdout
    assert _judged(outs[1]) == "fail sim_mismatch"  # the victim's own wrong design ran


@pytest.fixture
def passthrough() -> Iterator[batch.Guard]:
    """A "guard" that only execs the step, where the sandbox uid can reach it."""
    root = Path(tempfile.mkdtemp(prefix="vguard-passthrough-"))
    root.chmod(0o755)
    fake = root / "vguard"
    fake.write_text('#!/bin/sh\nshift 5\nexec "$@"\n')  # MODE DIR OUT CPU FSIZE PROG...
    fake.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    yield batch.Guard(root=root, path=fake)
    shutil.rmtree(root, ignore_errors=True)


async def test_control_without_the_guard_the_attack_works(passthrough: batch.Guard) -> None:
    """The same batch behind a pass-through: the attacker rewrites the victim's source,
    and the wrong victim passes. This is what vguard is for."""
    outs = await _attack(passthrough)
    assert "WRITE-OPEN 0" not in outs[0].sim_stdout  # type: ignore[union-attr]
    assert _judged(outs[1]) == "pass None"
