"""The kernel agent in the real gym, with a scripted model.

The fast tests skip the baseline boot (check_baseline=False) and only reach the patch and
build stages; the slow one boots QEMU: the unpatched baseline, then the fix (~15 s a boot
here with one reproducer run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.kernel import KernelAgent
from agents.kernel.agent import describe_stop
from appl.testing import Rule
from codegen_eval.kernelgym import KernelGym, bundled_bug

BUG = "t0-null-deref"
FIX = bundled_bug(BUG).developer_patch


def _spaces_for_tabs(diff: str) -> str:
    """A classic model mistake: the file is indented with tabs, the diff with spaces."""
    out = []
    for line in diff.split("\n"):
        if line[:1] in (" ", "+") and not line.startswith("+++"):
            line = line[0] + line[1:].replace("\t", "    ")
        out.append(line)
    return "\n".join(out)


# no context line matches the file: `patch` rejects it even with fuzz
MALFORMED = _spaces_for_tabs(FIX)
# applies, but does not compile
BROKEN = FIX.replace("return -ENOENT;", "return -ENOENT")


def _texts(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


def _feedback_count(body: dict[str, Any]) -> int:
    return sum("Result of your patch" in str(m.get("content") or "") for m in body["messages"])


async def test_apply_failure_then_build_failure_feed_back(scripted, tmp_path: Path) -> None:
    replies = {0: f"```diff\n{MALFORMED}```", 1: f"Fixed:\n```diff\n{BROKEN}```"}
    server = scripted([Rule(reply=lambda body: replies[min(_feedback_count(body), 1)])])
    log = tmp_path / "agent.jsonl"
    env = KernelGym(runs=1, check_baseline=False, log_path=log)
    result = await KernelAgent(env, max_steps=2, log_path=log).fix(BUG)
    assert [s.outcome for s in result.steps] == ["apply_failed", "build_failed"]
    assert not result.resolved and result.stopped == "max_steps"
    second = _texts(server.requests[1])
    # the rejection and the file's real text (numbered, with tabs) went back to the model
    assert "apply_failed" in second and "e = kgym_null_lookup(key);" in second
    assert "   40\t\tstrim(key);" in second
    assert "error" in result.steps[1].detail and "kgym_null.c" in result.steps[1].detail
    # the source of the function named in the title was shown up front
    assert "kgym_null_write" in _texts(server.requests[0])
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events.count("step") == 2 and events.count("agent_turn") == 2
    assert events[-1] == "agent_end"


async def test_build_check_feeds_errors_back_without_spending_steps(
    scripted, tmp_path: Path
) -> None:
    """--build-check: the same two bad edits come back to the model as build-check results,
    and the gym is never stepped (no VM, no step used)."""
    replies = {0: f"```diff\n{MALFORMED}```", 1: f"Fixed:\n```diff\n{BROKEN}```"}
    server = scripted([Rule(reply=lambda body: replies[min(_feedback_count(body), 1)])])
    log = tmp_path / "agent.jsonl"
    env = KernelGym(runs=1, check_baseline=False, log_path=log)
    agent = KernelAgent(env, max_steps=2, max_turns=2, log_path=log, build_check=True)
    result = await agent.fix(BUG)
    assert result.steps == [] and result.build_checks_failed == 2 and result.turns == 2
    second = _texts(server.requests[1])
    assert "Build check of your edit" in second and "apply_failed" in second
    events = [json.loads(line) for line in log.read_text().splitlines()]
    checks = [e["outcome"] for e in events if e["event"] == "build_check"]
    assert checks == ["apply_failed", "build_failed"]
    assert not [e for e in events if e["event"] == "step"]


async def test_reply_without_diff_costs_a_turn_not_a_step(scripted) -> None:
    server = scripted([Rule(replies=["The lookup may return NULL."])])
    env = KernelGym(runs=1, check_baseline=False)
    lines: list[str] = []
    agent = KernelAgent(env, max_steps=2, max_turns=2, progress=lines.append)
    result = await agent.fix(BUG)
    assert result.steps == [] and result.turns == 2 and result.stopped == "max_turns"
    assert "That was no fix" in _texts(server.requests[1])
    # each answer's fate is on its own progress line, and the stop names its limit
    assert sum("-> no usable edit" in line for line in lines) == 2, lines
    why = describe_stop(result, agent.max_steps, agent.max_turns)
    assert why.startswith("max_turns: 2 model calls, 0 patches") and "--max-turns 2" in why


def test_a_read_right_after_the_same_read_is_already_shown(tmp_path: Path) -> None:
    from agents.kernel.tools import SourceTools
    from codegen_eval.kernelgym.env import SourceView

    (tmp_path / "m.c").write_text("int a;\nint b;\n")
    tools = SourceTools(SourceView(tmp_path), ["m.c"])
    first = tools.read_file("m.c")
    assert "int a;" in first
    again = tools.read_file("m.c")
    assert again.startswith("Already shown") and "int a;" not in again
    tools.read_file("m.c", 2, 2)  # another read in between: the first may have been trimmed
    assert "int a;" in tools.read_file("m.c")


def _model(body: dict[str, Any]) -> Any:
    """Turn 1: read the function, then send a malformed diff; turn 2: the real fix."""
    if _feedback_count(body) == 0:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return {
                "content": "",
                "tool_calls": [{"name": "read_function", "arguments": {"name": "kgym_null_write"}}],
            }
        return f"The lookup result is not checked.\n```diff\n{MALFORMED}```"
    return f"```diff\n{FIX}```"


@pytest.mark.slow
async def test_malformed_patch_then_real_fix_resolves_the_bug(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(reply=_model)])
    env = KernelGym(runs=1, log_path=tmp_path / "gym.jsonl")
    result = await KernelAgent(env, max_steps=3).fix(BUG)
    assert [s.outcome for s in result.steps] == ["apply_failed", "resolved"]
    assert result.resolved and result.final_patch == FIX
    assert result.matches_fix is True and result.steps[-1].matches_fix is True  # the dev's fix
    assert result.tool_calls == 1
    first = _texts(server.requests[0])
    # the real baseline crash, parsed: title, RIP and stack
    assert "BUG: unable to handle kernel NULL pointer dereference in kgym_null_write" in first
    assert "RIP kgym_null_write" in first and "proc_reg_write" in first
    # the tool ran on the real source and its result reached the model
    tool_msgs = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs and "e = kgym_null_lookup(key);" in tool_msgs[0]["content"]
    # the second turn kept the tool exchange and carried the apply failure
    last = server.requests[-1]
    assert any(m["role"] == "tool" for m in last["messages"])
    assert "apply_failed" in _texts(last)


@pytest.mark.slow
async def test_build_check_then_real_fix_resolves_in_one_step(scripted, tmp_path: Path) -> None:
    # The malformed diff is caught by the build check; the fix that follows builds (the check
    # and the step share the build cache) and resolves the bug in the first and only step.
    log = tmp_path / "gym.jsonl"
    scripted([Rule(reply=_model)])
    env = KernelGym(runs=1, log_path=log)
    result = await KernelAgent(env, max_steps=3, build_check=True).fix(BUG)
    assert [s.outcome for s in result.steps] == ["resolved"], result
    assert result.resolved and result.build_checks_failed == 1 and result.final_patch == FIX
    checks = [json.loads(x) for x in log.read_text().splitlines()]
    assert [e["outcome"] for e in checks if e["event"] == "build_check"] == [
        "apply_failed",
        "built",
    ]


def test_a_tamper_result_tells_the_model_what_was_refused() -> None:
    from agents.kernel.agent import _feedback
    from codegen_eval.kernelgym.scoring import Outcome, StepResult

    step = StepResult(
        Outcome.TAMPER,
        detail="tamper:filp_open: file I/O is not something a fix adds (also new: kernel_write)",
    )
    text = _feedback(step, "", None)  # type: ignore[arg-type]
    assert "refused before boot" in text and "tamper:filp_open" in text
    assert "kernel_write" in text and "file I/O" in text


@pytest.mark.slow
async def test_a_plausible_patch_in_the_callee_is_reported_as_not_the_fix(
    scripted, tmp_path: Path
) -> None:
    """The agent's run ends `resolved` (plausible), and its result, table and progress say
    the patch does not change what the developer's fix changes."""
    from agents.kernel.cli import localization_lines, result_table
    from tests.codegen_eval.kernelgym.test_fix_match_vm import SPARE_ENTRY

    scripted([Rule(reply=f"```diff\n{SPARE_ENTRY}```")])
    said: list[str] = []
    env = KernelGym(runs=1, log_path=tmp_path / "gym.jsonl")
    result = await KernelAgent(env, max_steps=1, progress=said.append).fix(BUG)
    assert result.resolved and result.matches_fix is False
    assert any("does NOT change what the developer fix changes" in line for line in said)
    row = result.to_dict()
    lines = "\n".join(localization_lines(row))
    assert "the developer fix changes: kgym_null.c:kgym_null_write" in lines
    assert "the last patch changes: kgym_null.c:kgym_null_lookup" in lines
    assert result_table([row]).caption.startswith(
        "resolved (plausible) 1/1, matching the developer fix 0/1"
    )
    # What the agent is handed never says where the developer's fix is; the gym keeps it.
    step = await env.astep(SPARE_ENTRY)
    assert step.localization is None and step.matches_fix is None
    assert env.steps[-1].localization is not None and env.steps[-1].matches_fix is False
