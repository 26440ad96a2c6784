"""The kernel-crash agent: read the crash, look at the code, propose an edit, step the gym.

    env = KernelGym(runs=3, log_path="runs/kgym.jsonl")
    result = await KernelAgent(env, model="local", max_steps=4).fix("t0-null-deref")
    result.resolved, [s.outcome for s in result.steps]

Every model call is one request with the source tools (read_file, read_function, list_files,
grep) and three edit tools (replace_function, search_replace, replace_lines). The agent, not
the model, writes the unified diff: an edit is checked against the file (the function exists
and the rewrite is whole, search text found once, lines in range) and turned into a diff, or
refused with a message that says why. A raw ```diff block in a plain
answer is accepted too. Each diff is one gym *step* (build, boot, reproduce), whose outcome is
the next feedback:

  apply_failed  patch's rejection + the real, numbered text the hunks were aimed at
  build_failed  the compiler's errors
  reproduced    the crash title now seen (same or new) + the new console excerpt
  boot_error    why the VM did not get through the reproducer

With `build_check=True` an edit is built first (no boot, not a step): one that does not
apply or compile goes back to the model with the errors, so a small model's syntax slips do
not use up its steps. After `tool_rounds - 1` calls without an edit, the next call forces an
edit tool (a forced tool_choice is grammar-enforced on llama.cpp), so a small model cannot
read forever. In planner mode (`mode="planner"`) an investigation phase first runs one
LLM-compiler plan of source lookups in parallel (agents.kernel.planner); then the joiner call
is forced to edit.

Each step applies to the ORIGINAL source (the gym rebuilds from scratch), so every edit must
be the whole fix. Every request is fitted to the model's context window (appl.window): old
tool output is cut first, then old exchanges dropped. A model or gym error ends the bug with
a result (`stopped` = "model_error" or "error"), never the run; `agent_end` is always logged.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.kernel.diff import extract_diff, hunks
from agents.kernel.edits import strip_build_paths
from agents.kernel.hints import crash_hint
from agents.kernel.tools import EDIT_TOOLS, SourceTools, numbered, numbered_function
from appl import Message, ModelError, StructuredOutputError, ToolError
from appl.window import ContextBudget, context_window, gen_within
from codegen_eval.kernelgym.crash import CrashReport, parse_console
from codegen_eval.kernelgym.env import KernelGym, Observation
from codegen_eval.kernelgym.scoring import Outcome, StepResult

SYSTEM = (
    "You are an experienced Linux kernel developer fixing a crash found by a fuzzer. You get "
    "the crash report and tools to read the source. Find the root cause (the code that "
    "dereferences NULL, frees twice, overruns a buffer, divides by zero, ...) and fix it "
    "where the bug is, the way a maintainer would: check the error case and return an error "
    "code, fix the bounds, take the missing reference, and so on. Do not silence the report "
    "(removing BUG_ON/WARN_ON, skipping the work the reproducer triggers) - the reproducer "
    "must run to completion without any report.\n\n"
    "Propose the fix by writing the whole new code of the function that must change, from its "
    "signature to its closing brace, in one ```c code block, with the fix in it and everything "
    "else of the function kept as it is; the agent puts it in place. The tools replace_function, "
    "search_replace (exact lines copied from the file, and the new lines) and replace_lines (a "
    "line range and the new lines) make edits too. Paths are relative to the source root, as "
    "in the list of files. Keep the change minimal."
)

FEEDBACK_CHARS = 2500
# After an edit is refused the next forced call uses the next edit tool, and a repeated
# refused edit raises the temperature: measured on the 0.5B model, a forced search_replace
# otherwise repeats the same unfindable search text until the call budget is gone.
REPEAT_TEMPERATURE = 0.8
NEXT_EDIT_TOOL = {
    "replace_function": "search_replace",
    "search_replace": "replace_lines",
    "replace_lines": "replace_function",
}
REPEATED = (
    "You sent exactly this edit before and it was refused. Do something different: use "
    "{tool} this time."
)


def _forced(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


NO_EDIT = (
    "That was no fix. Write the whole new code of the function that must change, with the fix "
    "in it, in one ```c code block."
)
SAME_ANSWER = "You wrote exactly this before; write it differently."
TRIED = (
    "This is the same patch as your try {step}, whose result was {outcome}. It would fail the "
    "same way; write a different fix."
)
# The forced "replace_function" call is free text (tool_choice "none": the same prompt prefix,
# no grammar): small models put unescaped quotes in code inside a JSON string, which the
# grammar then closes (the 1.5B model's printk(KERN_ERR "...") ended its new_code there).
WRITE_FUNCTION = (
    "Now write the fix: the whole new code of the function that must change, from its "
    "signature to its closing brace, with everything else in it kept as it is, in one ```c "
    "code block. Only the code block, no JSON."
)
BUILD_CHECK = "Build check of your edit (no VM was booted; this did not count as a try). "
PLANNER_JOIN = "Use this analysis of the crash."


@dataclass(slots=True)
class StepRecord:
    step: int
    outcome: str
    title: str | None
    matches_expected: bool
    patch: str
    detail: str
    build_s: float
    run_s: float
    # `resolved` is plausible (no crash, checks pass); whether it changes what the developer's
    # fix changes is reported beside it (the gym's localization; None: no fix known).
    matches_fix: bool | None = None
    localization: dict[str, Any] | None = None


@dataclass(slots=True)
class AgentResult:
    bug_id: str
    expected_title: str
    mode: str = "react"
    resolved: bool = False  # plausible: a step ran clean with the checks passing
    matches_fix: bool | None = None  # that step changes what the developer's fix changes
    steps: list[StepRecord] = field(default_factory=list)
    turns: int = 0  # model calls
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    build_checks_failed: int = 0  # edits that did not build, caught before a step
    final_patch: str = ""
    stopped: str = ""  # resolved | max_steps | max_turns | model_error | error
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _trim(text: str, limit: int = FEEDBACK_CHARS) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    return text[: limit // 2] + "\n... [cut] ...\n" + text[-limit // 2 :]


def _function_names(obs: Observation, crash: CrashReport | None) -> list[str]:
    """Functions worth showing up front: the one in the title, RIP, then the stack."""
    names: list[str] = []
    m = re.search(r"\bin ([A-Za-z_]\w*)\s*$", obs.title or "")
    if m:
        names.append(m[1])
    if crash is not None:
        if crash.rip:
            names.append(crash.rip)
        names.extend(f.func for f in crash.frames)
    names.extend(obs.frames)
    return list(dict.fromkeys(n.split(".")[0] for n in names))


def _local_definitions(obs: Observation, names: list[str], limit: int = 3) -> list[str]:
    """Definitions of `names` found in the bug's own files (never a whole-tree search)."""
    shown: list[str] = []
    for name in names:
        rx = re.compile(rf"^[A-Za-z_][^;{{}}()]*\b{re.escape(name)}\s*\(", re.M)
        for rel in obs.files:
            if not rel.endswith((".c", ".h")):
                continue
            try:
                if rx.search(obs.source.read_file(rel)) is None:
                    continue
            except (FileNotFoundError, OSError):
                continue
            if text := numbered_function(obs.source.read_function(name, hint_files=[rel])):
                shown.append(text)
            break
        if len(shown) >= limit:
            break
    return shown


# Console lines that cost a small model's context and say nothing about the bug: register
# dumps, opcode bytes, hardware, page-table walks, and guessed ("? ") stack entries.
_NOISE = re.compile(
    r"^\s*(Code:|RSP:|RAX:|RDX:|RBP:|R\d+:|FS:|CS:|CR\d:|PKRU:|PGD |Hardware name:|\? )"
)


def compact_console(text: str) -> str:
    """The console excerpt without register dumps and other noise (see _NOISE); stops at the
    first end of a trace, so the user-space registers after it go too."""
    out: list[str] = []
    for line in text.splitlines():
        if _NOISE.match(line):
            continue
        out.append(line)
        if line.strip().startswith("---[ end trace"):
            break
    return "\n".join(out)


def briefing(obs: Observation) -> str:
    crashes = parse_console(obs.crash_report) if obs.crash_report else []
    crash = crashes[0] if crashes else None
    parts = [f"Bug {obs.bug_id}: {obs.title}"]
    if hint := crash_hint(obs.title):
        parts.append(f"What such a report usually means: {hint}")
    if obs.description:
        parts.append(f"About the code: {obs.description}")
    if crash is not None:
        stack = [
            f"  {f.func}"
            + (f" [{f.module}]" if f.module else "")
            + (f" {strip_build_paths(f.file)}:{f.line}" if f.file else "")
            for f in crash.frames[:16]
        ]
        parts.append(
            f"Parsed report: kind {crash.kind}, RIP {crash.rip or '?'}\nStack:\n" + "\n".join(stack)
        )
    console = compact_console(strip_build_paths(obs.crash_report or ""))
    parts.append("Console excerpt:\n```\n" + _trim(console, 1500) + "\n```")
    parts.append("Source files of this bug:\n" + "\n".join(obs.files[:100]))
    defs = _local_definitions(obs, _function_names(obs, crash))
    if defs:
        parts.append("Code of the functions in the report:\n```c\n" + "\n\n".join(defs) + "\n```")
    parts.append(
        "Use the tools to read more code if you need to, then write the fix: the whole new "
        "code of the function that must change, in one ```c code block."
    )
    return "\n\n".join(parts)


def feedback(step: StepResult, patch: str, obs: Observation) -> str:
    """What the model reads after a step; build paths shown as the tools' paths."""
    return strip_build_paths(_feedback(step, patch, obs))


def describe_stop(result: AgentResult, max_steps: int, max_turns: int) -> str:
    """Why a bug's run ended, naming the limit and the option that sets it."""
    if result.resolved:
        return "resolved"
    if result.stopped == "max_steps":
        return f"max_steps: {len(result.steps)} patches tried (--max-steps {max_steps})"
    if result.stopped == "max_turns":
        return (
            f"max_turns: {result.turns} model calls, {len(result.steps)} patches reached the gym "
            f"(--max-turns {max_turns})"
        )
    return result.stopped


def fix_match_text(matches_fix: bool | None) -> str:
    """How a plausible patch compares with the developer's fix, in words."""
    if matches_fix is None:
        return "no developer fix to compare with"
    if matches_fix:
        return "changes every function the developer fix changes"
    return "does NOT change what the developer fix changes"


def _fate(reply: Any, note: str | None) -> str:
    """What came of a model answer that made no patch, for its progress line."""
    if note is not None:
        return f"an edit the tools refused: {_trim(note.splitlines()[0], 160)}"
    if reply.tool_calls:
        names = ", ".join(c.name for c in reply.tool_calls)
        errors = [r for r in reply.tool_results if r.content.startswith("Error:")]
        if errors:
            return f"tools {names}; refused: {_trim(errors[0].content.splitlines()[0], 160)}"
        return f"tools {names} (looked, no edit yet)"
    return "no usable edit (a plain answer with no function, diff or tool call)"


def _feedback(step: StepResult, patch: str, obs: Observation) -> str:
    head = f"Result of your patch: {step.outcome}."
    again = "Each patch is applied to the original, unpatched source: send the complete fix."
    if step.outcome == Outcome.APPLY_FAILED:
        targets = []
        for h in hunks(patch)[:4]:
            lo = max(1, h.old_start - 3)
            hi = h.old_start + max(h.old_len, 1) + 3
            try:
                text = obs.source.read_file(h.path, lo, hi)
                targets.append(f"// {h.path}, lines {lo}-{hi}\n{numbered(text, lo)}")
            except (FileNotFoundError, OSError):
                targets.append(f"// {h.path}: no such file (paths are relative to the root)")
        shown = "\n\n".join(targets)
        return (
            f"{head} `patch -p1` rejected it:\n```\n{_trim(step.detail, 2000)}\n```\n"
            f"The file's actual text where your hunks point:\n```c\n{shown}\n```\n"
            "Context and removed lines must match the file exactly (tabs included), and the "
            f"line numbers must be right. {again}"
        )
    if step.outcome == Outcome.BUILD_FAILED:
        return f"{head} The build failed:\n```\n{_trim(step.detail)}\n```\nFix the errors. {again}"
    if step.outcome == Outcome.REPRODUCED:
        same = "the same crash" if step.matches_expected else "a different crash"
        hint = crash_hint(step.title)
        return (
            f"{head} The reproducer still crashes the kernel ({same}): {step.title}\n"
            + (f"What such a report usually means: {hint}\n" if hint else "")
            + f"Console:\n```\n{_trim(step.console_excerpt)}\n```\n{again}"
        )
    if step.outcome == Outcome.FUNCTION_BROKEN:
        return (
            f"{head} The crash is gone, but so is the module's function: {step.detail}\n"
            "Fix the bug without refusing or skipping the work the code is meant to do. "
            f"{again}"
        )
    if step.outcome == Outcome.TAMPER:
        # the built code gained something no fix needs (a new import off the allow-list, a
        # privileged instruction, a raw address): say which, so the next try can do without
        return (
            f"{head} The patch was refused before boot: {_trim(step.detail, 1500)}\n"
            "A fix changes the code's own logic (checks, locking, lifetimes) with the functions "
            "it already uses; it does not add file I/O, restarts, symbol lookups, assembly, raw "
            f"addresses or calls through new pointers. {again}"
        )
    if step.outcome == Outcome.BOOT_ERROR:
        return (
            f"{head} {step.detail}\nConsole:\n```\n{_trim(step.console_excerpt, 2500)}\n```\n"
            f"{again}"
        )
    return head


class KernelAgent:
    def __init__(
        self,
        env: KernelGym,
        *,
        model: str | None = None,
        mode: str = "react",
        max_steps: int = 4,
        max_turns: int | None = None,
        tool_rounds: int = 3,
        temperature: float = 0.2,
        max_tokens: int = 1024,
        context_window: int | None = None,
        log_path: str | Path | None = None,
        progress: Callable[[str], None] | None = None,
        build_check: bool = False,
    ) -> None:
        if mode not in ("react", "planner"):
            raise ValueError(f"mode must be 'react' or 'planner', not {mode!r}")
        self.env = env
        self.model = model
        self.mode = mode
        self.max_steps = max_steps
        self.tool_rounds = max(1, tool_rounds)
        self.max_turns = max_turns if max_turns is not None else max_steps * (self.tool_rounds + 1)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.window = context_window
        self.log_path = Path(log_path) if log_path else None
        self.progress = progress or (lambda _line: None)
        self.build_check = build_check

    def _log(self, event: str, **data: Any) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a") as fh:
            fh.write(json.dumps({"event": event, "time": time.time(), **data}, default=str))
            fh.write("\n")

    def _budget(self) -> ContextBudget:
        window = self.window or context_window(self.model)
        return ContextBudget(
            window, max_tokens=self.max_tokens, min_tokens=min(384, self.max_tokens)
        )

    async def fix(self, bug_id: str) -> AgentResult:
        """Work on one bug until resolved or out of steps/calls. Errors of the model or the gym
        end this bug with a result (stopped "model_error"/"error"); `agent_end` is logged."""
        start = time.monotonic()
        result = AgentResult(bug_id, "", self.mode)
        try:
            await self._fix(bug_id, result)
        except (ModelError, StructuredOutputError, ToolError) as exc:
            result.errors.append(f"{type(exc).__name__}: {exc}")
            result.stopped = "model_error"
        except Exception as exc:  # the gym or a tool broke: this bug ends, the run goes on
            result.errors.append(f"{type(exc).__name__}: {exc}")
            result.stopped = "error"
        finally:
            result.wall_s = round(time.monotonic() - start, 2)
            if not result.stopped:
                result.stopped = (
                    "resolved"
                    if result.resolved
                    else ("max_steps" if len(result.steps) >= self.max_steps else "max_turns")
                )
            self._log("agent_end", **result.to_dict())
        return result

    async def _call(
        self,
        budget: ContextBudget,
        messages: list[Message],
        tools: SourceTools,
        result: AgentResult,
        forced: str | None,
        temperature: float,
    ) -> Any:
        t0 = time.monotonic()
        choice: str | dict[str, Any] | None = None
        if forced == "replace_function":
            messages.append(Message("user", WRITE_FUNCTION))
            choice = "none"  # free text, see WRITE_FUNCTION
        elif forced:
            choice = _forced(forced)
        reply, sent = await gen_within(
            budget,
            messages,
            tools=tools.as_list(),
            model=self.model,
            temperature=temperature,
            tool_choice=choice,
        )
        result.turns += 1
        usage = reply.response.usage if reply.response is not None else None
        if usage is not None:
            result.prompt_tokens += usage.prompt_tokens
            result.completion_tokens += usage.completion_tokens
        self._log(
            "agent_call",
            bug=result.bug_id,
            call=result.turns,
            forced_edit=forced,
            temperature=temperature,
            sent_messages=len(sent),
            dropped_messages=len(messages) - len(sent),
            window=budget.window,
            answer=reply.text,
            tool_calls=[{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
            tool_results=[
                {"name": r.call.name, "ok": r.ok, "content": _trim(r.content, 4000)}
                for r in reply.tool_results
            ],
            usage=asdict(usage) if usage is not None else None,
            wall_s=round(time.monotonic() - t0, 2),
        )
        what = ", ".join(f"{c.name}" for c in reply.tool_calls) or "answer"
        self.progress(f"  call {result.turns}: {what} ({time.monotonic() - t0:.0f} s)")
        return reply

    async def _failed_build_check(
        self, patch: str, obs: Observation, messages: list[Message], result: AgentResult
    ) -> bool:
        """With build_check: build the edit first; one that does not apply or compile goes
        back to the model with the compiler's errors instead of costing a step."""
        failed = await self.env.acheck_build(patch)
        if failed is None:
            return False
        result.build_checks_failed += 1
        self._log("agent_build_check", bug=result.bug_id, call=result.turns, patch=patch,
                  outcome=str(failed.outcome), detail=_trim(failed.detail, 2000))  # fmt: skip
        self.progress(f"  build check: {failed.outcome} (not a step)")
        messages.append(Message("user", BUILD_CHECK + feedback(failed, patch, obs)))
        return True

    async def _fix(self, bug_id: str, result: AgentResult) -> None:
        self.progress(f"{bug_id}: resetting the gym (baseline boot)")
        obs = await self.env.areset(bug_id)
        result.expected_title = obs.title
        tools = SourceTools(obs.source, obs.files)
        brief = briefing(obs)
        budget = self._budget()
        messages = [Message("system", SYSTEM), Message("user", brief)]
        self._log(
            "agent_start", bug=bug_id, model=self.model, mode=self.mode, window=budget.window,
            briefing=brief,
        )  # fmt: skip
        force_next = False
        if self.mode == "planner":
            from agents.kernel.planner import investigate

            findings = await investigate(obs, tools, self, result)
            if findings:
                messages.append(Message("user", findings + "\n\n" + PLANNER_JOIN))
                force_next = True  # the joiner proposes the edit
        since_step = 0
        failures = 0
        refused: set[str] = set()  # edits the tools refused (name + arguments)
        answers: set[str] = set()  # plain answers that made no edit
        edit_tool, temperature = "replace_function", self.temperature
        while len(result.steps) < self.max_steps and result.turns < self.max_turns:
            forced = edit_tool if force_next or since_step >= self.tool_rounds - 1 else None
            force_next = False
            try:
                reply = await self._call(budget, messages, tools, result, forced, temperature)
            except (ModelError, StructuredOutputError, ToolError) as exc:
                result.turns += 1
                failures += 1
                short = _trim(str(exc), 300)
                result.errors.append(f"{type(exc).__name__}: {short}")
                self._log("agent_error", bug=bug_id, call=result.turns, error=result.errors[-1])
                self.progress(f"  call {result.turns}: model error: {short}")
                if failures >= 3:
                    result.stopped = "model_error"
                    return
                since_step += 1
                continue
            failures = 0
            result.tool_calls += len(reply.tool_calls)
            messages.extend(reply.messages)
            temperature = self.temperature
            for done in reply.tool_results:
                if done.call.name in EDIT_TOOLS and done.content.startswith("Error:"):
                    signature = f"{done.call.name}:{done.call.arguments}"
                    edit_tool = NEXT_EDIT_TOOL[done.call.name]
                    if signature in refused:
                        temperature = max(self.temperature, REPEAT_TEMPERATURE)
                        messages.append(Message("user", REPEATED.format(tool=edit_tool)))
                    refused.add(signature)
            patch = tools.take_patch() or extract_diff(reply.text or "")
            note = None
            if patch is None and reply.text and not reply.tool_calls:
                # whole functions in a plain answer: the edit the forced call asks for
                note = tools.rewrite_functions(reply.text)
                patch = tools.take_patch() if note is not None else None
                if note is not None and patch is None:  # refused: why, and another tool next
                    edit_tool = NEXT_EDIT_TOOL["replace_function"]
                    signature = f"rewrite:{reply.text}"
                    if signature in refused:
                        temperature = max(self.temperature, REPEAT_TEMPERATURE)
                        note += "\n" + REPEATED.format(tool=edit_tool)
                    refused.add(signature)
                    messages.append(Message("user", note))
            if patch is None:
                since_step += 1
                self.progress(f"    -> {_fate(reply, note)}")
                if not reply.tool_calls and note is None:
                    # the same answer again (the 1.5B model wrote one five times at the same
                    # temperature): say so and sample hotter
                    again = reply.text in answers
                    answers.add(reply.text)
                    if again:
                        temperature = max(self.temperature, REPEAT_TEMPERATURE)
                    messages.append(Message("user", NO_EDIT + (f" {SAME_ANSWER}" if again else "")))
                continue
            earlier = next((r for r in result.steps if r.patch == patch), None)
            if earlier is not None:  # the gym would only say the same again: no step
                self.progress(f"    -> the same patch as step {earlier.step}: not tried again")
                messages.append(
                    Message("user", TRIED.format(step=earlier.step, outcome=earlier.outcome))
                )
                temperature = max(self.temperature, REPEAT_TEMPERATURE)
                force_next = True
                continue
            if self.build_check and await self._failed_build_check(patch, obs, messages, result):
                force_next = True  # the next call edits again; no step was spent
                continue
            since_step = 0
            step = await self.env.astep(patch)  # what the model's feedback may draw on
            # The harness's report (not the model) reads the step's localization against the
            # developer's fix from the gym's own record: astep leaves it out.
            judged = self.env.steps[-1]
            rec = StepRecord(
                len(result.steps) + 1,
                str(step.outcome),
                step.title,
                step.matches_expected,
                patch,
                _trim(step.detail, 2000),
                round(step.build_s, 2),
                round(step.run_s, 2),
                judged.matches_fix,
                judged.localization,
            )
            result.steps.append(rec)
            result.final_patch = patch
            self._log("agent_turn", bug=bug_id, call=result.turns, patch=patch, outcome=rec.outcome)
            self.progress(
                f"  step {rec.step}: {rec.outcome}" + (f" ({rec.title})" if rec.title else "")
            )
            if step.outcome == Outcome.RESOLVED:
                result.resolved, result.matches_fix = True, judged.matches_fix
                if judged.matches_fix is not None:
                    self.progress(f"    plausible; {fix_match_text(judged.matches_fix)}")
                return
            messages.append(Message("user", feedback(step, patch, obs)))
