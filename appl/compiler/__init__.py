"""The LLM compiler: streamed DAG plans of tool calls, eager parallel execution, join/replan.

    from appl.compiler import run_compiler, run_react, tool

    @tool(latency_s=0.8, max_concurrency=4)
    def search(query: str) -> str: ...

    result = await run_compiler("How much older is Barack than Michelle Obama?",
                                tools=[search, math], model="gpt-4o-mini")
    result.answer, result.steps, result.plans, result.usage

See docs/appl-compiler.md for the plan grammar (references `$2.price`, `"${1} - ${2}"`),
validation, scheduling and the ReAct baseline.
"""

from appl.compiler.compiler import (
    CompilerResult,
    JoinDecision,
    parse_join,
    run_compiler,
    summarize,
)
from appl.compiler.executor import ExecEvent, Executor, LatencyModel
from appl.compiler.parse import (
    PlanSyntaxError,
    StreamingPlanParser,
    parse_call,
    parse_json_plan,
    parse_line,
    parse_value,
)
from appl.compiler.plan import (
    CompilerError,
    ParsedCall,
    PlanIssue,
    PlanRound,
    PlanStep,
    Ref,
    RoundLimitError,
    StepRecord,
    Template,
    resolve,
)
from appl.compiler.react import ReactResult, ReactTurn, run_react
from appl.compiler.tools import PlanTool, as_plan_tools, tool
from appl.compiler.validate import PlanValidator

__all__ = [
    "CompilerError",
    "CompilerResult",
    "ExecEvent",
    "Executor",
    "JoinDecision",
    "LatencyModel",
    "ParsedCall",
    "PlanIssue",
    "PlanRound",
    "PlanStep",
    "PlanSyntaxError",
    "PlanTool",
    "PlanValidator",
    "ReactResult",
    "ReactTurn",
    "Ref",
    "RoundLimitError",
    "StepRecord",
    "StreamingPlanParser",
    "Template",
    "as_plan_tools",
    "parse_call",
    "parse_join",
    "parse_json_plan",
    "parse_line",
    "parse_value",
    "resolve",
    "run_compiler",
    "run_react",
    "summarize",
    "tool",
]
