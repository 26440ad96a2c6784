"""Kernel agent on the tier-0 bugs: planner vs ReAct, per embedded model tier.

    .venv/bin/python benchmarks/kernel_agent.py [--tiers 0.5b,1.5b] [--modes react,planner]
        [--out-dir runs/kagent] [--max-steps 2] [--tool-rounds 2] [--runs 2] [--report-only]

Each (tier, mode) is one `kernel-agent bench --tier 0 ... --log DIR/TIER-MODE.jsonl --resume`
(so an interrupted measurement continues where it stopped), run one after the other; the
1-minute load average is sampled before and after each. `--report-only` prints the table from
what the out files hold (finished bugs only). Columns: bugs finished, resolved, model calls,
prompt+completion tokens, wall time (sum over bugs), and the per-bug stop reasons. A mode
`react+bc` or `planner+bc` is that mode with `--build-check` (edits that do not build go back
to the model without spending a step); the build checks that failed are counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_config(args: argparse.Namespace, tier: str, mode: str) -> None:
    out = Path(args.out_dir) / f"{tier}-{mode}.jsonl"
    agent_mode, _, extra = mode.partition("+")
    cmd = [sys.executable, "-m", "agents.kernel.cli", "bench", "--tier", "0", "--model",
           "local", "--local-model", tier, "--mode", agent_mode,
           *(["--build-check"] if extra == "bc" else []), "--max-steps", str(args.max_steps),
           "--tool-rounds", str(args.tool_rounds), "--runs", str(args.runs), "--resume",
           "--log", str(out)]  # fmt: skip
    with (Path(args.out_dir) / "loadavg.txt").open("a") as fh:
        fh.write(f"{tier}-{mode} start load {loadavg()}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(cmd, cwd=ROOT, env=env, check=False)
    with (Path(args.out_dir) / "loadavg.txt").open("a") as fh:
        fh.write(f"{tier}-{mode} end load {loadavg()}\n")


def report(args: argparse.Namespace) -> None:
    print("| tier | mode | bugs done | resolved | model calls | tokens | wall s | failed build "
          "checks | stopped |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for tier in args.tiers.split(","):
        for mode in args.modes.split(","):
            path = Path(args.out_dir) / f"{tier}-{mode}.jsonl"
            lines = path.read_text().splitlines() if path.exists() else []
            # the attempts are the log's `attempt` events (docs/cli.md)
            rows = [e for e in map(json.loads, lines) if e.get("event") == "attempt"]
            resolved = [r["bug_id"] for r in rows if r["resolved"]]
            stops = Counter(r["stopped"] for r in rows)
            print(
                f"| {tier} | {mode} | {len(rows)}/9 | {len(resolved)} "
                f"{('(' + ', '.join(resolved) + ')') if resolved else ''} | "
                f"{sum(r['turns'] for r in rows)} | "
                f"{sum(r['prompt_tokens'] + r['completion_tokens'] for r in rows):,} | "
                f"{sum(r['wall_s'] for r in rows):.0f} | "
                f"{sum(r.get('build_checks_failed', 0) for r in rows)} | "
                f"{', '.join(f'{k} {v}' for k, v in sorted(stops.items()))} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tiers", default="0.5b,1.5b")
    parser.add_argument("--modes", default="react,planner")
    parser.add_argument("--out-dir", default="runs/kagent")
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--tool-rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2, help="reproducer runs per boot")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for tier in args.tiers.split(","):
            for mode in args.modes.split(","):
                run_config(args, tier, mode)
    report(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
