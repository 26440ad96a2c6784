"""appl's Inspect provider: APPL programs run unchanged inside Inspect samples, each gen
answered by the model Inspect was given (here Inspect's own mockllm with scripted outputs),
with Inspect's per-sample usage; appl imports without inspect_ai."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import Generate, TaskState, solver

from appl import SystemMessage, configure, gen, ppl
from appl.config import reset_config
from appl.models.inspect_provider import use_inspect_models

ROOT = Path(__file__).resolve().parents[2]


@ppl
async def answer(question: str, *, model: str | None = None) -> str:
    """A plain APPL program: no Inspect in it."""
    SystemMessage("You answer in one word.")
    question
    return (
        await gen(model=model, temperature=0.25, seed=7, max_tokens=33, stop=["END"]).result()
    ).text


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@ppl
async def with_tool() -> Any:
    "What is 2 + 3? Use the tool."
    return await gen(
        tools=[add], tool_choice={"type": "function", "function": {"name": "add"}}
    ).result()


def _mock(seen: list[dict[str, Any]]) -> Any:
    def outputs(messages, tools, tool_choice, config) -> ModelOutput:
        seen.append(
            {
                "roles": [m.role for m in messages],
                "texts": [m.text for m in messages],
                "tools": [t.name for t in tools],
                "tool_choice": getattr(tool_choice, "name", tool_choice),
                "config": (config.temperature, config.seed, config.max_tokens, config.stop_seqs),
            }
        )
        if tools:
            out = ModelOutput.for_tool_call("mockllm", "add", {"a": 2, "b": 3}, tool_call_id="c1")
        else:
            out = ModelOutput.from_content(model="mockllm", content="blue")
        out.usage = ModelUsage(input_tokens=11, output_tokens=3, total_tokens=14)
        return out

    return get_model("mockllm/model", custom_outputs=outputs)


def _run(program: Any, tmp_path: Path, seen: list[dict[str, Any]], *, resolver: bool = True):
    results: list[Any] = []

    @solver
    def appl_solver():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if resolver:
                with use_inspect_models():
                    results.append(await program())
            else:
                results.append(await program())
            return state

        return solve

    (log,) = inspect_eval(
        Task(dataset=[Sample(input="x", target="y")], solver=appl_solver()),
        model=_mock(seen),
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    return log, results


def test_an_appl_program_is_answered_by_inspects_model(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    log, results = _run(lambda: answer("Colour of the sky?", model="local"), tmp_path, seen)
    assert results == ["blue"]  # the alias "local" was never started: Inspect answered
    (call,) = seen
    assert call["roles"] == ["system", "user"]
    assert call["texts"] == ["You answer in one word.", "Colour of the sky?"]
    assert call["config"] == (0.25, 7, 33, ["END"])
    usage = log.samples[0].model_usage["mockllm/model"]  # Inspect's accounting saw the call
    assert (usage.input_tokens, usage.output_tokens) == (11, 3)


def test_tools_and_tool_calls_cross_over(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    _log, (result,) = _run(with_tool, tmp_path, seen)
    assert seen[0]["tools"] == ["add"] and seen[0]["tool_choice"] == "add"
    (call,) = result.tool_calls
    assert call.name == "add" and json.loads(call.arguments) == {"a": 2, "b": 3}


def test_an_alias_with_provider_inspect(tmp_path: Path) -> None:
    """Without the resolver: appl.toml's `provider = "inspect"` routes one alias."""
    configure(models={"judge": {"provider": "inspect", "api_key_env": None, "max_retries": 0}})
    try:
        seen: list[dict[str, Any]] = []
        _log, results = _run(lambda: answer("?", model="judge"), tmp_path, seen, resolver=False)
    finally:
        reset_config()
    assert results == ["blue"] and len(seen) == 1


def test_appl_imports_without_inspect_ai() -> None:
    code = (
        "import sys; sys.modules['inspect_ai'] = None\n"
        "import appl, appl.models.inspect_provider as p\n"
        "from appl.models import get_model\n"
        "print('ok', p.PROVIDER)\n"
    )
    cp = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert cp.returncode == 0 and cp.stdout.split() == ["ok", "inspect"], cp.stderr
