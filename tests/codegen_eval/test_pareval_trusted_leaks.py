"""What the trusted ParEval producer can see: never an answer the checker will judge.

The producer (the candidate's build) answers the validation calls the checker recorded with
the baseline answering. Until 2026-11-28 it got every recorded call at once in calls.<rank>.bin
beside it, so a later call's arguments were readable while it answered an earlier one. Two
driver shapes put the baseline's answer to call k into call k+1:

* a reused output vector (upstream's 04_dense_la_gemv passes the same `test` to every trial,
  so the recorded second call's incoming `test` is the baseline's first answer);
* an input derived from an answer (a driver whose next trial starts from this one's `correct`).

A candidate that copied that answer for trial 1 and computed only the last trial passed: only
one of the two validation trials was judged. Each call now runs in a producer process of its
own that sees that call only, and its answer is read back before the next call is shown.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from codegen_eval.readers.pareval import load_pareval
from codegen_eval.readers.pareval.checkout import MODELS
from codegen_eval.readers.pareval.trusted import TrustedRunner, split_records
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import FileSolver

from .test_pareval_trusted_values import BASELINE, DRIVER, FIXTURE, NAME, PROMPT, add_problem

GEMV = f"{NAME}/serial"
STEP_NAME = "04_transform_half_step"
STEP = f"{STEP_NAME}/serial"
STEP_PROMPT = (
    "/* Set y[i] to x[i] / 2 + 1 for every i; y has the size of x.\n"
    "   Example:\n\n   input: x=[2, -4]\n   output: y=[2, -1]\n*/\n"
    "void halfStep(std::vector<double> const& x, std::vector<double> &y) {"
)
STEP_BASELINE = """#pragma once
#include <vector>

void NO_INLINE correctHalfStep(std::vector<double> const& x, std::vector<double> &y) {
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / 2 + 1;
}
"""
# The next trial starts from this trial's baseline answer: the recorded second call's input
# `x` is the baseline's first answer.
STEP_DRIVER = """// Test fixture driver: each validation trial iterates from the previous trial's answer.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "utilities.hpp"
#include "baseline.hpp"
#include "generated-code.hpp"

struct Context {
    std::vector<double> x, y;
};

void reset(Context *ctx) {
    fillUniform(ctx->x, -1.0, 1.0);
    BCAST(ctx->x, DOUBLE);
}

Context *init() {
    Context *ctx = new Context();
    ctx->x.resize(256);
    ctx->y.resize(256);
    reset(ctx);
    return ctx;
}

void NO_OPTIMIZE compute(Context *ctx) { halfStep(ctx->x, ctx->y); }

void NO_OPTIMIZE best(Context *ctx) { correctHalfStep(ctx->x, ctx->y); }

bool validate(Context *ctx) {
    const size_t n = 40;
    std::vector<double> x(n), correct(n);
    int rank;
    GET_RANK(rank);
    fillUniform(x, -10.0, 10.0);
    for (int trial = 0; trial < MAX_VALIDATION_ATTEMPTS; ++trial) {
        BCAST(x, DOUBLE);
        std::vector<double> test(n);
        correctHalfStep(x, correct);
        halfStep(x, test);
        SYNC();
        bool ok = true;
        if (IS_ROOT(rank)) {
            for (size_t i = 0; i < n; ++i) {
                if (std::abs(correct[i] - test[i]) > 1e-6) { ok = false; break; }
            }
        }
        BCAST_PTR(&ok, 1, CXX_BOOL);
        if (!ok) return false;
        x = correct;
    }
    return true;
}

void destroy(Context *ctx) { delete ctx; }
"""

# Reads this rank's calls file (records: a little-endian u64 length, then the bytes), as the
# producer itself does.
READ_CALLS = r"""#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
static std::string pe_slurp(const char *path) {
  std::string d;
  if (std::FILE *f = std::fopen(path, "rb")) {
    char b[65536];
    size_t n;
    while ((n = std::fread(b, 1, sizeof b, f)) > 0) d.append(b, n);
    std::fclose(f);
  }
  return d;
}
// The doubles of the `skip`-th vector parameter (0-based) of the second recorded call, or
// nothing (vectors are serialized as a u64 count and the elements).
static std::vector<double> pe_second_call_vector(int skip) {
  const std::string d = pe_slurp("calls.0.bin");
  uint64_t len = 0, n = 0;
  if (d.size() < 8) return {};
  std::memcpy(&len, d.data(), 8);
  size_t at = 8 + len + 8;  // past the first call and the second call's length
  for (int p = 0; p <= skip; ++p) {
    if (at + 8 > d.size()) return {};
    std::memcpy(&n, d.data() + at, 8);
    at += 8;
    if (p < skip) at += 8 * n;
  }
  if (at + 8 * n > d.size()) return {};
  std::vector<double> v(n);
  std::memcpy(v.data(), d.data() + at, 8 * n);
  return v;
}
"""

HONEST_GEMV = (
    "  for (size_t i = 0; i < M; ++i) {\n    double s = 0.0;\n"
    "    for (size_t j = 0; j < N; ++j) s += A[i * N + j] * x[j];\n    y[i] = s;\n  }\n"
)
# Trial 1's answer is the incoming `test` of the recorded second call; only the last trial is
# computed. Without a second call to read, the answer is zeros (wrong).
COPY_REUSED_OUTPUT = (
    READ_CALLS + "void gemv(std::vector<double> const& A, std::vector<double> const& x, "
    "std::vector<double> &y, size_t M, size_t N) {\n"
    "  const std::vector<double> later = pe_second_call_vector(2);\n"
    "  const bool first = y[0] == 0.0;  // trial 1's `test` comes in zeroed\n"
    "  if (first) {\n"
    "    for (size_t i = 0; i < M; ++i) y[i] = later.size() == M ? later[i] : 0.0;\n"
    "    return;\n  }\n" + HONEST_GEMV + "}\n"
)
# Trial 1's answer is the recorded second call's input `x`.
COPY_DERIVED_INPUT = (
    READ_CALLS + "void halfStep(std::vector<double> const& x, std::vector<double> &y) {\n"
    "  static bool seen = false;\n"
    "  const std::vector<double> later = pe_second_call_vector(0);\n"
    "  if (!seen && later.size() == x.size()) {\n"
    "    seen = true;\n"
    "    for (size_t i = 0; i < x.size(); ++i) y[i] = later[i];\n"
    "    return;\n  }\n"
    "  if (later.size() != x.size()) {  // nothing to copy: wrong\n"
    "    for (size_t i = 0; i < x.size(); ++i) y[i] = 0.0;\n    return;\n  }\n"
    "  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / 2 + 1;\n}\n"
)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pareval") / "ParEval"
    shutil.copytree(FIXTURE, root)
    add_problem(root, "dense_la", NAME, PROMPT, BASELINE, DRIVER, ("serial", "omp", "mpi"))
    add_problem(root, "transform", STEP_NAME, STEP_PROMPT, STEP_BASELINE, STEP_DRIVER)
    return root


async def _scores(tmp_path: Path, checkout: Path, sid: str, codes: list[str | None]) -> list[dict]:
    """The trusted verdicts of `codes` on `sid` (None: the problem's reference)."""
    model = sid.split("/")[1]
    task = load_pareval(checkout, models=(model,), verdict="trusted", cores=2)
    (sample,) = [s for s in task.dataset if s.id == sid]
    codes = [sample.target if c is None else c for c in codes]
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"sample_id": sid, "index": i, "completion": c}) + "\n"
            for i, c in enumerate(codes)
        )
    )
    cfg = RunConfig(progress=False, filter=sid, max_sandboxes=2, n=len(codes))
    res = await run_eval([task], FileSolver(samples), tmp_path / "log.jsonl", cfg)
    got = {r["index"]: r for r in res.records}
    return [got[i] for i in range(len(codes))]


@pytest.mark.parametrize(
    ("sid", "cheat"),
    [(GEMV, COPY_REUSED_OUTPUT), (f"{NAME}/mpi", COPY_REUSED_OUTPUT), (STEP, COPY_DERIVED_INPUT)],
    ids=["reused_output_vector", "reused_output_vector_mpi", "input_derived_from_an_answer"],
)
async def test_copying_a_later_recorded_call_fails(
    tmp_path: Path, checkout: Path, sid: str, cheat: str
) -> None:
    """Passed before (the second recorded call was readable while the first was answered);
    the honest reference of the same problem passes."""
    cheat_rec, reference = await _scores(tmp_path, checkout, sid, [cheat, None])
    assert cheat_rec["status"] == "fail", cheat_rec["explanation"]
    assert cheat_rec["failure_class"] == "wrong_answer", cheat_rec["explanation"]
    assert reference["status"] == "pass", reference["explanation"]


def _vector(rec: bytes, at: int) -> tuple[list[float], int]:
    n = int.from_bytes(rec[at : at + 8], "little")
    at += 8
    return list(struct.unpack(f"<{n}d", rec[at : at + 8 * n])), at + 8 * n


def _gemv_call(rec: bytes) -> tuple[list[float], list[float], tuple[int, bytes], int]:
    """A recorded gemv call: A, x, (tag of y, y's entry), M (N is the same here)."""
    at = 8  # past the record's length
    params: list[object] = []
    for i in range(3):
        tag = rec[at]
        at += 1
        if i == 2 and tag == 1:  # an earlier call's answer: its index
            params.append((tag, rec[at : at + 8]))
            at += 8
            continue
        assert tag == 0, (i, tag)
        vec, end = _vector(rec, at)
        params.append(vec if i < 2 else (tag, rec[at:end]))
        at = end
    assert rec[at] == 0
    m = int.from_bytes(rec[at + 1 : at + 9], "little")
    return params[0], params[1], params[2], m  # type: ignore[return-value]


def _baseline_gemv(a: list[float], x: list[float], m: int) -> bytes:
    """The fixture baseline's answer, bit for bit (each row summed from the left; Python's
    floats are the same IEEE doubles, with no fused multiply-add)."""
    n = len(x)
    out = []
    for i in range(m):
        s = 0.0
        for j in range(n):
            s += a[i * n + j] * x[j]
        out.append(s)
    return struct.pack(f"<{m}d", *out)


async def test_the_recording_carries_no_answer_of_the_baseline(checkout: Path) -> None:
    """The reused output vector's incoming content in the second call is recorded as "your
    answer to call 1", not as the baseline's answer (which the recording held before)."""
    task = load_pareval(checkout, models=("serial",), verdict="trusted", cores=2)
    (sample,) = [s for s in task.dataset if s.id == GEMV]
    runner = TrustedRunner(task.scorer)  # type: ignore[arg-type]
    spec = MODELS["serial"]
    checker = await runner.checker(sample, spec)
    assert isinstance(checker, bytes), checker
    calls = await runner.recording(sample, spec, checker, 1)
    assert isinstance(calls, dict), calls
    data = calls["calls.0.bin"]
    records = split_records(data)
    assert records is not None and len(records) == 2
    first, second = (_gemv_call(r) for r in records)
    assert first[2][0] == 0 and set(struct.unpack("<33d", first[2][1][8:])) == {0.0}
    assert second[2] == (1, (0).to_bytes(8, "little"))  # "your answer to call 0"
    for a, x, _y, m in (first, second):
        answer = _baseline_gemv(a, x, m)
        assert all(answer[i : i + 16] not in data for i in range(0, len(answer), 16))


# Computes the honest answer, then looks for it in every file the producer can read (its
# directory, where an earlier config ran, /tmp, /dev/shm, /etc, ...) and in every visible
# process's environment and command line. Found: NaN answers (fail, "NaN or Inf"). The search
# must find this call's input bytes (in calls.0.bin), or the answer is off by one (fail,
# "validate() failed"): a scan that reads nothing proves nothing.
SCAN_EVERYTHING = r"""#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
static bool pe_file_holds(const std::filesystem::path &p, const std::string &needle) {
  std::FILE *f = std::fopen(p.c_str(), "rb");
  if (!f) return false;
  std::string d;
  char b[65536];
  size_t n;
  while (d.size() < (64u << 20) && (n = std::fread(b, 1, sizeof b, f)) > 0) d.append(b, n);
  std::fclose(f);
  return d.find(needle) != std::string::npos;
}
static bool pe_anywhere(const std::string &needle) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char *top : {".", "/tmp", "/dev/shm", "/var/tmp", "/run", "/home", "/root", "/etc"}) {
    fs::recursive_directory_iterator it(top, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink(ec) && it->is_regular_file(ec) && pe_file_holds(it->path(), needle))
        return true;
    }
    ec.clear();
  }
  for (const auto &e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const char *what : {"environ", "cmdline"})
      if (pe_file_holds(e.path() / what, needle)) return true;
  }
  return false;
}
void gemv(std::vector<double> const& A, std::vector<double> const& x, std::vector<double> &y, size_t M, size_t N) {
  for (size_t i = 0; i < M; ++i) {
    double s = 0.0;
    for (size_t j = 0; j < N; ++j) s += A[i * N + j] * x[j];
    y[i] = s;
  }
  const std::string answer(reinterpret_cast<const char *>(y.data()), 4 * sizeof(double));
  const std::string input(reinterpret_cast<const char *>(A.data()), 4 * sizeof(double));
  if (pe_anywhere(answer)) {
    for (size_t i = 0; i < M; ++i) y[i] = std::nan("");
  } else if (!pe_anywhere(input)) {
    y[0] += 1.0;
  }
}
"""


async def test_no_readable_file_or_process_holds_the_answer(tmp_path: Path, checkout: Path) -> None:
    """Found the first answer in calls.0.bin before; at both omp configs (the second runs
    where the first ran) nothing the producer can read holds the answer it must compute."""
    (rec,) = await _scores(tmp_path, checkout, f"{NAME}/omp", [SCAN_EVERYTHING])
    assert rec["status"] == "pass", rec["explanation"]
    assert "num_threads=1, num_threads=2 passed" in rec["explanation"], rec["explanation"]
