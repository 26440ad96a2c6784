"""What the four command lines (`appl`, `codegen-eval`, `kernel-gym`, `kernel-agent`) share:
one error format, one exit-code convention, one way to retire an option's old spelling.

Exit codes (docs/cli.md):

    0  done, and the result is what was asked for
    1  the command ran to its end and its result is a failure (a bug not resolved, traces
       that differ, a run whose every candidate was an infra error)
    2  it could not do its work: bad command line or input, or an unusable setup (no model,
       a dead cluster), said on one line `PROG: error: message`
    130 interrupted

Light on purpose (argparse only): every CLI imports it before it parses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `PROG: error: message (see ...)`, exit 2:
    the message and where to look, not the whole usage. Subparsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def usage_error(prog: str, message: str) -> int:
    """Print `PROG: error: message` as one line on stderr; the exit code to return (2)."""
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def deprecation_note(prog: str, old: str, new: str) -> None:
    """One line on stderr: the old spelling still works, and what to write instead."""
    print(f"{prog}: note: {old} is deprecated: use {new}", file=sys.stderr, flush=True)


def top_prog(parser: argparse.ArgumentParser) -> str:
    """`kernel-gym` for the parser of `kernel-gym bench`."""
    return parser.prog.split()[0]


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option: stores like the new one, and says once on stderr that it
    is deprecated (users' scripts keep working). `use` is the new spelling to name."""

    def __init__(self, option_strings: Sequence[str], dest: str, use: str, **kw: Any) -> None:
        self.use = use
        super().__init__(option_strings, dest, **kw)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        deprecation_note(top_prog(parser), option_string or self.dest, self.use)
        setattr(namespace, self.dest, values)
