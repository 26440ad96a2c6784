"""Planner mode: the investigation phase as one LLM-compiler plan (appl.compiler).

The planner sees the crash (title, stack, files) and plans the source lookups it needs - the
functions on the stack, their callers, the struct definitions, a grep for the symbol - as one
plan whose steps run in parallel. The joiner reads the results and says what the root cause
is and which lines must change; the agent then asks for the edit itself (a forced
replace_function call, see agent.py), so the joiner's analysis becomes the first patch.

Lookup results are capped (LOOKUP_CHARS) so that the joiner's prompt - every result at once -
fits a 4096-token window. On servers that enforce JSON schemas (the local model) the plan is
schema-constrained: known tool names, their argument schemas, integer ids.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agents.kernel.edits import strip_build_paths
from agents.kernel.tools import SourceTools
from appl import ApplError
from appl.compiler import RoundLimitError, run_compiler
from codegen_eval.kernelgym.crash import parse_console
from codegen_eval.kernelgym.env import Observation

if TYPE_CHECKING:
    from agents.kernel.agent import AgentResult, KernelAgent

LOOKUP_CHARS = 900

JOINER = """\
You read the results of source lookups made to find the root cause of a Linux kernel crash.
Say what the root cause is and exactly which lines must change and how, in at most four
sentences. Reply in exactly this format:
Thought: <your reasoning about the results>
Action: Finish(<the root cause and the change to make>)
"""


def _cap(text: str) -> str:
    if len(text) <= LOOKUP_CHARS:
        return text
    return text[:LOOKUP_CHARS] + f"\n... [{len(text) - LOOKUP_CHARS} more characters]"


def lookup_tools(tools: SourceTools) -> list[Any]:
    """The read-only tools, with results short enough for the joiner's prompt."""

    def read_function(name: str) -> str:
        """Show the definition of a C function, with its file and line numbers.

        Args:
            name: The function's name, e.g. "foo_write".
        """
        return _cap(tools.read_function(name))

    def grep(pattern: str, path: str = "") -> str:
        """Search the bug's files for a regular expression (callers, uses, struct definitions).

        Args:
            pattern: A Python regular expression: a function name, or "struct NAME {".
            path: Only this file; empty: all files of the bug.
        """
        return _cap(tools.grep(pattern, path))

    def read_file(path: str, start_line: int = 1, end_line: int = 0) -> str:
        """Read part of a source file, with line numbers.

        Args:
            path: The file, e.g. "foo.c" (see the list of files).
            start_line: First line to show (1-based).
            end_line: Last line to show; 0 means to the end of the file.
        """
        return _cap(tools.read_file(path, start_line, end_line))

    return [read_function, grep, read_file]


def question(obs: Observation) -> str:
    crashes = parse_console(obs.crash_report) if obs.crash_report else []
    stack = [f.func for f in crashes[0].frames[:8]] if crashes else list(obs.frames[:8])
    parts = [f"A Linux kernel crashed: {obs.title}"]
    if stack:
        parts.append("Call stack (innermost first): " + ", ".join(stack))
    if obs.description:
        parts.append(f"About the code: {obs.description}")
    parts.append("Source files: " + ", ".join(obs.files[:30]))
    parts.append(
        "Plan the source lookups needed to find the root cause, all at once: the functions "
        "on the stack (read_function), their callers and uses of the failing symbol (grep), "
        "the definitions of the structs involved (grep 'struct NAME {'). At most 5 steps."
    )
    return strip_build_paths("\n".join(parts))


def render(result: Any) -> str:
    """The lookups and their results, then the joiner's analysis, for the edit call."""
    parts = ["Source lookups (planned and run in parallel):"]
    for rec in result.steps:
        shown = rec.result if rec.status == "done" else f"FAILED: {rec.error}"
        parts.append(f"## {rec.step.render()}\n{_cap(str(shown))}")
    if result.answer:
        parts.append(f"Analysis: {result.answer}")
    return "\n\n".join(parts)


async def investigate(
    obs: Observation, tools: SourceTools, agent: KernelAgent, out: AgentResult
) -> str:
    """Run the plan; returns the findings text ("" when planning failed: ReAct goes on)."""
    t0 = time.monotonic()
    agent.progress(f"{obs.bug_id}: planning the source lookups")
    try:
        try:
            result = await run_compiler(
                question(obs),
                lookup_tools(tools),
                model=agent.model,
                joiner_prompt=JOINER,
                max_rounds=1,
                temperature=agent.temperature,
            )
        except RoundLimitError as exc:  # the joiner wanted another plan: use what ran
            result = exc.result
    except ApplError as exc:
        out.errors.append(f"planner: {type(exc).__name__}: {str(exc)[:300]}")
        agent._log("agent_plan", bug=obs.bug_id, error=out.errors[-1])
        agent.progress(f"  planner failed ({type(exc).__name__}); going on as ReAct")
        return ""
    out.turns += result.llm_calls
    out.prompt_tokens += result.usage.prompt_tokens
    out.completion_tokens += result.usage.completion_tokens
    out.tool_calls += len(result.steps)
    valid = sum(1 for r in result.steps if r.status == "done")
    agent._log(
        "agent_plan",
        bug=obs.bug_id,
        plans=[p.text for p in result.plans],
        steps=[
            {"step": r.step.render(), "status": r.status, "result": _cap(str(r.result or r.error))}
            for r in result.steps
        ],
        issues=[str(i) for i in result.issues],
        valid_steps=valid,
        answer=result.answer,
        llm_calls=result.llm_calls,
        wall_s=round(time.monotonic() - t0, 2),
    )
    agent.progress(
        f"  plan: {len(result.steps)} step(s) ({valid} ran), {len(result.issues)} issue(s), "
        f"{result.llm_calls} call(s), {time.monotonic() - t0:.0f} s"
    )
    return render(result) if result.steps or result.answer else ""
