"""Unified diffs out of model replies, made acceptable to `patch -p1`.

Models get the mechanics of a diff wrong far more often than the fix itself: the fence is
tagged `c` instead of `diff`, the `a/` `b/` prefixes are missing, the hunk header counts do
not add up after an edit, a trailing newline is lost. These are repaired here, so a step of
the gym (a build and a VM boot) is spent on the idea, not on the format. What cannot be
repaired (context lines that are not in the file) is left to `patch`, whose rejection goes
back to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_DIFF_START = re.compile(r"^(diff --git |--- \S)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Hunk:
    path: str  # the new file's path, without the b/ prefix
    old_start: int
    old_len: int
    removed: tuple[str, ...]  # the lines the hunk expects ("-" and " " lines), in order


def _looks_like_diff(text: str) -> bool:
    return bool(_DIFF_START.search(text)) and "@@" in text


def extract_diff(reply: str) -> str | None:
    """The unified diff in a model reply, normalised; None when there is none.

    Preference: fenced blocks tagged diff/patch, then any fenced block that is a diff, then a
    bare diff in the text (from its first `diff --git` or `--- ` line). With several
    candidates, the last one wins: models revise their patch as they explain it.
    """
    text = _THINK.sub("", reply or "").replace("\r\n", "\n")
    blocks = [(m["info"].strip().lower(), m["body"]) for m in _FENCE.finditer(text)]
    diffs = [b for info, b in blocks if info.split()[:1] in (["diff"], ["patch"], ["udiff"])]
    diffs = [b for b in diffs if _looks_like_diff(b)] or [
        b for _, b in blocks if _looks_like_diff(b)
    ]
    if diffs:
        return normalize_diff(diffs[-1])
    if blocks:  # fenced blocks, none of them a diff: do not dig diffs out of the prose
        outside = _FENCE.sub("", text)
        if not _looks_like_diff(outside):
            return None
        text = outside
    m = _DIFF_START.search(text)
    if m is None or "@@" not in text[m.start() :]:
        return None
    return normalize_diff(text[m.start() :])


def _prefixed(path: str, prefix: str) -> str:
    path = path.split("\t", 1)[0].strip()
    if path == "/dev/null" or path.startswith(prefix):
        return path
    return prefix + path.lstrip("/")


def normalize_diff(diff: str) -> str:
    """Fix what `patch -p1` is strict about and models are sloppy with: a/ b/ prefixes, hunk
    line counts, trailing prose after the last hunk, the final newline."""
    lines = diff.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            out.append("--- " + _prefixed(line[4:], "a/"))
            out.append("+++ " + _prefixed(lines[i + 1][4:], "b/"))
            i += 2
            continue
        m = _HUNK.match(line)
        if m is None:
            if line.startswith(("diff ", "index ", "new file", "deleted file", "similarity")):
                out.append(line)
            i += 1
            continue
        body, i = _hunk_body(lines, i + 1)
        old = sum(1 for b in body if b[:1] in (" ", "-"))
        new = sum(1 for b in body if b[:1] in (" ", "+"))
        old_start, new_start = int(m[1]), int(m[3])
        # "@@ -0,0" is a new file; otherwise a zero start is a model's slip for line 1
        old_start = old_start if old or old_start else 1
        out.append(f"@@ -{old_start},{old} +{new_start},{new} @@{m[5]}")
        out.extend(body)
    return "\n".join(out).rstrip("\n") + "\n"


def _hunk_body(lines: list[str], i: int) -> tuple[list[str], int]:
    """The lines of one hunk, starting at index i; stops at the next header or at prose."""
    body: list[str] = []
    while i < len(lines):
        line = lines[i]
        if _HUNK.match(line) or line.startswith(("--- ", "diff ")):
            break
        if line == "":
            # an empty line inside a hunk is a context line whose leading space was eaten,
            # unless it is the end of the hunk (only blank lines or prose follow)
            rest = lines[i + 1 :]
            nxt = next((r for r in rest if r != ""), None)
            if nxt is None or nxt[:1] not in (" ", "+", "-", "\\"):
                break
            if nxt.startswith(("--- ", "diff ")) or _HUNK.match(nxt):
                break
            body.append(" ")
        elif line[:1] in (" ", "+", "-", "\\"):
            body.append(line)
        else:
            break
        i += 1
    return body, i


def hunks(diff: str) -> list[Hunk]:
    """The hunks of a (normalised) diff, for showing the model the real text they target."""
    found: list[Hunk] = []
    path = ""
    lines = diff.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("+++ "):
            path = line[4:].split("\t", 1)[0].strip().removeprefix("b/")
        m = _HUNK.match(line)
        if m:
            body, _ = _hunk_body(lines, i + 1)
            removed = tuple(b[1:] for b in body if b[:1] in (" ", "-"))
            found.append(Hunk(path, int(m[1]), int(m[2] or 1), removed))
    return found


def touched_paths(diff: str) -> list[str]:
    return list(dict.fromkeys(h.path for h in hunks(diff)))
