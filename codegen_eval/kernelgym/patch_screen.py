"""What a candidate patch may change, decided before anything is applied or built.

A fix changes C code: `.c` and `.h` files. Everything else in a kernel or module tree is
build machinery that runs on the build host, not in the guest: a Makefile line
`$(shell ...)` runs at build time, a Kconfig or script change alters the configuration the
verdict depends on, a changed `scripts/` or `tools/` source becomes a host program that
make runs. So a candidate that touches any of them is refused with a one-line reason, as
is a patch that makes symlinks, changes modes, carries binary data or names a path outside
the tree. Every make on candidate input also runs in the sandbox (`buildrun.py`): the
screen keeps the build machinery out of reach, the sandbox keeps the host out of reach.

The screen reads the patch the way GNU patch 2.7 (`patch -p1 --unified`) does, not the way
a well-formed `git diff` looks: every name patch could pick is screened, from every header
form it acts on (measured, `tests/codegen_eval/kernelgym/test_patch_forms.py`):
- `---`/`+++` names, quoted (C escapes, `"Make\\146ile"`) or not; unquoted, patch ends a name
  at a tab, or at the first space when there is no tab: both readings are screened;
- `diff --git` names: patch uses them when a section has no `---`/`+++` (a hunk right after
  the git header, a header-only new file such as an empty `Kbuild`);
- `rename`/`copy from`/`to`, `Index:`;
- file modes on `new file mode`, `deleted file mode`, `old mode`, `new mode` **and** the
  `index <hash>..<hash> <mode>` line (patch makes a symlink from `index ... 120000`);
- -p1 strips the first component whatever it is: `x/scripts/mod/modpost.c` is
  `scripts/mod/modpost.c`.
Lines inside a hunk (as counted by its `@@` header) are content, never headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

__all__ = ["DETECTOR_PATHS", "patch_names", "screen_detectors", "screen_patch"]

ALLOWED_SUFFIXES = (".c", ".h")
# Directories whose sources become programs the build host runs (fixdep, modpost, objtool,
# gen_init_cpio, the x86 instruction tables, ...).
HOST_PROGRAM_DIRS = ("scripts", "tools", "usr")
REGULAR_MODE = "100644"

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_NAME_LINE = re.compile(r"^(?:---|\+\+\+|\*\*\*) (.*)$")
_GIT_NAMES = re.compile(r"^(?:rename|copy) (?:from|to|old|new) (.*)$")
_MODE_LINE = re.compile(r"^(?:new file mode|deleted file mode|old mode|new mode) (.*)$")
_INDEX_MODE = re.compile(r"^index [0-9a-fA-F]+\.\.[0-9a-fA-F]+ (\S+)")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unquote(text: str) -> tuple[str, str]:
    """(name, rest) for a C-quoted name at the start of `text` (git and GNU patch quote
    names with unusual characters). An unterminated quote gives the text as it is."""
    out, i = [], 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), text[i + 1 :]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            octal = re.match(r"[0-7]{1,3}", text[i + 1 : i + 4])
            if octal:
                out.append(chr(int(octal.group(), 8)))
                i += 1 + len(octal.group())
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return text, ""


def _header_names(text: str) -> list[str]:
    """Every reading GNU patch could give the name in a `---`/`+++` line."""
    text = text.rstrip("\r\n")
    if text.startswith('"'):
        return [_unquote(text)[0]]
    names = {text.split("\t", 1)[0].rstrip(), *text.split()[:1]}
    return [n for n in names if n]


def _git_names(text: str) -> list[str]:
    """The names on a `diff --git` line: quoted ones unquoted, the rest split on spaces
    (a name with a space in it is then refused, which no fix needs)."""
    names, rest = [], text.strip()
    while rest:
        if rest.startswith('"'):
            name, rest = _unquote(rest)
        else:
            name, _, rest = rest.partition(" ")
        names.append(name)
        rest = rest.strip()
    return names


def _lines_outside_hunks(patch_text: str) -> Iterator[str]:
    """The lines patch reads as headers or leading garbage: a hunk's lines, as many as its
    `@@ -a,n +b,m @@` counts (a blank line is context, as patch takes it), are skipped."""
    old = new = 0
    for line in patch_text.split("\n"):
        if old > 0 or new > 0:
            tag = line[:1]
            if tag in (" ", ""):
                old, new = old - 1, new - 1
            elif tag == "-":
                old -= 1
            elif tag == "+":
                new -= 1
            elif tag != "\\":  # "\ No newline at end of file" counts for nothing
                old = new = 0  # a short hunk: patch will reject it; read on as headers
                yield line
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old = int(hunk.group(1)) if hunk.group(1) is not None else 1
            new = int(hunk.group(2)) if hunk.group(2) is not None else 1
            continue
        yield line


def patch_names(patch_text: str) -> tuple[list[str], list[str], bool]:
    """(every file name patch could act on, every file mode, whether it carries binary data)."""
    names: list[str] = []
    modes: list[str] = []
    binary = False
    for raw in _lines_outside_hunks(patch_text):
        line = raw.rstrip("\r")
        if line.startswith("diff --git "):
            names += _git_names(line[len("diff --git ") :])
        elif m := _NAME_LINE.match(line):
            names += _header_names(m.group(1))
        elif m := _GIT_NAMES.match(line):
            names += _header_names(m.group(1))
        elif line.startswith("Index: "):
            names += _header_names(line[len("Index: ") :])
        elif m := _MODE_LINE.match(line):
            modes.append(m.group(1).strip())
        elif m := _INDEX_MODE.match(line):
            modes.append(m.group(1))
        elif line.startswith(("GIT binary patch", "Binary files ")):
            binary = True
    return names, modes, binary


def _strip_component(path: str) -> str:
    """What `patch -p1` leaves of a relative name: everything after the first slash."""
    return path.split("/", 1)[1] if "/" in path else path


def _path_problem(name: str) -> str | None:
    if name == "/dev/null":
        return None
    if name.startswith("/"):
        return f"{name}: a path outside the tree"
    path = _strip_component(name)
    parts = PurePosixPath(path).parts
    if not path or ".." in parts or any(c in path for c in "\0\n\r"):
        return f"{path!r}: a path outside the tree"
    if (parts and parts[0] in HOST_PROGRAM_DIRS) or "tools" in parts[:-1]:
        return f"{path}: sources of programs the build host runs"
    if not path.endswith(ALLOWED_SUFFIXES):
        return f"{path}: build machinery (only .c and .h files may change)"
    return None


def screen_patch(patch_text: str) -> str | None:
    """None when `patch_text` only changes C sources and headers inside the tree, else why
    it is refused (one line, for the agent)."""
    if not patch_text.strip():
        return None
    names, modes, binary = patch_names(patch_text)
    if binary:
        return "patch refused: binary changes"
    for mode in modes:
        if mode != REGULAR_MODE:
            return f"patch refused: file mode {mode} (symlinks and executables are build machinery)"
    if not names:
        return "patch refused: not a unified diff (no ---/+++ file headers)"
    for name in names:
        why = _path_problem(name)
        if why:
            return f"patch refused: {why}"
    return None


# Kernel sources that decide what the verdict sees: the detectors that turn a bug into a
# report (KASAN, KFENCE, UBSAN, lockup and hang detectors, BUG/WARN, oops and panic), the
# channels the report and the run markers travel (printk and its formatting, the tty and
# serial drivers), and how /init runs the reproducer and ends the boot (exec, exit, signals,
# reboot, early init). A kernel-tree candidate that changes one of them can make any bug go
# quiet without touching it ("return early in kasan_report"), with no new import for the
# object screen to find. A bug whose own fix changes such a file exempts that file.
DETECTOR_PATHS = (
    "mm/kasan/", "mm/kfence/", "mm/kmsan/", "kernel/kcsan/", "lib/ubsan.c", "lib/ubsan.h",
    "kernel/watchdog.c", "kernel/watchdog_hld.c", "kernel/hung_task.c", "kernel/panic.c",
    "lib/bug.c", "lib/list_debug.c", "lib/refcount.c", "lib/dump_stack.c",
    "arch/x86/kernel/traps.c", "arch/x86/kernel/dumpstack", "arch/x86/mm/fault.c",
    "arch/x86/kernel/reboot.c", "kernel/reboot.c", "kernel/printk/", "lib/vsprintf.c",
    "drivers/tty/", "fs/exec.c", "fs/binfmt_", "kernel/exit.c", "kernel/signal.c", "init/",
    "include/linux/kasan", "include/linux/kfence.h", "include/linux/printk.h",
    "include/linux/bug.h", "include/asm-generic/bug.h", "arch/x86/include/asm/bug.h",
    "include/linux/panic.h", "include/linux/list.h", "include/linux/refcount.h",
)  # fmt: skip


def screen_detectors(patch_text: str, exempt: list[str] | tuple[str, ...] = ()) -> str | None:
    """For kernel-tree candidates: None unless the patch changes a file of DETECTOR_PATHS
    that is not in `exempt` (the files the bug's own fix changes)."""
    names, _, _ = patch_names(patch_text)
    for name in names:
        if name == "/dev/null":
            continue
        path = _strip_component(name)
        if path.startswith(DETECTOR_PATHS) and path not in exempt:
            return (
                f"patch refused: {path}: the kernel's crash detectors and the run's channels "
                "are not the candidate's to change (docs/kernel-gym.md, What a patch is made of)"
            )
    return None
