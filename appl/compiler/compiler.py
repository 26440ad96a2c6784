"""The LLM compiler: plan (streamed) -> eager parallel execution -> join -> maybe replan.

One round: the planner's reply streams in; every complete line is parsed, validated and, if
accepted, submitted to the executor at once, so a step whose inputs exist starts while the
planner is still writing. When the plan is complete and every step has ended, the joiner
reads all results and errors and answers (Finish) or asks for a new plan (Replan). A new
round keeps the executor, so finished results and the numbering survive: new steps continue
from the next free id and may refer to old results.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from appl import events
from appl.compiler.executor import ExecEvent, Executor, LatencyModel
from appl.compiler.parse import Join, ParsedItem, StreamingPlanParser, Thought, parse_json_plan
from appl.compiler.plan import (
    ParsedCall,
    PlanIssue,
    PlanRound,
    RoundLimitError,
    StepRecord,
)
from appl.compiler.prompts import (
    JOINER_PROMPT,
    PLAN_TOOL,
    PLANNER_JSON_PROMPT,
    PLANNER_PROMPT,
    PLANNER_SCHEMA_PROMPT,
    fill,
    plan_response_format,
    render_results,
)
from appl.compiler.tools import PlanTool, as_plan_tools
from appl.compiler.validate import PlanValidator
from appl.core import library_run
from appl.identity import CallSite, compute_call_identity
from appl.runtime import traced_generate
from appl.types import GenRequest, GenResponse, Message, ModelAPI, Usage

PlanFormat = Literal["lines", "json", "schema", "tool"]
ModelRef = str | ModelAPI | None
# Greedy to the last ")" so answers may contain parentheses; text after it is ignored.
_ACTION_RE = re.compile(r"Action\s*:\s*(Finish|Replan)\b\s*(?:\((.*)\))?", re.S | re.I)


@dataclass(frozen=True, slots=True)
class JoinDecision:
    action: Literal["finish", "replan"]
    text: str  # the answer, or what the planner should fix
    thought: str = ""
    raw: str = ""
    note: str = ""  # set when the reply did not follow the format and was read leniently
    started_at: float = 0.0  # the joiner call, seconds from the run's start
    finished_at: float = 0.0


@dataclass(slots=True)
class CompilerResult:
    question: str
    answer: str | None
    rounds: int
    plans: list[PlanRound]
    steps: list[StepRecord]  # every step of every round, by id
    issues: list[PlanIssue]
    joins: list[JoinDecision]
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    llm_calls: int = 0
    wall_s: float = 0.0
    timeline: list[ExecEvent] = field(default_factory=list)

    def step(self, step_id: int) -> StepRecord:
        for rec in self.steps:
            if rec.id == step_id:
                return rec
        raise KeyError(f"no step {step_id}; steps: {[s.id for s in self.steps]}")


def parse_join(text: str) -> JoinDecision:
    """`Thought: ... Action: Finish(answer)` / `Action: Replan(reason)`, read from the last
    Action. A reply without an Action is taken as the answer (and says so in `note`)."""
    thought = ""
    m_thought = re.search(r"Thought\s*:\s*(.*?)(?=\n\s*Action\s*:|\Z)", text, re.S | re.I)
    if m_thought:
        thought = m_thought.group(1).strip()
    idx = max(text.rfind("Action:"), text.rfind("action:"))
    m = _ACTION_RE.search(text[idx:]) if idx >= 0 else None
    if m is None:
        return JoinDecision(
            "finish",
            text.strip(),
            thought,
            text,
            "no 'Action:' line; whole reply taken as the answer",
        )
    body = (m.group(2) or "").strip()
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        try:
            body = json.loads(body) if body[0] == '"' else body[1:-1]
        except ValueError:
            body = body[1:-1]
    action: Literal["finish", "replan"] = "finish" if m.group(1).lower() == "finish" else "replan"
    return JoinDecision(action, str(body), thought, text)


async def traced_request(
    run_id: str,
    path: str,
    model: tuple[ModelAPI, str],
    request: GenRequest,
    on_text: Callable[[str], None] | None = None,
) -> GenResponse:
    """One planner, joiner or ReAct request, traced and resolved like a gen's (`path` names it
    in the trace), so a recording keeps it and a strict replay answers it, or raises
    ReplayMissError, with no server."""
    api, alias = model
    site = CallSite("appl/compiler", 0, path, 0)
    identity = compute_call_identity(site, request)
    try:
        return await traced_generate(
            run_id, request, identity, alias=alias or None, model=api, on_text=on_text
        )
    except Exception as exc:
        if events.has_listeners():
            events.emit(
                "gen_error",
                run_id,
                {"type": type(exc).__name__, "message": str(exc), "path": path},
                identity,
            )
        raise


def resolve_model(model: ModelRef) -> tuple[ModelAPI, str]:
    """(the ModelAPI, the alias to put in requests). A string is an alias for appl.models."""
    if model is None or isinstance(model, str):
        from appl.models import get_model  # lazy: configuration is read at first use

        api = get_model(model)
        return api, getattr(api, "name", None) or (model or "")
    return model, getattr(model, "name", "") or ""


class _Run:
    """The state of one run_compiler call."""

    def __init__(
        self,
        question: str,
        tools: dict[str, PlanTool],
        *,
        planner: tuple[ModelAPI, str],
        joiner: tuple[ModelAPI, str],
        planner_prompt: str,
        joiner_prompt: str,
        plan_format: PlanFormat,
        max_rounds: int,
        executor: Executor,
        temperature: float | None,
        on_step: Callable[[StepRecord], None] | None,
        path: str,
    ) -> None:
        self.question = question
        self.path = path  # the logical path of this run_compiler call (appl.core.library_run)
        self.tools = tools
        self.planner, self.joiner = planner, joiner
        self.planner_prompt, self.joiner_prompt = planner_prompt, joiner_prompt
        self.plan_format = plan_format
        self.max_rounds = max_rounds
        self.ex = executor
        self.temperature = temperature
        self.on_step = on_step
        self.validator = PlanValidator(tools)
        self.plans: list[PlanRound] = []
        self.joins: list[JoinDecision] = []
        self.feedback: list[str] = []  # per finished round: what the next planner call reads
        self.usage = Usage()
        self.cost = 0.0
        self.calls = 0

    @property
    def issues(self) -> list[PlanIssue]:
        return [i for p in self.plans for i in p.issues]

    async def _generate(
        self,
        role: Literal["planner", "joiner"],
        round_no: int,
        request: GenRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> GenResponse:
        model = self.planner if role == "planner" else self.joiner
        where = f"{self.path}/{role}@R{round_no}"
        return await traced_request(self.ex.run_id, where, model, request, on_text)

    def _count(self, response: GenResponse) -> None:
        self.usage = self.usage + response.usage
        self.cost += response.cost_usd
        self.calls += 1

    # ------------------------------------------------------------------ planning
    def _accept(self, item: ParsedItem, plan: PlanRound) -> None:
        """Route one parsed line: run it, or record why not. Called while the reply streams."""
        if isinstance(item, ParsedCall):
            step, notes = self.validator.check(item, round=plan.round)
            plan.issues += notes
            self._emit_line(plan.round, item, step is not None, notes)
            if step is not None:
                plan.step_ids.append(step.id)
                rec = self.ex.submit(step)
                if self.on_step is not None:
                    self.on_step(rec)
        elif isinstance(item, PlanIssue):
            self.validator.reject_syntax(item)
            plan.issues.append(item)
            self._emit_line(plan.round, None, False, [item])
        elif isinstance(item, Thought):
            plan.thoughts.append(item.text)
        elif isinstance(item, Join):
            plan.joined = True

    def _emit_line(
        self, round_no: int, call: ParsedCall | None, accepted: bool, notes: list[PlanIssue]
    ) -> None:
        if events.has_listeners():
            data: dict[str, Any] = {"round": round_no, "accepted": accepted}
            if call is not None:
                data.update(step_id=call.id, tool=call.tool, line=call.line)
            elif notes:
                data["line"] = notes[0].line
            if notes:
                data["issue"] = "; ".join(f"{n.kind}: {n.message}" for n in notes)
            events.emit("plan_line", self.ex.run_id, data)

    def _planner_messages(self, round_no: int) -> list[Message]:
        first = self.validator.next_id
        msgs = [
            Message("system", self.planner_prompt),
            Message("user", f"Question: {self.question}\n\nNumber steps from {first}."),
        ]
        for past, feedback in zip(self.plans, self.feedback, strict=False):
            msgs.append(Message("assistant", past.text))
            msgs.append(Message("user", feedback))
        if round_no > 1:
            # The newest feedback already names the next id; restate the rule last, where a
            # model weighs it most.
            msgs[-1] = Message(
                "user",
                f"{self.feedback[-1]}\n\nWrite a new plan. Number new steps from {first}. "
                "Earlier results stay available: refer to them as $N instead of repeating "
                "steps that succeeded; plan only what failed or is missing.",
            )
        return msgs

    async def plan(self, round_no: int) -> PlanRound:
        plan = PlanRound(round_no, started_at=self.ex.now())
        self.plans.append(plan)
        request = GenRequest(
            model=self.planner[1],
            messages=self._planner_messages(round_no),
            temperature=self.temperature,
        )
        if self.plan_format == "lines":
            parser = StreamingPlanParser(round=round_no)
            request.stream = True

            def on_text(delta: str) -> None:
                now = self.ex.now()
                if plan.first_text_at is None:
                    plan.first_text_at = now
                plan.last_text_at = now
                plan.text += delta
                for item in parser.feed(delta):
                    self._accept(item, plan)

            response = await self._generate("planner", round_no, request, on_text)
            if not plan.text and response.text:  # a provider that did not stream
                on_text(response.text)
            for item in parser.close():
                self._accept(item, plan)
        else:
            if self.plan_format == "json":
                request.response_format = {"type": "json_object"}
            elif self.plan_format == "schema":
                first = self.validator.next_id
                request.response_format = plan_response_format(self.tools.values(), first)
            else:
                request.tools = [PLAN_TOOL]
                request.tool_choice = {"type": "function", "function": {"name": PLAN_TOOL.name}}
            response = await self._generate("planner", round_no, request)
            call = next((c for c in response.tool_calls if c.name == PLAN_TOOL.name), None)
            plan.text = call.arguments if call is not None else response.text
            plan.first_text_at = plan.last_text_at = self.ex.now()
            for item in parse_json_plan(_strip_fences(plan.text), round=round_no):
                self._accept(item, plan)
        plan.finished_at = self.ex.now()
        self._count(response)
        return plan

    # ------------------------------------------------------------------ joining
    async def join(self, round_no: int) -> JoinDecision:
        records = sorted(self.ex.records.values(), key=lambda r: r.id)
        body = f"Question: {self.question}\n\n{render_results(records, self.issues)}"
        if round_no >= self.max_rounds:
            body += "\n\nThis is the last round: no new plan is possible. Answer with Finish."
        request = GenRequest(
            model=self.joiner[1],
            messages=[Message("system", self.joiner_prompt), Message("user", body)],
            temperature=self.temperature,
        )
        started = self.ex.now()
        response = await self._generate("joiner", round_no, request)
        self._count(response)
        decision = replace(parse_join(response.text), started_at=started, finished_at=self.ex.now())
        self.joins.append(decision)
        if events.has_listeners():
            text, thought = decision.text, decision.thought
            events.emit(
                "join",
                self.ex.run_id,
                {"round": round_no, "action": decision.action, "text": text, "thought": thought},
            )
            if decision.action == "replan":
                events.emit("replan", self.ex.run_id, {"round": round_no, "reason": text})
        this_round = [r for r in records if r.step.round == round_no]
        self.feedback.append(
            f"{render_results(this_round, self.plans[-1].issues)}\n\n"
            f"The joiner asked for a new plan: {decision.text or decision.thought}\n"
            f"Next free step number: {self.validator.next_id}."
        )
        return decision


def default_plan_format(model: ModelAPI) -> PlanFormat:
    """ "schema" when the model's config says its server enforces JSON schemas (declared
    explicitly: capabilities.json_schema = true), else "lines"."""
    config = getattr(model, "config", None)
    declared = getattr(config, "capabilities", None) or {}
    return "schema" if declared.get("json_schema") is True else "lines"


def _strip_fences(text: str) -> str:
    m = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    return m.group(1) if m else text


async def run_compiler(
    question: str,
    tools: Iterable[Any],
    *,
    model: ModelRef = None,
    planner_model: ModelRef = None,
    joiner_model: ModelRef = None,
    planner_prompt: str | None = None,
    joiner_prompt: str | None = None,
    plan_format: PlanFormat | None = None,
    max_rounds: int = 3,
    max_concurrency: int | None = None,
    latency: LatencyModel | None = None,
    temperature: float | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
) -> CompilerResult:
    """Answer `question` by planning tool calls, running them in parallel, and joining.

    tools: PlanTools (`appl.compiler.tool`), `appl.tools.Tool`s or plain functions.
    model: the alias (appl.models) or a ModelAPI for both planner and joiner, unless
        planner_model / joiner_model are given. None: the configured default model.
    plan_format: "lines" (streamed `N. tool(args)` lines, executed as they arrive), "json"
        (a JSON object reply), "schema" (a JSON reply constrained by the plan's JSON schema:
        known tools, their argument schemas, integer ids) or "tool" (the planner calls a
        `make_plan` tool). None: "schema" where the planner's server declares that it
        enforces JSON schemas (capabilities.json_schema = true, e.g. the local model),
        else "lines".
    max_rounds: planner calls at most; a Replan after the last raises RoundLimitError
        (its `.result` holds everything done).
    max_concurrency: steps running at once (None: unbounded); tools have their own limits.
    latency: shared latency estimates (pass the same LatencyModel across runs to keep
        what it learned).
    """
    if max_rounds < 1:
        raise ValueError("max_rounds must be >= 1")
    table = as_plan_tools(tools)
    planner = resolve_model(planner_model if planner_model is not None else model)
    if plan_format is None:
        plan_format = default_plan_format(planner[0])
    default = {"lines": PLANNER_PROMPT, "schema": PLANNER_SCHEMA_PROMPT}.get(
        plan_format, PLANNER_JSON_PROMPT
    )
    joiner = resolve_model(joiner_model if joiner_model is not None else model)
    # the whole run inside one run of the trace (appl.core.library_run)
    with library_run("run_compiler") as (run_id, path):
        t0 = time.perf_counter()
        async with Executor(
            table, max_concurrency=max_concurrency, latency=latency, t0=t0, run_id=run_id
        ) as ex:
            run = _Run(
                question,
                table,
                planner=planner,
                joiner=joiner,
                planner_prompt=fill(planner_prompt or default, table),
                joiner_prompt=joiner_prompt or JOINER_PROMPT,
                plan_format=plan_format,
                max_rounds=max_rounds,
                executor=ex,
                temperature=temperature,
                on_step=on_step,
                path=path,
            )
            answer: str | None = None
            for round_no in range(1, max_rounds + 1):
                await run.plan(round_no)
                await ex.wait_idle()
                decision = await run.join(round_no)
                if decision.action == "finish":
                    answer = decision.text
                    break
        result = CompilerResult(
            question=question,
            answer=answer,
            rounds=len(run.plans),
            plans=run.plans,
            steps=sorted(ex.records.values(), key=lambda r: r.id),
            issues=run.issues,
            joins=run.joins,
            usage=run.usage,
            cost_usd=run.cost,
            llm_calls=run.calls,
            wall_s=time.perf_counter() - t0,
            timeline=ex.timeline,
        )
        if answer is None:
            reason = run.joins[-1].text if run.joins else ""
            raise RoundLimitError(
                f"no answer after {max_rounds} round(s): the joiner still asked for a new plan "
                f"({reason!r}); raise max_rounds or check the plan problems in .result.issues",
                result=result,
            )
        return result


def summarize(result: CompilerResult) -> str:
    """A compact multi-line report of a run: rounds, steps with timings, issues, answer."""
    lines = [f"answer: {result.answer!r}  rounds: {result.rounds}  wall: {result.wall_s:.3f}s"]
    for rec in result.steps:
        t = (
            f"{rec.started_at:.3f}-{rec.finished_at:.3f}s"
            if rec.started_at is not None and rec.finished_at is not None
            else "-"
        )
        lines.append(f"  [{rec.status:7}] {rec.step.render()}  {t}  {rec.error or ''}".rstrip())
    lines += [f"  issue: {i}" for i in result.issues]
    return "\n".join(lines)
