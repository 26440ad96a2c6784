"""`codegen-eval`: list suites, run a benchmark, report on logs, export logs to parquet.

    codegen-eval list
    codegen-eval run --suite hpc-kernels --model local -n 5 -k 1,5 [--solver generate]
    codegen-eval run --suite verilog --solver reference --limit 3
    codegen-eval run --humaneval problems.jsonl --solver file --samples samples.jsonl
    codegen-eval run --pareval ParEval --pareval-models serial,omp,mpi,mpi+omp --solver reference
    codegen-eval run --resume --log runs/x.jsonl        # continue it, options from the log
    codegen-eval report runs/x.jsonl [more.jsonl] -o report.html   # 2+ logs: side by side
    codegen-eval export runs/x.jsonl --parquet x.parquet

Exit codes (docs/cli.md): 0 done (failing candidates are results, not errors), 1 a run in
which every candidate ended in infra_error, 2 bad input (command line, files), an unusable
sandbox backend or an unreachable model, on one line `codegen-eval: error: ...`, 130
interrupted (the log keeps everything finished; the printed --resume command continues).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, cast

from appl import __version__
from codegen_eval.cli_inputs import CliError, load_plugins, policy_notes, tasks_from_args
from codegen_eval.cli_preflight import model_preflight, one_line, probe_backend, slurm_executor
from codegen_eval.cli_select import add_selection_options, reader_glob_notes, selection_from_args
from codegen_eval.readers import rtllm_cli
from codegen_eval.readers.cvdp import cli as cvdp_cli
from codegen_eval.readers.mpirigen import cli as mpirigen_cli
from codegen_eval.run_options import parse_solver_options, take_logged_options
from codegen_eval.types import Task

__all__ = ["CliError", "build_parser", "main", "tasks_from_options"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to look, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"-k wants comma-separated integers, got {text!r}"
        ) from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError("-k values must be >= 1")
    return ks


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="codegen-eval", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--plugin", action="append", default=[], help="import MODULE to register suites")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="suites with sizes; `list SUITE` lists its problem ids")
    ls.add_argument("suite", nargs="?", help="a suite name: list its problems")
    add_selection_options(ls)

    # options show their defaults in --help ("(default: 0.8)")
    r = sub.add_parser(
        "run",
        help="generate and score candidates",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    r.add_argument("--suite", action="append", default=[], help="suite name (repeatable)")
    r.add_argument("--humaneval", metavar="FILE", help="a HumanEval-style JSONL file as a suite")
    r.add_argument(
        "--pareval",
        metavar="PATH",
        help="your ParEval checkout (or one of its prompts JSON files, with --pareval-checkout)",
    )
    r.add_argument(
        "--pareval-checkout", metavar="DIR", help="the checkout, when --pareval is a file"
    )
    r.add_argument(
        "--pareval-prompts",
        default="generation",
        help="generation, translation or both (comma separated; default generation)",
    )
    r.add_argument(
        "--pareval-verdict",
        choices=["upstream", "trusted"],
        default="upstream",
        help="upstream: the driver's in-process Validation line (comparable, forgeable); "
        "trusted: decided by a process without candidate code",
    )
    r.add_argument(
        "--pareval-cores",
        type=int,
        help="cap of the launch sweep in cores, ranks x threads (default: this machine's)",
    )
    r.add_argument(
        "--pareval-launch-configs",
        metavar="JSON",
        help="instead of drivers/launch-configs.json (e.g. drivers/test-launch-configs.json)",
    )
    r.add_argument(
        "--verilogeval",
        metavar="PATH",
        help="your VerilogEval copy: a v2 dataset directory, or the v1 problems JSONL",
    )
    r.add_argument(
        "--verilogeval-mode",
        choices=["spec-to-rtl", "code-complete", "v1"],
        default=None,
        help="which VerilogEval task to run (default: spec-to-rtl for a v2 directory, v1 for "
        "a JSONL file)",
    )
    r.add_argument(
        "--verilogeval-descriptions", metavar="JSONL", help="v1 descriptions (detail) JSONL"
    )
    r.add_argument(
        "--include-known-bad",
        action="store_true",
        help="VerilogEval, RTLLM: also score problems whose reference fails on this toolchain",
    )
    r.add_argument(
        "--verilogeval-policy-exclusions",
        action="store_true",
        help="VerilogEval: also exclude the problems upstream discussed as defective",
    )
    r.add_argument(
        "--pareval-models", default="serial,omp", help="parallelism models (default serial,omp)"
    )
    mpirigen_cli.add_run_options(r)
    cvdp_cli.add_run_options(r)
    rtllm_cli.add_run_options(r)
    r.add_argument("--model", default="local", help="appl model alias (default local)")
    r.add_argument(
        "--base-url", help="an OpenAI-compatible server for --model (configures the alias)"
    )
    r.add_argument("-n", type=int, default=1, help="samples per problem")
    r.add_argument("-k", type=_parse_ks, default=(1,), help="pass@k values, e.g. 1,5")
    r.add_argument(
        "--solver",
        type=_parse_solver,
        default="generate",
        help="generate | repair (the generate-compile-repair agent, agents.repair) | reference "
        "| file | MODULE:FACTORY, where FACTORY(task, model=, temperature=, max_tokens=, seed=, "
        "**solver options) returns the task with its solver set",
    )
    r.add_argument(
        "--solver-opt",
        action="append",
        metavar="KEY=VALUE",
        help="an option of the solver, repeatable, e.g. --solver repair --solver-opt rounds=3 "
        "(recorded in the log header)",
    )
    r.add_argument("--samples", help="JSONL of candidates for --solver file")
    r.add_argument(
        "--max-sandboxes",
        type=int,
        default=os.cpu_count() or 1,
        help="candidates scored at once (default: the CPU count)",
    )
    r.add_argument(
        "--max-generations",
        type=int,
        default=16,
        help="model requests in flight at once (appl's per-model limits apply too)",
    )
    r.add_argument("--limit", type=int, help="first L problems per suite (L >= 1)")
    add_selection_options(r)
    r.add_argument("--temperature", type=float, default=0.8, help="sampling temperature")
    r.add_argument("--max-tokens", type=int, default=1024, help="tokens per model answer")
    r.add_argument(
        "--seed", type=int, default=0, help="base seed of the requests (sample i asks seed+i)"
    )
    r.add_argument("--log", help="run log path (default runs/<suites>-<time>.jsonl)")
    r.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --log with the options it was started with",
    )
    r.add_argument(
        "--retry-infra",
        action="store_true",
        help="with --resume: generate or score again the candidates that ended in infra_error "
        "(a model server that timed out, a dead sandbox); their new results replace them",
    )
    r.add_argument(
        "--sandbox",
        "--backend",
        choices=["bwrap", "docker", "unsafe-local"],
        help="sandbox backend (default $CODEGEN_SANDBOX or bwrap); checked once before the run",
    )
    r.add_argument(
        "--executor",
        choices=["local", "slurm"],
        default="local",
        help="where candidates are scored: here (local, default) or as batched jobs on the "
        "Slurm cluster named by $SLURM_CONF (see docs/running-at-scale.md)",
    )
    r.add_argument("--slurm-partition", help="slurm: sbatch --partition")
    r.add_argument("--slurm-account", help="slurm: sbatch --account")
    r.add_argument("--slurm-time", default="01:00:00", help="slurm: time limit per job")
    r.add_argument("--slurm-mem", help="slurm: memory per job, e.g. 4G (sbatch --mem)")
    r.add_argument(
        "--slurm-batch-size",
        type=int,
        help="slurm: candidates per job (default: as many jobs as the partition has CPUs for, "
        "at least 4 candidates each)",
    )
    r.add_argument(
        "--slurm-cpus-per-task",
        type=int,
        default=1,
        help="slurm: CPUs per job; the job scores that many candidates at once",
    )
    r.add_argument(
        "--slurm-max-attempts",
        type=int,
        default=3,
        help="slurm: jobs per candidate before it is recorded as infra_error (default 3)",
    )
    r.add_argument(
        "--slurm-mpi-steps",
        action="store_true",
        help="slurm: MPI runs of mpi-completion and of ParEval's MPI models as `srun --mpi=pmix` "
        "steps (ranks confined per rank) instead of mpirun in the sandbox; for ranks across "
        "nodes",
    )
    r.add_argument(
        "--slurm-workdir",
        metavar="DIR",
        help="slurm: batch and result files, visible from the compute nodes "
        "(default: <log>.slurm next to the log)",
    )
    r.add_argument("--report", metavar="HTML", help="also write the HTML report here")
    r.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar or periodic progress line on stderr",
    )

    rep = sub.add_parser(
        "report", help="table and HTML report of a run log; several logs are compared side by side"
    )
    rep.add_argument("logs", nargs="+", metavar="LOG", help="run logs (JSONL); 2+ are compared")
    rep.add_argument(
        "-o", "--output", default="report.html", help="the HTML page (default: report.html)"
    )
    rep.add_argument(
        "-k", type=_parse_ks, default=None, help="pass@k values (default: those of the run)"
    )
    add_selection_options(rep)

    sh = sub.add_parser(
        "show", help="a run log's problems and samples in the terminal; with ID, one problem whole"
    )
    sh.add_argument("log", help="a run log (JSONL)")
    sh.add_argument("id", nargs="?", help="a problem id: its samples' code, verdict, explanation")
    sh.add_argument("--json", action="store_true", help="the same as JSON, for scripts")
    add_selection_options(sh)

    mpirigen_cli.add_subcommands(sub)
    ex = sub.add_parser("export", help="a run log as parquet, or as an Inspect .eval log")
    ex.add_argument("log", help="a run log (JSONL)")
    ex.add_argument("--parquet", metavar="OUT", help="the parquet file to write")
    ex.add_argument("--inspect", metavar="OUT.eval", help="an Inspect log (`inspect view` it)")
    for command in sub.choices.values():  # before or after the subcommand (docs/cli.md)
        command.add_argument("--plugin", action="append", default=argparse.SUPPRESS,
                             help="import MODULE to register suites")  # fmt: skip
    return p


def cmd_list(args: argparse.Namespace) -> int:
    from codegen_eval.cli_views import problem_listing, suite_listing

    selection = selection_from_args(args)
    if args.suite or selection:
        return problem_listing(args.suite, selection)
    return suite_listing()


def tasks_from_options(options: dict[str, Any], plugins: list[str]) -> list[Task]:
    """The tasks of a run from its recorded options (the log header's `cli` field): how a
    slurm worker on a compute node rebuilds exactly the suites the submitting run scores."""
    load_plugins(plugins)
    args = build_parser().parse_args(["run"])
    for dest, value in options.items():
        if hasattr(args, dest):
            setattr(args, dest, value)
    return tasks_from_args(args)


# Solvers built on codegen_eval from other packages, by name (codegen_eval never imports
# agents; the factory is imported when asked for).
NAMED_FACTORIES = {"repair": "agents.repair:with_repair"}


def _parse_solver(text: str) -> str:
    if text in ("generate", "reference", "file", *NAMED_FACTORIES) or re.fullmatch(
        r"[\w.]+:\w+", text
    ):
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r}: expected generate, repair, reference, file or MODULE:FACTORY"
    )


def _solver_factory(spec: str) -> Callable[..., Any]:
    """Import a solver factory named MODULE:NAME (by name: codegen_eval never imports agents)."""
    module_name, _, attr = NAMED_FACTORIES.get(spec, spec).partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"--solver {spec}: cannot load it ({exc})") from None
    if not callable(factory):
        raise CliError(f"--solver {spec}: {attr} is not callable")
    return cast(Callable[..., Any], factory)


def _prog() -> str:
    """How this program was started, for commands printed to the user (runnable as shown)."""
    if os.path.basename(sys.argv[0]) == "codegen-eval":
        return "codegen-eval"
    return f"{shlex.quote(sys.executable)} -m codegen_eval.cli"


def _resume_hint(log_path: Path) -> str:
    return f"{_prog()} run --resume --log {shlex.quote(str(log_path))}"


def _check_options(args: argparse.Namespace) -> None:
    if args.n < 1:
        raise CliError("-n must be >= 1")
    if args.limit is not None and args.limit < 1:
        raise CliError(
            f"--limit must be >= 1 (got {args.limit}); leave it out to run every problem"
        )
    if max(args.k) > args.n:
        raise CliError(
            f"-k {','.join(map(str, args.k))} asks for pass@{max(args.k)} but -n {args.n} gives "
            f"only {args.n} candidate(s) per problem: use -n {max(args.k)} or a smaller -k"
        )
    for name in ("max_sandboxes", "max_generations"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1")
    if args.samples and args.solver != "file":
        if "solver" in args._explicit:
            raise CliError(f"--samples is read only by --solver file, not --solver {args.solver}")
        args.solver = "file"  # --samples alone means: score these candidates
    if args.solver == "file" and not args.samples:
        raise CliError("--solver file needs --samples FILE (JSONL of candidates)")


def cmd_run(args: argparse.Namespace, parser: argparse.ArgumentParser, plugins: list[str]) -> int:
    from codegen_eval.report import note_text, print_table, render_html, summarize
    from codegen_eval.report_samples import sample_rows
    from codegen_eval.run_options import HEADER_KEY, absolutize_paths, recorded_options
    from codegen_eval.runner import RunAborted, RunConfig, run_eval_sync
    from codegen_eval.selection import SelectionError, check_selection, match_samples_file
    from codegen_eval.solvers import FileSolver, GenerateSolver, ReferenceSolver
    from sandboxes import current_backend, use_backend

    notes: list[str] = []
    logged_header: dict[str, Any] = {}
    if args.resume:
        logged_header, logged_plugins, notes = take_logged_options(args, parser)
        plugins = list(dict.fromkeys(plugins + load_plugins(logged_plugins)))
    if args.log and Path(args.log).is_dir():
        raise CliError(
            f"--log {args.log} is a directory; give a file, e.g. {Path(args.log) / 'run.jsonl'}"
        )
    args.sandbox = args.sandbox or current_backend()  # $CODEGEN_SANDBOX: read, never set
    absolutize_paths(args)
    _check_options(args)
    notes += reader_glob_notes(args)
    cvdp_cli.check_options(args)
    probe_backend(args.sandbox)
    tasks = tasks_from_args(args)
    logged_suites = logged_header.get("suites")
    if logged_suites is not None and sorted(logged_suites) != sorted(t.name for t in tasks):
        raise CliError(
            f"--resume: the log ran {', '.join(logged_suites) or 'no suite'}, these options give "
            f"{', '.join(t.name for t in tasks)}; give the log's suite options or another --log"
        )
    config = RunConfig(
        n=args.n,
        ks=args.k,
        max_sandboxes=args.max_sandboxes,
        max_generations=args.max_generations,
        limit=args.limit,
        selection=selection_from_args(args),
        progress=not args.no_progress,
        retry_infra=args.retry_infra,
    )
    if args.retry_infra and not args.resume:
        raise CliError("--retry-infra goes with --resume (it redoes a logged run's infra errors)")
    try:
        selected = check_selection(tasks, config)
    except SelectionError as exc:
        raise CliError(str(exc)) from None
    factory_spec = args.solver in NAMED_FACTORIES or ":" in args.solver
    uses_model = args.solver == "generate" or factory_spec
    header: dict[str, Any] = {
        "solver": args.solver,
        "model": args.model if uses_model else "",
    }
    solver_options: dict[str, Any] = {}
    if factory_spec:
        factory = _solver_factory(args.solver)
        solver_options = parse_solver_options(args.solver, factory, args.solver_opt or [])
        header.update(model_preflight(args.model, args.base_url))
        options = {"model": args.model, "temperature": args.temperature,
                   "max_tokens": args.max_tokens, "seed": args.seed}  # fmt: skip
        options = {k: v for k, v in options.items() if v is not None}  # factory defaults
        try:
            made = [factory(task, **options, **solver_options) for task in tasks]
        except (TypeError, ValueError) as exc:
            raise CliError(f"--solver {args.solver}: {one_line(exc)}") from None
        if any(t.solver is None for t in made):
            raise CliError(f"--solver {args.solver}: the factory left a task without a solver")
        if args.executor == "slurm" and any(
            m.scorer is not t.scorer for m, t in zip(made, tasks, strict=True)
        ):
            # The compute nodes rebuild the suites from the run options and score with the
            # suite's own scorer: a factory's scorer would be silently ignored there.
            raise CliError(
                f"--solver {args.solver}: the factory replaces the suite's scorer, which the "
                "slurm executor's compute nodes do not use; run it with --executor local"
            )
        tasks = made
        solver: Any = None  # each task brings its own
    elif args.solver_opt:
        raise CliError(
            f"--solver {args.solver} takes no --solver-opt (its settings are the run options: "
            "--temperature, --max-tokens, --seed); --solver-opt is for repair or MODULE:FACTORY"
        )
    elif args.solver == "generate":
        header.update(model_preflight(args.model, args.base_url))
        solver = GenerateSolver(
            args.model, temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed
        )
    elif args.solver == "reference":
        solver = ReferenceSolver()
    else:
        solver = FileSolver(args.samples)
        try:
            notes += match_samples_file(solver, tasks, selected)
        except SelectionError as exc:
            raise CliError(str(exc)) from None
    if solver is not None:
        described = solver.describe()
    else:
        describe = getattr(tasks[0].solver, "describe", None)
        described = dict(describe()) if callable(describe) else {}
        described["factory"] = NAMED_FACTORIES.get(args.solver, args.solver)
        header["solver_options"] = solver_options
    header["options"] = described | {
        "limit": args.limit,
        "filter": args.filter,
        "max_sandboxes": args.max_sandboxes,
        "sandbox": args.sandbox,
    }
    header[HEADER_KEY] = recorded_options(args, plugins)
    config.header = header
    for note in notes:
        print(note, file=sys.stderr)
    log_path = (
        Path(args.log)
        if args.log
        else Path("runs")
        / ("-".join(t.name for t in tasks) + datetime.now().strftime("-%Y%m%d-%H%M%S.jsonl"))
    )
    if args.executor == "slurm":
        config.executor = slurm_executor(args, plugins, log_path, header[HEADER_KEY])
    try:
        with use_backend(args.sandbox):  # for scorers given no backend (plugin suites)
            result = run_eval_sync(tasks, solver, log_path, config, resume=args.resume)
    except KeyboardInterrupt:
        from codegen_eval.cli_views import report_interrupted

        report_interrupted(log_path, args.k, _resume_hint(log_path))
        return 130
    except RunAborted as exc:
        raise CliError(f"{exc}; fix it, then continue with: {_resume_hint(log_path)}") from None
    except FileExistsError as exc:
        raise CliError(str(exc)) from None
    summary = summarize(result.records, args.k)
    print_table(summary, args.k, result.excluded)
    for task in tasks:
        if note := task.log_header:
            print(f"{task.name}: {note_text(note)}")
    run_ids = {str(r.get("sample_id")) for r in [*result.records, *result.excluded]}
    for line in policy_notes(tasks, run_ids):
        print(line)
    if args.resume and result.scored_now == 0:
        print(f"nothing left to do: every candidate in {log_path} was already scored")
    print(f"log: {log_path}  (scored now: {result.scored_now}, cache hits: {result.cache_hits})")
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(
            render_html(summary, args.k, excluded=result.excluded, samples=sample_rows(log_path)),
            encoding="utf-8",
        )
        print(f"report: {args.report}")
    infra = [r for r in result.records if r.get("failure_class") == "infra_error"]
    if result.records and len(infra) == len(result.records):
        why = " ".join(str(infra[0].get("explanation", "")).split())[:300]
        print(
            f"codegen-eval: error: every candidate ended in infra_error: the harness failed, not "
            f"the candidates (first: {why})",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from codegen_eval.hf import export_parquet

    if args.inspect or not args.parquet:
        from codegen_eval.inspect_logs import cmd_export_inspect

        return cmd_export_inspect(args)
    print(f"parquet: {export_parquet(args.log, args.parquet)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        plugins = load_plugins(args.plugin)
        if args.command == "list":
            return cmd_list(args)
        if args.command == "run":
            from codegen_eval.run_options import explicit_dests

            args._explicit = explicit_dests(parser, argv)
            return cmd_run(args, parser, plugins)
        if args.command == "report":
            from codegen_eval.cli_views import cmd_report
            from codegen_eval.inspect_logs import reading_eval_logs

            with reading_eval_logs(args):  # .eval logs of our Inspect tasks too
                return cmd_report(args)
        if args.command in mpirigen_cli.COMMANDS:
            return mpirigen_cli.run_command(args)
        if args.command == "show":
            from codegen_eval.cli_views import show_log
            from codegen_eval.inspect_logs import reading_eval_logs

            with reading_eval_logs(args):
                return show_log(Path(args.log), args.id, as_json=args.json,
                                selection=selection_from_args(args))  # fmt: skip
        return cmd_export(args)
    except (CliError, OSError, ValueError) as exc:
        # OSError: a path that cannot be read or written; ValueError: bad input files (each
        # reader's error names the file and line).
        print(f"codegen-eval: error: {one_line(exc)}", file=sys.stderr)
        return 2  # a usage error, as in every CLI here (docs/cli.md)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
