"""Planner events of the LLM compiler in traces: typed events (plan_line, step_start,
step_done, step_failed, replan, join), shown by `appl trace show`, `html` and
`export --chrome`."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from appl.compiler import run_compiler
from appl.testing import Rule
from appl.trace import read_trace, recording
from appl.trace._html import render_html
from appl.trace._model import build_view
from appl.trace._text import show
from appl.trace.cli import main as trace_cli
from tests.appl.test_compiler_run import JOINER, PLANNER, Calls, finish

ROUND1 = (
    '1. search("Barack Obama age")\n'
    '2. search("explode: Michelle Obama age")\n'
    '3. math("${1} - ${2}")\n'
    "4. math(${1} minus 2)\n"  # a syntax error: rejected
    "5. join()\n"
)
ROUND2 = '5. search("Michelle Obama age")\n6. math("${1} - ${5}")\n7. join()\n'


async def test_planner_events_are_typed_and_shown_by_every_view(scripted, tmp_path: Path) -> None:
    scripted(
        [
            Rule(
                match=JOINER,
                replies=["Thought: step 2 failed.\nAction: Replan(retry Michelle)", finish("2")],
            ),
            Rule(match=PLANNER, replies=[ROUND1, ROUND2]),
        ]
    )
    path = tmp_path / "compiler.jsonl"
    with recording(path):
        result = await run_compiler("How much older?", Calls().tools(), model="scripted")
    assert result.answer == "2"
    trace = read_trace(path)
    kinds = [r["type"] for r in trace.records]
    by_kind = {k: [r["data"] for r in trace.records if r["type"] == k] for k in set(kinds)}
    lines = by_kind["plan_line"]
    assert [(d.get("step_id"), d["accepted"]) for d in lines if d["round"] == 1] == [
        (1, True),
        (2, True),
        (3, True),
        (None, False),
    ]
    assert "syntax" in lines[3]["issue"] and "minus" in lines[3]["line"]
    assert sorted(d["id"] for d in by_kind["step_done"]) == [1, 5, 6]
    failed = {d["id"]: d for d in by_kind["step_failed"]}
    assert failed[2]["error"] == "RuntimeError: search backend down" and not failed[2]["skipped"]
    assert failed[3]["skipped"]
    assert by_kind["replan"] == [{"round": 1, "reason": "retry Michelle"}]
    assert [(d["round"], d["action"]) for d in by_kind["join"]] == [(1, "replan"), (2, "finish")]
    # every step that ran has a step_start before its end
    position = {
        (r["type"], r["data"].get("id")): i
        for i, r in enumerate(trace.records)
        if r["type"].startswith("step_")
    }
    for step_id, end in ((1, "step_done"), (2, "step_failed"), (5, "step_done"), (6, "step_done")):
        assert position[("step_start", step_id)] < position[(end, step_id)], step_id
    assert ("step_start", 3) not in position  # skipped: never started

    view = build_view(trace)
    (run,) = [r for r in view.runs if r.steps]
    assert {s.step_id: s.status for s in run.steps} == {
        1: "done",
        2: "failed",
        3: "skipped",
        5: "done",
        6: "done",
    }

    console = Console(record=True, width=200)
    show(trace, console)
    text = console.export_text()
    assert "planner" in text and "replan after r1: retry Michelle" in text
    assert "step 2 search" in text and "failed: RuntimeError: search backend down" in text
    assert "plan r1: 4. math(${1} minus 2) rejected" in text
    assert "join r2: finish '2'" in text

    out = tmp_path / "chrome.json"
    assert trace_cli(["export", str(path), "--chrome", str(out)]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    steps = [e for e in events if e.get("cat") == "step"]
    assert {e["args"]["id"] for e in steps} == {1, 2, 3, 5, 6}
    assert all(e["ph"] == "X" and e["dur"] > 0 for e in steps)
    marks = [e["name"] for e in events if e.get("cat") == "planner"]
    assert "replan r1" in marks and "join r2" in marks and marks.count("plan_line r1") == 4

    html = render_html(trace)
    assert "<h3>Planner</h3>" in html and "replan after r1: retry Michelle" in html
