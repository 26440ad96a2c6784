"""plan_format="schema": the planner's reply is constrained by a JSON schema of the plan
(known tools, their argument schemas, integer ids), the default where a server declares that
it enforces schemas."""

from __future__ import annotations

import json

from appl.compiler import run_compiler, tool
from appl.compiler.prompts import plan_schema
from appl.compiler.tools import as_plan_tools
from appl.testing import Rule


@tool
def search(query: str) -> str:
    """Search."""
    return {"Paris": "2102650", "Berlin": "3850809"}.get(query, "no result")


@tool
def math(expression: str) -> str:
    """Evaluate + of two integers."""
    a, b = expression.split("+")
    return str(int(a) + int(b))


PLAN = {
    "thought": "two searches, then add",
    "steps": [
        {"id": 1, "tool": "search", "args": {"query": "Paris"}},
        {"id": 2, "tool": "search", "args": {"query": "Berlin"}},
        {"id": 3, "tool": "math", "args": {"expression": "${1}+${2}"}},
    ],
}


def test_schema_names_each_tool_with_its_own_arguments() -> None:
    schema = plan_schema(as_plan_tools([search, math]).values(), first_id=4, max_steps=3)
    steps = schema["properties"]["steps"]
    assert steps["maxItems"] == 3 and steps["minItems"] == 1
    by_tool = {v["properties"]["tool"]["const"]: v for v in steps["items"]["oneOf"]}
    assert set(by_tool) == {"search", "math"}
    assert by_tool["search"]["properties"]["id"] == {"enum": [4, 5, 6]}
    args = by_tool["math"]["properties"]["args"]
    assert args["required"] == ["expression"] and args["additionalProperties"] is False


async def test_declared_json_schema_makes_schema_plans_the_default(scripted) -> None:
    def is_plan(body: dict) -> bool:
        return "response_format" in body

    server = scripted(
        [
            Rule(match=is_plan, reply=json.dumps(PLAN)),
            Rule(reply="Thought: ok\nAction: Finish(5953459)"),
        ],
        model={"capabilities": {"json_schema": True}},
    )
    result = await run_compiler("Population of Paris plus Berlin?", [search, math])
    assert result.answer == "5953459" and result.issues == []
    assert [r.result for r in result.steps] == ["2102650", "3850809", "5953459"]
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "plan"


async def test_undeclared_servers_keep_line_plans(scripted) -> None:
    server = scripted([Rule(match="You are the planner", reply='1. search("Paris")\njoin()\n'),
                       Rule(reply="Thought: ok\nAction: Finish(2102650)")])  # fmt: skip
    result = await run_compiler("Population of Paris?", [search, math])
    assert result.answer == "2102650"
    assert "response_format" not in server.requests[0] and server.requests[0].get("stream")


def test_a_raw_newline_in_a_json_plan_string_does_not_lose_the_plan() -> None:
    from appl.compiler import ParsedCall, parse_json_plan

    text = '{"thought": "first\nthen", "steps": [{"id": 1, "tool": "search", "args": {"query": "a\tb"}}]}'
    items = parse_json_plan(text)
    calls = [i for i in items if isinstance(i, ParsedCall)]
    assert len(calls) == 1 and calls[0].tool == "search"
