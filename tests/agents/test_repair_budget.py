"""The honest comparison: round 1 of the repair agent is a plain generation, solver options
from `codegen-eval run`, and pass by model-call budget in the reports (scripted model over
real HTTP, real iverilog)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.repair import RepairSolver
from appl import accounting, config
from appl.testing import Rule, ScriptedServer
from codegen_eval import cli as eval_cli
from codegen_eval.solvers import GenerateSolver
from tests.agents.conftest import TEST_MODEL
from tests.agents.test_repair import GATES_BAD, GATES_OK, GATES_WRONG, _verilog_task

StartServer = Callable[..., ScriptedServer]


@pytest.fixture
def serve() -> Iterator[StartServer]:
    """Start a scripted server (real HTTP) and make it the model alias `scripted`."""
    saved = config.get_config()
    servers: list[ScriptedServer] = []

    def start(rules: list[Rule]) -> ScriptedServer:
        server = ScriptedServer(rules, default_reply=None).start()
        servers.append(server)
        config.configure(
            models={"scripted": {**TEST_MODEL, "base_url": server.base_url}},
            default_model="scripted",
            budget={},
        )
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
        config.reset_config(saved)
        accounting.reset_usage()


def _run(log: Path, *extra: str) -> int:
    argv = ["run", "--suite", "verilog", "--filter", "p01_*", "--model", "scripted",
            "--log", str(log), "--no-progress", *extra]  # fmt: skip
    return eval_cli.main(argv)


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_round_one_is_the_same_request_as_generate(scripted) -> None:
    server = scripted([Rule(replies=[GATES_OK])])
    task = _verilog_task()
    sample = task.dataset[0]
    gen_cand = await GenerateSolver("scripted", temperature=0.7, seed=5).solve_one(sample, 2)
    [rep_cand] = await RepairSolver(
        task.scorer, model="scripted", temperature=0.7, seed=5
    ).solve_indices(sample, [2])
    assert len(server.requests) == 2
    plain, round1 = server.requests
    for key in ("messages", "seed", "temperature", "max_tokens"):
        assert plain.get(key) == round1.get(key), key
    assert plain["seed"] == 7
    # the same code taken out of the same reply, and both count their tokens
    assert gen_cand.code == rep_cand.code and gen_cand.code.strip()
    assert gen_cand.metadata["completion_tokens"] > 0
    assert rep_cand.metadata["completion_tokens"] == gen_cand.metadata["completion_tokens"]


def test_fix_in_round_two_shows_pass_zero_then_one(
    serve: StartServer, tmp_path: Path, capsys
) -> None:
    server = serve([Rule(replies=[GATES_BAD, GATES_OK])])
    log = tmp_path / "repair.jsonl"
    assert _run(log, "--solver", "repair", "--solver-opt", "rounds=3") == 0
    assert len(server.requests) == 2
    header = _records(log)[0]
    assert header["solver"] == "repair"
    assert header["solver_options"] == {"rounds": 3}
    assert header["options"]["rounds"] == 3
    assert header["options"]["factory"] == "agents.repair:with_repair"
    assert header["cli"]["options"]["solver_opt"] == ["rounds=3"]
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "verilog" in line and "rounds" in line)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    # calls/problem 2, then pass within 1, 2, 3 calls: 0, 1, 1; one of one solved
    assert cells[:7] == ["verilog", "rounds", "2.00", "0.000", "1.000", "1.000", "1/1"], row
    assert int(cells[7]) > 0  # tokens per solved problem

    # the report of the log shows the same
    html = tmp_path / "r.html"
    assert eval_cli.main(["report", str(log), "-o", str(html)]) == 0
    out = capsys.readouterr().out
    assert "pass ≤2 calls" in out and "tokens/solved" in out
    assert 'id="budget"' in html.read_text()


def test_equal_budget_comparison_side_by_side(serve: StartServer, tmp_path: Path, capsys) -> None:
    # sampling: every sample is the same wrong design; repair: fixed in round 2
    serve([Rule(replies=[GATES_WRONG])])
    gen_log = tmp_path / "gen.jsonl"
    assert _run(gen_log, "-n", "2", "-k", "1,2") == 0
    serve([Rule(replies=[GATES_WRONG, GATES_OK])])
    rep_log = tmp_path / "rep.jsonl"
    assert _run(rep_log, "--solver", "repair", "--solver-opt", "rounds=2") == 0
    capsys.readouterr()
    assert (
        eval_cli.main(["report", str(gen_log), str(rep_log), "-o", str(tmp_path / "c.html")]) == 0
    )
    out = capsys.readouterr().out
    rows = {line.split("│")[2].strip(): line for line in out.splitlines() if line.count("│") > 3}
    cells = [c.strip() for c in rows["pass ≤2 calls"].split("│")[3:5]]
    assert cells == ["0.000", "1.000"], rows["pass ≤2 calls"]
    cells = [c.strip() for c in rows["pass ≤1 call"].split("│")[3:5]]
    assert cells == ["0.000", "0.000"]
    assert "calls/problem" in rows and "tokens/solved" in rows


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (["--solver", "repair", "--solver-opt", "colour=red"], "has no such option; it takes:"),
        (["--solver", "repair", "--solver-opt", "rounds=three"], "expected int"),
        (["--solver", "repair", "--solver-opt", "rounds"], "expected KEY=VALUE"),
        (["--solver", "repair", "--solver-opt", "temperature=0.1"], "use --temperature"),
        (["--solver", "repair", "--solver-opt", "rounds=0"], "rounds must be >= 1"),
        (["--solver-opt", "rounds=2"], "--solver generate takes no --solver-opt"),
    ],
)
def test_bad_solver_options_are_one_line_errors(
    serve: StartServer, tmp_path: Path, capsys, opts: list[str], message: str
) -> None:
    server = serve([Rule(replies=[GATES_OK])])
    log = tmp_path / "x.jsonl"
    assert _run(log, *opts) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not server.requests and not log.exists()  # nothing ran, nothing written


def test_resume_takes_the_solver_options_from_the_log(
    serve: StartServer, tmp_path: Path, capsys
) -> None:
    server = serve([Rule(replies=[GATES_BAD, GATES_OK])])
    log = tmp_path / "r.jsonl"
    assert _run(log, "--solver", "repair", "--solver-opt", "rounds=2") == 0
    capsys.readouterr()
    resume = ["run", "--resume", "--log", str(log), "--no-progress"]
    assert eval_cli.main([*resume, "--solver-opt", "rounds=3"]) == 2
    assert "--solver-opt rounds=3 (the log has rounds=2)" in capsys.readouterr().err
    assert eval_cli.main(resume) == 0
    assert "nothing left to do" in capsys.readouterr().out
    assert len(server.requests) == 2
    resumed = [r for r in _records(log) if r["type"] == "resume"]
    assert resumed[-1]["solver_options"] == {"rounds": 2}


async def test_a_repeated_answer_is_followed_by_a_fresh_draft(scripted) -> None:
    # Round 2 repeats round 1's broken code (the 0.5B model did so in 13 of 22 rounds); with
    # restart_on_repeat, round 3 is the first-draft request again with its own seed, not a
    # third repair prompt, and its answer passes.
    server = scripted([Rule(replies=[GATES_BAD, GATES_BAD + "\n", GATES_OK])])
    task = _verilog_task()
    sample = task.dataset[0]
    solver = RepairSolver(task.scorer, model="scripted", seed=5, rounds=3, restart_on_repeat=True)
    [attempt] = await solver.run_attempts(sample, [0])
    assert [r.request for r in attempt.rounds] == ["draft", "repair", "restart"]
    assert [r.score.status for r in attempt.rounds] == ["fail", "fail", "pass"]
    first, _repair, restart = server.requests
    assert restart["messages"] == first["messages"]  # the plain generation request
    assert restart["seed"] not in (first["seed"], _repair["seed"])

    # Off by default: the third round is another repair prompt.
    server.requests.clear()
    server.rules = [Rule(replies=[GATES_BAD, GATES_BAD, GATES_BAD])]
    [plain] = await RepairSolver(task.scorer, model="scripted", seed=5).run_attempts(sample, [0])
    assert [r.request for r in plain.rounds] == ["draft", "repair", "repair"]
    assert server.requests[2]["messages"] != server.requests[0]["messages"]
