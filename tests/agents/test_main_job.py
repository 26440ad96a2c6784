"""The main job (`./dev.sh main`) end to end on a scripted model (real HTTP, real iverilog):
generate and the repair agent on the same problem, printed side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from appl.testing import Rule
from codegen_eval import main_job
from tests.agents.test_repair import GATES_BAD, GATES_OK
from tests.agents.test_repair_budget import StartServer, serve  # noqa: F401 - a fixture


def _reply(body: dict) -> str:
    # a first draft is a system + user message; a repair request carries the failed answer
    return GATES_OK if len(body["messages"]) > 2 else GATES_BAD


def test_main_job_shows_generate_and_repair_side_by_side(
    serve: StartServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # the job writes under ./runs
    server = serve([Rule(reply=_reply)])
    argv = ["--model", "scripted", "--suite", "verilog", "--limit", "1", "--rounds", "2"]
    assert main_job.main(argv) == 0
    # generate: 2 samples; repair: a failed draft (generate's first sample, the same request:
    # answered from memory) and its repair
    assert len(server.requests) == 3
    out = capsys.readouterr().out
    assert "scripted · generate" in out and "scripted · repair" in out
    row = next(line for line in out.splitlines() if "p01_basic_gates" in line)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[2] == "compile_error:syntax, compile_error:syntax", row
    assert cells[3] == "compile_error:syntax → pass", row
    budget = next(line for line in out.splitlines() if "pass ≤2 calls" in line)
    assert [c.strip() for c in budget.split("│")[3:5]] == ["0.000", "1.000"], budget
    assert "s wall, load average" in out
    assert "repair: " in out and "(1 model call(s) answered by an identical earlier request)" in out
    logs = sorted((tmp_path / "runs").glob("main-*.jsonl"))
    assert [p.name.rsplit("-", 1)[1] for p in logs] == ["generate.jsonl", "repair.jsonl"]
    header = json.loads(logs[1].read_text().splitlines()[0])
    assert header["options"]["rounds"] == 2
    assert list((tmp_path / "runs").glob("main-*.html"))
