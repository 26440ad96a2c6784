"""`kernel-agent`: fix kernel crashes of the kernel-crash gym with an LLM agent.

    kernel-agent fix t0-null-deref [--model local] [--max-steps 4] [--log runs/agent.jsonl]
    kernel-agent bench [--tier 0] [--model local] [--max-steps 4] [--json rows.json]

Exit codes: 0 resolved (bench: every bug), 1 not resolved, 2 bad input or model error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agents.kernel.agent import AgentResult, KernelAgent
from appl import ApplError, run
from codegen_eval.kernelgym.env import KernelGym
from codegen_eval.kernelgym.records import BugRecord, bundled_bugs, load_records

console = Console()


def _bugs(args: argparse.Namespace) -> list[BugRecord]:
    bugs = load_records(args.bugs) if args.bugs else bundled_bugs()
    tier = getattr(args, "tier", None)
    return [b for b in bugs if tier is None or b.tier == tier]


def _agent(args: argparse.Namespace, bugs: list[BugRecord]) -> KernelAgent:
    env = KernelGym(bugs, runs=args.runs, accel=args.accel, log_path=args.log)
    return KernelAgent(
        env,
        model=args.model,
        max_steps=args.max_steps,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        log_path=args.log,
    )


def result_table(results: list[AgentResult]) -> Table:
    table = Table(title="kernel-agent")
    for col in ("bug", "resolved", "steps", "outcomes", "turns", "tools", "time s"):
        table.add_column(col)
    for r in results:
        table.add_row(
            r.bug_id,
            "[green]yes[/green]" if r.resolved else "[red]no[/red]",
            str(len(r.steps)),
            " > ".join(s.outcome for s in r.steps) or "-",
            str(r.turns),
            str(r.tool_calls),
            f"{r.wall_s:.0f}",
        )
    n = sum(r.resolved for r in results)
    table.caption = f"resolved {n}/{len(results)}"
    return table


async def _run_all(agent: KernelAgent, bug_ids: list[str]) -> list[AgentResult]:
    # one bug at a time: every step builds and boots a VM, and the machine has few cores
    out: list[AgentResult] = []
    for bug_id in bug_ids:
        result = await agent.fix(bug_id)
        out.append(result)
        console.print(
            f"{bug_id}: {'resolved' if result.resolved else 'not resolved'} "
            f"after {len(result.steps)} step(s)"
        )
    return out


def cmd_fix(args: argparse.Namespace) -> int:
    bugs = _bugs(args)
    if args.bug not in {b.id for b in bugs}:
        console.print(f"[red]unknown bug {args.bug!r}[/red]; see `kernel-gym list`")
        return 2
    [result] = run(_run_all(_agent(args, bugs), [args.bug]))
    console.print(result_table([result]))
    if result.final_patch:
        console.rule("last patch")
        console.print(result.final_patch, markup=False, highlight=False)
    return 0 if result.resolved else 1


def cmd_bench(args: argparse.Namespace) -> int:
    bugs = _bugs(args)
    if not bugs:
        console.print("[red]no bugs selected[/red]")
        return 2
    results = run(_run_all(_agent(args, bugs), [b.id for b in bugs]))
    console.print(result_table(results))
    if args.json:
        rows: list[dict[str, Any]] = [r.to_dict() for r in results]
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r.resolved for r in results) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernel-agent", description=__doc__.split("\n")[0])
    parser.add_argument("--bugs", help="directory or JSONL of bug records (default: bundled)")
    parser.add_argument("--model", default=None, help="appl model alias (default: configured)")
    parser.add_argument("--max-steps", type=int, default=4, help="patches tried per bug")
    parser.add_argument("--runs", type=int, default=3, help="reproducer runs per boot")
    parser.add_argument("--accel", default="auto", choices=["auto", "tcg", "kvm"])
    parser.add_argument("--temperature", type=float, default=0.2)
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--log", help="JSONL log of resets, steps and agent turns")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fix", help="let the agent fix one bug")
    p.add_argument("bug")
    p.set_defaults(func=cmd_fix)
    p = sub.add_parser("bench", help="run the agent on every (selected) bug; print a table")
    p.add_argument("--tier", type=int)
    p.add_argument("--json", help="write the per-bug results here")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ApplError, OSError) as exc:
        console.print(f"[red]kernel-agent: {exc}[/red]")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
