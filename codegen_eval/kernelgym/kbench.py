"""Real kBench records: what one must carry to be scored here, and errors that say what is
missing and how to supply it.

A kBench record names a commit, a kernel config and a C reproducer, but as syzbot links
("/text?tag=KernelConfig&x=..."). The gym never downloads anything at run time, so the text
has to be in the record (`kernel_config`, `c_reproducer`, or the crash's own fields) or come
from the command line (`--config FILE`, `--repro FILE`). The kernel itself is built from the
user's Linux git checkout (`--linux-tree PATH`, see `GitKernelBuilder`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from codegen_eval.errors import CodegenEvalError
from codegen_eval.kernelgym.records import BugRecord

SUPPORTED_ARCHES = ("amd64", "x86_64", "")  # the gym boots x86-64 QEMU only

# A line of a syz program: "r0 = openat(...)", "ioctl$FOO(r0, ...)", "mmap(&(0x7f...)".
_SYZ_LINE = re.compile(r"^(r\d+ = )?[a-z_0-9]+(\$\w+)?\(", re.M)


class BugSetupError(CodegenEvalError, RuntimeError):
    """The bug cannot be scored as given (an input or the Linux checkout is missing)."""


class UnsupportedBug(BugSetupError):
    """The bug needs something the gym does not do (e.g. run a syz program)."""


@dataclass(frozen=True, slots=True)
class KBenchInputs:
    commit: str
    config: str
    reproducer: str  # C source


def _is_link(value: Any) -> bool:
    """A syzbot/dashboard reference rather than content (one line, a path or a URL)."""
    if not isinstance(value, str) or not value.strip() or "\n" in value.strip():
        return False
    v = value.strip()
    return v.startswith(("/text?", "/x/", "http://", "https://")) or "tag=" in v


def _is_syz_program(value: Any) -> bool:
    return (
        isinstance(value, str)
        and "main(" not in value
        and bool(_SYZ_LINE.search(value))
        and not _is_link(value)
    )


def _show(value: str, limit: int = 80) -> str:
    v = value.strip()
    return repr(v if len(v) <= limit else v[:limit] + "...")


def kbench_inputs(bug: BugRecord) -> KBenchInputs:
    """Commit, config text and C reproducer of a kBench record, or a `BugSetupError` naming
    each missing field and how to supply it (`UnsupportedBug` for what no field can fix)."""
    crash = bug.crash
    arch = str(crash.get("architecture") or "")
    if arch not in SUPPORTED_ARCHES:
        raise UnsupportedBug(
            f"bug {bug.id}: architecture {arch!r} is not supported (the gym boots x86-64 only)"
        )
    problems: list[str] = []

    commit = bug.kernel_commit
    if not commit:
        problems.append(
            "no commit to build: the record has neither `parent_of_fix_commit` nor "
            "`crashes[0].kernel-source-commit`"
        )

    config = bug.kernel_config
    if config is None:
        link = crash.get("kernel-config")
        where = (
            f"`crashes[0].kernel-config` is only a link ({_show(link)})"
            if _is_link(link)
            else "the record has no kernel config text (`kernel_config`, "
            "`crashes[0].kernel-config`)"
        )
        problems.append(
            f"{where}: save the config and pass `--config FILE` "
            "(API: `bug.with_inputs(kernel_config=text)`), or put its text into the "
            "`kernel_config` field of a local copy of the record"
        )

    repro = bug.c_reproducer
    if repro is None:
        c_value = bug.raw.get("c_reproducer") or crash.get("c-reproducer")
        syz_value = bug.raw.get("syz_reproducer") or crash.get("syz-reproducer")
        if _is_syz_program(c_value):
            raise UnsupportedBug(
                f"bug {bug.id}: its reproducer is a syz program, not C; running syz programs "
                "needs syzkaller's syz-executor, which the gym does not ship (convert it with "
                "syz-prog2c and pass `--repro FILE`)"
            )
        if _is_link(c_value):
            problems.append(
                f"`crashes[0].c-reproducer` is only a link ({_show(c_value)}): save the C "
                "source and pass `--repro FILE` (API: `bug.with_inputs(c_reproducer=text)`), "
                "or put it into the `c_reproducer` field of a local copy of the record"
            )
        elif syz_value:
            raise UnsupportedBug(
                f"bug {bug.id}: it has only a syz reproducer (`crashes[0].syz-reproducer`), "
                "no C one; running syz programs needs syzkaller's syz-executor, which the gym "
                "does not ship (convert it with syz-prog2c and pass `--repro FILE`)"
            )
        else:
            problems.append(
                "the record has no C reproducer (`c_reproducer`, `crashes[0].c-reproducer`): "
                "pass `--repro FILE` or add the `c_reproducer` field"
            )

    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise BugSetupError(f"bug {bug.id} cannot be run as given:\n{lines}")
    assert commit is not None and config is not None and repro is not None
    return KBenchInputs(commit=commit, config=config, reproducer=repro)


def missing_tree_error(bug: BugRecord) -> BugSetupError:
    commit = bug.kernel_commit or "?"
    return BugSetupError(
        f"bug {bug.id} is a kBench record: its kernel is built from a Linux git checkout at "
        f"commit {commit[:12]}; pass `--linux-tree PATH` (API: "
        "`KernelGym(linux_tree=PATH)` / `PatchScorer(linux_tree=PATH)`)"
    )
