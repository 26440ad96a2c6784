"""What a candidate patch may change, decided before anything is applied or built.

A fix changes C code: `.c` and `.h` files. Everything else in a kernel or module tree is
build machinery that runs on the build host, not in the guest: a Makefile line
`$(shell ...)` runs at build time, a Kconfig or script change alters the configuration the
verdict depends on, a changed `scripts/` or `tools/` source becomes a host program that
make runs. So a candidate that touches any of them is refused with a one-line reason, as
is a patch that makes symlinks, changes modes, carries binary data or names a path outside
the tree. Every make on candidate input also runs in the sandbox (`buildrun.py`): the
screen keeps the build machinery out of reach, the sandbox keeps the host out of reach.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

__all__ = ["screen_patch"]

ALLOWED_SUFFIXES = (".c", ".h")
# Directories whose sources become programs the build host runs (fixdep, modpost, objtool,
# gen_init_cpio, the x86 instruction tables, ...).
HOST_PROGRAM_DIRS = ("scripts", "tools", "usr")
_HEADER = re.compile(r"^(?:---|\+\+\+) (\S+)", re.M)
_GIT_PATHS = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$", re.M)
_GIT_MODES = re.compile(r"^(?:new file mode|deleted file mode|old mode|new mode) (\d+)$", re.M)


def _strip_prefix(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def _path_problem(name: str) -> str | None:
    if name == "/dev/null":
        return None
    path = _strip_prefix(name)
    parts = PurePosixPath(path).parts
    if path.startswith("/") or ".." in parts:
        return f"{path}: a path outside the tree"
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
    if "GIT binary patch" in patch_text or re.search(r"^Binary files ", patch_text, re.M):
        return "patch refused: binary changes"
    for mode in _GIT_MODES.findall(patch_text):
        if mode not in ("100644",):
            return f"patch refused: file mode {mode} (symlinks and executables are build machinery)"
    names = _HEADER.findall(patch_text) + [m.strip() for m in _GIT_PATHS.findall(patch_text)]
    if not names:
        return "patch refused: not a unified diff (no ---/+++ file headers)"
    for name in names:
        why = _path_problem(name)
        if why:
            return f"patch refused: {why}"
    return None
