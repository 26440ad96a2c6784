"""`appl trace html FILE -o OUT.html`: one self-contained page (inline CSS/JS, no assets).

The page is rendered here, in Python, so it reads even with scripts off; the inline script
only adds the time axis, a text filter and click-to-open from the timeline to a call.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from appl.trace._chrome import Interval, assign_lanes
from appl.trace._format import Trace
from appl.trace._model import (
    GenSpan,
    RunSpan,
    StepSpan,
    TraceView,
    build_view,
    money,
    planner_lines,
)

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:14px 22px}header h1{margin:0;font-size:19px}
header .meta{opacity:.8;font-size:12px}main{padding:12px 22px}
h2{font-size:16px;margin:22px 0 8px}table{border-collapse:collapse;background:#fff}
td,th{padding:4px 10px;border:1px solid #dde1e7;text-align:left;font-size:13px}
.timeline{position:relative;background:#fff;border:1px solid #dde1e7;padding:4px 0 2px}
.lane{position:relative;height:22px;margin:2px 0}
.bar{position:absolute;height:18px;top:2px;border-radius:3px;background:#4c8bf5;color:#fff;
 font-size:11px;overflow:hidden;white-space:nowrap;padding:0 4px;box-sizing:border-box;
 cursor:pointer;text-decoration:none}.bar.ppl{background:#8e9aaf}.bar.tool{background:#b07cd8}
.bar.error{background:#d9534f}.axis{position:relative;height:18px;font-size:10px;color:#68707d}
.tick{position:absolute;border-left:1px solid #c7ccd4;height:8px;padding-left:2px}
.call{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:8px 0;padding:6px 12px}
.call.error{border-color:#d9534f}.call summary{cursor:pointer}.key{font-family:monospace}
.msg{margin:6px 0;padding:6px 8px;background:#f3f5f8;border-radius:4px}
.msg .role{font-weight:600;font-size:12px;color:#68707d;text-transform:uppercase}
pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12.5px}
.reply{background:#eaf6ec}.err{color:#b52b27;font-weight:600}.dim{color:#68707d;font-size:12px}
#filter{padding:5px 8px;width:320px;margin:6px 0}
"""

_JS = """
(function(){
  var root=document.documentElement;
  document.querySelectorAll('.timeline').forEach(function(tl){
    var span=parseFloat(tl.dataset.span)||0, axis=tl.querySelector('.axis');
    if(!axis||span<=0)return;
    var steps=[0.001,0.002,0.005,0.01,0.02,0.05,0.1,0.2,0.5,1,2,5,10,20,30,60,120,300,600];
    var step=steps.find(function(s){return span/s<=10;})||span/10;
    for(var t=0;t<=span+1e-9;t+=step){
      var d=document.createElement('div');d.className='tick';
      d.style.left=(100*t/span)+'%';d.textContent=(t<1?(t*1000).toFixed(0)+'ms':t.toFixed(1)+'s');
      axis.appendChild(d);
    }
  });
  document.querySelectorAll('.bar[data-target]').forEach(function(bar){
    bar.addEventListener('click',function(){
      var el=document.getElementById(bar.dataset.target);
      if(el){el.open=true;el.scrollIntoView({behavior:'smooth'});}
    });
  });
  var box=document.getElementById('filter');
  if(box)box.addEventListener('input',function(){
    var q=box.value.toLowerCase();
    document.querySelectorAll('details.call').forEach(function(c){
      c.style.display=(!q||c.textContent.toLowerCase().indexOf(q)>=0)?'':'none';
    });
  });
  root.dataset.rendered=String(document.querySelectorAll('.tick').length);
})();
"""


def _timeline(run: RunSpan, view: TraceView) -> str:
    start = run.start
    end = max([run.end or view.end, *[g.end or g.start for g in run.gens]])
    span = max(end - start, 1e-6)
    rows: list[str] = []
    groups = (
        (
            "ppl",
            [
                Interval(f.start, f.end or end, f.path.rsplit("/", 1)[-1], "ppl", {})
                for f in run.funcs
            ],
        ),
        (
            "model",
            [Interval(g.start, g.end or end, g.label, "model", {"gen": g}) for g in run.gens],
        ),
        (
            "tool",
            [
                Interval(t.start, t.end or end, t.name, "tool", {})
                for g in run.gens
                for t in g.tools
            ],
        ),
        (
            "step",
            [
                Interval(s.start, s.end or end, f"{s.step_id} {s.tool}", "tool", {"step": s})
                for s in run.steps
            ],
        ),
    )
    for category, intervals in groups:
        placed = assign_lanes(intervals)
        lanes: dict[int, list[str]] = {}
        for lane, item in placed:
            left = 100 * (item.start - start) / span
            width = max(0.3, 100 * (item.end - item.start) / span)
            gen: GenSpan | None = item.args.get("gen")
            step: StepSpan | None = item.args.get("step")
            failed = (gen is not None and gen.error) or (step is not None and step.status != "done")
            cls = f"bar {'tool' if category == 'step' else category}" + (" error" if failed else "")
            target = f' data-target="call-{gen.index}"' if gen is not None else ""
            title = f"{item.name} {item.end - item.start:.3f}s"
            lanes.setdefault(lane, []).append(
                f'<a class="{cls}"{target} style="left:{left:.3f}%;width:{width:.3f}%" '
                f'title="{escape(title)}">{escape(item.name)}</a>'
            )
        for lane in sorted(lanes):
            rows.append(f'<div class="lane" data-group="{category}">{"".join(lanes[lane])}</div>')
    return (
        f'<div class="timeline" data-span="{span:.6f}"><div class="axis"></div>'
        + "".join(rows)
        + "</div>"
    )


def _messages(request: dict[str, Any]) -> str:
    out = []
    for m in request.get("messages") or ():
        extra = ""
        if m.get("tool_calls"):
            extra = "<pre>" + escape(json.dumps(m["tool_calls"], indent=1)) + "</pre>"
        out.append(
            f'<div class="msg"><div class="role">{escape(str(m.get("role")))}</div>'
            f"<pre>{escape(str(m.get('content') or ''))}</pre>{extra}</div>"
        )
    return "".join(out)


def _call(gen: GenSpan) -> str:
    p, c = gen.tokens
    resp = gen.response or {}
    meta = (
        f"{gen.duration:.3f}s · {p}+{c} tokens · {money(gen.cost)} · retries "
        f"{resp.get('retries', 0)} · site {escape(str(gen.call.get('site')))}"
    )
    body = [f'<div class="dim">{meta}</div>', "<h4>Prompt</h4>", _messages(gen.request)]
    if gen.error:
        body.append(
            f'<p class="err">{escape(str(gen.error.get("type")))}: '
            f"{escape(str(gen.error.get('message')))}</p>"
        )
    if gen.response is not None:
        body.append(f'<h4>Reply</h4><div class="msg reply"><pre>{escape(gen.reply)}</pre></div>')
        if resp.get("tool_calls"):
            body.append("<pre>" + escape(json.dumps(resp["tool_calls"], indent=1)) + "</pre>")
    for tool in gen.tools:
        body.append(
            f'<div class="msg"><div class="role">tool {escape(tool.name)} '
            f"({'ok' if tool.ok else 'failed'})</div><pre>{escape(str(tool.content))}</pre></div>"
        )
    cls = "call error" if gen.error else "call"
    return (
        f'<details class="{cls}" id="call-{gen.index}" data-key="{escape(gen.key)}">'
        f'<summary><span class="key">{escape(gen.key)}</span> '
        f'<span class="dim">{gen.duration:.3f}s</span></summary>{"".join(body)}</details>'
    )


def render_html(trace: Trace) -> str:
    view = build_view(trace)
    header = trace.header
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>appl trace: {escape(str(header.get('program')))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>appl trace: {escape(str(header.get('program')))}</h1>"
        f"<div class='meta'>{escape(str(trace.path.name))} · schema v{header.get('version')} · "
        f"started {escape(str(header.get('started_at')))} · {len(view.gens)} model calls</div>"
        "</header><main>",
    ]
    for warning in trace.warnings:
        parts.append(f'<p class="err">{escape(warning)}</p>')
    parts.append(
        "<h2>Runs</h2><table><tr><th>run</th><th>function</th><th>wall</th>"
        "<th>calls</th><th>tokens</th><th>cost</th><th>status</th></tr>"
    )
    for run in view.runs:
        tokens = sum(sum(g.tokens) for g in run.gens)
        status = {True: "ok", False: f"failed: {run.error}", None: "unfinished"}[run.ok]
        parts.append(
            f"<tr><td>{escape(run.run_id)}</td><td>{escape(run.function)}</td>"
            f"<td>{run.duration:.3f}s</td><td>{len(run.gens)}</td><td>{tokens}</td>"
            f"<td>{money(sum(g.cost for g in run.gens))}</td><td>{escape(status)}</td></tr>"
        )
    parts.append("</table>")
    for run in view.runs:
        parts.append(f"<h2>Timeline: {escape(run.function)} ({escape(run.run_id)})</h2>")
        parts.append(_timeline(run, view))
        if run.steps or run.planner:
            rows = "".join(
                f"<li><span class='dim'>{t - run.start:.3f}s</span> {escape(text)}</li>"
                for t, text in planner_lines(run)
            )
            parts.append(f"<h3>Planner</h3><ol class='planner'>{rows}</ol>")
    parts.append('<h2>Calls</h2><input id="filter" placeholder="filter prompts and replies">')
    parts.extend(_call(g) for g in view.gens)
    parts.append(
        "<h2>Configuration</h2><details><summary>header (secrets removed)</summary><pre>"
        + escape(json.dumps(header.get("config"), indent=1, default=str))
        + "</pre></details>"
    )
    parts.append(f"</main><script>{_JS}</script></body></html>")
    return "".join(parts)


def export_html(trace: Trace, out: str | Path) -> Path:
    path = Path(out)
    path.write_text(render_html(trace), encoding="utf-8")
    return path
