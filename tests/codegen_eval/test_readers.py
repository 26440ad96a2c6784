"""HumanEval-style JSONL (python and C++) and ParEval on a small fake checkout in its layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.readers import load_humaneval, load_pareval
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


UTIL = """#pragma once
#include <vector>
#include <cmath>
#define NO_OPTIMIZE
inline bool fequal(double a, double b) { return std::fabs(a - b) < 1e-6; }
"""
BASELINE = """#pragma once
#include <vector>
double correctSumOfSquares(std::vector<double> const& x) {
    double s = 0; for (double v : x) s += v * v; return s;
}
"""
CPU_CC = """#include <vector>
#include "utilities.hpp"
#include "baseline.hpp"
#include "generated-code.hpp"
struct Context { std::vector<double> x; double out; };
Context *init() { auto *c = new Context(); c->x.assign(1000, 1.5); return c; }
void reset(Context *) {}
void NO_OPTIMIZE compute(Context *c) { c->out = sumOfSquares(c->x); }
void NO_OPTIMIZE best(Context *c) { c->out = correctSumOfSquares(c->x); }
bool validate(Context *c) {
    std::vector<double> x = {1, 2, 3};
    return fequal(sumOfSquares(x), correctSumOfSquares(x));
}
void destroy(Context *c) { delete c; }
"""
DRIVER = """#include <chrono>
#include <cstdio>
struct Context;
Context *init(); void compute(Context *); void best(Context *);
bool validate(Context *); void reset(Context *); void destroy(Context *);
int main(int argc, char **argv) {
    Context *ctx = init();
    auto t0 = std::chrono::steady_clock::now(); compute(ctx);
    auto t1 = std::chrono::steady_clock::now(); best(ctx);
    auto t2 = std::chrono::steady_clock::now();
    printf("Time: %.9f\\n", std::chrono::duration<double>(t1 - t0).count() + 1e-9);
    printf("BestSequential: %.9f\\n", std::chrono::duration<double>(t2 - t1).count() + 1e-9);
    printf("Validation: %s\\n", validate(ctx) ? "PASS" : "FAIL");
    destroy(ctx);
    return 0;
}
"""
PROMPT = (
    "/* Return the sum of the squares of x.\n   Example: input: [1, 2] output: 5\n*/\n"
    "double sumOfSquares(std::vector<double> const& x) {"
)


def _fake_pareval(root: Path) -> Path:
    cpp = root / "drivers" / "cpp"
    bench = cpp / "benchmarks" / "reduce" / "90_reduce_sum_of_squares"
    bench.mkdir(parents=True)
    (cpp / "models").mkdir()
    (cpp / "utilities.hpp").write_text(UTIL)
    (bench / "baseline.hpp").write_text(BASELINE)
    (bench / "cpu.cc").write_text(CPU_CC)
    (cpp / "models" / "serial-driver.cc").write_text(DRIVER)
    (cpp / "models" / "omp-driver.cc").write_text(DRIVER)
    prompts = [
        {
            "problem_type": "reduce",
            "language": "cpp",
            "name": "90_reduce_sum_of_squares",
            "parallelism_model": m,
            "prompt": PROMPT,
        }
        for m in ("serial", "omp", "kokkos")
    ] + [
        {
            "problem_type": "reduce",
            "language": "cpp",
            "name": "91_missing",
            "parallelism_model": "serial",
            "prompt": PROMPT,
        }
    ]
    path = root / "prompts.json"
    path.write_text(json.dumps(prompts))
    return path


async def test_pareval_fake_checkout(tmp_path: Path) -> None:
    prompts = _fake_pareval(tmp_path)
    task = load_pareval(prompts, tmp_path, models=None)
    assert [s.id for s in task.dataset] == [
        "90_reduce_sum_of_squares/serial",
        "90_reduce_sum_of_squares/omp",
    ]
    excluded = task.metadata["excluded"]
    assert "Kokkos" in excluded["90_reduce_sum_of_squares/kokkos"]
    assert "no driver" in excluded["91_missing/serial"]

    ref = await run_eval([task], ReferenceSolver(), tmp_path / "ref.jsonl", _cfg())
    assert all(r["status"] == "pass" for r in ref.records), [r["explanation"] for r in ref.records]
    assert all(r["metrics"]["speedup"] > 0 for r in ref.records)
    assert len(ref.excluded) == 2

    samples = tmp_path / "s.jsonl"
    rows = [
        {
            "sample_id": "90_reduce_sum_of_squares/serial",
            "completion": "  double s = 0;\n  for (double v : x) s += v;\n  return s;\n}\n",
        },
        {
            "sample_id": "90_reduce_sum_of_squares/omp",
            "code": "double sumOfSquares(std::vector<double> const& x) {\n double s = 0;\n #pragma omp parallel for reduction(+:s)\n for (size_t i = 0; i < x.size(); ++i) s += x[i] * x[i];\n return s;\n}\n",
        },
    ]
    samples.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = await run_eval([task], FileSolver(samples), tmp_path / "f.jsonl", _cfg())
    got = {r["sample_id"]: r for r in res.records}
    assert got["90_reduce_sum_of_squares/serial"]["failure_class"] == "wrong_answer"
    assert got["90_reduce_sum_of_squares/omp"]["status"] == "pass"
    assert got["90_reduce_sum_of_squares/omp"]["metrics"]["resources"] == 2.0


def test_pareval_rejects_a_non_checkout(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text("[]")
    with pytest.raises(FileNotFoundError, match="does not look like a ParEval checkout"):
        load_pareval(tmp_path / "p.json", tmp_path)


def test_suite_to_dataset_roundtrip(tmp_path: Path) -> None:
    from codegen_eval.hf import suite_to_dataset

    problems = tmp_path / "he.jsonl"
    problems.write_text(json.dumps(PY) + "\n")
    ds = suite_to_dataset(load_humaneval(problems))
    assert len(ds) == 1 and ds[0]["id"] == "HumanEval/0" and ds[0]["language"] == "python"
    assert json.loads(ds[0]["files"])["test"].startswith("def check")
    ds.to_parquet(str(tmp_path / "suite.parquet"))
    assert (tmp_path / "suite.parquet").stat().st_size > 0
