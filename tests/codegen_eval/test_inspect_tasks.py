"""Our suites as Inspect AI tasks, run by Inspect itself (its CLI through the installed
`codegen_eval` entry point, or `inspect_ai.eval` in-process): verdicts from our scorers,
the repo's cheat candidates failing through Inspect exactly as through `codegen-eval run`,
our generate and repair solvers answered by Inspect's model, bad options in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from codegen_eval.cli import main as cli_main
from codegen_eval.inspect_tasks import omp_pragma, verilog
from codegen_eval.inspect_tasks.scorer import SCORER_NAME, to_inspect_score
from codegen_eval.log import read_log
from codegen_eval.types import Score

from .suites.test_omp_pragma_adversarial import SCREENED
from .suites.test_verilog_adversarial import BUILTIN_CHEATS, HEAD, RIGHT

ROOT = Path(__file__).resolve().parents[2]
INSPECT = str(Path(sys.executable).with_name("inspect"))
GATES = "p01_basic_gates"
HONEST_GATES = HEAD + RIGHT + "endmodule\n"
OMP = "omp-pragma/reduction_sum"
HONEST_OMP = "#pragma omp parallel for reduction(+:sum)"


def _inspect_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [INSPECT, "eval", *args, "--model", "mockllm/model", "--log-dir", str(cwd / "logs")],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _only_log(directory: Path):
    (path,) = sorted(directory.glob("*.eval"))
    return read_eval_log(str(path))


@pytest.mark.slow
def test_inspect_cli_reference_limit_6_gives_6_correct(tmp_path: Path) -> None:
    """The issue's acceptance command, through the installed entry point."""
    cp = _inspect_cli(
        "codegen_eval/verilog", "-T", "solver=reference", "--limit", "6", cwd=tmp_path
    )
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    log = _only_log(tmp_path / "logs")
    assert log.status == "success"
    assert log.eval.task == "codegen_eval/verilog"
    samples = log.samples or []
    assert len(samples) == 6
    assert [s.scores[SCORER_NAME].value for s in samples] == ["C"] * 6
    assert {s.scores[SCORER_NAME].metadata["status"] for s in samples} == {"pass"}
    ours = {k: m.value for sc in log.results.scores for k, m in sc.metrics.items()}
    assert ours["accuracy"] == 1.0 and ours["pass@1"] == 1.0  # our metric next to theirs


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["codegen_eval/verilog", "-T", "solvr=reference"], "unknown task option(s) solvr"),
        (
            ["codegen_eval/verilogeval", "-T", "path=/nonexistent/ve"],
            "-T path=/nonexistent/ve: no such file or directory",
        ),
        (["codegen_eval/omp_pragma", "-T", "backend=podman"], "-T backend=podman is not supported"),
        (["codegen_eval/pareval"], "codegen_eval/pareval: needs -T path=CHECKOUT"),
    ],
)
def test_bad_task_options_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    cp = _inspect_cli(*args, cwd=tmp_path)
    out = cp.stdout + cp.stderr
    assert cp.returncode == 1, out
    assert "Traceback" not in out, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out


def test_a_docker_backend_without_an_engine_is_one_line(tmp_path: Path) -> None:
    env_host = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    cp = subprocess.run(
        [INSPECT, "eval", "codegen_eval/verilog", "-T", "backend=docker", "--model",
         "mockllm/model", "--log-dir", str(tmp_path / "logs")],
        cwd=tmp_path, env={**os.environ, **env_host, "COLUMNS": "200"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = cp.stdout + cp.stderr
    assert cp.returncode == 1 and "Traceback" not in out, out
    assert "sandbox backend 'docker' is not usable" in out, out


# ------------------------------------------------------------------ cheats, both ways


def _samples_file(path: Path, sample_id: str, answers: list[str]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i, code in enumerate(answers):
            fh.write(json.dumps({"sample_id": sample_id, "index": i, "code": code}) + "\n")
    return path


def _through_cli(tmp: Path, suite: str, samples: Path, sample_id: str, n: int) -> list[tuple]:
    log = tmp / f"{suite}.jsonl"
    rc = cli_main(
        ["run", "--suite", suite, "--solver", "file", "--samples", str(samples), "-n", str(n),
         "--filter", sample_id, "--log", str(log), "--no-progress"]
    )  # fmt: skip
    assert rc == 0
    records = sorted(read_log(log).score_records, key=lambda r: r["index"])
    return [(r["index"], r["status"], r["failure_class"]) for r in records]


def _through_inspect(tmp: Path, task, n: int) -> list[tuple]:
    (log,) = inspect_eval(
        task, model="mockllm/model", epochs=n, log_dir=str(tmp / "ilogs"), display="none"
    )
    assert log.status == "success", log.error
    out = []
    for s in log.samples or []:
        md = s.scores[SCORER_NAME].metadata
        out.append((s.epoch - 1, md["status"], md["failure_class"]))
        assert s.scores[SCORER_NAME].value == ("C" if md["status"] == "pass" else "I")
    return sorted(out)


@pytest.mark.slow
def test_verilog_cheats_fail_through_inspect_as_through_the_cli(tmp_path: Path) -> None:
    answers = [HONEST_GATES, *(code for _name, code, _want in BUILTIN_CHEATS)]
    samples = _samples_file(tmp_path / "gates.jsonl", GATES, answers)
    ours = _through_cli(tmp_path, "verilog", samples, GATES, len(answers))
    theirs = _through_inspect(
        tmp_path, verilog(solver="file", samples=str(samples), filter=GATES), len(answers)
    )
    assert theirs == ours
    assert ours[0][1] == "pass"  # the honest design
    assert all(status == "fail" for _i, status, _cls in ours[1:]), ours


@pytest.mark.slow
def test_omp_cheats_fail_through_inspect_as_through_the_cli(tmp_path: Path) -> None:
    cheats = [answer for name, answer, _cls in SCREENED if name == "reduction_sum"]
    answers = [HONEST_OMP, *cheats]
    samples = _samples_file(tmp_path / "omp.jsonl", OMP, answers)
    ours = _through_cli(tmp_path, "omp-pragma", samples, OMP, len(answers))
    theirs = _through_inspect(
        tmp_path, omp_pragma(solver="file", samples=str(samples), filter=OMP), len(answers)
    )
    assert theirs == ours
    assert ours[0][1] == "pass"
    assert all(status == "fail" for _i, status, _cls in ours[1:]), ours
    want = [cls for name, _a, cls in SCREENED if name == "reduction_sum"]
    assert [cls for _i, _s, cls in ours[1:]] == want  # the suite's own test's classes


# ------------------------------------------------------------------ Inspect's model


def _scripted(calls: list[tuple[int, float | None, int | None]]):
    """An Inspect mockllm whose first answer to a prompt is wrong and whose answer to a
    repair request (4 messages: system, task, its answer, the grader's report) is right.
    Usage is given, so mockllm does not count tokens (tiktoken would download)."""

    def outputs(messages, tools, tool_choice, config) -> ModelOutput:
        calls.append((len(messages), config.temperature, config.seed))
        code = HONEST_GATES if len(messages) > 2 else HEAD + "endmodule\n"
        out = ModelOutput.from_content(model="mockllm", content=f"```verilog\n{code}```")
        out.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
        return out

    return get_model("mockllm/model", custom_outputs=outputs)


@pytest.mark.parametrize(("solver", "want"), [("generate", "I"), ("repair", "C")])
def test_generate_and_repair_are_answered_by_inspects_model(
    tmp_path: Path, solver: str, want: str
) -> None:
    calls: list[tuple[int, float | None, int | None]] = []
    (log,) = inspect_eval(
        verilog(solver=solver, filter=GATES, rounds=2, temperature=0.3),
        model=_scripted(calls),
        epochs=2,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    samples = sorted(log.samples or [], key=lambda s: s.epoch)
    assert [s.scores[SCORER_NAME].value for s in samples] == [want, want]
    rounds = 1 if solver == "generate" else 2
    for s in samples:  # Inspect's usage accounting saw every call the appl program made
        usage = s.model_usage["mockllm/model"]
        assert (usage.input_tokens, usage.output_tokens) == (100 * rounds, 20 * rounds)
    drafts = sorted(c for c in calls if c[0] == 2)
    assert drafts == [(2, 0.3, 0), (2, 0.3, 1)]  # epoch e asks seed e-1, as -n's index does
    assert len(calls) == 2 * rounds
    if solver == "repair":
        md = samples[0].store["codegen_eval:candidate"]["metadata"]
        assert md["failure_history"][-1] == "pass" and len(md["failure_history"]) == 2


def test_skipped_is_unscored_and_keeps_our_verdict() -> None:
    skipped = to_inspect_score(Score(0.0, "skipped", "skipped_no_gpu", {"x": 1.0}), "code")
    assert skipped.value != skipped.value  # NaN: left out of accuracy and the reducers
    assert skipped.metadata == {
        "status": "skipped", "failure_class": "skipped_no_gpu", "value": 0.0,
        "metrics": {"x": 1.0}, "cached": False,
    }  # fmt: skip
    failed = to_inspect_score(Score(0.5, "fail", "wrong_answer", explanation="e"), "code")
    assert (failed.value, failed.answer, failed.explanation) == ("I", "code", "e")


def test_pass_at_k_through_inspects_reducers(tmp_path: Path) -> None:
    """-T k=1,2 sets 2 epochs and Inspect's pass_at reducers; our pass@k metric agrees."""
    answers = [HONEST_GATES, HEAD + "endmodule\n"]  # one pass, one fail: pass@1 .5, pass@2 1
    samples = _samples_file(tmp_path / "s.jsonl", GATES, answers)
    (log,) = inspect_eval(
        verilog(solver="file", samples=str(samples), filter=GATES, k="1,2"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.eval.config.epochs == 2
    by_reducer = {
        (sc.reducer, name): m.value for sc in log.results.scores for name, m in sc.metrics.items()
    }
    assert by_reducer[("pass_at_1", "accuracy")] == 0.5
    assert by_reducer[("pass_at_2", "accuracy")] == 1.0
    # ours, over the unreduced epochs (Inspect lists it without a reducer)
    assert (by_reducer[(None, "pass@1")], by_reducer[(None, "pass@2")]) == (0.5, 1.0)


@pytest.mark.slow
def test_speedups_and_a_gpu_skip_through_inspect(tmp_path: Path) -> None:
    """hpc-kernels: our speedup/efficiency reach Inspect (metadata and our metric); CUDA
    without a GPU is our `skipped`, unscored in Inspect (not a failure in accuracy)."""
    from codegen_eval.inspect_tasks import hpc_kernels

    (log,) = inspect_eval(
        hpc_kernels(solver="reference", filter="axpy/[oc]*"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    scores = {s.id: s.scores[SCORER_NAME] for s in log.samples or []}
    assert scores["axpy/openmp"].value == "C"
    assert scores["axpy/openmp"].metadata["metrics"]["speedup"] > 0
    skipped = scores["axpy/cuda"]
    assert skipped.value != skipped.value  # NaN
    assert skipped.metadata["failure_class"] == "skipped_no_gpu"
    metrics = {k: m.value for sc in log.results.scores for k, m in sc.metrics.items()}
    assert metrics["accuracy"] == 1.0  # the skipped one is not a failure
    assert metrics["speedup@1"] > 0 and metrics["efficiency@1"] > 0


def test_an_inspect_token_limit_ends_a_repair_chain_as_a_failure(tmp_path: Path) -> None:
    """--token-limit reaches the appl program: the second call of the chain is refused by
    Inspect, the sample records the limit, and no answer within it is a failure."""
    calls: list[tuple[int, float | None, int | None]] = []
    (log,) = inspect_eval(
        verilog(solver="repair", filter=GATES, rounds=3),
        model=_scripted(calls),
        token_limit=150,  # one call costs 120
        log_dir=str(tmp_path),
        display="none",
    )
    (sample,) = log.samples or []
    assert sample.limit is not None and sample.limit.type == "token"
    score = sample.scores[SCORER_NAME]
    assert (score.value, score.metadata["status"], score.metadata["failure_class"]) == (
        "I", "fail", "no_code",
    )  # fmt: skip
    assert len(calls) == 2  # the draft, then the repair request the limit stopped


def test_filter_follows_codegen_evals_rule_on_id_tails() -> None:
    # 'reduction*' names the problem, not the stored id's 'omp-pragma/' prefix: the same
    # glob selects the same problems as `codegen-eval run --filter` (a whole-id glob chose none)
    task = omp_pragma(solver="reference", filter="reduction*")
    ids = [str(s.id) for s in task.dataset]
    assert OMP in ids
    assert all(i.startswith("omp-pragma/reduction") for i in ids)
