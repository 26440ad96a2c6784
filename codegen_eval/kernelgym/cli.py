"""`kernel-gym` command line: list, reproduce, try, bench.

Real kBench records: `kernel-gym --linux-tree ~/linux --bugs bug.json [--config FILE]
[--repro FILE] reproduce|try|bench ...` (the config and C reproducer come from the record when
it carries their text, else from --config / --repro; nothing is downloaded)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from appl import __version__
from codegen_eval.kernelgym.kbench import BugSetupError, UnsupportedBug
from codegen_eval.kernelgym.records import BugRecord, bundled_bugs, load_records
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
    bugs = load_records(args.bugs) if getattr(args, "bugs", None) else bundled_bugs()
    tier = getattr(args, "tier", None)
    wanted = set(getattr(args, "only_bugs", None) or ())  # bench --bug (reproduce's bug is one id)
    if wanted:
        unknown = sorted(wanted - {b.id for b in bugs})
        if unknown:
            _unknown_bug(unknown[0], bugs)
        bugs = [b for b in bugs if b.id in wanted]
    config = Path(args.config).read_text() if getattr(args, "config", None) else None
    repro = Path(args.repro).read_text() if getattr(args, "repro", None) else None
    return [
        # --config / --repro fill in what a kBench record only links to.
        b.with_inputs(kernel_config=config, c_reproducer=repro) if b.kind == "kbench" else b
        for b in bugs
        if tier is None or b.tier == tier
    ]


def _find(args: argparse.Namespace, bug_id: str) -> BugRecord:
    bugs = _bugs(args)
    for bug in bugs:
        if bug.id == bug_id:
            return bug
    _unknown_bug(bug_id, bugs)


def _unknown_bug(bug_id: str, bugs: list[BugRecord]) -> NoReturn:
    known = ", ".join(b.id for b in bugs[:12])
    console.print(f"[red]unknown bug {bug_id!r}[/red]; known: {known} (`kernel-gym list`)")
    raise SystemExit(2)


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
    table = Table(title="kernel-gym bugs")
    for col in ("id", "tier", "kind", "expected title"):
        table.add_column(col)
    for bug in _bugs(args):
        table.add_row(bug.id, str(bug.tier), bug.kind, bug.expected_title)
    console.print(table)
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    step = asyncio.run(_scorer(args).score(_find(args, args.bug), ""))
    _show(step)
    return 0 if step.outcome is Outcome.REPRODUCED and step.matches_expected else 1


def cmd_try(args: argparse.Namespace) -> int:
    try:
        patch = Path(args.patch).read_text()
    except OSError as exc:
        print(f"kernel-gym: cannot read patch {args.patch}: {exc.strerror}", file=sys.stderr)
        return 2
    if not patch.strip():
        print(
            f"kernel-gym: {args.patch} is empty: nothing to try (an unpatched kernel is "
            f"`kernel-gym reproduce {args.bug}`)",
            file=sys.stderr,
        )
        return 2
    step = asyncio.run(_scorer(args).score(_find(args, args.bug), patch))
    _show(step)
    return 0 if step.outcome is Outcome.RESOLVED else 1


async def bench(
    bugs: list[BugRecord],
    scorer: PatchScorer,
    patches: str = "developer",
    candidates: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Per bug: the unpatched baseline, then (patches=developer) the developer fix, or with
    `candidates` (bug id -> unified diff) that bug's candidate; a bug without one is only
    reproduced."""
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
    """--executor slurm: every baseline and fix as its own job (kernelgym/distributed.py)."""
    from codegen_eval.executors.slurm import SlurmOptions
    from codegen_eval.executors.slurm_client import SlurmUnavailable
    from codegen_eval.kernelgym.distributed import GymOptions, bench_on_slurm

    gym = GymOptions(
        bugs=str(Path(args.bugs).resolve()) if args.bugs else None,
        runs=args.runs,
        accel=args.accel,
        linux_tree=str(Path(args.linux_tree).expanduser().resolve()) if args.linux_tree else None,
        config_text=Path(args.config).read_text() if args.config else None,
        repro_text=Path(args.repro).read_text() if args.repro else None,
        cpus=args.slurm_cpus,
    )
    slurm = SlurmOptions(
        partition=args.slurm_partition,
        account=args.slurm_account,
        time=args.slurm_time,
        mem=args.slurm_mem,
        workdir=Path(args.slurm_workdir) if args.slurm_workdir else None,
    )
    try:
        return asyncio.run(bench_on_slurm(_bugs(args), gym=gym, slurm=slurm, patches=args.patches))
    except SlurmUnavailable as exc:
        console.print(f"[red]error:[/red] --executor slurm: {exc}", markup=True, highlight=False)
        raise SystemExit(1) from None


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
        rows = asyncio.run(bench(bugs, _scorer(args), args.patches, candidates))
    for r in rows:  # the Slurm rows carry them in their patched step only
        if r.get("patched"):
            r["plausible"] = r["patched"].get("plausible") is True
            r["matches_fix"] = r["patched"].get("matches_fix")
    console.print(bench_table(rows))
    console.print(bench_summary(rows), markup=False, highlight=False)
    for r in rows:
        if "error" in r:
            console.print(f"[red]{'unsupported' if r['unsupported'] else 'error'}:[/red]", end=" ")
            console.print(r["error"], markup=False, highlight=False)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    ok = all(r["reproduced"] and r.get("resolved", True) for r in rows)
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernel-gym", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--bugs", help="directory or JSONL of bug records (default: bundled)")
    parser.add_argument(
        "--runs", type=int, default=3, help="reproducer runs per boot (K; default 3)"
    )
    parser.add_argument(
        "--accel",
        default="auto",
        choices=["auto", "tcg", "kvm"],
        help="QEMU acceleration: kvm where /dev/kvm works (auto, the default), else tcg",
    )
    parser.add_argument(
        "--linux-tree", help="your Linux git checkout (kBench records: worktree at the commit)"
    )
    parser.add_argument("--config", help="kernel .config for a kBench record that only links it")
    parser.add_argument("--repro", help="C reproducer for a kBench record that only links it")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list bugs")
    p.add_argument("--tier", type=int, help="only bugs of this tier (0: modules, 1: KASAN)")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("reproduce", help="build the unpatched bug and run its reproducer")
    p.add_argument("bug", help="a bug id (kernel-gym list)")
    p.set_defaults(func=cmd_reproduce)
    p = sub.add_parser("try", help="score a candidate patch (unified diff, patch -p1)")
    p.add_argument("bug", help="a bug id (kernel-gym list)")
    p.add_argument("patch", help="the candidate: a unified diff file, applied with patch -p1")
    p.set_defaults(func=cmd_try)
    p = sub.add_parser("bench", help="reproduce every bug, then apply its fix")
    p.add_argument("--tier", type=int, help="only bugs of this tier (0: modules, 1: KASAN)")
    p.add_argument(
        "--bug",
        action="append",
        dest="only_bugs",
        metavar="ID",
        help="only this bug (repeatable; kernel-gym list)",
    )
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
    p.add_argument("--json", help="write the rows here (JSON)")
    p.add_argument(
        "--executor",
        choices=["local", "slurm"],
        default="local",
        help="slurm: each baseline and fix is a job on the cluster of $SLURM_CONF",
    )
    p.add_argument("--slurm-partition", help="the partition to submit to (default: Slurm's)")
    p.add_argument("--slurm-account", help="the account to charge (default: yours)")
    p.add_argument("--slurm-time", default="02:00:00", help="time limit per bug job")
    p.add_argument("--slurm-mem", help="memory per bug job, e.g. 8G")
    p.add_argument(
        "--slurm-cpus",
        "--slurm-cpus-per-task",
        dest="slurm_cpus",
        type=int,
        default=2,
        help="CPUs per bug job (default 2)",
    )
    p.add_argument(
        "--slurm-workdir", help="job files, on storage the nodes share (default runs/slurm)"
    )
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.linux_tree and not Path(args.linux_tree).is_dir():
        print(f"kernel-gym: --linux-tree {args.linux_tree} is not a directory", file=sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except BugSetupError as exc:
        label = "unsupported" if isinstance(exc, UnsupportedBug) else "error"
        console.print(f"[red]{label}:[/red]", end=" ")
        console.print(str(exc), markup=False, highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
