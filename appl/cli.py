"""The `appl` command. Subcommands are contributed by modules.

A module that adds subcommands defines `register_cli(add: AddCommand) -> None` and calls
`add(name, help=..., configure=..., run=...)` for each; list the module in
`COMMAND_MODULES`. Modules are imported only when the CLI starts (so `import appl` stays
light), and a listed module that does not exist yet is skipped.

    def register_cli(add):
        add("trace", help="inspect traces", configure=add_trace_arguments, run=run_trace)

`configure(parser)` adds the arguments (and may add nested subparsers); `run(args) -> int`
is the exit status, by the convention of every CLI here (appl/cli_parser.py, docs/cli.md):
0 ok, 1 the command ran and its result is a failure, 2 a usage error said on one line as
`appl ...: error: message`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from appl import __version__
from appl.cli_parser import EXIT_USAGE, CliParser

COMMAND_MODULES: list[str] = ["appl.cli", "appl.local.cli", "appl.trace.cli", "appl.compiler.cli"]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class AddCommand(Protocol):
    def __call__(
        self,
        name: str,
        *,
        help: str,
        configure: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
    ) -> None: ...


def _run_demo(args: argparse.Namespace) -> int:
    from appl.demo import run_demo

    return run_demo(args.latency, args.drafts)


def _configure_demo(parser: argparse.ArgumentParser) -> None:
    from appl.demo import add_arguments

    add_arguments(parser)


def register_cli(add: AddCommand) -> None:
    add(
        "demo",
        help="run a small parallel prompt program against a built-in scripted server",
        configure=_configure_demo,
        run=_run_demo,
    )


def collect_commands(modules: list[str] | None = None) -> dict[str, Command]:
    commands: dict[str, Command] = {}

    def add(
        name: str,
        *,
        help: str,
        configure: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
    ) -> None:
        if name in commands:
            raise ValueError(f"appl CLI: two modules register the subcommand {name!r}")
        commands[name] = Command(name, help, configure, run)

    for module_name in COMMAND_MODULES if modules is None else modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # not written yet
            raise
        register = getattr(module, "register_cli", None)
        if register is not None:
            register(add)
    return commands


def build_parser(commands: dict[str, Command]) -> argparse.ArgumentParser:
    parser = CliParser(
        prog="appl", description="appl: prompt programs with a parallel dataflow runtime"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands.values():
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
        command.configure(sub)
        sub.set_defaults(_run=command.run, _prog=f"appl {command.name}")  # for error lines
    return parser


def main(argv: list[str] | None = None) -> int:
    commands = collect_commands()
    parser = build_parser(commands)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    run = getattr(args, "_run", None)
    if run is None:  # the help lists the commands; the error line says what was wrong
        parser.print_help()
        print(f"appl: error: a command is required ({', '.join(commands)})", file=sys.stderr)
        return EXIT_USAGE
    return int(run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
