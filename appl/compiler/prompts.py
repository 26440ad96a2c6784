"""Default prompts of the planner, the joiner and the ReAct baseline, and how results are
rendered into them. `{tools}` in a custom prompt is replaced by the tool list."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from appl.compiler.plan import PlanIssue, StepRecord, text_of
from appl.compiler.tools import PlanTool
from appl.types import ToolSpec

PLANNER_PROMPT = """\
You are the planner of an LLM compiler. Write a plan of tool calls that answers the question.
Steps run in parallel as soon as their inputs are ready, so split independent work into
separate steps.

Tools:
{tools}
join() - ends the plan; the joiner then reads every result and answers.

Format: one step per line, `N. tool(arguments)`, then `join()` on the last line.
- Number steps consecutively, starting from the number you are given.
- Arguments are JSON-like literals ("text", 3, 2.5, true, null, [lists], {dicts}),
  positional or name=value.
- $N passes step N's result as an argument: search($1). A field or item of it: $2.price,
  $2.items[0], ${2}.items[0].name.
- Inside a quoted string only ${N} (with braces) inserts step N's result:
  math("${1} - ${2}"). Any other $ is literal text: "costs $10" means ten dollars.
  Write $${ for a literal ${.
- A step may only use the results of steps listed above it.
- You may add `Thought: ...` lines. Do not write anything else.
"""

PLANNER_JSON_PROMPT = """\
You are the planner of an LLM compiler. Write a plan of tool calls that answers the question.
Steps run in parallel as soon as their inputs are ready, so split independent work into
separate steps.

Tools:
{tools}

Answer with one JSON object:
{"thought": "...", "steps": [{"id": 1, "tool": "search", "args": {"query": "..."}}, ...]}
- Number steps consecutively, starting from the number you are given.
- {"$ref": "2"} passes step 2's result as an argument value; {"$ref": "2.items[0]"} a part of it.
- Inside a string only ${2} (with braces) inserts step 2's result; any other $ is literal
  text. Write $${ for a literal ${.
- A step may only use the results of steps listed before it.
"""

PLANNER_SCHEMA_PROMPT = """\
You are the planner of an LLM compiler. Write a plan of tool calls that answers the question.
Steps run in parallel as soon as their inputs are ready, so split independent work into
separate steps.

Tools:
{tools}

Answer with one JSON object (the server enforces its shape):
{"thought": "...", "steps": [{"id": 1, "tool": "<tool name>", "args": {<the tool's arguments>}}]}
- Number steps consecutively, starting from the number you are given.
- To use step 2's result inside a text argument write ${2} in the string. That is the only
  way to refer to a result. Any other $ is literal text.
- A step may only use the results of steps listed before it.
"""

JOINER_PROMPT = """\
You are the joiner of an LLM compiler. A planner wrote a plan of tool calls for the question
and the calls have run. Read the results and either answer the question or ask for a new plan
(when results are missing, failed or insufficient).

Reply in exactly this format:
Thought: <your reasoning about the results>
Action: Finish(<the final answer>)
or
Thought: <your reasoning>
Action: Replan(<what is missing or went wrong, for the planner>)
"""

REACT_PROMPT = """\
You answer questions using tools, one tool call at a time. After each call you see its
result as an Observation, then you decide the next step.

Tools:
{tools}

Reply in exactly this format, one action per reply:
Thought: <your reasoning>
Action: tool(arguments)
Arguments are JSON-like literals ("text", 3, true, [lists]), positional or name=value.
When you know the answer:
Thought: <your reasoning>
Action: Finish(<the final answer>)
"""

PLAN_TOOL = ToolSpec(
    name="make_plan",
    description="Submit the plan: tool calls that may run in parallel and refer to earlier results.",
    parameters={
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "tool": {"type": "string"},
                        "args": {"type": "object"},
                    },
                    "required": ["id", "tool", "args"],
                },
            },
        },
        "required": ["steps"],
    },
)


def plan_schema(
    tools: Iterable[PlanTool], first_id: int = 1, max_steps: int = 8
) -> dict[str, object]:
    """The JSON schema of a plan for `plan_format="schema"`: at most `max_steps` steps, each
    with an integer id in range, a known tool name and exactly that tool's arguments (its own
    schema, nothing else); a short thought. Enforced by a grammar on servers that can (e.g.
    llama.cpp), so a plan is well-formed by construction. References have one form, `${N}`
    inside a string argument (checked by the validator, like in every format)."""
    ids = list(range(first_id, first_id + max_steps))
    variants = []
    for t in tools:
        params = dict(t.parameters)
        params.setdefault("type", "object")
        params["additionalProperties"] = False
        params.pop("title", None)
        variants.append(
            {
                "type": "object",
                "properties": {"id": {"enum": ids}, "tool": {"const": t.name}, "args": params},
                "required": ["id", "tool", "args"],
                "additionalProperties": False,
            }
        )
    step: dict[str, object] = variants[0] if len(variants) == 1 else {"oneOf": variants}
    return {
        "type": "object",
        "properties": {
            "thought": {"type": "string", "maxLength": 400},
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps},
        },
        "required": ["thought", "steps"],
        "additionalProperties": False,
    }


def plan_response_format(tools: Iterable[PlanTool], first_id: int = 1) -> dict[str, object]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": plan_schema(tools, first_id)},
    }


MAX_RESULT_CHARS = 2000  # per step, in prompts: a huge result must not crowd out the others


def tool_list(tools: Iterable[PlanTool]) -> str:
    return "\n".join(t.describe() for t in tools)


def fill(template: str, tools: Mapping[str, PlanTool]) -> str:
    # str.replace, not str.format, so a user's prompt may contain other braces.
    return template.replace("{tools}", tool_list(tools.values()))


def clip(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def render_record(rec: StepRecord) -> str:
    head = rec.step.render()
    if rec.status == "done":
        return f"{head}\n   -> {clip(text_of(rec.result))}"
    if rec.status == "failed":
        return f"{head}\n   -> FAILED: {clip(rec.error or '')}"
    if rec.status == "skipped":
        return f"{head}\n   -> SKIPPED: {clip(rec.error or '')}"
    return f"{head}\n   -> (not run: {rec.status})"


def render_results(records: Iterable[StepRecord], issues: Iterable[PlanIssue]) -> str:
    parts = ["Results:"]
    parts += [render_record(r) for r in records] or ["(no step ran)"]
    problems = [str(i) for i in issues]
    if problems:
        parts.append("Problems in the plan (rejected steps did not run):")
        parts += [f"- {p}" for p in problems]
    return "\n".join(parts)
