"""Replay: answer every gen from a recorded trace, matched by deterministic call identity.

A recorded answer is looked up by (run, call key, request hash), where the call key is
"path#occurrence.step" from appl.identity: where the gen sits in the program, not which
thread or task ran it or when it finished. So a parallel program replays identically however
its calls interleave. Runs: the n-th top-level run of function F in the replay is matched to
the n-th recorded run of F; when the request differs there, the other recorded runs of F are
searched for the same key and hash (concurrent top-level runs may start in any order).

Strict mode raises `ReplayMissError` naming the call, with the nearest recorded request and a
unified diff. Lenient mode sends a missing call to the live model; pair it with `record_to`
to write a new, complete trace (replayed and new answers alike, since the runtime emits the
same events either way).

What is replayed: text, tool calls, finish reason, usage, cost, streamed chunks (re-emitted
to the stream in order), every choice of a gen(n=k), recorded model errors and budget stops,
and the results of tool calls: a tool is not run again (it may have side effects, or be slow
or unavailable) unless it is marked pure (`@tool(pure=True)`); its recorded text feeds the
next request as before (`ToolResult.value` is then None and `.replayed` True).
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import random
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from appl import errors
from appl.errors import ApplError, BudgetExceededError, ReplayMissError
from appl.identity import CallIdentity
from appl.runtime import current_run_id, use_model_resolver, use_tool_replayer
from appl.tools import ToolResult
from appl.trace._format import Trace, read_trace
from appl.trace._record import recording
from appl.types import (
    Choice,
    GenRequest,
    GenResponse,
    ModelAPI,
    TextCallback,
    ToolCall,
    Usage,
)

ReplayMode = Literal["strict", "lenient"]


@dataclass
class Recorded:
    """One recorded model request and what came of it."""

    run: str
    call: dict[str, Any]
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # {"type", "message", budget fields...}
    seq: int = 0

    @property
    def key(self) -> str:
        c = self.call
        return f"{c['path']}#{c['occurrence']}.{c['step']}"

    @property
    def answered(self) -> bool:
        return self.response is not None or self.error is not None


def run_name(path: str) -> str:
    """The top-level function of a call path ("main/solve[1]/gen@L9" -> "main")."""
    return path.split("/", 1)[0]


def collect_calls(trace: Trace) -> list[Recorded]:
    """Pair every gen_request with its response, budget stop or error, in trace order."""
    out: list[Recorded] = []
    open_: dict[tuple[str, str, str], Recorded] = {}
    item: Recorded | None
    for rec in trace.records:
        kind, run, call = rec.get("type"), str(rec.get("run")), rec.get("call")
        data = rec.get("data") or {}
        if kind == "gen_request" and call:
            item = Recorded(run, call, data.get("request") or {}, seq=int(rec.get("seq", 0)))
            open_[(run, item.key, call["request_hash"])] = item
            out.append(item)
        elif kind in ("gen_response", "budget_stop") and call:
            key = f"{call['path']}#{call['occurrence']}.{call['step']}"
            item = open_.pop((run, key, call["request_hash"]), None)
            if item is None:
                continue
            if kind == "gen_response":
                item.response = data
            else:
                item.error = {"type": "BudgetExceededError", **data}
        elif kind == "gen_error" and call:
            # the identity of the gen's latest request: pair exactly (when that request was
            # already answered, the error came after it, e.g. a failed validation: nothing
            # to pair)
            key = f"{call['path']}#{call['occurrence']}.{call['step']}"
            item = open_.pop((run, key, call["request_hash"]), None)
            if item is not None:
                item.error = {"type": data.get("type"), "message": data.get("message")}
        elif kind == "gen_error":
            # older traces name only the gen's path: give it to that gen's unanswered request
            path = data.get("path")
            for k, item in reversed(list(open_.items())):
                if item.run == run and item.call["path"] == path:
                    item.error = {"type": data.get("type"), "message": data.get("message")}
                    del open_[k]
                    break
    return out


def request_lines(request: dict[str, Any]) -> list[str]:
    """A request as readable lines, for nearest-match scoring and diffs."""
    lines = [f"model: {request.get('model')}"]
    for name in ("temperature", "top_p", "max_tokens", "stop", "seed", "tool_choice", "stream"):
        if request.get(name) not in (None, False):
            lines.append(f"{name}: {request.get(name)}")
    if request.get("response_format"):
        lines.append(f"response_format: {request['response_format']}")
    tools = [t.get("function", {}).get("name") for t in request.get("tools") or ()]
    if tools:
        lines.append(f"tools: {', '.join(map(str, tools))}")
    for m in request.get("messages") or ():
        head = f"[{m.get('role')}]"
        if m.get("tool_calls"):
            calls = ", ".join(
                f"{c['function']['name']}({c['function']['arguments']})" for c in m["tool_calls"]
            )
            head += f" tool_calls: {calls}"
        if m.get("tool_call_id"):
            head += f" (for {m['tool_call_id']})"
        lines.append(head)
        lines.extend(str(m.get("content") or "").splitlines() or [""])
    return lines


class ReplayIndex:
    """The recorded answers of one trace, and the matching of live calls against them."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.calls = [c for c in collect_calls(trace) if c.answered]
        self.table: dict[tuple[str, str], list[Recorded]] = defaultdict(list)
        self.runs: dict[str, list[str]] = defaultdict(list)  # run name -> recorded run ids
        for item in self.calls:
            self.table[(item.run, item.key)].append(item)
            runs = self.runs[run_name(item.call["path"])]
            if item.run not in runs:
                runs.append(item.run)
        self._live: dict[str, tuple[str, int]] = {}  # live run id -> (name, ordinal)
        self._counts: dict[str, int] = defaultdict(int)
        self.hits = 0
        self.misses: list[str] = []
        # recorded tool results: (run, call key of the request that asked, tool call id) -> data
        self.tool_results: dict[tuple[str, str, str], dict[str, Any]] = {}
        for rec in trace.records:
            call = rec.get("call")
            if rec.get("type") == "tool_result" and call and "path" in call:
                key = f"{call['path']}#{call['occurrence']}.{call['step']}"
                data = rec.get("data") or {}
                self.tool_results[(str(rec.get("run")), key, str(data.get("id")))] = data
        self._matched: dict[tuple[str, str], str] = {}  # (live run, call key) -> recorded run
        self.tool_hits = 0

    def _ordinal(self, live_run: str, name: str) -> int:
        if live_run not in self._live:
            self._live[live_run] = (name, self._counts[name])
            self._counts[name] += 1
        return self._live[live_run][1]

    def find(self, live_run: str, identity: CallIdentity) -> Recorded | None:
        name = run_name(identity.path)
        recorded_runs = self.runs.get(name, [])
        ordinal = self._ordinal(live_run, name)
        preferred = recorded_runs[ordinal : ordinal + 1]
        others = [r for r in recorded_runs if r not in preferred]
        for run in (*preferred, *others):
            for item in self.table.get((run, identity.key), ()):
                if item.call["request_hash"] == identity.request_hash:
                    self.hits += 1
                    self._matched[(live_run, identity.key)] = item.run
                    return item
        return None

    def tool_result(
        self, live_run: str, identity: CallIdentity, call: ToolCall
    ) -> ToolResult | None:
        """The recorded result of a tool call asked for by the replayed request `identity`
        (None when that request was not replayed or the trace lacks the result)."""
        run = self._matched.get((live_run, identity.key))
        data = None if run is None else self.tool_results.get((run, identity.key, call.id))
        if data is None:
            return None
        self.tool_hits += 1
        return ToolResult(call, str(data.get("content") or ""), bool(data.get("ok")), replayed=True)

    def nearest(self, identity: CallIdentity, request: GenRequest) -> Recorded | None:
        """The same call key if recorded (the request changed), else the most similar request."""
        same_key = [c for c in self.calls if c.key == identity.key]
        if same_key:
            return same_key[0]
        from appl.identity import request_to_jsonable

        wanted = "\n".join(request_lines(request_to_jsonable(request)))
        pool = [c for c in self.calls if c.call.get("site") == identity.site] or self.calls
        best, best_score = None, -1.0
        for item in pool[:500]:  # bounded: a miss message must not take minutes
            matcher = difflib.SequenceMatcher(None, "\n".join(request_lines(item.request)), wanted)
            score = matcher.ratio()
            if score > best_score:
                best, best_score = item, score
        return best

    def miss_error(
        self, live_run: str, identity: CallIdentity, request: GenRequest
    ) -> ReplayMissError:
        from appl.identity import request_to_jsonable

        name = run_name(identity.path)
        ordinal = self._live.get(live_run, (name, 0))[1]
        lines = [
            f"strict replay: no recorded answer for call {identity.key} (site {identity.site}, "
            f"request sha256 {identity.request_hash[:12]}) in run #{ordinal + 1} of "
            f"{name!r}, trace {self.trace.path}",
        ]
        near = self.nearest(identity, request)
        if near is None:
            lines.append("the trace holds no recorded model calls at all")
        else:
            why = "same call, different request" if near.key == identity.key else "most similar"
            lines.append(f"nearest recorded request: {near.key} at {near.call.get('site')} ({why})")
            diff = difflib.unified_diff(
                request_lines(near.request),
                request_lines(request_to_jsonable(request)),
                fromfile=f"recorded {near.key}",
                tofile=f"now {identity.key}",
                lineterm="",
                n=2,
            )
            lines.extend(diff)
        recorded_model = (near.request.get("model") if near is not None else None) or None
        if recorded_model is not None and recorded_model != request.model:
            # the model alias is part of the request hash: a different default model misses
            # every call, and re-recording would be the wrong advice
            lines.append(
                f"the trace was recorded with model {recorded_model!r} and this run asks "
                f"{request.model!r}: set the default model to {recorded_model!r} as when "
                f'recorded (appl.configure(default_model="{recorded_model}"), or '
                "[defaults] default_model in appl.toml)"
            )
        else:
            lines.append(
                "re-record the trace (pytest --appl-record, or delete the file), or replay "
                "with mode='lenient' to send missing calls to the live model"
            )
        self.misses.append(identity.key)
        return ReplayMissError("\n".join(lines))


def _error_class(name: str | None) -> type[Exception]:
    cls = getattr(errors, name or "", None)
    if isinstance(cls, type) and issubclass(cls, ApplError):
        return cls
    return errors.ModelError


def recorded_response(item: Recorded) -> GenResponse:
    """The GenResponse of a recorded answer (raises the recorded error instead, if any)."""
    if item.error is not None:
        err = item.error
        if err.get("type") == "BudgetExceededError":
            raise BudgetExceededError(
                str(err.get("message")),
                budget=str(err.get("budget", "")),
                limit=err.get("limit", 0) or 0,
                used=err.get("used", 0) or 0,
            )
        raise _error_class(err.get("type"))(f"(replayed) {err.get('message')}")
    data = item.response or {}
    usage = data.get("usage") or {}
    choices = tuple(
        Choice(
            text=str(c.get("text") or ""),
            tool_calls=tuple(
                ToolCall(str(t.get("id")), str(t.get("name")), str(t.get("arguments")))
                for t in c.get("tool_calls") or ()
            ),
            finish_reason=c.get("finish_reason"),
        )
        for c in data.get("choices") or ()  # recorded for gen(n=k) only
    )
    return GenResponse(
        choices=choices,
        text=data.get("text") or "",
        tool_calls=tuple(
            ToolCall(str(c.get("id")), str(c.get("name")), str(c.get("arguments")))
            for c in data.get("tool_calls") or ()
        ),
        finish_reason=data.get("finish_reason"),
        usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
        model=str(data.get("model") or ""),
        latency_s=0.0,  # no time was spent: the recorded latency stays in the old trace
        retries=0,
        cost_usd=float(data.get("cost_usd") or 0.0),
    )


@dataclass
class ReplayedModel:
    """A ModelAPI answering one call from its recorded answer (streams recorded chunks)."""

    item: Recorded
    delay_s: float = 0.0
    name: str = "replay"

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        response = recorded_response(self.item)
        if on_text is not None:
            chunks = (self.item.response or {}).get("chunks")
            if chunks is None:  # traced without chunks: re-split the text by words
                from appl.testing._rules import split_tokens

                chunks = split_tokens(response.text)
            for chunk in chunks:
                result = on_text(chunk)
                if inspect.isawaitable(result):
                    await result
                await asyncio.sleep(0)  # let readers of the stream see each chunk
        return response

    async def aclose(self) -> None:
        return None


class Replayer:
    """The model resolver installed by `replaying`."""

    def __init__(
        self, trace: Trace, mode: ReplayMode, jitter_s: float = 0.0, seed: int | None = None
    ):
        if mode not in ("strict", "lenient"):
            raise ValueError(f"replay mode must be 'strict' or 'lenient', got {mode!r}")
        self.index = ReplayIndex(trace)
        self.mode: ReplayMode = mode
        self.jitter_s = jitter_s
        self._rng = random.Random(seed)
        self.live_calls: list[str] = []  # keys sent to the live model (lenient misses)

    def __call__(self, alias: str | None, identity: CallIdentity) -> ModelAPI:
        live_run = current_run_id() or "?"  # the run a gen belongs to; its task inherits it
        item = self.index.find(live_run, identity)
        if item is not None:
            delay = self._rng.uniform(0.0, self.jitter_s) if self.jitter_s else 0.0
            return ReplayedModel(item, delay)
        if self.mode == "lenient":
            from appl.models import get_model

            self.live_calls.append(identity.key)
            return get_model(alias)
        return _MissModel(self, live_run, identity)

    def tool_result(self, identity: CallIdentity, call: ToolCall) -> ToolResult | None:
        """The tool replayer (appl.runtime.use_tool_replayer): recorded results of tools not
        marked pure, for requests answered from the trace; a live request's tools run."""
        return self.index.tool_result(current_run_id() or "?", identity, call)


@dataclass
class _MissModel:
    """Raises the miss when asked, so the error carries the full request for its diff."""

    replayer: Replayer
    live_run: str
    identity: CallIdentity
    name: str = "replay-miss"

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        raise self.replayer.index.miss_error(self.live_run, self.identity, request)

    async def aclose(self) -> None:
        return None


@contextmanager
def replaying(
    path: str | Path,
    *,
    mode: ReplayMode = "strict",
    record_to: str | Path | None = None,
    jitter_s: float = 0.0,
    seed: int | None = None,
    overwrite: bool = False,
) -> Iterator[Replayer]:
    """Answer every gen started in this block from the trace at `path` (zero model calls).

    mode="strict" (default): a call with no recorded answer raises ReplayMissError.
    mode="lenient": such a call goes to the live model. `record_to` (any mode) records this
    run to a new trace file, so a lenient replay leaves a complete, updated trace behind (an
    existing `record_to` is an error unless `overwrite=True`).
    jitter_s: each replayed answer waits uniform(0, jitter_s) s (random.Random(seed)), to shake
    the completion order and show that the program does not depend on it.
    """
    trace = read_trace(path)
    replayer = Replayer(trace, mode, jitter_s, seed)
    with ExitStack() as stack:
        if record_to is not None:
            if Path(record_to).resolve() == Path(path).resolve():
                raise ApplError("replaying(): record_to must differ from the trace replayed")
            stack.enter_context(recording(record_to, overwrite=overwrite))
        stack.enter_context(use_model_resolver(replayer))
        stack.enter_context(use_tool_replayer(replayer.tool_result))
        yield replayer
