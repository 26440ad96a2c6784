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
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "ADJUSTABLE",
    "HEADER_KEY",
    "INVOCATION_ONLY",
    "PATH_OPTIONS",
    "ResumeConflict",
    "apply_logged_options",
    "explicit_dests",
    "recorded_options",
]

HEADER_KEY = "cli"
INVOCATION_ONLY = frozenset({"command", "log", "resume", "report", "no_progress", "plugin"})
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


class ResumeConflict(ValueError):
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


def _legacy_options(header: dict[str, Any], known_suites: Iterable[str]) -> dict[str, Any]:
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
    header: dict[str, Any],
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
