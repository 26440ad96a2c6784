"""The CVDP options of `codegen-eval run` (cli.py and cli_inputs.py only call these).

    codegen-eval run --cvdp cvdp_v1.1.0_..._nonagentic_code_generation_no_commercial.jsonl \\
        [--cvdp-problems 'cvdp_copilot_lfsr_*'] [--cvdp-wall-s 300]
"""

from __future__ import annotations

import argparse
import sys

from codegen_eval.types import ReaderFacts, Task


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--cvdp-wall-s wants seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("--cvdp-wall-s must be > 0")
    return value


def add_run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument(
        "--cvdp",
        metavar="FILE",
        help="a CVDP JSONL file (NVlabs/cvdp_benchmark): its non-agentic code-generation "
        "problems, each scored by its own cocotb harness in the sandbox",
    )
    r.add_argument(
        "--cvdp-problems",
        metavar="GLOB",
        action="append",
        help="CVDP: only problems whose id matches, and only those are loaded "
        "(repeatable; deprecated: --filter 'cvdp/GLOB' selects the same, see "
        "docs/codegen-eval.md#selecting-problems)",
    )
    r.add_argument(
        "--cvdp-wall-s",
        type=_positive_seconds,
        default=300.0,
        help="CVDP: wall-clock limit of one harness run",
    )


def check_options(args: argparse.Namespace) -> None:
    """Option clashes, checked before the backend is probed: an unusable --sandbox docker
    must not hide the plainer error that --cvdp never runs in Docker."""
    from codegen_eval.errors import CliError

    backend = getattr(args, "sandbox", None)
    if getattr(args, "cvdp", None) and backend not in (None, "bwrap"):
        raise CliError(f"--cvdp runs its harnesses in bwrap, not --sandbox {backend}")


def cvdp_tasks(args: argparse.Namespace) -> list[Task]:
    """The --cvdp task; bad input is a one-line CliError."""
    from codegen_eval.cli_select import reader_problems
    from codegen_eval.errors import CliError

    from . import CvdpFormatError, cvdp
    from .harness import HarnessSetupError

    check_options(args)
    try:
        task = cvdp(args.cvdp, problems=reader_problems(args, "cvdp"), wall_s=args.cvdp_wall_s)
    except FileNotFoundError:
        raise CliError(f"--cvdp: {args.cvdp} does not exist") from None
    except (CvdpFormatError, HarnessSetupError, OSError) as exc:
        raise CliError(f"--cvdp: {exc}") from None
    facts = task.reader_facts or ReaderFacts()
    excluded, not_read = task.excluded, facts.not_read
    print(
        f"cvdp: {facts.records} records: {len(not_read)} not code generation, "
        f"{len(task.dataset)} to score, {len(excluded)} excluded",
        file=sys.stderr,
    )
    for pid, why in sorted(not_read.items()):
        print(f"cvdp: not read {pid}: {why}", file=sys.stderr)
    for pid, why in sorted(excluded.items()):
        print(f"cvdp: excluded {pid}: {why}", file=sys.stderr)
    if not task.dataset:
        raise CliError(f"--cvdp: no problem of {args.cvdp} can be scored here (see above)")
    return [task]
