"""Terminal views: `appl trace show` (a rich tree of the run) and `appl trace diff`."""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from appl.trace._format import Trace
from appl.trace._model import (
    FuncSpan,
    GenSpan,
    RunSpan,
    TraceView,
    build_view,
    money,
    planner_lines,
)
from appl.trace._replay import request_lines, run_name


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _gen_line(gen: GenSpan) -> str:
    p, c = gen.tokens
    parts = [f"[bold cyan]{escape(gen.label)}[/]", f"{gen.duration:.3f}s", f"{p}+{c} tok"]
    if gen.cost:
        parts.append(f"${gen.cost:.5f}")
    retries = (gen.response or {}).get("retries")
    if retries:
        parts.append(f"[yellow]{retries} retries[/]")
    if gen.error:
        parts.append(
            f"[bold red]{escape(str(gen.error.get('type')))}: "
            f"{escape(_preview(str(gen.error.get('message')), 80))}[/]"
        )
    elif gen.response is None:
        parts.append("[red]no answer recorded[/]")
        if gen.streamed:
            text = "".join(gen.streamed)
            parts.append(f"[yellow]streamed before the cut: {escape(repr(_preview(text)))}[/]")
    else:
        calls = (gen.response or {}).get("tool_calls") or []
        if calls:
            parts.append("→ " + ", ".join(escape(str(c.get("name"))) for c in calls))
        if gen.reply:
            parts.append(f"[green]{escape(repr(_preview(gen.reply)))}[/]")
    return "  ".join(parts)


def _add(node: Tree, item: FuncSpan | GenSpan) -> None:
    if isinstance(item, GenSpan):
        branch = node.add(_gen_line(item))
        for tool in item.tools:
            status = "[green]ok[/]" if tool.ok else "[red]failed[/]"
            took = f"{(tool.end or tool.start) - tool.start:.3f}s"
            branch.add(f"tool [magenta]{escape(tool.name)}[/] {took} {status}")
        return
    mark = "" if item.ok in (True, None) else " [bold red]raised[/]"
    branch = node.add(f"[bold]{escape(item.path.rsplit('/', 1)[-1])}[/] {item.duration:.3f}s{mark}")
    for child in item.children:
        _add(branch, child)


def _add_planner(node: Tree, run: RunSpan) -> None:
    colours = {"done": "green", "failed": "red", "skipped": "yellow", "rejected": "red"}
    for _, text in planner_lines(run):
        colour = next((c for word, c in colours.items() if word in text.split(":")[0]), "")
        line = escape(_preview(text, 120))
        node.add(f"[{colour}]{line}[/]" if colour else line)


def render_tree(view: TraceView) -> Tree:
    header = view.trace.header
    title = (
        f"[bold]trace[/] {escape(str(view.trace.path))}  v{header.get('version')}  "
        f"{escape(str(header.get('program')))}  started {header.get('started_at')}"
    )
    root = Tree(title)
    for run in view.runs:
        p = sum(g.tokens[0] for g in run.gens)
        c = sum(g.tokens[1] for g in run.gens)
        cost = sum(g.cost for g in run.gens)
        status = {True: "[green]ok[/]", False: "[bold red]failed[/]", None: "[yellow]unfinished[/]"}
        line = (
            f"run [bold]{escape(run.function)}[/] ({run.run_id}) {run.duration:.3f}s "
            f"{status[run.ok]}  {len(run.gens)} model calls  {p}+{c} tok  {money(cost)}"
        )
        if run.error:
            line += f"  [red]{escape(_preview(run.error, 100))}[/]"
        node = root.add(line)
        for item in run.roots:
            _add(node, item)
        for stop in run.budget_stops:
            node.add(f"[bold red]budget stop[/] {escape(str(stop.get('message')))}")
        if run.steps or run.planner:
            _add_planner(node.add("[bold]planner[/]"), run)
        for rec in run.other:
            node.add(
                f"[dim]{escape(str(rec.get('type')))} {escape(_preview(str(rec.get('data')), 100))}[/]"
            )
    return root


def show(trace: Trace, console: Console | None = None) -> None:
    console = console or Console()
    for warning in trace.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    console.print(render_tree(build_view(trace)))


# --- diff ------------------------------------------------------------------------------------


@dataclass
class TraceDiff:
    """What changed between two runs of a program, keyed by call identity."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    prompt_changed: dict[str, list[str]] = field(default_factory=dict)  # key -> diff lines
    reply_changed: dict[str, list[str]] = field(default_factory=dict)
    same: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.prompt_changed or self.reply_changed)

    def render(self) -> str:
        out = [
            f"{self.same} calls unchanged, {len(self.prompt_changed)} prompts changed, "
            f"{len(self.reply_changed)} replies changed, {len(self.added)} calls added, "
            f"{len(self.removed)} calls gone"
        ]
        out += [f"+ added: {k}" for k in self.added]
        out += [f"- gone:  {k}" for k in self.removed]
        for title, table in (("prompt", self.prompt_changed), ("reply", self.reply_changed)):
            for key, lines in table.items():
                out.append(f"~ {title} changed: {key}")
                out.extend("    " + line for line in lines)
        return "\n".join(out)


def _keyed(view: TraceView) -> dict[str, GenSpan]:
    """Gens keyed by "<run name>#<n>:<call key>" (the n-th run of that function)."""
    counts: dict[str, int] = defaultdict(int)
    out: dict[str, GenSpan] = {}
    for run in view.runs:
        if not run.gens:
            continue
        name = run_name(run.gens[0].call["path"])
        n = counts[name]
        counts[name] += 1
        for gen in run.gens:
            out[f"{name}#{n}:{gen.key}" if n else gen.key] = gen
    return out


def diff_traces(a: Trace, b: Trace) -> TraceDiff:
    left, right = _keyed(build_view(a)), _keyed(build_view(b))
    result = TraceDiff()
    result.removed = [k for k in left if k not in right]
    result.added = [k for k in right if k not in left]
    for key in (k for k in left if k in right):
        old, new = left[key], right[key]
        same = True
        if old.call["request_hash"] != new.call["request_hash"]:
            same = False
            result.prompt_changed[key] = list(
                difflib.unified_diff(
                    request_lines(old.request),
                    request_lines(new.request),
                    "A",
                    "B",
                    lineterm="",
                    n=1,
                )
            )[2:]  # the ---/+++ header says nothing the section title does not
        if old.reply != new.reply or old.error != new.error:
            same = False
            before = old.reply.splitlines() or [str(old.error)]
            after = new.reply.splitlines() or [str(new.error)]
            result.reply_changed[key] = list(
                difflib.unified_diff(before, after, "A", "B", lineterm="", n=1)
            )[2:]
        result.same += same
    return result
