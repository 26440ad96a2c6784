"""The repair loop against a scripted model and the suites' real scorers (iverilog, gcc)."""

from __future__ import annotations

import json

import pytest

from agents.repair import RepairSolver, program_model, system_prompt, with_repair
from agents.repair.prompts import quote_diagnosed_lines
from appl.testing import Rule
from appl.testing._rules import split_tokens
from codegen_eval import RunConfig, get_suite, read_log, run_eval
from codegen_eval.types import Sample

GATES_OK = """```verilog
module TopModule (input logic a, input logic b, output logic y_and, output logic y_or,
                  output logic y_xor, output logic y_nand);
  assign y_and = a & b;
  assign y_or = a | b;
  assign y_xor = a ^ b;
  assign y_nand = ~(a & b);
endmodule
```"""
# a missing semicolon: iverilog reports a syntax error on the line after it
GATES_BAD = GATES_OK.replace("assign y_or = a | b;", "assign y_or = a | b")
# compiles, simulates, and is wrong (OR instead of XOR)
GATES_WRONG = GATES_OK.replace("a ^ b", "a | b")

AXPY_OK = """```c
void axpy(long n, double a, const double *x, double *y) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
```"""
AXPY_BAD = AXPY_OK.replace("long i = 0", "lnog i = 0")


def _verilog_task():
    return get_suite("verilog", problems=["p01_basic_gates"])


def _user_text(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


async def test_verilog_compile_error_is_repaired_in_round_2(scripted) -> None:
    server = scripted([Rule(replies=[GATES_BAD, GATES_OK])])
    task = _verilog_task()
    sample = task.dataset[0]
    solver = RepairSolver(task.scorer, rounds=3, temperature=0.0)
    [cand] = await solver.solve(sample, 1)
    assert cand.metadata["passed"] is True
    assert cand.metadata["passed_round"] == 2
    assert cand.metadata["failure_history"][0].startswith("compile_error")
    assert cand.metadata["failure_history"][1] == "pass"
    assert "y_or = a | b;" in cand.code
    assert len(server.requests) == 2
    repair = _user_text(server.requests[1])
    # the compiler's own diagnostic reached the model, with the failure class and the spec
    assert "syntax error" in repair and "TopModule.sv:" in repair
    assert "compile_error:syntax" in repair
    # the line iverilog names is quoted from the model's own code, numbered
    assert "the report points at" in repair and "   5 |   assign y_xor = a ^ b;" in repair
    assert sample.input.splitlines()[0] in repair
    # the previous code is the model's own turn
    roles = [m["role"] for m in server.requests[1]["messages"]]
    assert roles[:3] == ["system", "user", "assistant"]
    assert "assign y_or = a | b\n" in server.requests[1]["messages"][2]["content"]
    # Verilog expertise went into the system prompt
    assert "non-blocking" in server.requests[0]["messages"][0]["content"]


async def test_openmp_compile_error_is_repaired_in_round_2(scripted) -> None:
    server = scripted([Rule(replies=[AXPY_BAD, AXPY_OK])])
    task = get_suite("hpc-kernels", variants=["openmp"], problems=["axpy"])
    sample = task.dataset[0]
    assert program_model(sample) == "openmp"
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(sample, 1)
    assert cand.metadata["failure_history"][0].startswith("compile_error")
    assert cand.metadata["failure_history"][-1] == "pass"
    assert cand.metadata["rounds_used"] == 2
    repair = _user_text(server.requests[1])
    assert "lnog" in repair and "solution.c:" in repair  # gcc's diagnostic, quoted
    assert "reduction" in server.requests[0]["messages"][0]["content"]  # OpenMP expertise


async def test_model_that_never_fixes_it_stops_after_r_rounds(scripted) -> None:
    server = scripted([Rule(replies=[GATES_WRONG])])  # the last reply repeats
    task = _verilog_task()
    [cand] = await RepairSolver(task.scorer, rounds=3).solve(task.dataset[0], 1)
    assert len(server.requests) == 3
    assert cand.metadata["rounds_used"] == 3 and cand.metadata["passed"] is False
    assert cand.metadata["failure_history"] == ["sim_mismatch"] * 3
    # round 1 keeps the attempt's seed (generate's request); each repair round has its own
    assert [r["seed"] for r in server.requests] == [0, 100_003, 200_006]
    assert cand.metadata["final_failure_class"] == "sim_mismatch"
    # mismatch counts from the simulation are the feedback
    assert "Mismatches:" in _user_text(server.requests[1])


async def test_garbage_reply_is_no_code_then_repaired(scripted) -> None:
    server = scripted([Rule(replies=["I am not sure how to do that.", GATES_OK])])
    task = _verilog_task()
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    assert cand.metadata["failure_history"] == ["no_code", "pass"]
    assert "no code block" in _user_text(server.requests[1])


async def test_garbage_only_is_a_clear_result(scripted) -> None:
    scripted([Rule(replies=["no idea"])])
    task = _verilog_task()
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    assert cand.code == "" and cand.metadata["final_failure_class"] == "no_code"
    assert cand.metadata["failure_history"] == ["no_code", "no_code"]


async def test_k_attempts_run_concurrently(scripted) -> None:
    server = scripted([Rule(replies=[GATES_OK], latency=0.4)])
    task = _verilog_task()
    cands = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 4)
    assert [c.index for c in cands] == [0, 1, 2, 3]
    assert all(c.metadata["passed"] for c in cands)
    assert server.max_in_flight >= 2  # overlapping requests, not one after the other
    assert sorted(r.get("seed") for r in server.requests) == [0, 1, 2, 3]


async def test_repair_chains_are_independent(scripted) -> None:
    # attempt 0 (seed 0) is fixed in round 2; attempt 1 (seed 1) passes at once
    def reply(body: dict) -> str:
        if body.get("seed") == 1:
            return GATES_OK
        return GATES_OK if len(body["messages"]) > 2 else GATES_BAD

    server = scripted([Rule(reply=reply)])
    task = _verilog_task()
    cands = await RepairSolver(task.scorer, rounds=3).solve(task.dataset[0], 2)
    assert cands[0].metadata["failure_history"][-1] == "pass"
    assert cands[0].metadata["rounds_used"] == 2
    assert cands[1].metadata["failure_history"] == ["pass"]
    assert len(server.requests) == 3


async def test_runner_uses_the_repair_solver_and_rescores(scripted, tmp_path) -> None:
    scripted([Rule(replies=[GATES_BAD, GATES_OK])])
    task = with_repair(_verilog_task(), rounds=2)
    log = tmp_path / "run.jsonl"
    result = await run_eval([task], None, log, RunConfig(n=1, ks=(1,), max_sandboxes=1))
    [score] = [r for r in result.records if r["type"] == "score"]
    assert score["status"] == "pass"  # the runner's own verdict
    assert score["candidate"]["failure_history"][0].startswith("compile_error")
    records = read_log(log)
    text = json.dumps(records, default=str)
    assert "failure_history" in text


def test_system_prompts_per_language() -> None:
    def s(**meta: object) -> Sample:
        return Sample("x", "spec", metadata=dict(meta))

    assert program_model(s(language="c", parallel_model="mpi")) == "mpi"
    assert program_model(s(language="c", parallel_model="mpi+openmp")) == "mpi+openmp"
    assert program_model(s(language="cuda")) == "cuda"
    assert program_model(s(language="verilog")) == "verilog"
    assert program_model(s(language="c", parallel_model="serial")) == "c"
    assert "MPI_Init" in system_prompt(s(language="c", parallel_model="mpi"))
    assert "nvcc" in system_prompt(s(language="cuda"))
    # a suite's own answer format is kept
    own = system_prompt(s(language="mpi", system_prompt="Answer only with N: lines."))
    assert own.endswith("Answer only with N: lines.") and "```" not in own


def test_quoted_lines_are_the_candidates_not_the_harness() -> None:
    code = "int a;\nint b\nint c;\n"
    report = "solution.c:2:6: error: expected ';'\ntb.sv:40: mismatch\nsolution.c:99: past the end"
    quoted = quote_diagnosed_lines(report, code, ["tb.sv"])
    assert quoted == "   2 | int b"
    assert quote_diagnosed_lines("kernel.cu(3): error: x", code) == "   3 | int c;"
    assert quote_diagnosed_lines("no locations here", code) == ""


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        RepairSolver(None)
    with pytest.raises(ValueError):
        RepairSolver(_verilog_task().scorer, rounds=0)


def _is_repair(body: dict) -> bool:
    return len(body["messages"]) > 2  # a repair request carries the failed answer


async def test_a_chain_cut_by_a_server_timeout_is_infra_and_retry_infra_redoes_it(
    scripted, tmp_path
) -> None:
    # the repair request hangs past the timeout: the chain did not get its rounds, so it is
    # no result; a resume with --retry-infra runs it again and now the repair comes back
    scripted(
        [Rule(match=_is_repair, faults=["hang"] * 2, reply=GATES_OK), Rule(reply=GATES_BAD)],
        model={"timeout_s": 0.5, "max_retries": 1},
    )
    task = with_repair(_verilog_task(), rounds=2)
    log = tmp_path / "run.jsonl"
    config = RunConfig(n=1, ks=(1,), max_sandboxes=1)
    first = await run_eval([task], None, log, config)
    [score] = [r for r in first.records if r["type"] == "score"]
    assert score["failure_class"] == "infra_error", score
    assert "repair chain cut by the model server" in score["explanation"]
    assert "ModelTimeoutError" in score["candidate"]["repair_error"]
    retry = RunConfig(n=1, ks=(1,), max_sandboxes=1, retry_infra=True)
    again = await run_eval([task], None, log, retry, resume=True)
    [score] = [r for r in again.records if r["type"] == "score"]
    assert score["status"] == "pass" and score["candidate"]["passed_round"] == 2


async def test_a_prompt_over_the_window_ends_the_chain_as_a_result(scripted, tmp_path) -> None:
    # HTTP 400 (the repair prompt is over the server's window): the chain's own doing, so the
    # rounds it had are scored as they are
    server = scripted([Rule(reply=GATES_BAD)])
    task = _verilog_task()
    await RepairSolver(task.scorer, rounds=1).solve(task.dataset[0], 1)  # the draft alone
    draft_tokens = sum(len(split_tokens(m["content"])) + 3 for m in server.requests[0]["messages"])
    server.context_window = draft_tokens + 20  # the draft fits, its repair does not
    result = await run_eval(
        [with_repair(task, rounds=2)], None, tmp_path / "run.jsonl", RunConfig(n=1, ks=(1,))
    )
    [score] = [r for r in result.records if r["type"] == "score"]
    assert server.overflows == 1
    assert score["failure_class"].startswith("compile_error"), score
    assert "ContextOverflowError" in score["candidate"]["repair_error"]
