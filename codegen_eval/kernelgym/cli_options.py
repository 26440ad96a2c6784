"""The options `kernel-gym` and `kernel-agent` share, defined once so that one name means one
thing in both (docs/cli.md): which bugs, how each boot runs, where the log goes, and Slurm.

Both CLIs add them to the top-level parser and to every subcommand's (`suppress=True` there,
so an option given after the subcommand overrides one given before it and an absent one
leaves the top-level value alone). `normalize(args, prog)` runs once after parsing: it turns
the deprecated `--bugs PATH` (records) into `--records PATH`, with a note on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from appl.cli_parser import deprecation_note, top_prog
from codegen_eval.errors import CliError
from codegen_eval.kernelgym.records import BugRecord, bundled_bugs, load_records

if TYPE_CHECKING:
    from codegen_eval.executors.slurm import SlurmOptions

# One job is one build + boot + reproduce, in both CLIs (a bench's baseline or fix, an agent's
# step): one time limit for it.
SLURM_TIME = "02:00:00"
SLURM_CPUS = 2


def add_shared(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The shared options on `parser`; `suppress` on a subcommand's parser (see the module)."""

    def d(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    add = parser.add_argument
    add("--records", metavar="PATH", default=d(None),
        help="bug records: a JSONL/JSON file or a directory of them (default: the bundled bugs)")  # fmt: skip
    add("--bug", dest="bug_ids", action="append", metavar="ID", default=d(None),
        help="only this bug (repeatable; ids from `kernel-gym list`)")  # fmt: skip
    add("--bugs", metavar="ID,ID", default=d(None),
        help="only these bugs, comma-separated (an existing path here is the deprecated "
        "spelling of --records)")  # fmt: skip
    add("--tier", type=int, default=d(None), help="only bugs of this tier (0: modules, 1: KASAN)")
    add("--runs", type=int, default=d(3), help="reproducer runs per boot (default 3)")
    add("--accel", default=d("auto"), choices=["auto", "tcg", "kvm"],
        help="QEMU acceleration: kvm where /dev/kvm works (auto, the default), else tcg")  # fmt: skip
    add("--log", metavar="FILE", default=d(None),
        help="JSONL log, appended as the run goes (kernel-agent: also the file --resume reads)")  # fmt: skip
    add("--executor", choices=["local", "slurm"], default=d("local"),
        help="slurm: each build + boot + reproduce is a job on the cluster of $SLURM_CONF")  # fmt: skip
    add("--slurm-partition", default=d(None), help="the partition to submit to (default: Slurm's)")
    add("--slurm-account", default=d(None), help="the account to charge (default: yours)")
    add("--slurm-time", default=d(SLURM_TIME), help=f"time limit per job (default {SLURM_TIME})")
    add("--slurm-mem", default=d(None), help="memory per job, e.g. 8G")
    add("--slurm-cpus", "--slurm-cpus-per-task", dest="slurm_cpus", type=int,
        default=d(SLURM_CPUS), help=f"CPUs per job (default {SLURM_CPUS})")  # fmt: skip
    add("--slurm-workdir", metavar="DIR", default=d(None),
        help="job files, on storage the nodes share (default: <log>.slurm next to --log, "
        "else runs/slurm)")  # fmt: skip


def _looks_like_path(text: str) -> bool:
    return "/" in text or bool(re.search(r"\.jsonl?$", text))


def normalize(args: argparse.Namespace, prog: str) -> None:
    """After parsing: `args.records` (the deprecated `--bugs PATH` moved there, with a note)
    and `args.bug_ids` (from `--bug` and `--bugs`, in the order given, or None: all)."""
    ids = list(getattr(args, "bug_ids", None) or [])
    bugs = getattr(args, "bugs", None)
    if bugs and Path(bugs).exists():  # the old meaning: a file or directory of records
        deprecation_note(prog, f"--bugs {bugs} (records)", f"--records {bugs}")
        if getattr(args, "records", None) is None:
            args.records = bugs
    elif bugs and _looks_like_path(bugs):
        raise CliError(f"--bugs {bugs}: no such file (records are --records PATH; --bugs ID,ID)")
    elif bugs:
        ids += [b.strip() for b in bugs.split(",") if b.strip()]
    args.bug_ids = list(dict.fromkeys(ids)) or None
    if args.runs < 1 or args.slurm_cpus < 1:
        raise CliError("--runs and --slurm-cpus must be >= 1")


def selected_bugs(args: argparse.Namespace) -> list[BugRecord]:
    """The bugs the options select, ids in the order given; an unknown id is a CliError."""
    bugs = load_records(args.records) if args.records else bundled_bugs()
    ids = args.bug_ids or []
    unknown = [i for i in ids if i not in {b.id for b in bugs}]
    if unknown:
        raise CliError(f"unknown bug(s) {', '.join(unknown)}; {_known(bugs)}")
    chosen = [b for b in bugs if (not ids or b.id in ids)]
    if ids:
        chosen.sort(key=lambda b: ids.index(b.id))
    return [b for b in chosen if args.tier is None or b.tier == args.tier]


def find_bug(bugs: list[BugRecord], bug_id: str) -> BugRecord:
    """The bug named `bug_id` (a subcommand's argument); an unknown one is a CliError."""
    for bug in bugs:
        if bug.id == bug_id:
            return bug
    raise CliError(f"unknown bug {bug_id!r}; {_known(bugs)}")


def _known(bugs: list[BugRecord]) -> str:
    ids = ", ".join(b.id for b in bugs[:12]) + (", ..." if len(bugs) > 12 else "")
    return f"known: {ids} (see `kernel-gym list`)"


def slurm_workdir(args: argparse.Namespace) -> Path | None:
    """--slurm-workdir, else `<log>.slurm` next to --log (as codegen-eval), else None (the
    executor's runs/slurm)."""
    if args.slurm_workdir:
        return Path(args.slurm_workdir)
    return Path(f"{args.log}.slurm") if args.log else None


def slurm_options(args: argparse.Namespace) -> SlurmOptions:
    from codegen_eval.executors.slurm import SlurmOptions

    return SlurmOptions(
        partition=args.slurm_partition,
        account=args.slurm_account,
        time=args.slurm_time,
        mem=args.slurm_mem,
        cpus_per_task=args.slurm_cpus,
        workdir=slurm_workdir(args),
    )


def append_log(path: str | Path | None, event: str, row: dict[str, Any]) -> None:
    """One JSONL line `{"event": ..., **row}` appended to --log (nothing without it)."""
    if not path:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps({"event": event, **row}) + "\n")


class _JsonOption(argparse.Action):
    """`--json`: machine-readable stdout. The old `--json FILE` (a file written at the end)
    still works, with a note: it is stored as `json_file`."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values is None:
            namespace.json = True
            return
        deprecation_note(
            top_prog(parser), f"--json {values} (a file)", "--json (stdout) or --log FILE"
        )
        namespace.json_file = values


def add_json(parser: argparse.ArgumentParser, *, legacy_file: bool = False) -> None:
    """--json on a subcommand; `legacy_file`: also the old `--json FILE` form (bench)."""
    parser.set_defaults(json=False, json_file=None)
    if legacy_file:  # no positional follows bench's options, so an optional value is safe
        parser.add_argument("--json", nargs="?", action=_JsonOption, default=False,
                            metavar="FILE", help="JSON on stdout instead of the table "
                            "(FILE: deprecated, write the JSON there)")  # fmt: skip
    else:
        parser.add_argument("--json", action="store_true", help="JSON on stdout, for scripts")
