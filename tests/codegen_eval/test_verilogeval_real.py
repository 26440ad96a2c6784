"""Against a real VerilogEval checkout, when you have one (CI has none and no network):

    VERILOGEVAL_ROOT=/path/to/verilog-eval            # v2: main branch checkout
    VERILOGEVAL_V1_JSONL=/path/to/VerilogEval_Human.jsonl   # v1: release/1.0.0's data/
    .venv/bin/python -m pytest tests/codegen_eval/test_verilogeval_real.py

For every reference, upstream's own flow (its iverilog/vvp commands and pass rules, see
benchmarks/verilogeval.py) and ours must give the same verdict, on this machine's iverilog;
and the cheats of the conformance set fail on a real upstream testbench too.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from codegen_eval.readers.verilogeval import V2_DIRS, verilogeval
from codegen_eval.types import Candidate

ROOT = os.environ.get("VERILOGEVAL_ROOT")
V1 = os.environ.get("VERILOGEVAL_V1_JSONL")
pytestmark = pytest.mark.slow
needs_root = pytest.mark.skipif(not ROOT, reason="VERILOGEVAL_ROOT does not point at a checkout")


def _bench():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "verilogeval.py"
    spec = importlib.util.spec_from_file_location("verilogeval_bench", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _disagreements(up: dict, ours: dict) -> list[str]:
    ids = sorted(set(up) | set(ours))
    return [f"{i}: upstream {up.get(i)}, ours {ours.get(i)}" for i in ids
            if i not in up or i not in ours or up[i][0] != ours[i][0]]  # fmt: skip


@needs_root
@pytest.mark.parametrize("mode", ["spec-to-rtl", "code-complete"])
def test_reference_verdicts_equal_upstreams(mode: str) -> None:
    bench = _bench()
    root = Path(ROOT) / V2_DIRS[mode]  # type: ignore[arg-type]
    up, _, _ = bench.upstream_v2(root)
    ours, _, _ = bench.ours(ROOT, mode, os.cpu_count() or 1)
    assert len(up) == 156 and not _disagreements(up, ours)
    failing = {i for i, (ok, _) in up.items() if not ok}
    task = verilogeval(ROOT, mode)  # type: ignore[arg-type]
    assert set(task.excluded) == failing  # measured here, exactly what fails


@pytest.mark.skipif(not V1, reason="VERILOGEVAL_V1_JSONL does not point at a v1 problems file")
def test_v1_reference_verdicts_equal_upstreams() -> None:
    bench = _bench()
    up, _, _ = bench.upstream_v1(Path(V1))  # type: ignore[arg-type]
    ours, _, _ = bench.ours(V1, "v1", os.cpu_count() or 1)
    assert len(up) > 100 and not _disagreements(up, ours)


HEAD = "module TopModule (input a, input b, output out);\n"
CHEATS = [
    ("  assign out = a | b;\n  final $display(\"Mismatches: 0 in 100 samples\");\n",
     "forbidden_construct:$display"),
    ("  assign out = good1.out;\n", "tamper:harness_reference"),
    ("  assign out = 0;\n  always @(posedge tb.clk) #1 tb.stats1.errors = 0;\n",
     "tamper:harness_reference"),
    ("  assign a = 1'bx;\n  assign b = 1'bx;\n  assign out = 0;\n", "forbidden_construct:driven_input"),
    ("  initial begin force a = 0; force b = 0; end\n  assign out = 0;\n", "forbidden_construct:force"),
    ("  assign out = a | b;\n  initial #1 $finish;\n", "forbidden_construct:$finish"),
    ("  RefModule r (.*);\n", "tamper:reference_instance"),
]  # fmt: skip


@needs_root
@pytest.mark.parametrize("body,want", CHEATS)
async def test_cheats_fail_on_a_real_testbench(body: str, want: str) -> None:
    task = verilogeval(ROOT, "spec-to-rtl", problems="Prob014_andgate")  # type: ignore[arg-type]
    (sample,) = task.dataset
    score = await task.scorer.score(sample, Candidate(sample.id, 0, HEAD + body + "endmodule\n"))
    assert score.failure_class == want, score.explanation
    ok = await task.scorer.score(sample, Candidate(sample.id, 0, sample.target))
    assert ok.status == "pass"
