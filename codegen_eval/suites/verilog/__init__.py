"""The `verilog` suite: specification-to-RTL problems judged by simulation.

    task = get_suite("verilog", problems=["p1*", "*fifo*"], limit=10, strict_lint=False)

Every problem (see `problems/`) is a compact port table + spec + reference body; the prompt,
the `RefModule` and a self-checking testbench are generated from it (`tbgen`). The scorer
(`VerilogScorer`) compiles testbench + reference + candidate with Icarus Verilog in a sandbox,
screens the compiled design (`screen.py`), checks the run against the reference's own run
(`calibrate.py`) and decides the verdict from a nonce-keyed summary line; Verilator lints on
request.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from codegen_eval.registry import register_suite
from codegen_eval.suites._select import select_problems
from codegen_eval.types import Sample, Task

from .calibrate import Calibration, calibrate
from .problems import ALL_PROBLEMS
from .scorer import (
    ALLOWED_SYSTEM_FUNCTIONS,
    FORBIDDEN_TASKS,
    Verdict,
    VerilogScorer,
    forbidden_constructs,
    harness_spec,
    parse_verdict,
)
from .spec import CANDIDATE_TOP, REFERENCE_TOP, Port, Problem
from .tbgen import TAG, generate_testbench

SYSTEM_PROMPT = (
    "You are a hardware designer. Answer with one complete synthesizable Verilog/SystemVerilog "
    f"module named {CANDIDATE_TOP} (plus any helper modules) in a ```verilog block."
)


def problem_sample(problem: Problem) -> Sample:
    """The Sample for one built-in problem."""
    return Sample(
        id=problem.id,
        input=problem.prompt(),
        target=problem.reference().replace(REFERENCE_TOP, CANDIDATE_TOP, 1),
        metadata={
            "language": "verilog",
            "suite": "verilog",
            "category": problem.category,
            "top": CANDIDATE_TOP,
            "tb_top": f"tb_{TAG}",
            "expected_samples": problem.expected_samples,
            "sequential": problem.sequential,
            "system_prompt": SYSTEM_PROMPT,
        },
        files={"ref.sv": problem.reference(), "tb.sv": generate_testbench(problem)},
    )


def select(
    items: Iterable[Problem],
    problems: Sequence[str] | str | None = None,
    categories: Sequence[str] | str | None = None,
    limit: int | None = None,
) -> list[Problem]:
    """Filter by id globs (`p0*`, `*fifo*`; an id without its `pNN_` prefix also matches) and
    category, then keep the first `limit`."""
    return select_problems(
        items, problems, categories, limit,
        suite="verilog", names=lambda p: (p.id, p.id.split("_", 1)[1] if "_" in p.id else p.id),
    )  # fmt: skip


@register_suite(
    "verilog", "Spec-to-RTL problems simulated with Icarus Verilog (Verilator lint on request)"
)
def verilog_suite(
    problems: Sequence[str] | str | None = None,
    categories: Sequence[str] | str | None = None,
    limit: int | None = None,
    *,
    backend: str | None = None,
    compile_wall_s: float = 30.0,
    sim_wall_s: float = 20.0,
    lint: bool = False,
    strict_lint: bool = False,
    epochs: int = 1,
) -> Task:
    chosen = select(ALL_PROBLEMS, problems, categories, limit)
    scorer = VerilogScorer(
        backend=backend,
        compile_wall_s=compile_wall_s,
        sim_wall_s=sim_wall_s,
        lint=lint,
        strict_lint=strict_lint,
    )
    return Task(
        name="verilog",
        dataset=[problem_sample(p) for p in chosen],
        scorer=scorer,
        epochs=epochs,
        metadata={"language": "verilog", "problems": len(chosen), "strict_lint": strict_lint},
    )


__all__ = [
    "ALLOWED_SYSTEM_FUNCTIONS",
    "ALL_PROBLEMS",
    "FORBIDDEN_TASKS",
    "SYSTEM_PROMPT",
    "Calibration",
    "Port",
    "Problem",
    "Verdict",
    "VerilogScorer",
    "calibrate",
    "forbidden_constructs",
    "generate_testbench",
    "harness_spec",
    "parse_verdict",
    "problem_sample",
    "select",
    "verilog_suite",
]
