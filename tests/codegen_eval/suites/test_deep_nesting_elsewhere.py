"""Deep nesting in the other parsers that read candidate text ends as the candidate's class.

Red team of the too_deep fix (2026-11-28): the Verilog path (iverilog's parser, then our vvp
screen) and the argument normaliser were tried with thousands of nested levels; none may
end in infra_error. These passed before and after the fix: they keep it that way."""

from __future__ import annotations

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.runner import guarded_score
from codegen_eval.types import Candidate

N = 20000


@pytest.mark.parametrize(
    ("expr", "cls"),
    [
        ("(" * N + "a & b" + ")" * N, "compile_error:other"),  # bison: memory exhausted
        ("{" * N + "a & b" + "}" * N, "compile_error:other"),
        ("(" * 600 + "a & b" + ")" * 600, None),  # deep but legal: judged, and right
    ],
)
async def test_deep_verilog_expressions_are_judged_not_infra(expr: str, cls: str | None) -> None:
    task = get_suite("verilog")
    s = next(s for s in task.dataset if s.id.endswith("p01_basic_gates"))
    code = s.target.replace("assign y_and = a & b;", f"assign y_and = {expr};")
    score = await guarded_score(task.scorer, s, Candidate(s.id, 0, code), 120.0)
    assert score.failure_class == cls, score.explanation[:300]
