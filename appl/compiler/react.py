"""The ReAct baseline: one tool call per model turn, observation appended, until Finish.

Same tools (PlanTool: timeouts and retries apply the same way), same model seam, so the
compiler and ReAct can be compared on equal terms. Two modes:
  * "text": the model writes `Thought: ...` / `Action: tool(args)` (the argument syntax of
    plan lines, without references), or `Action: Finish(answer)`;
  * "tools": native tool calls; a reply without tool calls is the answer.
Every failure (unparseable action, unknown tool, bad arguments, a raising tool) becomes an
`Observation: Error: ...` the model sees on its next turn.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from appl.compiler.compiler import ModelRef, parse_join, resolve_model, traced_request
from appl.compiler.parse import PlanSyntaxError, parse_call
from appl.compiler.plan import RoundLimitError, text_of
from appl.compiler.prompts import REACT_PROMPT, clip, fill
from appl.compiler.tools import PlanTool, as_plan_tools
from appl.core import library_run
from appl.types import GenRequest, Message, Usage

_ACTION_LINE = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.M | re.I)


@dataclass(slots=True)
class ReactTurn:
    text: str  # the model's reply
    action: str  # tool name, "Finish", or "" when no action could be read
    args: dict[str, Any] | None = None
    observation: str = ""
    ok: bool = True
    llm_s: float = 0.0
    tool_s: float = 0.0


@dataclass(slots=True)
class ReactResult:
    question: str
    answer: str | None
    turns: list[ReactTurn]
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    llm_calls: int = 0
    wall_s: float = 0.0


async def _run_tool(
    tool: PlanTool, args: dict[str, Any], pool: ThreadPoolExecutor
) -> tuple[bool, Any]:
    for attempt in range(tool.retries + 1):
        try:
            async with asyncio.timeout(tool.timeout_s):
                return True, await tool.call(args, pool)
        except TimeoutError:
            error: str = f"TimeoutError: {tool.name} timed out after {tool.timeout_s}s"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        if attempt < tool.retries and tool.retry_backoff_s:
            await asyncio.sleep(tool.retry_backoff_s * 2**attempt)
    return False, error


def _bind(
    tool: PlanTool, positional: tuple[Any, ...], keywords: tuple[tuple[str, Any], ...]
) -> dict[str, Any]:
    names = tool.param_names
    if len(positional) > len(names):
        raise ValueError(f"{tool.name} takes {len(names)} argument(s), got {len(positional)}")
    args = dict(zip(names, positional, strict=False))
    args.update(keywords)
    return args


async def run_react(
    question: str,
    tools: Iterable[Any],
    *,
    model: ModelRef = None,
    prompt: str | None = None,
    mode: Literal["text", "tools"] = "text",
    max_turns: int = 12,
    temperature: float | None = None,
) -> ReactResult:
    """Answer with a ReAct loop; raises RoundLimitError (with `.result`) after max_turns."""
    table = as_plan_tools(tools)
    api, alias = resolve_model(model)
    # the whole loop inside one run of the trace (appl.core.library_run)
    with library_run("run_react") as (run_id, path):
        t0 = time.perf_counter()
        messages = [Message("user", f"Question: {question}")]
        if mode == "text":
            messages.insert(0, Message("system", fill(prompt or REACT_PROMPT, table)))
        elif prompt:
            messages.insert(0, Message("system", fill(prompt, table)))
        result = ReactResult(question, None, [])
        # One thread per turn at most, but a private pool keeps the comparison with the compiler
        # free of asyncio's shared default pool.
        pool = ThreadPoolExecutor(4, thread_name_prefix="appl-react")
        try:
            for turn_no in range(max_turns):
                request = GenRequest(model=alias, messages=list(messages), temperature=temperature)
                if mode == "text":
                    request.stop = ["Observation:"]  # the model must not invent the observation
                else:
                    request.tools = [t.spec for t in table.values()]
                started = time.perf_counter()
                response = await traced_request(
                    run_id, f"{path}/turn@T{turn_no}", (api, alias), request
                )
                llm_s = time.perf_counter() - started
                result.usage = result.usage + response.usage
                result.cost_usd += response.cost_usd
                result.llm_calls += 1
                if mode == "tools":
                    if not response.tool_calls:
                        result.turns.append(ReactTurn(response.text, "Finish", llm_s=llm_s))
                        result.answer = response.text.strip()
                        break
                    messages.append(
                        Message("assistant", response.text or None, response.tool_calls)
                    )
                    for call in response.tool_calls:
                        turn = ReactTurn(response.text, call.name, llm_s=llm_s)
                        tool = table.get(call.name)
                        try:
                            args = json.loads(call.arguments or "{}")
                            if tool is None:
                                raise ValueError(
                                    f"unknown tool {call.name!r}; available: {sorted(table)}"
                                )
                        except ValueError as exc:
                            turn.ok, turn.observation = False, f"Error: {exc}"
                        else:
                            turn.args = args
                            await _observe(turn, tool, args, pool)
                        result.turns.append(turn)
                        messages.append(Message("tool", turn.observation, tool_call_id=call.id))
                    continue
                text = response.text
                turn = ReactTurn(text, "", llm_s=llm_s)
                result.turns.append(turn)
                lines = _ACTION_LINE.findall(text)
                if lines and re.match(r"Finish\b", lines[0], re.I):
                    turn.action = "Finish"
                    result.answer = parse_join(f"Action: {lines[0]}").text
                    break
                messages.append(Message("assistant", text))
                try:
                    if not lines:
                        raise PlanSyntaxError("no 'Action: tool(args)' line")
                    name, positional, keywords = parse_call(lines[0], allow_refs=False)
                    tool = table.get(name)
                    turn.action = name
                    if tool is None:
                        raise ValueError(f"unknown tool {name!r}; available: {sorted(table)}")
                    args = _bind(tool, positional, keywords)
                except ValueError as exc:  # PlanSyntaxError is a ValueError
                    turn.ok, turn.observation = False, f"Error: {exc}"
                else:
                    turn.args = args
                    await _observe(turn, tool, args, pool)
                messages.append(Message("user", f"Observation: {turn.observation}"))
        finally:
            # A timed-out sync tool may still hold its thread: never wait for it.
            pool.shutdown(wait=False, cancel_futures=True)
        result.wall_s = time.perf_counter() - t0
        if result.answer is None:
            raise RoundLimitError(f"ReAct gave no answer within {max_turns} turns", result=result)
        return result


async def _observe(
    turn: ReactTurn, tool: PlanTool, args: dict[str, Any], pool: ThreadPoolExecutor
) -> None:
    started = time.perf_counter()
    ok, value = await _run_tool(tool, args, pool)
    turn.tool_s = time.perf_counter() - started
    turn.ok = ok
    turn.observation = clip(text_of(value)) if ok else f"Error: {value}"
