"""The kernel agent against a server that behaves like the embedded llama.cpp one: a small
context window (requests over it refused with HTTP 400) and tools only through grammar-forced
JSON (capabilities.auto_tool_choice = false). The scripted server is real HTTP; nothing is
monkeypatched. These reach the patch and build stages only (no baseline boot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents.kernel import KernelAgent
from agents.kernel.edits import functions_in
from appl.testing import Rule
from codegen_eval.kernelgym import KernelGym

BUG = "t0-null-deref"
# a search/replace edit that applies but does not compile (missing semicolon)
BROKEN_EDIT = {
    "tool": "search_replace",
    "arguments": {
        "path": "/tmp/kgym-build/kgym-mod-a1b2c3/src/kgym_null.c",  # as the crash report says
        "search": "    e = kgym_null_lookup(key);",  # spaces where the file has a tab
        "replace": "\te = kgym_null_lookup(key);\n\tif (!e)\n\t\treturn -ENOENT",
    },
}


def _forced_tool(body: dict[str, Any]) -> str | None:
    """The tool a call is forced to: under emulation, a schema that admits only it."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return (schema.get("properties") or {}).get("tool", {}).get("const")


def _forced(body: dict[str, Any]) -> bool:
    """The forced function rewrite: free text (no grammar) after the agent's request for it."""
    last = body["messages"][-1]["content"] or ""
    return "response_format" not in body and "Now write the fix" in last


# the same broken fix as the whole function in a ```c block, indented with spaces as models
# write it, with the line numbers it was shown, and quotes (no JSON string to escape them in)
FUNCTION_ANSWER = """Here is the fix:
```c
   30\tstatic ssize_t kgym_null_write(struct file *file, const char __user *ubuf,
   31\t\t\t\t       size_t len, loff_t *off)
   32\t{
   33\t    char key[16] = {};
   34\t    struct kgym_entry *e;
   35\t
   36\t    if (len >= sizeof(key))
   37\t        return -EINVAL;
   38\t    if (copy_from_user(key, ubuf, len))
   39\t        return -EFAULT;
   40\t    strim(key);
   41\t    e = kgym_null_lookup(key);
   42\t    if (!e)
   43\t        return -ENOENT
   44\t    e->value++;
   45\t    pr_info("kgym_null: %s -> %d\\n", key, e->value);
   46\t    return len;
   47\t}
```"""


# the same broken fix as a line-range insert before line 42 (`e->value++;`)
LINES_EDIT = {
    "tool": "replace_lines",
    "arguments": {"path": "kgym_null.c", "first_line": 42, "last_line": 41,
                  "new_text": "\tif (!e)\n\t\treturn -ENOENT"},
}  # fmt: skip
NULL_SOURCE = (
    Path(__file__).resolve().parents[2]
    / "codegen_eval/kernelgym/bugs"
    / BUG
    / "src"
    / "kgym_null.c"
).read_text()
LIKE_LOCAL = {"capabilities": {"auto_tool_choice": False, "n": False}}


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_context_overflow_is_retried_smaller_not_fatal(scripted, tmp_path: Path) -> None:
    # The alias claims a large window; the server has 600 (of its word-tokens): the first
    # request is refused, the agent learns the real window from the error and cuts.
    server = scripted(
        [
            Rule(match=_forced, reply=json.dumps(BROKEN_EDIT)),
            Rule(reply=json.dumps(BROKEN_EDIT)),
        ],
        context_window=600,
        model={**LIKE_LOCAL, "context_window": 100_000},
    )
    log = tmp_path / "agent.jsonl"
    env = KernelGym(runs=1, check_baseline=False, log_path=log)
    result = await KernelAgent(env, max_steps=1, log_path=log).fix(BUG)
    assert server.overflows >= 1
    assert len(server.requests) > server.overflows  # a smaller request went through
    assert [s.outcome for s in result.steps] == ["build_failed"]
    # the agent wrote the diff: relative path, the file's tab indentation
    patch = result.steps[0].patch
    assert patch.startswith("--- a/kgym_null.c\n+++ b/kgym_null.c\n")
    assert "+\tif (!e)\n" in patch and "\n \te = kgym_null_lookup(key);\n" in patch
    assert result.stopped == "max_steps" and result.errors == []
    events = _events(log)
    assert events[-1]["event"] == "agent_end"
    call = next(e for e in events if e["event"] == "agent_call")
    assert call["window"] == 600  # learnt from the server's message
    assert call["tool_results"][0]["content"].startswith("Edit accepted")


async def test_bad_json_from_the_model_ends_the_bug_with_a_result(scripted, tmp_path) -> None:
    # Without the grammar (a server that ignores response_format) a small model answers in
    # prose: every reply is unusable; the bug ends with a result, no exception escapes.
    server = scripted([Rule(reply="Sure! The fix is to check e for NULL.")], model=LIKE_LOCAL)
    log = tmp_path / "agent.jsonl"
    env = KernelGym(runs=1, check_baseline=False, log_path=log)
    agent = KernelAgent(env, max_steps=2, tool_rounds=10, log_path=log)  # never forced here
    result = await agent.fix(BUG)
    assert result.stopped == "model_error" and not result.resolved and result.steps == []
    assert len(result.errors) == 3 and "non-JSON" in result.errors[0]
    assert len(server.requests) == 3
    events = _events(log)
    assert [e["event"] for e in events].count("agent_error") == 3
    assert events[-1]["event"] == "agent_end" and events[-1]["stopped"] == "model_error"


async def test_failed_search_goes_back_then_forced_edit(scripted, tmp_path: Path) -> None:
    # First a search text that is not in the file: the tool says so (with the nearest real
    # lines); the next call is forced to the other edit tool, replace_lines.
    bad = {"tool": "search_replace", "arguments": {**BROKEN_EDIT["arguments"]}}
    bad["arguments"]["search"] = "e = lookup(key);"
    server = scripted(
        [
            Rule(match=lambda b: _forced_tool(b) == "replace_lines", reply=json.dumps(LINES_EDIT)),
            Rule(reply=json.dumps(bad)),
        ],
        model=LIKE_LOCAL,
    )
    env = KernelGym(runs=1, check_baseline=False)
    result = await KernelAgent(env, max_steps=1, tool_rounds=2).fix(BUG)
    assert [s.outcome for s in result.steps] == ["build_failed"]
    second = json.dumps(server.requests[1])
    assert "search text was not found in kgym_null.c" in second
    assert "e = kgym_null_lookup(key);" in second  # the nearest real line, shown
    assert _forced_tool(server.requests[1]) == "replace_lines"
    assert _forced_tool(server.requests[0]) is None


def _is_plan_request(body: dict[str, Any]) -> bool:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") == "plan"


PLAN = {
    "thought": "read the crashing function and who looks the entry up",
    "steps": [
        {"id": 1, "tool": "read_function", "args": {"name": "kgym_null_write"}},
        {"id": 2, "tool": "grep", "args": {"pattern": "kgym_null_lookup", "path": ""}},
    ],
}


async def test_planner_mode_fans_out_lookups_then_the_joiner_edits(scripted, tmp_path) -> None:
    server = scripted(
        [
            Rule(match=_is_plan_request, reply=json.dumps(PLAN)),
            Rule(
                match="root cause of a Linux kernel crash",
                reply="Thought: e can be NULL.\nAction: Finish(check e after kgym_null_lookup)",
            ),
            Rule(match=_forced, reply=FUNCTION_ANSWER),
        ],
        model={**LIKE_LOCAL, "capabilities": {**LIKE_LOCAL["capabilities"], "json_schema": True}},
    )
    log = tmp_path / "agent.jsonl"
    env = KernelGym(runs=1, check_baseline=False)
    result = await KernelAgent(env, mode="planner", max_steps=1, log_path=log).fix(BUG)
    assert [s.outcome for s in result.steps] == ["build_failed"]
    assert result.turns == 3 and result.tool_calls == 2  # two lookups; the edit: a code block
    plan_request = next(b for b in server.requests if _is_plan_request(b))
    schema = plan_request["response_format"]["json_schema"]["schema"]
    tools = {
        v["properties"]["tool"]["const"] for v in schema["properties"]["steps"]["items"]["oneOf"]
    }
    assert tools == {"read_function", "grep", "read_file"}
    edit_request = next(b for b in server.requests if _forced(b))
    text = json.dumps(edit_request)
    # the lookups' results and the joiner's analysis reached the edit call
    assert "e = kgym_null_lookup(key);" in text and "check e after kgym_null_lookup" in text
    # the rewrite became a minimal diff in the file's tabs: only the new lines change
    added = [x for x in result.steps[0].patch.split("\n") if x.startswith("+") and x[1:2] != "+"]
    assert added == ["+\tif (!e)", "+\t\treturn -ENOENT"]
    plan_event = next(e for e in _events(log) if e["event"] == "agent_plan")
    assert plan_event["valid_steps"] == 2 and plan_event["issues"] == []


async def test_a_refused_edit_switches_tools_and_a_repeat_raises_temperature(scripted) -> None:
    # the 0.5B model's real failure: the same unfindable search text again and again
    bad = {"tool": "search_replace", "arguments": {"path": "kgym_null.c", "search": "x_\\w+",
           "replace": "y"}}  # fmt: skip
    server = scripted(
        [
            Rule(match=lambda b: _forced_tool(b) == "replace_lines", reply=json.dumps(LINES_EDIT)),
            Rule(reply=json.dumps(bad)),
        ],
        model=LIKE_LOCAL,
    )
    env = KernelGym(runs=1, check_baseline=False)
    result = await KernelAgent(env, max_steps=1, tool_rounds=3, temperature=0.2).fix(BUG)
    assert [s.outcome for s in result.steps] == ["build_failed"]  # the line edit ran
    first, second, third = server.requests[:3]
    assert _forced_tool(first) is None and first["temperature"] == 0.2
    assert _forced_tool(second) is None and second["temperature"] == 0.2
    # the same refused edit twice: told so, hotter, and forced to the other edit tool
    assert "You sent exactly this edit before" in json.dumps(third)
    assert third["temperature"] == 0.8 and _forced_tool(third) == "replace_lines"
    assert "+\tif (!e)\n+\t\treturn -ENOENT\n" in result.steps[0].patch


async def test_a_refused_rewrite_says_why_and_the_next_forced_edit_is_search_replace(
    scripted,
) -> None:
    # the function written back unchanged, as small models do: the edit changes nothing
    same = dict(functions_in(NULL_SOURCE))["kgym_null_write"]
    cut = f"```c\n{same}\n```"
    server = scripted(
        [
            Rule(
                match=lambda b: _forced_tool(b) == "search_replace", reply=json.dumps(BROKEN_EDIT)
            ),
            Rule(match=_forced, reply=cut),
        ],
        model=LIKE_LOCAL,
    )
    env = KernelGym(runs=1, check_baseline=False)
    result = await KernelAgent(env, max_steps=1, tool_rounds=1).fix(BUG)  # every call forced
    assert [s.outcome for s in result.steps] == ["build_failed"]
    first, second = server.requests[:2]
    assert _forced(first) and "response_format" not in first  # free text, no grammar
    assert "the edit changes nothing" in json.dumps(second)
    assert _forced_tool(second) == "search_replace"


async def test_a_patch_already_tried_is_not_stepped_again(scripted) -> None:
    # the model sends the same broken edit every time: one step, then it is told so instead
    server = scripted([Rule(reply=json.dumps(BROKEN_EDIT))], model=LIKE_LOCAL)
    env = KernelGym(runs=1, check_baseline=False)
    result = await KernelAgent(env, max_steps=2, max_turns=3, tool_rounds=10).fix(BUG)
    assert [s.outcome for s in result.steps] == ["build_failed"]
    assert result.turns == 3 and result.stopped == "max_turns"
    told = json.dumps(server.requests[2])
    assert "This is the same patch as your try 1, whose result was build_failed" in told
    assert server.requests[2]["temperature"] == 0.8
