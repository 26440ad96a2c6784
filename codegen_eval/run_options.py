"""The options that define a run, recorded in its log header so that `run --resume --log X`
continues it with nothing else on the command line.

Header field `cli` (optional; logs written before it existed still load and resume):

    {"options": {dest: value, ...}, "plugins": ["module", ...]}

Three kinds of `run` options:
  identity     what the run computes (suites and reader paths, model, solver, n, filter,
               limit, temperature, seed, sandbox backend...): taken from the log; giving a
               different value with --resume is an error naming the conflict
  adjustable   how the rest of it runs (ADJUSTABLE): taken from the log unless given
  invocation   this command only (INVOCATION_ONLY): never recorded

A new `run` option is an identity option unless listed below, so it is recorded and resumed
without further work. Paths (PATH_OPTIONS) are recorded absolute, so a resume from another
directory finds the same files.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from codegen_eval.errors import CodegenEvalError

__all__ = [
    "ADJUSTABLE",
    "HEADER_KEY",
    "INVOCATION_ONLY",
    "PATH_OPTIONS",
    "ResumeConflict",
    "SolverOptionError",
    "apply_logged_options",
    "explicit_dests",
    "parse_solver_options",
    "recorded_options",
]

HEADER_KEY = "cli"
INVOCATION_ONLY = frozenset(
    {"command", "log", "resume", "retry_infra", "report", "no_progress", "plugin"}
)
ADJUSTABLE = frozenset(
    {
        "base_url",
        "max_sandboxes",
        "max_generations",
        "k",
        # where scoring runs changes how, not what: a slurm run may resume locally
        "executor",
        "slurm_partition",
        "slurm_account",
        "slurm_time",
        "slurm_mem",
        "slurm_batch_size",
        "slurm_cpus_per_task",
        "slurm_max_attempts",
        "slurm_workdir",
        "slurm_mpi_steps",
    }
)
PATH_OPTIONS = frozenset(
    {
        "humaneval",
        "pareval",
        "pareval_checkout",
        "pareval_launch_configs",
        "verilogeval",
        "verilogeval_descriptions",
        "samples",
        "slurm_workdir",
    }
)


class ResumeConflict(CodegenEvalError, ValueError):
    """--resume with an option that contradicts the log."""


def _json(value: Any) -> Any:
    """The value as it reads back from the log (tuples become lists, paths strings)."""
    return json.loads(json.dumps(value, default=str))


def absolutize_paths(args: argparse.Namespace) -> None:
    for dest in PATH_OPTIONS:
        value = getattr(args, dest, None)
        if isinstance(value, str) and value:
            setattr(args, dest, os.path.abspath(value))


def recorded_options(args: argparse.Namespace, plugins: Sequence[str]) -> dict[str, Any]:
    """The header's `cli` field for this run."""
    options = {
        dest: _json(value) for dest, value in vars(args).items() if dest not in INVOCATION_ONLY
    }
    options = {k: v for k, v in options.items() if not k.startswith("_")}
    return {"options": options, "plugins": list(plugins)}


def _legacy_options(header: Mapping[str, Any], known_suites: Iterable[str]) -> dict[str, Any]:
    """What a header written before the `cli` field tells about the options."""
    opts = dict(header.get("options") or {})
    out: dict[str, Any] = {}
    if "n" in header:
        out["n"] = header["n"]
    if header.get("ks"):
        out["k"] = header["ks"]
    if header.get("solver"):
        out["solver"] = header["solver"]
    if header.get("model"):
        out["model"] = header["model"]
    if header.get("base_url"):
        out["base_url"] = header["base_url"]
    for dest in ("limit", "filter", "max_sandboxes", "sandbox", "temperature", "max_tokens",
                 "seed", "samples"):  # fmt: skip
        if dest in opts:
            out[dest] = opts[dest]
    known = set(known_suites)
    suites = [s for s in header.get("suites") or [] if s in known]
    if suites:
        out["suite"] = suites
    return out


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                actions += _all_actions(sub)
    return actions


def _flag(parser: argparse.ArgumentParser, dest: str) -> str:
    for action in _all_actions(parser):
        if action.dest == dest and action.option_strings:
            return action.option_strings[0]
    return f"--{dest.replace('_', '-')}"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def apply_logged_options(
    args: argparse.Namespace,
    explicit: set[str],
    header: Mapping[str, Any],
    parser: argparse.ArgumentParser,
    known_suites: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """Fill `args` from the log header for every option not given on the command line.
    Returns (plugins to load, notes for stderr); raises ResumeConflict on a contradiction."""
    cli = header.get(HEADER_KEY)
    if isinstance(cli, dict) and isinstance(cli.get("options"), dict):
        logged: dict[str, Any] = cli["options"]
        plugins = [str(p) for p in cli.get("plugins") or []]
    else:
        logged, plugins = _legacy_options(header, known_suites), []
    conflicts: list[str] = []
    notes: list[str] = []
    for dest, value in logged.items():
        if not hasattr(args, dest) or dest in INVOCATION_ONLY:
            continue  # an option this version does not have (a newer log): nothing to set
        if dest in explicit:
            given = _json(getattr(args, dest))
            if isinstance(value, str) and given == [value]:
                # a log from before the common selection rule recorded its one --filter as a
                # string (a glob on the stored id): the same glob given again is no conflict,
                # and the logged string keeps the old rule, so the same problems are resumed
                setattr(args, dest, value)
                continue
            same = (
                sorted(map(str, given)) == sorted(map(str, value))
                if isinstance(given, list) and isinstance(value, list)
                else given == value
            )
            if not same:
                flag = _flag(parser, dest)
                if dest in ADJUSTABLE:
                    notes.append(f"note: {flag} {_show(given)} replaces the log's {_show(value)}")
                else:
                    conflicts.append(
                        f"{flag} {_show(given)} (the log has {_show(value) if value is not None else 'none'})"
                    )
            continue
        setattr(args, dest, tuple(value) if dest == "k" and value else value)
    if conflicts:
        raise ResumeConflict(
            f"--resume continues the run as logged, but {'; '.join(conflicts)}: drop "
            f"{'these options' if len(conflicts) > 1 else 'the option'} to continue it, or "
            "start a new run with another --log"
        )
    return plugins, notes


def explicit_dests(parser: argparse.ArgumentParser, argv: Sequence[str]) -> set[str]:
    """The dests given on the command line (not defaulted): `argv` parsed again with every
    default suppressed."""
    saved: list[tuple[argparse.Action, Any]] = []
    for action in _all_actions(parser):
        if action.dest not in ("help", "command") and not isinstance(
            action, argparse._SubParsersAction
        ):
            saved.append((action, action.default))
            action.default = argparse.SUPPRESS
    try:
        return set(vars(parser.parse_args(list(argv))))
    finally:
        for action, default in saved:
            action.default = default


# ------------------------------------------------------------------ --solver-opt KEY=VALUE
# Set by run options of their own; a --solver-opt for one of them would be a second way in.
RUN_LEVEL = {"model": "--model", "temperature": "--temperature", "max_tokens": "--max-tokens",
             "seed": "--seed"}  # fmt: skip


class SolverOptionError(CodegenEvalError, ValueError):
    """A --solver-opt the solver does not have, or a value of the wrong type."""


def solver_option_types(factory: Callable[..., object]) -> dict[str, type]:
    """The options a solver factory takes besides the task and the run-level ones: its
    `solver_options` attribute ({name: type}) when it has one (factories taking **options),
    else its keyword parameters, typed by their defaults."""
    declared = getattr(factory, "solver_options", None)
    if isinstance(declared, Mapping):
        return {str(k): v for k, v in declared.items() if k not in RUN_LEVEL}
    out: dict[str, type] = {}
    params = list(inspect.signature(factory).parameters.values())[1:]  # [0] is the task
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in RUN_LEVEL:
            continue
        out[p.name] = str if p.default in (inspect.Parameter.empty, None) else type(p.default)
    return out


def _convert(text: str, kind: type) -> object:
    if kind is bool:
        low = text.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{text!r} is not a boolean (true/false)")
    return kind(text)


def parse_solver_options(
    solver: str, factory: Callable[..., object], items: Sequence[str]
) -> dict[str, object]:
    """`--solver-opt KEY=VALUE` items as typed keyword arguments for `factory`; an unknown key
    or a bad value is one SolverOptionError naming the known options."""
    known = solver_option_types(factory)
    listing = ", ".join(f"{k} ({t.__name__})" for k, t in sorted(known.items())) or "none"
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise SolverOptionError(f"--solver-opt {item!r}: expected KEY=VALUE")
        if key in RUN_LEVEL:
            raise SolverOptionError(
                f"--solver-opt {key}: use {RUN_LEVEL[key]} (a run option, for every solver)"
            )
        if key not in known:
            raise SolverOptionError(
                f"--solver-opt {key}: --solver {solver} has no such option; it takes: {listing}"
            )
        try:
            out[key] = _convert(value, known[key])
        except ValueError as exc:
            raise SolverOptionError(
                f"--solver-opt {key}={value}: expected {known[key].__name__} ({exc})"
            ) from None
    return out


def take_logged_options(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[dict[str, Any], list[str], list[str]]:
    """--resume: (the log's header, plugins to load, notes); the run's options are filled in
    from the header and contradictions refused."""
    from codegen_eval.errors import CliError
    from codegen_eval.log import read_log

    if not args.log:
        raise CliError("--resume needs --log FILE, the log of the run to continue")
    log_path = Path(args.log)
    if not log_path.exists():
        raise CliError(f"--resume: no run log at {log_path}; drop --resume to start a new run")
    contents = read_log(log_path)
    if not contents.header:
        if contents.scores or contents.candidates or contents.truncated_tail:
            raise CliError(f"--resume: {log_path} has no header; is it a codegen-eval run log?")
        return {}, [], []  # an empty file: nothing to take, the run starts from scratch
    known: set[str] = set()
    if "cli" not in contents.header:  # written before logs recorded their options
        from codegen_eval.registry import list_suites

        known = {info.name for info in list_suites()}
    try:
        plugins, notes = apply_logged_options(args, args._explicit, contents.header, parser, known)
    except ResumeConflict as exc:
        raise CliError(f"{exc} ({log_path})") from None
    return contents.header, plugins, notes
