"""The built-in problems: enough of them, every reference passes its own testbench, and every
testbench notices when any single output is wrong."""

from __future__ import annotations

import asyncio

from codegen_eval.registry import get_suite
from codegen_eval.suites.verilog import ALL_PROBLEMS, Problem, VerilogScorer, problem_sample
from codegen_eval.types import Candidate, Score


def _inverting_wrapper(p: Problem, victim: str) -> str:
    """A candidate that is the reference with bit 0 of one output inverted."""
    inner = p.reference().replace("module RefModule", "module Inner", 1)
    wires = "\n".join(f"  wire [{o.width - 1}:0] t_{o.name};" for o in p.outputs)
    conns = ", ".join(
        [f".{i.name}({i.name})" for i in p.inputs] + [f".{o.name}(t_{o.name})" for o in p.outputs]
    )
    assigns = "\n".join(
        f"  assign {o.name} = t_{o.name}" + (" ^ 1'b1;" if o.name == victim else ";")
        for o in p.outputs
    )
    return f"{p.interface()}\n{wires}\n  Inner u ({conns});\n{assigns}\nendmodule\n{inner}"


async def _score_all(jobs: list[tuple[Problem, str]], scorer: VerilogScorer) -> list[Score]:
    sem = asyncio.Semaphore(4)

    async def one(p: Problem, code: str) -> Score:
        async with sem:
            return await scorer.score(problem_sample(p), Candidate(p.id, 0, code))

    return await asyncio.gather(*(one(p, c) for p, c in jobs))


def test_problem_set_covers_the_brief() -> None:
    assert len(ALL_PROBLEMS) >= 40
    assert len({p.id for p in ALL_PROBLEMS}) == len(ALL_PROBLEMS)
    cats = {p.category for p in ALL_PROBLEMS}
    assert {"combinational", "arithmetic", "register", "counter", "shift", "fsm", "fifo"} <= cats
    for p in ALL_PROBLEMS:
        s = problem_sample(p)
        assert "module TopModule (" in s.input and p.spec.split(".")[0] in s.input
        assert "module RefModule" in s.files["ref.sv"] and "__TAG__" in s.files["tb.sv"]
        assert s.metadata["expected_samples"] == p.expected_samples > 0


def test_suite_factory_filters() -> None:
    assert len(get_suite("verilog").dataset) == len(ALL_PROBLEMS)
    task = get_suite("verilog", problems=["*fifo*", "p0[1-3]*"])
    assert [s.id for s in task.dataset] == [
        "p01_basic_gates",
        "p02_mux4_byte",
        "p03_decoder3to8_en",
        "p48_sync_fifo8x8",
    ]
    assert len(get_suite("verilog", categories="counter", limit=2).dataset) == 2


async def test_every_reference_passes_its_testbench() -> None:
    # how long this takes is measured by benchmarks/verilog_references.py, not asserted here
    jobs = [(p, problem_sample(p).target) for p in ALL_PROBLEMS]
    scores = await _score_all(jobs, VerilogScorer(lint=False))
    failed = {
        p.id: (s.failure_class, s.explanation[:300])
        for (p, _), s in zip(jobs, scores, strict=True)
        if s.status != "pass"
    }
    assert not failed
    for (p, _), s in zip(jobs, scores, strict=True):
        assert s.metrics["samples"] == p.expected_samples and s.metrics["mismatches"] == 0


async def test_every_output_is_observed() -> None:
    jobs = [(p, _inverting_wrapper(p, o.name)) for p in ALL_PROBLEMS for o in p.outputs]
    scores = await _score_all(jobs, VerilogScorer(lint=False))
    unnoticed = [
        (p.id, s.failure_class)
        for (p, _), s in zip(jobs, scores, strict=True)
        if s.failure_class != "sim_mismatch" or s.metrics.get("mismatches", 0) <= 0
    ]
    assert not unnoticed
