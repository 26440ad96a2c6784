"""What a `codegen-eval run` scores: the suites by name, plugin modules that register more, and
the public benchmark readers (HumanEval, ParEval, VerilogEval) with their options checked."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from codegen_eval.errors import CliError
from codegen_eval.registry import UnknownSuiteError, get_suite
from codegen_eval.types import Task

PLUGINS_ENV = "CODEGEN_EVAL_PLUGINS"


def load_plugins(extra: list[str]) -> list[str]:
    """Import modules that register more suites (--plugin or $CODEGEN_EVAL_PLUGINS, comma
    separated); returns their names (recorded in the run log for --resume)."""
    names = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    names += [m.strip() for m in extra if m.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise CliError(f"cannot import plugin module {name!r}: {exc}") from exc
    return list(dict.fromkeys(names))


def tasks_from_args(args: argparse.Namespace) -> list[Task]:
    tasks: list[Task] = []
    for name in args.suite:
        try:
            tasks.append(get_suite(name, backend=args.sandbox))
        except UnknownSuiteError as exc:
            raise CliError(str(exc)) from None
        except ImportError as exc:
            raise CliError(f"suite {name!r} could not be loaded: {exc}") from None
    if args.humaneval:
        from codegen_eval.readers import load_humaneval

        tasks.append(load_humaneval(args.humaneval, backend=args.sandbox))
    if args.pareval:
        tasks.extend(pareval_tasks(args))
    if args.verilogeval:
        tasks.append(verilogeval_task(args))
    if getattr(args, "mpirigen", None):
        from codegen_eval.readers.mpirigen.cli import mpirigen_tasks

        tasks.extend(mpirigen_tasks(args))
    if getattr(args, "cvdp", None):
        from codegen_eval.readers.cvdp.cli import cvdp_tasks

        tasks.extend(cvdp_tasks(args))
    if getattr(args, "rtllm", None):
        from codegen_eval.readers.rtllm_cli import rtllm_tasks

        tasks.extend(rtllm_tasks(args))
    if not tasks:
        raise CliError(
            "nothing to run: give --suite NAME (see `codegen-eval list`), --humaneval, "
            "--pareval, --verilogeval, --mpirigen, --cvdp or --rtllm"
        )
    return tasks


def pareval_tasks(args: argparse.Namespace) -> list[Task]:
    from codegen_eval.readers import load_pareval

    source = Path(args.pareval)
    if not source.exists():
        raise CliError(f"--pareval: {source} does not exist")
    if source.is_file() and not args.pareval_checkout:
        raise CliError(
            f"--pareval {source} is a prompts file: add --pareval-checkout DIR (your ParEval "
            "clone), or give the clone itself as --pareval DIR"
        )
    models = tuple(m for m in args.pareval_models.split(",") if m)
    kinds = [k for k in args.pareval_prompts.split(",") if k] if source.is_dir() else ["file"]
    if args.pareval_cores is not None and args.pareval_cores < 1:
        raise CliError("--pareval-cores must be >= 1")
    options: dict[str, Any] = {
        "models": models,
        "backend": args.sandbox,
        "verdict": args.pareval_verdict,
        "cores": args.pareval_cores,
        "launch_configs": args.pareval_launch_configs,
    }
    try:
        if kinds == ["file"]:
            return [load_pareval(source, args.pareval_checkout, **options)]
        return [load_pareval(source, prompts=kind, **options) for kind in kinds]
    except ValueError as exc:
        raise CliError(f"--pareval: {exc}") from None


def verilogeval_task(args: argparse.Namespace) -> Task:
    from codegen_eval.readers.verilogeval import VerilogEvalFormatError, resolve_mode, verilogeval

    def say(msg: str) -> None:
        print(f"verilogeval: {msg}", file=sys.stderr)

    try:
        mode, note = resolve_mode(args.verilogeval, args.verilogeval_mode)
        if note:
            say(note)
        return verilogeval(
            args.verilogeval,
            mode,  # type: ignore[arg-type]
            descriptions=args.verilogeval_descriptions,
            include_known_bad=args.include_known_bad,
            policy_exclusions=args.verilogeval_policy_exclusions,
            progress=say,
            backend=args.sandbox,
        )
    except (VerilogEvalFormatError, OSError) as exc:
        raise CliError(f"--verilogeval: {exc}") from None


def policy_notes(tasks: list[Task], run_ids: set[str] | None = None) -> list[str]:
    """One line per VerilogEval task on the policy exclusions (off unless asked for), naming
    only the problems this run touched (`run_ids`: scored or excluded here; None: all)."""
    out = []
    for t in tasks:
        pol = t.reader_facts.policy if t.reader_facts else None
        touched = sorted(
            p for p in (pol or {}).get("problems") or () if run_ids is None or p in run_ids
        )
        if touched:
            ids = ", ".join(touched)
            state = "applied" if pol.get("applied") else (
                "off (these are scored; --verilogeval-policy-exclusions excludes them)"
            )  # fmt: skip
            out.append(f"{t.name}: policy exclusions {state}: upstream discussed {ids}")
    return out
