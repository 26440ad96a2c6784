"""`kernel-gym` command line: list, reproduce, try, bench.

Real kBench records: `kernel-gym --linux-tree ~/linux --records bug.json [--config FILE]
[--repro FILE] reproduce|try|bench ...` (the config and C reproducer come from the record when
it carries their text, else from --config / --repro; nothing is downloaded).

Options go before or after the subcommand. Exit codes (docs/cli.md): 0 reproduced / resolved
(bench: every bug), 1 not, 2 bad input or an unusable setup (`kernel-gym: error: ...`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from appl import __version__
from appl.cli_parser import EXIT_FAILED, EXIT_OK, CliParser, usage_error
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
from codegen_eval.kernelgym.kbench import BugSetupError, UnsupportedBug
from codegen_eval.kernelgym.records import BugRecord
from codegen_eval.kernelgym.runner import ReproConfig
from codegen_eval.kernelgym.scoring import Outcome, PatchScorer, StepResult, bench_row

# Not a terminal (a pipe, a file): rich would cut tables at 80 columns, where bug ids such
# as t0-hung-task and t0-null-deref could no longer be told apart.
console = Console(width=None if sys.stdout.isatty() else 200)


def _progress(text: str) -> None:
    """One line per finished step on stderr, flushed: a bench into a file or a pipe is never
    silent for minutes."""
    print(f"kernel-gym: {text}", file=sys.stderr, flush=True)


def _bugs(args: argparse.Namespace) -> list[BugRecord]:
    bugs = selected_bugs(args)
    config = Path(args.config).read_text() if getattr(args, "config", None) else None
    repro = Path(args.repro).read_text() if getattr(args, "repro", None) else None
    return [
        # --config / --repro fill in what a kBench record only links to.
        b.with_inputs(kernel_config=config, c_reproducer=repro) if b.kind == "kbench" else b
        for b in bugs
    ]


def _find(args: argparse.Namespace, bug_id: str) -> BugRecord:
    return find_bug(_bugs(args), bug_id)


def _scorer(args: argparse.Namespace) -> PatchScorer:
    return PatchScorer(ReproConfig(runs=args.runs, accel=args.accel), linux_tree=args.linux_tree)


def _show(step: StepResult, verbose: bool = True) -> None:
    color = {"resolved": "green", "reproduced": "yellow"}.get(step.outcome, "red")
    console.print(f"outcome: [{color}]{step.outcome}[/{color}]")
    for line in describe_step(step):
        console.print(line, markup=False, highlight=False)
    if step.detail:
        console.print(step.detail, markup=False)
    if verbose and step.console_excerpt:
        console.rule("console")
        console.print(step.console_excerpt, markup=False, highlight=False)


def describe_step(step: StepResult) -> list[str]:
    """What a step's result says, in lines that only claim what happened: a crash title is
    compared with the expected one only when there was a crash; times and the VM's state only
    for the stages that ran."""
    lines = [f"expected crash: {step.expected_title or '-'}"]
    if step.title:
        verdict = "matches the expected title" if step.matches_expected else "a DIFFERENT crash"
        lines.append(f"crash seen: {step.title} ({verdict})")
    elif step.outcome in (Outcome.RESOLVED, Outcome.FUNCTION_BROKEN):
        lines.append(f"crash seen: none in {step.completed_runs} run(s)")
    lines += describe_fix_match(step)
    stages = [f"build {step.build_s:.1f}s"]
    if step.vm_status is None:
        stages.append("not booted" + (f" ({step.outcome})" if step.outcome else ""))
    else:
        stages.append(f"run {step.run_s:.1f}s")
        stages.append(f"VM {step.vm_status}")
    lines.append("  ".join(stages))
    return lines


def describe_fix_match(step: StepResult) -> list[str]:
    """Plausible (no crash, checks pass) is not the same as the developer's fix: say both,
    and where the patch and the fix change the code (evidence, not proof)."""
    loc = step.localization
    if loc is None:
        return []
    verdict = {True: "yes", False: "no", None: "unknown (no source to read the patch against)"}
    lines = [
        f"plausible: {'yes' if step.plausible else 'no'}; "
        f"matches the developer fix: {verdict[step.matches_fix]}"
    ]
    for what in ("functions", "files"):
        fix, cand = loc[what]["fix"], loc[what]["candidate"]
        if fix or cand:
            lines.append(f"  {what} the fix changes: {', '.join(fix) or '-'}")
            lines.append(f"  {what} this patch changes: {', '.join(cand) or '-'}")
            break
    return lines


def cmd_list(args: argparse.Namespace) -> int:
    bugs = _bugs(args)
    if args.json:
        fields = ("id", "tier", "kind", "expected_title")
        print(json.dumps([{f: getattr(b, f) for f in fields} for b in bugs], indent=1))
        return EXIT_OK
    table = Table(title="kernel-gym bugs")
    for col in ("id", "tier", "kind", "expected title"):
        table.add_column(col, no_wrap=col == "id")
    for bug in bugs:
        table.add_row(bug.id, str(bug.tier), bug.kind, bug.expected_title)
    console.print(table)
    return EXIT_OK


def _one_step(args: argparse.Namespace, bug: BugRecord, patch: str) -> StepResult:
    """Score one (bug, patch) here; the step goes to --log and, with --json, to stdout."""
    if args.executor == "slurm":
        raise CliError(f"--executor slurm runs `kernel-gym bench`, not `{args.command}`")
    step = asyncio.run(_scorer(args).score(bug, patch))
    row = {"bug": bug.id, "patch": patch, "result": step.to_dict()}
    append_log(args.log, args.command, row)
    if args.json:
        print(json.dumps(row, indent=1, default=str))
    else:
        _show(step)
    return step


def cmd_reproduce(args: argparse.Namespace) -> int:
    step = _one_step(args, _find(args, args.bug), "")
    ok = step.outcome is Outcome.REPRODUCED and step.matches_expected
    return EXIT_OK if ok else EXIT_FAILED


def cmd_try(args: argparse.Namespace) -> int:
    try:
        patch = Path(args.patch).read_text()
    except OSError as exc:
        raise CliError(f"cannot read patch {args.patch}: {exc.strerror}") from None
    if not patch.strip():
        raise CliError(
            f"{args.patch} is empty: nothing to try (an unpatched kernel is "
            f"`kernel-gym reproduce {args.bug}`)"
        )
    step = _one_step(args, _find(args, args.bug), patch)
    return EXIT_OK if step.outcome is Outcome.RESOLVED else EXIT_FAILED


async def bench(
    bugs: list[BugRecord],
    scorer: PatchScorer,
    patches: str = "developer",
    candidates: dict[str, str] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Per bug: the unpatched baseline, then (patches=developer) the developer fix, or with
    `candidates` (bug id -> unified diff) that bug's candidate; a bug without one is only
    reproduced. `on_row` sees each bug's row as it is done (the CLI's --log)."""
    rows: list[dict[str, Any]] = []
    for i, bug in enumerate(bugs, 1):
        where = f"[{i}/{len(bugs)}] {bug.id}"
        _progress(f"{where}: building and booting the unpatched kernel")
        t0 = time.monotonic()
        try:
            base = await scorer.score(bug, "")
        except BugSetupError as exc:  # one bug that cannot run does not stop the bench
            rows.append(bench_row(bug, error=str(exc), unsupported=isinstance(exc, UnsupportedBug)))
            _progress(f"{where}: cannot run: {exc}")
            if on_row is not None:
                on_row(rows[-1])
            continue
        _progress(f"{where}: baseline {base.outcome} ({time.monotonic() - t0:.0f} s)")
        row = bench_row(bug, base)
        patch = bug.developer_patch if candidates is None else candidates.get(bug.id)
        label = "developer fix" if candidates is None else "candidate"
        if patches == "developer" and patch:
            fixed = await scorer.score(bug, patch)
            row["patched"] = fixed.to_dict()
            row["resolved"] = fixed.outcome is Outcome.RESOLVED
            row["plausible"], row["matches_fix"] = fixed.plausible, fixed.matches_fix
            _progress(f"{where}: {label} {fixed.outcome} ({time.monotonic() - t0:.0f} s)")
        row["total_s"] = time.monotonic() - t0
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def bench_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="kernel-gym bench")
    table.add_column("bug", no_wrap=True)  # ids are never cut
    cols = ("baseline", "title ok", "build s", "run s", "patched", "plausible", "matches fix",
            "build s", "run s")  # fmt: skip
    for col in cols:
        table.add_column(col)
    yes_no = {True: "yes", False: "[red]no[/red]", None: "-"}
    for r in rows:
        if "error" in r:
            kind = "unsupported" if r["unsupported"] else "error"
            table.add_row(r["bug"], f"[red]{kind}[/red]", *["-"] * 8)  # reason: below
            continue
        b, p = r["baseline"], r.get("patched") or {}
        table.add_row(
            r["bug"],
            f"{b['outcome']}",
            "yes" if r["reproduced"] else f"[red]no[/red] ({b.get('title')})",
            f"{b['build_s']:.1f}",
            f"{b['run_s']:.1f}",
            p.get("outcome", "-"),
            yes_no[p.get("plausible")] if p else "-",
            yes_no[p.get("matches_fix")] if p else "-",
            f"{p['build_s']:.1f}" if p else "-",
            f"{p['run_s']:.1f}" if p else "-",
        )
    return table


def bench_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many bugs ran, reproduced, and whose patch was plausible / matched the developer's
    fix (local and Slurm rows alike: read from each row's patched step)."""
    patched = [r["patched"] for r in rows if r.get("patched")]
    return {
        "bugs": len(rows),
        "reproduced": sum(bool(r.get("reproduced")) for r in rows),
        "patched": len(patched),
        "plausible": sum(p.get("plausible") is True for p in patched),
        "matches_fix": sum(p.get("matches_fix") is True for p in patched),
    }


def bench_summary(rows: list[dict[str, Any]]) -> str:
    c = bench_counts(rows)
    line = f"{c['reproduced']}/{c['bugs']} bugs reproduced"
    if c["patched"]:
        line += (
            f"; patched: plausible {c['plausible']}/{c['patched']} (no crash, checks pass), "
            f"matching the developer fix {c['matches_fix']}/{c['patched']}"
        )
    return line


def _bench_on_slurm(args: argparse.Namespace) -> list[dict[str, Any]]:
    """--executor slurm: every baseline and fix as its own job (kernelgym/distributed.py);
    a progress line names each job as its result comes back."""
    from codegen_eval.executors.slurm_client import SlurmUnavailable
    from codegen_eval.kernelgym.distributed import GymOptions, bench_on_slurm

    gym = GymOptions(
        bugs=str(Path(args.records).resolve()) if args.records else None,
        runs=args.runs,
        accel=args.accel,
        linux_tree=str(Path(args.linux_tree).expanduser().resolve()) if args.linux_tree else None,
        config_text=Path(args.config).read_text() if args.config else None,
        repro_text=Path(args.repro).read_text() if args.repro else None,
        cpus=args.slurm_cpus,
    )
    bugs = _bugs(args)
    _progress(f"{len(bugs)} bug(s): submitting their jobs to Slurm")
    try:
        rows = asyncio.run(
            bench_on_slurm(
                bugs, gym=gym, slurm=slurm_options(args), patches=args.patches, progress=_progress
            )
        )
    except SlurmUnavailable as exc:
        raise CliError(f"--executor slurm: {exc}") from None
    for row in rows:  # the jobs ran at once: the log gets the rows when all are back
        append_log(args.log, "bench", row)
    return rows


def _candidates(args: argparse.Namespace, bugs: list[BugRecord]) -> dict[str, str] | None:
    """--candidates DIR: DIR/<bug id>.patch (or .diff) per bug; None without the option."""
    if not args.candidates:
        return None
    where = Path(args.candidates)
    if not where.is_dir():
        raise BugSetupError(f"--candidates {where}: not a directory")
    if args.executor == "slurm" or args.patches == "none":
        what = "--executor slurm" if args.executor == "slurm" else "--patches none"
        raise BugSetupError(f"--candidates cannot be combined with {what}")
    found: dict[str, str] = {}
    for bug in bugs:
        for suffix in (".patch", ".diff"):
            path = where / f"{bug.id}{suffix}"
            try:
                text = path.read_text(errors="replace") if path.is_file() else ""
            except OSError as exc:
                raise BugSetupError(f"--candidates: cannot read {path}: {exc.strerror}") from None
            if text.strip():
                found[bug.id] = text
                break
    if not found:
        example = f" (e.g. {bugs[0].id}.patch)" if bugs else ""
        raise BugSetupError(
            f"--candidates {where}: no <bug id>.patch or .diff for any selected bug{example}"
        )
    return found


def cmd_bench(args: argparse.Namespace) -> int:
    if args.executor == "slurm" and not args.candidates:
        rows = _bench_on_slurm(args)
    else:
        bugs = _bugs(args)
        candidates = _candidates(args, bugs)

        def log_row(row: dict[str, Any]) -> None:
            append_log(args.log, "bench", row)

        rows = asyncio.run(bench(bugs, _scorer(args), args.patches, candidates, log_row))
    for r in rows:  # the Slurm rows carry them in their patched step only
        if r.get("patched"):
            r["plausible"] = r["patched"].get("plausible") is True
            r["matches_fix"] = r["patched"].get("matches_fix")
    if args.json:  # stdout is the JSON alone; the summary goes with the progress lines
        print(json.dumps(rows, indent=1, default=str))
        _progress(bench_summary(rows))
    else:
        console.print(bench_table(rows))
        console.print(bench_summary(rows), markup=False, highlight=False)
        for r in rows:
            if "error" in r:
                label = "unsupported" if r["unsupported"] else "error"
                console.print(f"[red]{label}:[/red]", end=" ")
                console.print(r["error"], markup=False, highlight=False)
    if args.json_file:  # the deprecated `--json FILE`
        Path(args.json_file).write_text(json.dumps(rows, indent=1))
    ok = all(r["reproduced"] and r.get("resolved", True) for r in rows)
    return EXIT_OK if ok else EXIT_FAILED


def _gym_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """kernel-gym's own options beside the shared ones, before or after the subcommand."""

    def d(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    add = parser.add_argument
    add("--linux-tree", default=d(None),
        help="your Linux git checkout (kBench records: worktree at the commit)")  # fmt: skip
    add("--config", default=d(None), help="kernel .config for a kBench record that only links it")
    add("--repro", default=d(None), help="C reproducer for a kBench record that only links it")
    add_shared(parser, suppress=suppress)


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="kernel-gym", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _gym_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list bugs")
    p.set_defaults(func=cmd_list)
    add_json(p)
    p = sub.add_parser("reproduce", help="build the unpatched bug and run its reproducer")
    p.add_argument("bug", help="a bug id (kernel-gym list)")
    p.set_defaults(func=cmd_reproduce)
    add_json(p)
    p = sub.add_parser("try", help="score a candidate patch (unified diff, patch -p1)")
    p.add_argument("bug", help="a bug id (kernel-gym list)")
    p.add_argument("patch", help="the candidate: a unified diff file, applied with patch -p1")
    p.set_defaults(func=cmd_try)
    add_json(p)
    p = sub.add_parser("bench", help="reproduce every bug, then apply its fix")
    p.add_argument(
        "--patches",
        default="developer",
        choices=["developer", "none"],
        help="developer: apply each bug's developer fix after its baseline (default); "
        "none: baselines only",
    )
    p.add_argument(
        "--candidates",
        metavar="DIR",
        help="score DIR/<bug id>.patch (or .diff) instead of each bug's developer fix: "
        "plausible and matching-the-fix counts for your own patches",
    )
    add_json(p, legacy_file=True)
    p.set_defaults(func=cmd_bench)
    for name in ("list", "reproduce", "try", "bench"):
        _gym_options(sub.choices[name], suppress=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        normalize(args, "kernel-gym")
        if args.linux_tree and not Path(args.linux_tree).is_dir():
            raise CliError(f"--linux-tree {args.linux_tree} is not a directory")
        return int(args.func(args))
    except CliError as exc:
        return usage_error("kernel-gym", str(exc))
    except BugSetupError as exc:  # a bug that cannot run here: the input, not a result
        label = "unsupported: " if isinstance(exc, UnsupportedBug) else ""
        return usage_error("kernel-gym", f"{label}{exc}")
    except BrokenPipeError:  # `kernel-gym list --json | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # a records, --config or --repro file that cannot be read
        where = f"{exc.filename}: " if exc.filename else ""
        return usage_error("kernel-gym", f"{where}{exc.strerror or exc}")
    except ValueError as exc:  # a records file that does not read as bug records
        return usage_error("kernel-gym", str(exc))
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
