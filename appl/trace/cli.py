"""`appl trace ...`: views of a recorded trace.

    appl trace show FILE                      a tree of the run: calls, timings, tokens, cost
    appl trace export FILE --chrome OUT.json  Chrome trace events (open in ui.perfetto.dev)
    appl trace diff A B                       what changed between two runs (exit 1 if any)
    appl trace html FILE -o OUT.html          one self-contained page: timeline + prompts

`register_cli(add)` contributes the group to the `appl` console script; `main(argv)` runs
it alone (`python -m appl.trace show FILE`). Exit codes: 0 ok, 1 differences (diff),
2 unreadable trace or bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from appl.cli_parser import CliParser
from appl.trace._format import TraceFormatError, read_trace


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="trace_command", required=True)
    show = sub.add_parser("show", help="print the run as a tree")
    show.add_argument("file")
    export = sub.add_parser("export", help="export to another format")
    export.add_argument("file")
    export.add_argument(
        "--chrome",
        metavar="OUT.json",
        required=True,
        help="Chrome trace-event JSON (Perfetto, chrome://tracing)",
    )
    diff = sub.add_parser("diff", help="compare two traces call by call")
    diff.add_argument("a")
    diff.add_argument("b")
    html = sub.add_parser("html", help="write a self-contained HTML page")
    html.add_argument("file")
    html.add_argument("-o", "--output", required=True, metavar="OUT.html")


def register_cli(add: Any) -> None:
    """Contribute `appl trace ...` to the `appl` console script (see appl.cli)."""
    add(
        "trace",
        help="show, export, diff or render a recorded trace",
        configure=_configure,
        run=run,
    )


def run(args: argparse.Namespace) -> int:
    try:
        if args.trace_command == "show":
            from appl.trace._text import show

            show(read_trace(args.file))
        elif args.trace_command == "export":
            from appl.trace._chrome import export_chrome

            trace = read_trace(args.file)
            _warn(trace.warnings)
            print(f"wrote {export_chrome(trace, args.chrome)}")
        elif args.trace_command == "diff":
            from appl.trace._text import diff_traces

            a, b = read_trace(args.a), read_trace(args.b)
            _warn(a.warnings + b.warnings)
            result = diff_traces(a, b)
            print(result.render())
            return 1 if result.changed else 0
        elif args.trace_command == "html":
            from appl.trace._html import export_html

            trace = read_trace(args.file)
            _warn(trace.warnings)
            print(f"wrote {export_html(trace, args.output)}")
    except TraceFormatError as exc:  # one line, as every CLI's usage error (docs/cli.md)
        print(f"appl trace: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = CliParser(prog="appl trace", description=__doc__.split("\n\n")[0])
    _configure(parser)
    args = parser.parse_args(argv)
    return run(args)
