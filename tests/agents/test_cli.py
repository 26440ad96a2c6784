"""The command lines: the repair runner end to end (scripted model, real iverilog), and the
kernel agent's input errors (a real fix needs QEMU: see test_kernel_agent's slow test)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.kernel import cli as kernel_cli
from agents.repair import cli as repair_cli
from appl import accounting, config
from appl.testing import Rule, ScriptedServer
from tests.agents.conftest import TEST_MODEL
from tests.agents.test_repair import GATES_BAD, GATES_OK


@pytest.fixture
def scripted_sync() -> Iterator[ScriptedServer]:
    saved = config.get_config()
    server = ScriptedServer([Rule(replies=[GATES_BAD, GATES_OK])], default_reply=None).start()
    config.configure(
        models={"scripted": {**TEST_MODEL, "base_url": server.base_url}},
        default_model="scripted",
        budget={},
    )
    try:
        yield server
    finally:
        server.stop()
        config.reset_config(saved)
        accounting.reset_usage()


@pytest.mark.parametrize(
    "selection",
    [["--filter", "p01_*"], ["--sample-id", "verilog/p01_basic_gates"], ["-m", "BASIC_GATES"]],
)
def test_repair_cli_runs_a_suite(
    scripted_sync: ScriptedServer, tmp_path: Path, capsys, selection: list[str]
) -> None:
    # the selection options are codegen-eval's (one rule for every suite)
    log = tmp_path / "r.jsonl"
    argv = ["--suite", "verilog", *selection, "-R", "2", "--log", str(log)]
    assert repair_cli.main(argv) == 0
    scores = [json.loads(x) for x in log.read_text().splitlines()]
    scores = [r for r in scores if r.get("type") == "score"]
    assert [s["status"] for s in scores] == ["pass"]
    assert scores[0]["candidate"]["failure_history"] == ["compile_error:syntax", "pass"]
    assert len(scripted_sync.requests) == 2
    assert "verilog" in capsys.readouterr().out


def test_kernel_agent_cli_rejects_unknown_bug(capsys) -> None:
    assert kernel_cli.main(["fix", "no-such-bug"]) == 2
    assert "unknown bug" in capsys.readouterr().err
    assert kernel_cli.main(["bench", "--tier", "99"]) == 2


def test_codegen_eval_run_takes_the_repair_agent_as_solver(
    scripted_sync: ScriptedServer, tmp_path: Path
) -> None:
    """`codegen-eval run --solver agents.repair:with_repair`: the core CLI loads the agent by
    name (codegen_eval never imports agents) and each task runs with its repair solver."""
    from codegen_eval import cli as eval_cli

    log = tmp_path / "e.jsonl"
    argv = ["run", "--suite", "verilog", "--filter", "p01_*", "--model", "scripted",
            "--solver", "agents.repair:with_repair", "--log", str(log), "--no-progress"]  # fmt: skip
    assert eval_cli.main(argv) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0]["solver"] == "agents.repair:with_repair"
    scores = [r for r in records if r["type"] == "score"]
    assert len(scores) == 1 and scores[0]["status"] == "pass", scores
    assert scores[0]["candidate"]["failure_history"] == ["compile_error:syntax", "pass"]
    assert len(scripted_sync.requests) == 2  # a broken first draft, then the repaired one


def test_codegen_eval_rejects_a_solver_it_cannot_load(tmp_path: Path, capsys) -> None:
    from codegen_eval import cli as eval_cli

    argv = ["run", "--suite", "verilog", "--limit", "1", "--solver", "no_such_module:factory",
            "--log", str(tmp_path / "x.jsonl")]  # fmt: skip
    assert eval_cli.main(argv) != 0
    assert "cannot load" in capsys.readouterr().err
