"""HumanEval-style JSONL (python and C++). ParEval has its own tests (test_pareval.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.readers import load_humaneval
from codegen_eval.readers.humaneval import HumanEvalFormatError
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import FileSolver, ReferenceSolver

PY = {
    "task_id": "HumanEval/0",
    "prompt": 'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n',
    "canonical_solution": "    return a + b\n",
    "test": "def check(f):\n    assert f(2, 3) == 5\n    assert f(-1, 1) == 0\n",
    "entry_point": "add",
}
CPP = {
    "task_id": "CPP/0",
    "prompt": "#include <cassert>\nint add(int a, int b) {\n",
    "canonical_solution": "    return a + b;\n}\n",
    "test": "int main() { assert(add(2, 3) == 5); return 0; }\n",
    "entry_point": "add",
}


def _cfg(n: int = 1) -> RunConfig:
    return RunConfig(n=n, progress=False, max_sandboxes=2)


async def test_humaneval_python_and_cpp(tmp_path: Path) -> None:
    problems = tmp_path / "he.jsonl"
    problems.write_text(json.dumps(PY) + "\n" + json.dumps(CPP) + "\n")
    task = load_humaneval(problems)
    assert [s.metadata["language"] for s in task.dataset] == ["python", "cpp"]
    ref = await run_eval([task], ReferenceSolver(), tmp_path / "ref.jsonl", _cfg())
    assert all(r["status"] == "pass" for r in ref.records), [r["explanation"] for r in ref.records]

    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "HumanEval/0", "completion": "    return a - b\n"},  # wrong
        {"task_id": "HumanEval/0", "code": "def add(a, b):\n    return b + a\n"},  # full def
        {"task_id": "CPP/0", "completion": "    return a * b;\n}\n"},  # wrong
        {"task_id": "CPP/0", "code": "int add(int a, int b) { return a + b; }\n"},  # full fn
        {"task_id": "CPP/0", "completion": "    return a + ;\n}\n"},  # syntax
    ]
    samples.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = await run_eval([task], FileSolver(samples), tmp_path / "f.jsonl", _cfg(n=3))
    got = {(r["sample_id"], r["index"]): (r["status"], r["failure_class"]) for r in res.records}
    assert got[("HumanEval/0", 0)] == ("fail", "wrong_answer")
    assert got[("HumanEval/0", 1)] == ("pass", None)
    assert got[("CPP/0", 0)] == ("fail", "wrong_answer")
    assert got[("CPP/0", 1)] == ("pass", None)
    assert got[("CPP/0", 2)] == ("fail", "compile_error:syntax")


def test_humaneval_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "X/1", "prompt": "p"}\n')
    with pytest.raises(HumanEvalFormatError, match=r"bad\.jsonl:1: missing field"):
        load_humaneval(bad)


def test_suite_to_dataset_roundtrip(tmp_path: Path) -> None:
    from codegen_eval.hf import suite_to_dataset

    problems = tmp_path / "he.jsonl"
    problems.write_text(json.dumps(PY) + "\n")
    ds = suite_to_dataset(load_humaneval(problems))
    assert len(ds) == 1 and ds[0]["id"] == "HumanEval/0" and ds[0]["language"] == "python"
    assert json.loads(ds[0]["files"])["test"].startswith("def check")
    ds.to_parquet(str(tmp_path / "suite.parquet"))
    assert (tmp_path / "suite.parquet").stat().st_size > 0


def test_pick_problems_filters_samples_and_exclusions_by_glob_then_limits() -> None:
    from codegen_eval.readers._pick import pick_problems
    from codegen_eval.types import Sample

    samples = [Sample(i, "p") for i in ("adder_8bit", "adder_16bit", "fifo", "alu")]
    excluded = {"adder_pipe": "fails here", "ring": "fails here"}
    picked, kept = pick_problems(samples, excluded, "adder_*", None)
    assert [s.id for s in picked] == ["adder_8bit", "adder_16bit"] and kept == {
        "adder_pipe": "fails here"
    }
    picked, kept = pick_problems(samples, excluded, ["fifo", "alu"], 1)
    assert [s.id for s in picked] == ["fifo"] and kept == {}
    picked, kept = pick_problems(samples, excluded, None, 2)
    assert len(picked) == 2 and kept == excluded
