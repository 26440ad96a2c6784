"""A trace as a tree of runs, @ppl calls and model calls: what every view is drawn from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from appl.trace._format import Trace
from appl.trace._replay import run_name


@dataclass
class ToolSpan:
    name: str
    call_id: str
    arguments: Any
    start: float
    end: float | None = None
    ok: bool | None = None
    content: Any = None


@dataclass
class GenSpan:
    """One model request (one step of a gen)."""

    run: str
    call: dict[str, Any]
    start: float
    request: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    end: float | None = None
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    tools: list[ToolSpan] = field(default_factory=list)
    format_retry: str | None = None
    index: int = 0  # position in the trace, a stable id for views
    streamed: list[str] = field(default_factory=list)  # gen_chunks so far (a cut stream's text)

    @property
    def key(self) -> str:
        return f"{self.call['path']}#{self.call['occurrence']}.{self.call['step']}"

    @property
    def label(self) -> str:
        """Short name: the gen part of the path with occurrence and step."""
        tail = self.call["path"].rsplit("/", 2)
        short = "/".join(tail[-2:]) if len(tail) > 2 else self.call["path"]
        return f"{short}#{self.call['occurrence']}.{self.call['step']}"

    @property
    def duration(self) -> float:
        return max(0.0, (self.end or self.start) - self.start)

    @property
    def tokens(self) -> tuple[int, int]:
        usage = (self.response or {}).get("usage") or {}
        return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))

    @property
    def cost(self) -> float:
        return float((self.response or {}).get("cost_usd") or 0.0)

    @property
    def reply(self) -> str:
        return str((self.response or {}).get("text") or "")


@dataclass
class FuncSpan:
    run: str
    path: str
    function: str
    start: float
    end: float | None = None
    ok: bool | None = None
    children: list[FuncSpan | GenSpan] = field(default_factory=list)

    @property
    def duration(self) -> float:
        return max(0.0, (self.end or self.start) - self.start)


@dataclass
class StepSpan:
    """One step of an LLM-compiler plan (appl.compiler), from step_* events."""

    step_id: int
    tool: str
    start: float
    end: float | None = None
    status: str = "running"  # running | done | failed | skipped
    attempts: int = 0
    args: Any = None
    detail: Any = None  # the result preview, or the error

    @property
    def duration(self) -> float:
        return max(0.0, (self.end or self.start) - self.start)


# Planner events that are moments, not spans (shown in order with the steps).
PLANNER_MARKS = ("plan_line", "replan", "join")
PLANNER_KINDS = (*PLANNER_MARKS, "step_start", "step_done", "step_failed")


@dataclass
class RunSpan:
    run_id: str
    function: str
    start: float
    end: float | None = None
    ok: bool | None = None
    error: str | None = None
    roots: list[FuncSpan | GenSpan] = field(default_factory=list)
    gens: list[GenSpan] = field(default_factory=list)
    funcs: list[FuncSpan] = field(default_factory=list)
    budget_stops: list[dict[str, Any]] = field(default_factory=list)
    steps: list[StepSpan] = field(default_factory=list)  # LLM-compiler plan steps
    planner: list[dict[str, Any]] = field(default_factory=list)  # plan_line/replan/join records
    other: list[dict[str, Any]] = field(default_factory=list)  # events of other emitters

    @property
    def duration(self) -> float:
        return max(0.0, (self.end or self.start) - self.start)


@dataclass
class TraceView:
    trace: Trace
    runs: list[RunSpan]
    start: float
    end: float

    @property
    def gens(self) -> list[GenSpan]:
        return [g for r in self.runs for g in r.gens]


def _gen_key(call: dict[str, Any]) -> str:
    return f"{call['path']}#{call['occurrence']}.{call['step']}"


def build_view(trace: Trace) -> TraceView:
    runs: dict[str, RunSpan] = {}
    funcs: dict[tuple[str, str], FuncSpan] = {}
    gens: dict[tuple[str, str], GenSpan] = {}
    open_gens: dict[tuple[str, str], list[GenSpan]] = defaultdict(list)  # (run, path)
    steps: dict[tuple[str, int], StepSpan] = {}
    last_time = float(trace.header.get("time", 0.0))

    def run_of(record: dict[str, Any], name: str = "?") -> RunSpan:
        rid = str(record.get("run"))
        if rid not in runs:
            runs[rid] = RunSpan(rid, name, float(record.get("time", last_time)))
        return runs[rid]

    for position, rec in enumerate(trace.records):
        kind = rec.get("type")
        t = float(rec.get("time", last_time))
        last_time = max(last_time, t)
        data = rec.get("data") or {}
        call = rec.get("call")
        rid = str(rec.get("run"))
        if kind == "run_start":
            run = run_of(rec, str(data.get("function", "?")))
            run.start = t
        elif kind == "run_end":
            run = run_of(rec)
            run.end, run.ok, run.error = t, bool(data.get("ok")), data.get("error")
            run.function = str(data.get("function", run.function))
        elif kind == "call":
            run = run_of(rec)
            path = str(data.get("path"))
            span = FuncSpan(rid, path, str(data.get("function")), t)
            funcs[(rid, path)] = span
            run.funcs.append(span)
            parent = funcs.get((rid, path.rsplit("/", 1)[0])) if "/" in path else None
            (parent.children if parent else run.roots).append(span)
            if run.function == "?":
                run.function = run_name(path)
        elif kind == "return":
            span_or_none = funcs.get((rid, str(data.get("path"))))
            if span_or_none is not None:
                span_or_none.end, span_or_none.ok = t, bool(data.get("ok"))
        elif kind == "gen_request" and call:
            run = run_of(rec, run_name(call["path"]))
            gen = GenSpan(
                rid, call, t, data.get("request") or {}, data.get("options") or {}, index=position
            )
            gens[(rid, _gen_key(call))] = gen
            open_gens[(rid, call["path"])].append(gen)
            run.gens.append(gen)
            parent = funcs.get((rid, call["path"].rsplit("/gen@", 1)[0]))
            (parent.children if parent else run.roots).append(gen)
        elif kind == "gen_chunks" and call:
            found = gens.get((rid, _gen_key(call)))
            if found is not None:
                found.streamed.extend(str(c) for c in data.get("chunks") or ())
        elif kind in ("gen_response", "budget_stop", "format_retry") and call:
            found = gens.get((rid, _gen_key(call)))
            if found is None:
                continue
            if kind == "gen_response":
                found.end, found.response = t, data
            elif kind == "budget_stop":
                found.end, found.error = t, {"type": "BudgetExceededError", **data}
                run_of(rec).budget_stops.append(data)
            else:
                found.format_retry = str(data.get("error"))
            pending = open_gens.get((rid, call["path"]), [])
            if found in pending and kind != "format_retry":
                pending.remove(found)
        elif kind == "gen_error":
            pending = open_gens.get((rid, str(data.get("path"))), [])
            if pending:
                gen = pending.pop()
                gen.end, gen.error = t, {"type": data.get("type"), "message": data.get("message")}
            else:  # failed before any request (e.g. an input gen failed): keep it visible
                run_of(rec).other.append(rec)
        elif kind in ("tool_call", "tool_result") and call:
            found = gens.get((rid, _gen_key(call)))
            if found is None:
                continue
            if kind == "tool_call":
                found.tools.append(
                    ToolSpan(str(data.get("name")), str(data.get("id")), data.get("arguments"), t)
                )
            else:
                for tool in found.tools:
                    if tool.call_id == str(data.get("id")) and tool.end is None:
                        tool.end, tool.ok, tool.content = (
                            t,
                            bool(data.get("ok")),
                            data.get("content"),
                        )
                        break
        elif kind in PLANNER_KINDS:
            _planner_event(run_of(rec, "compiler"), rec, kind, data, t, steps)
        else:  # events other emitters send through the listener interface
            run_of(rec).other.append(rec)
    start = min([r.start for r in runs.values()], default=float(trace.header.get("time", 0)))
    return TraceView(trace, list(runs.values()), start, max(last_time, start))


def _planner_event(
    run: RunSpan,
    rec: dict[str, Any],
    kind: str,
    data: dict[str, Any],
    t: float,
    steps: dict[tuple[str, int], StepSpan],
) -> None:
    if kind in PLANNER_MARKS:
        run.planner.append(rec)
        return
    try:
        step_id = int(data.get("id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        run.other.append(rec)  # not a step event this version understands
        return
    span = steps.get((run.run_id, step_id))
    if span is None:
        span = StepSpan(step_id, str(data.get("tool")), t)
        steps[(run.run_id, step_id)] = span
        run.steps.append(span)
    if kind == "step_start":
        span.attempts += 1
        span.args = data.get("args")
    elif kind == "step_done":
        span.end, span.status, span.detail = t, "done", data.get("result")
    else:
        span.end, span.detail = t, data.get("error")
        span.status = "skipped" if data.get("skipped") else "failed"


def planner_lines(run: RunSpan) -> list[tuple[float, str]]:
    """(time, plain text) of every planner event and step of a run, in time order."""
    out: list[tuple[float, str]] = []
    for rec in run.planner:
        data, kind = rec.get("data") or {}, rec.get("type")
        if kind == "plan_line":
            verdict = "accepted" if data.get("accepted") else "rejected"
            text = f"plan r{data.get('round')}: {data.get('line') or data.get('tool')} {verdict}"
            if data.get("issue"):
                text += f" ({data['issue']})"
        elif kind == "join":
            text = f"join r{data.get('round')}: {data.get('action')} {data.get('text')!r}"
        else:
            text = f"replan after r{data.get('round')}: {data.get('reason')}"
        out.append((float(rec.get("time", run.start)), text))
    for step in run.steps:
        text = f"step {step.step_id} {step.tool} {step.duration:.3f}s {step.status}"
        if step.attempts > 1:
            text += f" after {step.attempts} attempts"
        if step.status != "done" and step.detail:
            text += f": {step.detail}"
        out.append((step.start, text))
    out.sort(key=lambda item: item[0])
    return out


def money(cost: float) -> str:
    """A cost for views: "$0.01234", or "no price" when nothing was charged (a model with no
    price in its config, a local model, a replay): "$0.00000" read as a measured zero."""
    return f"${cost:.5f}" if cost > 0 else "no price"
