"""Chrome trace-event export (`appl trace export FILE --chrome OUT.json`); opens in Perfetto.

Each run is a process; inside it, @ppl calls, model calls and tool calls each get as many
"lanes" (threads) as they had concurrent spans, assigned greedily, so overlapping calls sit
on different rows and the parallelism of the program is visible at a glance. Every span is
a complete event ("ph": "X") with ts/dur in microseconds from the start of the trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appl.trace._format import Trace
from appl.trace._model import TraceView, build_view


@dataclass
class Interval:
    start: float
    end: float
    name: str
    category: str
    args: dict[str, Any]


def assign_lanes(intervals: Iterable[Interval]) -> list[tuple[int, Interval]]:
    """Greedy interval colouring: each span goes to the first lane free at its start."""
    lanes: list[float] = []  # end time of the last span in each lane
    out: list[tuple[int, Interval]] = []
    for item in sorted(intervals, key=lambda i: (i.start, i.end)):
        for lane, busy_until in enumerate(lanes):
            if busy_until <= item.start:
                lanes[lane] = item.end
                break
        else:
            lanes.append(item.end)
            lane = len(lanes) - 1
        out.append((lane, item))
    return out


# lane groups inside one run's process: (category, first tid, label)
_GROUPS = (
    ("ppl", 1, "@ppl calls"),
    ("model", 100, "model calls"),
    ("tool", 200, "tools"),
    ("step", 300, "plan steps"),
)
_PLANNER_TID = 299  # plan lines, joins and replans: instant events on one row


def _intervals(view: TraceView, run_index: int) -> list[Interval]:
    run = view.runs[run_index]
    end_of_run = run.end or view.end
    out = [
        Interval(
            f.start,
            f.end or end_of_run,
            f.path.rsplit("/", 1)[-1],
            "ppl",
            {"path": f.path, "function": f.function, "ok": f.ok},
        )
        for f in run.funcs
    ]
    for g in run.gens:
        p, c = g.tokens
        args: dict[str, Any] = {
            "key": g.key,
            "site": g.call.get("site"),
            "request_hash": g.call.get("request_hash"),
            "prompt_tokens": p,
            "completion_tokens": c,
            "cost_usd": g.cost,
            "retries": (g.response or {}).get("retries", 0),
            "reply": g.reply[:500],
        }
        if g.error:
            args["error"] = f"{g.error.get('type')}: {g.error.get('message')}"
        out.append(Interval(g.start, g.end or end_of_run, g.label, "model", args))
        out.extend(
            Interval(
                t.start,
                t.end or end_of_run,
                f"tool {t.name}",
                "tool",
                {"id": t.call_id, "ok": t.ok, "arguments": str(t.arguments)[:500]},
            )
            for t in g.tools
        )
    out.extend(
        Interval(
            s.start,
            s.end or end_of_run,
            f"step {s.step_id} {s.tool}",
            "step",
            {
                "id": s.step_id,
                "status": s.status,
                "attempts": s.attempts,
                "args": str(s.args)[:500],
                "detail": str(s.detail)[:500],
            },
        )
        for s in run.steps
    )
    return out


def to_chrome(trace: Trace) -> dict[str, Any]:
    view = build_view(trace)
    origin = view.start

    def us(t: float) -> float:
        return round((t - origin) * 1e6, 3)

    events: list[dict[str, Any]] = []
    for index, run in enumerate(view.runs):
        pid = index + 1
        events.append(
            {
                "ph": "M",
                "name": "process_name",
                "pid": pid,
                "tid": 0,
                "args": {"name": f"run {run.function} ({run.run_id})"},
            }
        )
        spans = _intervals(view, index)
        for category, base, label in _GROUPS:
            placed = assign_lanes(s for s in spans if s.category == category)
            for lane in sorted({lane for lane, _ in placed}):
                events.append(
                    {
                        "ph": "M",
                        "name": "thread_name",
                        "pid": pid,
                        "tid": base + lane,
                        "args": {"name": f"{label} #{lane}"},
                    }
                )
                events.append(
                    {
                        "ph": "M",
                        "name": "thread_sort_index",
                        "pid": pid,
                        "tid": base + lane,
                        "args": {"sort_index": base + lane},
                    }
                )
            for lane, span in placed:
                events.append(
                    {
                        "ph": "X",
                        "name": span.name,
                        "cat": category,
                        "pid": pid,
                        "tid": base + lane,
                        "ts": us(span.start),
                        "dur": max(1.0, us(span.end) - us(span.start)),
                        "args": span.args,
                    }
                )
        if run.planner:
            events.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": _PLANNER_TID,
                 "args": {"name": "planner"}}
            )  # fmt: skip
        for rec in run.planner:
            data = rec.get("data") or {}
            events.append(
                {
                    "ph": "i",
                    "s": "t",
                    "name": f"{rec.get('type')} r{data.get('round')}",
                    "cat": "planner",
                    "pid": pid,
                    "tid": _PLANNER_TID,
                    "ts": us(float(rec.get("time", run.start))),
                    "args": data,
                }
            )
        for stop in run.budget_stops:
            events.append(
                {
                    "ph": "i",
                    "s": "p",
                    "name": "budget stop",
                    "pid": pid,
                    "tid": 1,
                    "ts": us(run.end or view.end),
                    "args": stop,
                }
            )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "program": trace.header.get("program"),
            "started_at": trace.header.get("started_at"),
            "schema_version": trace.header.get("version"),
        },
    }


def export_chrome(trace: Trace, out: str | Path) -> Path:
    path = Path(out)
    path.write_text(json.dumps(to_chrome(trace), default=str))
    return path
