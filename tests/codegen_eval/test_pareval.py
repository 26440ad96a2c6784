"""ParEval reader on tests/codegen_eval/pareval_fixture, a miniature checkout that reproduces
the real layout's requirements (see its README): upstream's build command, the launch sweep
capped to the machine, the NO_INLINE patch, references from baseline.hpp, both verdict modes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codegen_eval.readers.pareval import load_pareval
from codegen_eval.readers.pareval.build import link_command, parse_driver_output
from codegen_eval.readers.pareval.checkout import (
    MODELS,
    ParEvalFormatError,
    launch_plan,
    patch_prompt,
    reference_for,
)
from codegen_eval.readers.pareval.scorer import generated_code
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import FileSolver, ReferenceSolver

FIXTURE = Path(__file__).parent / "pareval_fixture"
HOST = ("serial", "omp", "mpi", "mpi+omp")
GPU = any(Path("/dev").glob("nvidia[0-9]*"))  # what the sandbox checks
LAUNCH = json.loads((FIXTURE / "drivers" / "launch-configs.json").read_text())


def _cfg(**kw: object) -> RunConfig:
    return RunConfig(progress=False, max_sandboxes=2, **kw)  # type: ignore[arg-type]


def _samples_file(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_fixture_loads_like_the_real_layout() -> None:
    task = load_pareval(FIXTURE, models=None, cores=2)
    ids = {s.id for s in task.dataset}
    host = {
        f"{p}/{m}" for p in ("00_reduce_sum_of_squares", "01_transform_scale_points") for m in HOST
    }
    assert host <= ids
    excluded = task.excluded
    assert "Kokkos 4" in excluded["00_reduce_sum_of_squares/kokkos"]
    assert "hipcc" in excluded["00_reduce_sum_of_squares/hip"]
    assert "gpu.cu" in excluded["01_transform_scale_points/cuda"]
    assert "cpu.cc" in excluded["02_reduce_missing_driver/serial"]
    for s in task.dataset:
        if s.metadata["variant"] in HOST:
            assert s.target.rstrip().endswith("}") and "correct" not in s.target
            assert s.metadata["problem_size"] == "(1<<12)"
    header = task.log_header
    assert header["cores_cap"] == 2 and header["verdict"] == "upstream"
    assert "forgeable" in header["verdict_label"]
    assert header["launch"]["omp"]["run"] == ["num_threads=1", "num_threads=2"]
    assert "num_threads=64" in header["launch"]["omp"]["dropped_over_cap"]
    assert "num_procs=128" in header["launch"]["mpi"]["dropped_over_cap"]


def test_translation_prompts_complete_the_destination_prompt() -> None:
    task = load_pareval(FIXTURE, prompts="translation", models=None)
    assert task.name == "pareval-translation"
    assert {s.id for s in task.dataset} == {
        "00_reduce_sum_of_squares/omp",
        "01_transform_scale_points/mpi",
    }
    for s in task.dataset:
        assert s.input.startswith("// Serial implementation of")
        assert s.metadata["translation_src_model"] == "serial"
        assert s.input.rstrip().endswith(s.metadata["prompt"].rstrip())


def test_launch_configs_become_local_runs_capped_to_the_cores() -> None:
    omp = launch_plan("omp", LAUNCH["omp"], cap=2)
    assert [(c.procs, c.threads, c.argv) for c in omp.configs] == [(1, 1, ("1",)), (1, 2, ("2",))]
    mpi = launch_plan("mpi", LAUNCH["mpi"], cap=4)
    assert [(c.procs, c.argv) for c in mpi.configs] == [(1, ()), (2, ()), (4, ())]
    hybrid = launch_plan("mpi+omp", LAUNCH["mpi+omp"], cap=2)
    assert [(c.procs, c.threads) for c in hybrid.configs] == [(1, 1), (1, 2), (2, 1)]
    assert hybrid.largest.procs == 2  # ties on cores go to more ranks
    assert [c.argv for c in launch_plan("kokkos", LAUNCH["kokkos"], 1).configs] == [
        ("--kokkos-num-threads=1",)
    ]
    # a machine smaller than the smallest config still runs that one (oversubscribed)
    assert launch_plan(
        "omp", {"format": LAUNCH["omp"]["format"], "params": [{"num_threads": 4}]}, 2
    ).configs
    with pytest.raises(ParEvalFormatError, match="exec_path"):
        launch_plan("omp", {"format": "srun ./a.out", "params": [{}]}, 2)
    with pytest.raises(ParEvalFormatError, match="launcher"):
        launch_plan("omp", {"format": "qsub {exec_path}", "params": [{}]}, 2)


def test_build_command_is_upstreams() -> None:
    bench = "cpp/benchmarks/reduce/00_reduce_sum_of_squares"
    assert link_command(MODELS["mpi+omp"], bench, "(1<<12)") == [
        "mpicxx", "-std=c++17", "-O3", "-fopenmp", "-Igen", "-DDRIVER_PROBLEM_SIZE=(1<<12)",
        "-Icpp", "-Icpp/models", "-DUSE_MPI+OMP", "cpp/models/mpi-omp-driver.o",
        f"{bench}/cpu.cc", "-o", "a.out",
    ]  # fmt: skip
    cuda = link_command(MODELS["cuda"], bench, "(1<<12)")
    assert cuda[0] == "nvcc" and "-std=c++17 -O3" in cuda and f"{bench}/gpu.cu" in cuda


def test_no_inline_patch_and_generated_code() -> None:
    assert patch_prompt("/* doc */\n void f(int x) {") == "/* doc */\n NO_INLINE void f(int x) {"
    task = load_pareval(FIXTURE, models=("serial",))
    s = next(x for x in task.dataset if x.id == "01_transform_scale_points/serial")
    body = "  for (auto &p : points) { p.x *= factor; p.y *= factor; }\n}"
    assert generated_code(s, body).endswith(
        " NO_INLINE void scalePoints(std::vector<Point> &points, double factor) {\n" + body
    )
    full = "void scalePoints(std::vector<Point> &points, double factor) {\n" + body
    assert generated_code(s, full).count("scalePoints(") == 1
    assert generated_code(s, s.metadata["prompt"] + body) == generated_code(s, body)


def test_reference_is_the_body_of_the_function_best_calls() -> None:
    driver = "void NO_OPTIMIZE best(Context *ctx) { ctx->r = correctF(ctx->x); }"
    baseline = (
        "int helper(int a) {\n  return a;\n}\n"
        "int NO_INLINE correctF(std::vector<int> const& v) {\n  return helper(v[0]); // }\n}\n"
    )
    ref = reference_for("/* doc */\nint f(std::vector<int> const& x) {", driver, baseline)
    assert ref is not None and ref.baseline_name == "correctF"
    assert ref.declaration == "int NO_INLINE correctF(std::vector<int> const& v);"
    assert "auto &&v = x;" in ref.completion and ref.completion.endswith("// }\n}")


@pytest.mark.parametrize(
    ("stdout", "outcome"),
    [
        ("Validation: PASS\nTime: 0.5\nBestSequential: 1.0\n", "pass"),
        ("debug\nValidation: PASS\nx\nTime: 0.5\nBestSequential: 1.0\n", "pass"),
        ("Validation: FAIL\n", "fail"),
        ("", "no validation line in the driver's output"),
        ("Time: 1\nValidation: PASS\nBestSequential: 1\n", "does not start"),
        ("Validation: PASS\nValidation: PASS\nTime: 1\nBestSequential: 1\n", "out of sequence"),
        ("Validation: PASS\nTime: nan\nBestSequential: 1\n", "finite"),
        ("Validation: PASS\nTime: -1\nBestSequential: 1\n", "finite"),
        ("Validation: FAIL\nTime: 1\n", "after a FAIL"),
    ],
)
def test_driver_output_is_read_strictly(stdout: str, outcome: str) -> None:
    got, values = parse_driver_output(stdout)
    assert outcome in got
    if got == "pass":
        assert values == {"Time": 0.5, "BestSequential": 1.0}


async def test_references_pass_every_host_model_as_upstream_builds_them(tmp_path: Path) -> None:
    task = load_pareval(FIXTURE, models=HOST, cores=2)
    res = await run_eval([task], ReferenceSolver(), tmp_path / "ref.jsonl", _cfg())
    assert len(res.records) == 8
    for r in res.records:
        assert r["status"] == "pass", (r["sample_id"], r["explanation"])
        m = r["metrics"]
        assert m["speedup"] > 0 and m["best_sequential_s"] > 0
        assert m["resources"] == 2.0 or r["variant"] == "serial"
        assert "forgeable" in r["explanation"]
    hybrid = next(r for r in res.records if r["sample_id"] == "00_reduce_sum_of_squares/mpi+omp")
    assert {"runtime_s@num_procs=1,num_threads=2", "runtime_s@num_procs=2,num_threads=1"} <= set(
        hybrid["metrics"]
    )
    header = json.loads((tmp_path / "ref.jsonl").read_text().splitlines()[0])
    assert header["suite_notes"]["pareval"]["cores_cap"] == 2


WRONG = {
    "00_reduce_sum_of_squares/serial": "  return 0.0;\n}",
    "00_reduce_sum_of_squares/mpi": "  double s = 0;\n  for (double v : x) s += v;\n  return s;\n}",
    "01_transform_scale_points/omp": "  #pragma omp parallel for\n  for (size_t i = 0; i < points.size(); ++i) points[i].x *= factor;\n}",
    "01_transform_scale_points/mpi+omp": "  points.clear();\n}",
}


@pytest.mark.parametrize("verdict", ["upstream", "trusted"])
async def test_wrong_answers_fail_in_both_verdict_modes(tmp_path: Path, verdict: str) -> None:
    task = load_pareval(FIXTURE, models=HOST, verdict=verdict, cores=2)
    rows = [{"sample_id": k, "completion": v} for k, v in WRONG.items()]
    cfg = _cfg(filter="0*")
    res = await run_eval(
        [task], FileSolver(_samples_file(tmp_path, rows)), tmp_path / "w.jsonl", cfg
    )
    got = {r["sample_id"]: r for r in res.records}
    assert set(got) == set(WRONG)
    for sid, r in got.items():
        assert r["failure_class"] == "wrong_answer", (sid, r["explanation"])


async def test_trusted_verdict_passes_the_references(tmp_path: Path) -> None:
    task = load_pareval(FIXTURE, models=HOST, verdict="trusted", cores=2)
    assert "no candidate code" in task.log_header["verdict_label"]
    res = await run_eval([task], ReferenceSolver(), tmp_path / "t.jsonl", _cfg())
    assert len(res.records) == 8
    for r in res.records:
        assert r["status"] == "pass", (r["sample_id"], r["explanation"])
        assert "speedup" not in r["metrics"]  # trusted mode does not use the in-process clock


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit)")
async def test_cuda_is_compiled_and_skipped_without_a_gpu(tmp_path: Path) -> None:
    task = load_pareval(FIXTURE, models=("cuda",))
    kernel = (
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (; i < N; i += blockDim.x * gridDim.x) atomicAdd(sum, x[i] * x[i]);\n}"
    )
    rows = [{"sample_id": "00_reduce_sum_of_squares/cuda", "completion": kernel}]
    res = await run_eval(
        [task], FileSolver(_samples_file(tmp_path, rows)), tmp_path / "c.jsonl", _cfg()
    )
    (r,) = res.records
    if GPU:
        assert r["status"] == "pass", r["explanation"]
    else:
        assert (r["status"], r["failure_class"]) == ("skipped", "skipped_no_gpu"), r["explanation"]
    broken = [
        {"sample_id": "00_reduce_sum_of_squares/cuda", "completion": "  not_a_function();\n}"}
    ]
    (tmp_path / "b").mkdir()
    samples = _samples_file(tmp_path / "b", broken)
    res = await run_eval([task], FileSolver(samples), tmp_path / "b.jsonl", _cfg())
    assert res.records[0]["failure_class"].startswith("compile_error")


def test_bad_paths_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text("[]")
    with pytest.raises(FileNotFoundError, match="does not look like a ParEval checkout"):
        load_pareval(tmp_path / "p.json", tmp_path)
    with pytest.raises(ValueError, match="also give the ParEval checkout"):
        load_pareval(FIXTURE / "prompts" / "generation-prompts.json")
    with pytest.raises(ValueError, match="prompts must be one of"):
        load_pareval(FIXTURE, prompts="bogus")
    with pytest.raises(ValueError, match="unknown parallelism model 'opm'"):
        load_pareval(FIXTURE, models=("serial", "opm"))


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from codegen_eval.cli import main

    prompts = FIXTURE / "prompts" / "generation-prompts.json"
    assert main(["run", "--pareval", str(prompts), "--solver", "reference"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--pareval-checkout" in err and len(err.splitlines()) == 1
    assert main(["run", "--pareval", str(tmp_path / "nope"), "--solver", "reference"]) == 2
    assert "does not exist" in capsys.readouterr().err
    args = ["run", "--pareval", str(FIXTURE), "--pareval-prompts", "bogus", "--solver", "reference"]
    assert main(args) == 2
    assert "prompts must be one of" in capsys.readouterr().err


def test_a_completion_that_calls_the_function_is_not_a_definition() -> None:
    task = load_pareval(FIXTURE, models=("serial",))
    s = next(x for x in task.dataset if x.id == "00_reduce_sum_of_squares/serial")
    body = "  while (sumOfSquares(std::vector<double>(x.begin(), x.end() - 1)) > 0) {\n    break;\n  }\n  return 0;\n}"
    assert generated_code(s, body).startswith(patch_prompt(s.metadata["prompt"]))
    full = "static inline double\nhelper(double v) { return v; }\ndouble sumOfSquares(std::vector<double> const &x) {\n  return 0;\n}"
    assert "NO_INLINE" not in generated_code(s, full)
