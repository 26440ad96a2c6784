"""The LLM compiler and the ReAct loop under tracing and strict replay: their planner, joiner
and ReAct requests are recorded like gens, and a strict replay answers them with no server
(a call the trace lacks raises ReplayMissError instead of reaching the network)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from appl import ReplayMissError, ppl
from appl.compiler import run_compiler, run_react
from appl.testing import Rule
from appl.trace import read_trace, recording, replaying
from appl.trace._model import build_view
from tests.appl.test_compiler_run import JOINER, PLANNER, Calls, finish

PLAN = (
    '1. search("Barack Obama age")\n2. search("Michelle Obama age")\n'
    '3. math("${1} - ${2}")\n4. join()\n'
)


def _rules() -> list[Rule]:
    return [Rule(match=JOINER, reply=finish("2")), Rule(match=PLANNER, reply=PLAN)]


def _model_calls(path: Path) -> list[dict]:
    return [r for r in read_trace(path).records if r["type"] == "gen_response"]


async def test_a_compiler_run_replays_strictly_with_the_server_gone(scripted, tmp_path) -> None:
    server = scripted(_rules())
    trace = tmp_path / "compiler.jsonl"
    with recording(trace):
        recorded = await run_compiler("How much older?", Calls().tools(), model="scripted")
    assert recorded.answer == "2"
    assert len(server.requests) == 2
    calls = _model_calls(trace)
    assert [c["call"]["path"] for c in calls] == [
        "run_compiler/planner@R1",
        "run_compiler/joiner@R1",
    ]
    view = build_view(read_trace(trace))
    assert [(run.function, run.ok, len(run.gens)) for run in view.runs] == [
        ("run_compiler", True, 2)
    ]
    server.stop()  # nothing may reach the network from here on
    with replaying(trace) as replayer:
        again = await run_compiler("How much older?", Calls().tools(), model="scripted")
    assert again.answer == recorded.answer
    assert replayer.index.hits == 2 and not replayer.index.misses
    with replaying(trace), pytest.raises(ReplayMissError) as caught:
        await run_compiler("How much younger?", Calls().tools(), model="scripted")
    assert "run_compiler/planner@R1" in str(caught.value)


@ppl
async def _asks_twice(question: str) -> tuple[str | None, str | None]:
    """Doc."""
    first = await run_compiler(question, Calls().tools())
    second = await run_compiler(question, Calls().tools())
    return first.answer, second.answer


async def test_compiler_calls_inside_a_ppl_run_are_that_run_s_children(scripted, tmp_path) -> None:
    server = scripted(_rules())
    trace = tmp_path / "nested.jsonl"
    with recording(trace):
        assert await _asks_twice("How much older?") == ("2", "2")
    paths = [c["call"]["path"] for c in _model_calls(trace)]
    assert sorted(paths) == sorted(
        f"_asks_twice/run_compiler[{i}]/{role}@R1" for i in (0, 1) for role in ("planner", "joiner")
    )
    assert len({r["run"] for r in read_trace(trace).records if r["type"] == "gen_response"}) == 1
    server.stop()
    with replaying(trace) as replayer:
        assert await _asks_twice("How much older?") == ("2", "2")
    assert replayer.index.hits == 4


async def test_react_replays_strictly(scripted, tmp_path) -> None:
    server = scripted([Rule(reply="Thought: done\nAction: Finish(42)")])
    trace = tmp_path / "react.jsonl"
    with recording(trace):
        first = await run_react("answer?", Calls().tools(), model="scripted")
    server.stop()
    with replaying(trace) as replayer:
        second = await run_react("answer?", Calls().tools(), model="scripted")
    assert first.answer == second.answer == "42"
    assert replayer.index.hits == 1


ROOT = str(Path(__file__).resolve().parents[2])
PROGRAM = """
import asyncio, sys
sys.path.insert(0, {root!r})
from appl.compiler import run_compiler
from tests.appl.test_compiler_run import Calls
print(asyncio.run(run_compiler("How much older?", Calls().tools())).answer)
"""


def _run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )


async def test_appl_trace_env_records_a_program_that_only_runs_the_compiler(
    scripted, tmp_path
) -> None:
    server = scripted(_rules())
    config = tmp_path / "appl.toml"
    config.write_text(
        f'[defaults]\ndefault_model = "scripted"\n[models.scripted]\nprovider = "openai"\n'
        f'base_url = "{server.base_url}"\napi_key = "x"\nmax_retries = 0\n'
    )
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(root=ROOT))
    trace = tmp_path / "env.jsonl"
    env = {**os.environ, "APPL_CONFIG": str(config), "APPL_TRACE": str(trace)}
    done = await asyncio.to_thread(_run, script, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    assert len(_model_calls(trace)) == 2
    server.stop()
    env = {**os.environ, "APPL_CONFIG": str(config), "APPL_REPLAY": str(trace)}
    again = await asyncio.to_thread(_run, script, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "2"
