"""The trusted ParEval checker on the values a candidate answers, with a problem shaped like
upstream's 04_dense_la_gemv: validate() compares with `std::abs(correct[i] - test[i]) > 1e-4`
(false for NaN) and reuses its output vector `test` across trials, so the second call's
incoming `test` is the first answer.

Found by the red-team pass of 2026-11-27: NaN answers passed every such problem (31 of the
60 real ones), and an honest answer rounded differently from the baseline, or a wrong answer
after a first one rounded differently, ended as `infra_error` (the checker saw the reused
output vector differ from the recording and called the driver nondeterministic).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codegen_eval.readers.pareval import load_pareval
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import FileSolver

FIXTURE = Path(__file__).parent / "pareval_fixture"
NAME = "03_dense_la_gemv"
PROMPT = (
    "/* Multiply the row-major M x N matrix A by the vector x; store the result in y.\n"
    "   Example:\n\n   input: A=[[1, -1], [0, 2]], x=[3, 1]\n   output: y=[2, 2]\n*/\n"
    "void gemv(std::vector<double> const& A, std::vector<double> const& x, "
    "std::vector<double> &y, size_t M, size_t N) {"
)
BASELINE = """#pragma once
#include <vector>

/* Test fixture baseline: y = A x, each row summed from the left. */
void NO_INLINE correctGemv(std::vector<double> const& A, std::vector<double> const& x, std::vector<double> &y, size_t M, size_t N) {
    for (size_t i = 0; i < M; ++i) {
        double s = 0.0;
        for (size_t j = 0; j < N; ++j) s += A[i * N + j] * x[j];
        y[i] = s;
    }
}
"""
DRIVER = """// Test fixture driver shaped like ParEval's 04_dense_la_gemv.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "utilities.hpp"
#include "baseline.hpp"
#include "generated-code.hpp"

struct Context {
    std::vector<double> A, x, y;
    size_t M, N;
};

void reset(Context *ctx) {
    fillUniform(ctx->A, -1.0, 1.0);
    fillUniform(ctx->x, -1.0, 1.0);
    BCAST(ctx->A, DOUBLE);
    BCAST(ctx->x, DOUBLE);
}

Context *init() {
    Context *ctx = new Context();
    ctx->M = ctx->N = 64;
    ctx->A.resize(ctx->M * ctx->N);
    ctx->x.resize(ctx->N);
    ctx->y.resize(ctx->M);
    reset(ctx);
    return ctx;
}

void NO_OPTIMIZE compute(Context *ctx) { gemv(ctx->A, ctx->x, ctx->y, ctx->M, ctx->N); }

void NO_OPTIMIZE best(Context *ctx) { correctGemv(ctx->A, ctx->x, ctx->y, ctx->M, ctx->N); }

bool validate(Context *ctx) {
    const size_t M = 33, N = 29;
    std::vector<double> A(M * N), x(N), correct(M), test(M);
    int rank;
    GET_RANK(rank);
    for (int trial = 0; trial < MAX_VALIDATION_ATTEMPTS; ++trial) {
        fillUniform(A, -10.0, 10.0);
        fillUniform(x, -10.0, 10.0);
        BCAST(A, DOUBLE);
        BCAST(x, DOUBLE);
        correctGemv(A, x, correct, M, N);
        gemv(A, x, test, M, N);
        SYNC();
        bool ok = true;
        if (IS_ROOT(rank)) {
            for (size_t i = 0; i < M; ++i) {
                if (std::abs(correct[i] - test[i]) > 1e-4) { ok = false; break; }
            }
        }
        BCAST_PTR(&ok, 1, CXX_BOOL);
        if (!ok) return false;
    }
    return true;
}

void destroy(Context *ctx) { delete ctx; }
"""
# Each row summed from the right: the same answer up to rounding, which is not the baseline's
# to the last bit on these inputs (checked below through the reused output vector).
REVERSED = (
    "  for (size_t i = 0; i < M; ++i) {\n    double s = 0.0;\n"
    "    for (size_t j = N; j-- > 0;) s += A[i * N + j] * x[j];\n    y[i] = s;\n  }\n}\n"
)
CANDIDATES = {
    "honest_other_rounding": (REVERSED, "pass", None, ""),
    "nan_everywhere": (
        '  for (size_t i = 0; i < M; ++i) y[i] = std::nan("");\n}\n',
        "fail",
        "wrong_answer",
        "NaN or Inf",
    ),
    "one_inf": (
        REVERSED.removesuffix("}\n") + "  y[M / 2] = HUGE_VAL;\n}\n",
        "fail",
        "wrong_answer",
        "NaN or Inf",
    ),
    # right (other rounding) on the first trial, wrong on the second (whose incoming `test`
    # holds the first answer; each call runs in a producer process of its own, so a static
    # call counter would not tell)
    "wrong_after_a_reordered_first_answer": (
        "  const bool later = y[0] != 0.0;\n"
        + REVERSED.removesuffix("}\n")
        + "  if (later) y[0] += 1.0;\n}\n",
        "fail",
        "wrong_answer",
        "validate() failed",
    ),
}


def add_problem(
    root: Path,
    ptype: str,
    name: str,
    prompt: str,
    baseline: str,
    driver: str,
    models: tuple[str, ...] = ("serial", "omp"),
) -> None:
    """Add a problem to a copy of the fixture checkout at `root`."""
    bench = root / "drivers" / "cpp" / "benchmarks" / ptype / name
    bench.mkdir(parents=True)
    (bench / "baseline.hpp").write_text(baseline)
    (bench / "cpu.cc").write_text(driver)
    sizes_path = root / "drivers" / "problem-sizes.json"
    sizes = json.loads(sizes_path.read_text())
    sizes[name] = dict.fromkeys(("serial", "omp", "mpi", "mpi+omp"), "(1<<8)")
    sizes_path.write_text(json.dumps(sizes))
    prompts_path = root / "prompts" / "generation-prompts.json"
    prompts = json.loads(prompts_path.read_text())
    includes = {"serial": "", "omp": "#include <omp.h>\n\n", "mpi": "#include <mpi.h>\n\n"}
    for model in models:
        text = includes[model] + prompt
        prompts.append(
            {"problem_type": ptype, "language": "cpp", "name": name,
             "parallelism_model": model, "prompt": text}
        )  # fmt: skip
    prompts_path.write_text(json.dumps(prompts))


def _checkout(root: Path) -> Path:
    shutil.copytree(FIXTURE, root)
    add_problem(root, "dense_la", NAME, PROMPT, BASELINE, DRIVER)
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("pareval") / "ParEval")


@pytest.mark.parametrize("model", ["serial", "omp"])
async def test_trusted_verdicts_on_values(tmp_path: Path, checkout: Path, model: str) -> None:
    sid = f"{NAME}/{model}"
    task = load_pareval(checkout, models=(model,), verdict="trusted", cores=2)
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"sample_id": sid, "index": i, "completion": code}) + "\n"
            for i, (code, *_rest) in enumerate(CANDIDATES.values())
        )
    )
    cfg = RunConfig(progress=False, filter=sid, max_sandboxes=2, n=len(CANDIDATES))
    res = await run_eval([task], FileSolver(samples), tmp_path / "log.jsonl", cfg)
    got = {r["index"]: r for r in res.records}
    assert len(got) == len(CANDIDATES)
    for i, (name, (_code, status, fc, why)) in enumerate(CANDIDATES.items()):
        rec = got[i]
        assert rec["status"] == status, (name, rec["explanation"])
        assert rec.get("failure_class") == fc, (name, rec["explanation"])
        assert why in rec["explanation"], (name, rec["explanation"])


async def test_the_reversed_sum_really_rounds_otherwise(tmp_path: Path, checkout: Path) -> None:
    """The honest case above tests something only if its answer differs from the baseline's
    in the last bits: upstream's in-process driver accepts it, and a bitwise comparison of
    the output vectors (what the checker did before) would not."""
    sid = f"{NAME}/serial"
    probe = REVERSED.removesuffix("}\n") + (
        "  for (size_t i = 0; i < M; ++i) {\n    double s = 0.0;  // the baseline's order\n"
        "    for (size_t j = 0; j < N; ++j) s += A[i * N + j] * x[j];\n"
        "    if (s != y[i]) return;\n  }\n"
        "  y[0] += 1.0;  // bitwise equal everywhere: fail, so the test says so\n}\n"
    )
    task = load_pareval(checkout, models=("serial",), verdict="upstream", cores=2)
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"sample_id": sid, "completion": probe}) + "\n")
    cfg = RunConfig(progress=False, filter=sid)
    res = await run_eval([task], FileSolver(samples), tmp_path / "log.jsonl", cfg)
    (rec,) = res.records
    assert rec["status"] == "pass", rec["explanation"]
