"""Against a real RTLLM checkout, when you have one (CI has none and no network):

    RTLLM_ROOT=/path/to/RTLLM \
        .venv/bin/python -m pytest tests/codegen_eval/readers/test_rtllm_real.py
    # optional: a newer Icarus Verilog's bin directory, to check the recorded results on it
    RTLLM_NEWER_ICARUS=/opt/iverilog-13/bin

* every reference that upstream's flow (its commands, on this machine's iverilog) passes
  passes ours;
* every exclusion recorded in codegen_eval/readers/rtllm_exclusions.json (measured on
  iverilog 11.0) still fails here with the recorded reason, and nothing else is excluded;
  with RTLLM_NEWER_ICARUS, each recorded result on the newer Icarus still holds;
* the cheats fail ours on a real design and pass upstream's flow.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codegen_eval.readers.rtllm import EXCLUSIONS_FILE, design_dirs, rtllm
from codegen_eval.types import Candidate

ROOT = os.environ.get("RTLLM_ROOT")
NEWER = os.environ.get("RTLLM_NEWER_ICARUS")
REPO = Path(__file__).resolve().parents[3]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ROOT, reason="RTLLM_ROOT does not point at a checkout"),
]


def _bench():
    spec = importlib.util.spec_from_file_location("rtllm_bench", REPO / "benchmarks" / "rtllm.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _toolchain() -> str:
    return subprocess.run(["iverilog", "-V"], capture_output=True, text=True).stdout.split("\n")[0]


def test_every_reference_upstream_passes_passes_ours() -> None:
    bench = _bench()
    up, _, _ = bench.upstream(ROOT)  # type: ignore[arg-type]
    ours, _, _ = bench.ours(ROOT, os.cpu_count() or 1)  # type: ignore[arg-type]
    assert len(up) == len(ours) == 50
    lost = sorted(i for i, (ok, _) in up.items() if ok and not ours[i][0])
    assert not lost, {i: ours[i] for i in lost}


def test_recorded_exclusions_still_hold() -> None:
    if "version 11.0" not in _toolchain():
        pytest.skip("the record was measured on iverilog 11.0")
    recorded = json.loads(EXCLUSIONS_FILE.read_text())["designs"]
    task = rtllm(ROOT)  # type: ignore[arg-type]
    measured = task.metadata["measured_failures"]
    assert set(measured) == set(recorded)
    for design, rec in recorded.items():
        assert rec["reason"] in measured[design], (design, measured[design])
        assert rec["newer_icarus"] in task.excluded[design]


@pytest.mark.skipif(not NEWER, reason="RTLLM_NEWER_ICARUS names no newer Icarus bin directory")
def test_recorded_newer_icarus_results_hold(tmp_path: Path) -> None:
    record = json.loads(EXCLUSIONS_FILE.read_text())
    env = dict(os.environ, PATH=f"{NEWER}{os.pathsep}{os.environ['PATH']}")
    version = subprocess.run(["iverilog", "-V"], env=env, capture_output=True, text=True)
    assert record["newer"]["version"] in version.stdout
    dirs = {d.name: d for d in design_dirs(ROOT)}  # type: ignore[arg-type]
    bench = _bench()
    for design, rec in record["designs"].items():
        work = tmp_path / design
        old = os.environ["PATH"]
        os.environ["PATH"] = env["PATH"]
        try:
            ok, out = bench.upstream_one(dirs[design], _reference_as_ours(design), work)
        finally:
            os.environ["PATH"] = old
        assert ok == rec["passes_on_newer"], (design, out[-400:])
        shutil.rmtree(work, ignore_errors=True)


def _reference_as_ours(design: str) -> str:
    task = rtllm(ROOT, problems=[design], calibrate=False)  # type: ignore[arg-type]
    return task.dataset[0].target


PASSED = '"===========Your Design Passed==========="'
WRONG = """module adder_8bit(input [7:0] a, input [7:0] b, input cin, output [7:0] sum,
                  output cout);
  assign {cout, sum} = a + b;
"""
CHEATS = {
    "print_pass": WRONG + f"  initial $display({PASSED});\nendmodule\n",
    "finish_early": WRONG + f"  initial begin #1 $display({PASSED}); $finish; end\nendmodule\n",
    "second_root": WRONG + f"endmodule\nmodule cheat;\n  initial $display({PASSED});\nendmodule\n",
    "force_error_counter": WRONG + "  initial force testbench.error = 0;\nendmodule\n",
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_cheats_on_a_real_design(cheat: str, tmp_path: Path) -> None:
    design = next(d for d in design_dirs(ROOT) if d.name == "adder_8bit")  # type: ignore[arg-type]
    ok, out = _bench().upstream_one(design, CHEATS[cheat], tmp_path / "work")
    assert ok, out[-400:]
    task = rtllm(ROOT, problems=["adder_8bit"])  # type: ignore[arg-type]
    sample = task.dataset[0]
    score = asyncio.run(task.scorer.score(sample, Candidate(sample.id, 0, CHEATS[cheat])))
    assert score.status == "fail", score.explanation
