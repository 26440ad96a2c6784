"""The RTLLM options of `codegen-eval run` (cli.py and cli_inputs.py only call these).

codegen-eval run --rtllm RTLLM [--rtllm-problems 'adder_*'] --solver reference
"""

from __future__ import annotations

import argparse
import sys

from codegen_eval.types import Task


def add_run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument(
        "--rtllm",
        metavar="CHECKOUT",
        help="your RTLLM 2.0 checkout (hkust-zhiyao/RTLLM): its designs, judged by what "
        "each testbench's checks decide (upstream's 'Pass' rule reported beside it)",
    )
    r.add_argument(
        "--rtllm-problems",
        metavar="GLOB",
        action="append",
        help="RTLLM: only designs whose name matches, and only those are loaded "
        "(repeatable; deprecated: --filter 'rtllm/GLOB' selects the same, see "
        "docs/codegen-eval.md#selecting-problems)",
    )


def rtllm_tasks(args: argparse.Namespace) -> list[Task]:
    """The --rtllm task; bad input is a one-line CliError."""
    from codegen_eval.cli_select import reader_problems
    from codegen_eval.errors import CliError

    from .rtllm import RtllmFormatError, rtllm

    def say(msg: str) -> None:
        print(f"rtllm: {msg}", file=sys.stderr)

    try:
        task = rtllm(
            args.rtllm,
            problems=reader_problems(args, "rtllm"),
            include_known_bad=bool(getattr(args, "include_known_bad", False)),
            progress=say,
            backend=getattr(args, "sandbox", None),
        )
    except (RtllmFormatError, OSError) as exc:
        raise CliError(f"--rtllm: {exc}") from None
    if args.rtllm_problems and not task.dataset and not task.excluded:
        raise CliError(f"--rtllm-problems {' '.join(args.rtllm_problems)} matches no design")
    return [task]  # the run's summary lists the exclusions with their reasons
