"""The kernel-crash agent: read the crash, look at the code, propose a diff, step the gym.

    env = KernelGym(runs=3, log_path="runs/kgym.jsonl")
    result = await KernelAgent(env, model="local", max_steps=4).fix("t0-null-deref")
    result.resolved, [s.outcome for s in result.steps]

One *turn* is one appl `gen` with the source tools (read_file, read_function, list_files,
grep; appl runs the model's tool calls and asks again until it answers). A turn whose answer
holds a diff becomes one gym *step* (build, boot, reproduce). The outcome decides the next
turn's feedback:

  apply_failed  patch's rejection + the real, numbered text the hunks were aimed at
  build_failed  the compiler's errors
  reproduced    the crash title now seen (same or new) + the new console excerpt
  boot_error    why the VM did not get through the reproducer
  (no diff)     a reminder of the answer format; costs a turn, not a step

Each step applies to the ORIGINAL source (the gym rebuilds from scratch), so every diff must
be the whole fix. The conversation keeps the last turns with their tool calls and results;
older turns are shortened to the model's answer and our feedback, to bound the context.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.kernel.diff import extract_diff, hunks
from agents.kernel.tools import SourceTools, numbered
from appl import AIMessage, GenResult, Message, SystemMessage, ToolError, gen, ppl
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
    "When you know the fix, answer with exactly one unified diff in a ```diff block, with "
    "paths relative to the source root as `--- a/<path>` and `+++ b/<path>`, hunk headers "
    "`@@ -l,n +l,n @@`, and context lines copied exactly from the file (kernel code is "
    "indented with tabs). Keep the diff minimal."
)

FEEDBACK_CHARS = 3500


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


@dataclass(slots=True)
class AgentResult:
    bug_id: str
    expected_title: str
    resolved: bool = False
    steps: list[StepRecord] = field(default_factory=list)
    turns: int = 0
    tool_calls: int = 0
    wall_s: float = 0.0
    final_patch: str = ""
    stopped: str = ""  # resolved | max_steps | max_turns

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class _Turn:
    messages: list[Message]  # what the gen added: tool calls, tool results, the answer
    answer: str
    feedback: str


def _trim(text: str, limit: int = FEEDBACK_CHARS) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    return text[: limit // 2] + "\n... [cut] ...\n" + text[-limit // 2 :]


@ppl
async def _turn(
    briefing: str,
    history: list[_Turn],
    tools: list[Any],
    keep_full: int,
    *,
    model: str | None,
    temperature: float,
    max_tokens: int,
    tool_rounds: int,
) -> GenResult:
    """One turn of the conversation: the briefing, the previous turns, then a gen that may
    call the source tools before it answers."""
    SystemMessage(SYSTEM)
    briefing
    for n, turn in enumerate(history):
        if n >= len(history) - keep_full:
            for message in turn.messages:
                message
        else:
            AIMessage(turn.answer or "(no answer)")
        turn.feedback
    return await gen(
        model=model,
        temperature=temperature,
        max_tokens=max_tokens,
        tools=tools,
        run_tools=True,
        max_rounds=tool_rounds,
    ).result()


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
            found = obs.source.read_function(name, hint_files=[rel])
            if found:
                header, _, body = found.partition("\n")
                hm = re.match(r"// (.+):(\d+)$", header)
                if hm:
                    shown.append(f"// {hm[1]}\n" + numbered(body, int(hm[2])))
            break
        if len(shown) >= limit:
            break
    return shown


def briefing(obs: Observation) -> str:
    crashes = parse_console(obs.crash_report) if obs.crash_report else []
    crash = crashes[0] if crashes else None
    parts = [f"Bug {obs.bug_id}: {obs.title}"]
    if obs.description:
        parts.append(f"About the code: {obs.description}")
    if crash is not None:
        stack = [
            f"  {f.func}"
            + (f" [{f.module}]" if f.module else "")
            + (f" {f.file}:{f.line}" if f.file else "")
            for f in crash.frames[:16]
        ]
        parts.append(
            f"Parsed report: kind {crash.kind}, RIP {crash.rip or '?'}\nStack:\n" + "\n".join(stack)
        )
    parts.append("Console excerpt:\n```\n" + _trim(obs.crash_report, 5000) + "\n```")
    parts.append("Source files of this bug:\n" + "\n".join(obs.files[:100]))
    defs = _local_definitions(obs, _function_names(obs, crash))
    if defs:
        parts.append("Code of the functions in the report:\n```c\n" + "\n\n".join(defs) + "\n```")
    parts.append(
        "Use the tools to read more code if you need to, then answer with the diff that fixes "
        "the bug."
    )
    return "\n\n".join(parts)


def feedback(step: StepResult, patch: str, obs: Observation) -> str:
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
        return (
            f"{head} The reproducer still crashes the kernel ({same}): {step.title}\n"
            f"Console:\n```\n{_trim(step.console_excerpt)}\n```\n{again}"
        )
    if step.outcome == Outcome.BOOT_ERROR:
        return (
            f"{head} {step.detail}\nConsole:\n```\n{_trim(step.console_excerpt, 2500)}\n```\n"
            f"{again}"
        )
    return head


NO_DIFF = (
    "I found no unified diff in your answer. Answer with the fix as exactly one ```diff block "
    "(`--- a/<path>`, `+++ b/<path>`, `@@ ... @@` hunks)."
)


class KernelAgent:
    def __init__(
        self,
        env: KernelGym,
        *,
        model: str | None = None,
        max_steps: int = 4,
        max_turns: int | None = None,
        tool_rounds: int = 8,
        keep_full: int = 2,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        log_path: str | Path | None = None,
    ) -> None:
        self.env = env
        self.model = model
        self.max_steps = max_steps
        self.max_turns = max_turns if max_turns is not None else 2 * max_steps
        self.tool_rounds = tool_rounds
        self.keep_full = keep_full
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.log_path = Path(log_path) if log_path else None

    def _log(self, event: str, **data: Any) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a") as fh:
            fh.write(json.dumps({"event": event, "time": time.time(), **data}, default=str))
            fh.write("\n")

    async def fix(self, bug_id: str) -> AgentResult:
        start = time.monotonic()
        obs = await self.env.areset(bug_id)
        result = AgentResult(bug_id, obs.title)
        tools = SourceTools(obs.source, obs.files)
        brief = briefing(obs)
        self._log("agent_start", bug=bug_id, model=self.model, briefing=brief)
        history: list[_Turn] = []
        while len(result.steps) < self.max_steps and result.turns < self.max_turns:
            result.turns += 1
            calls_before = len(tools.calls)
            try:
                reply = await _turn(
                    brief,
                    history,
                    tools.as_list(),
                    self.keep_full,
                    model=self.model,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    tool_rounds=self.tool_rounds,
                )
                answer, messages = reply.text or "", list(reply.messages)
            except ToolError:
                answer, messages = "", []
            patch = extract_diff(answer)
            turn_log = {"turn": result.turns, "answer": answer, "patch": patch}
            turn_log["tool_calls"] = tools.calls[calls_before:]
            if patch is None:
                note = NO_DIFF if messages else NO_DIFF + " Stop reading code and answer now."
                history.append(_Turn(messages, answer, note))
                self._log("agent_turn", bug=bug_id, **turn_log, outcome="no_diff")
                continue
            step = await self.env.astep(patch)
            rec = StepRecord(
                len(result.steps) + 1,
                str(step.outcome),
                step.title,
                step.matches_expected,
                patch,
                _trim(step.detail, 2000),
                round(step.build_s, 2),
                round(step.run_s, 2),
            )
            result.steps.append(rec)
            result.final_patch = patch
            self._log("agent_turn", bug=bug_id, **turn_log, outcome=rec.outcome)
            if step.outcome == Outcome.RESOLVED:
                result.resolved = True
                break
            history.append(_Turn(messages, answer, feedback(step, patch, obs)))
        result.tool_calls = len(tools.calls)
        result.wall_s = round(time.monotonic() - start, 2)
        result.stopped = (
            "resolved"
            if result.resolved
            else ("max_steps" if len(result.steps) >= self.max_steps else "max_turns")
        )
        self._log("agent_end", **result.to_dict())
        return result
