"""Where a patch changes the code: the files and functions of a candidate against the
developer's fix, read on the host from the two diffs and the source they apply to.

A patch that stops the crash and passes the reproducer's checks is *plausible*; whether it is
the fix is another question (public results on fresh syzbot bugs: about 74% plausible patches,
about 20% that match the developer's fix). Localization is evidence for that second question,
not proof: a candidate may fix the bug in the caller (a different function, a correct fix) or
touch the fix's function with a change that does nothing useful.

Functions are found from the pre-image source (the file both diffs apply to): a changed line
belongs to the function definition whose body encloses it (kernel style: a definition starts
at column 0, its body ends at the matching brace; `SYSCALL_DEFINEn(name, ...)` is
`sys_name`). Where no source is at hand the hunk header's function context (`@@ ... @@ f(`)
stands in; a candidate writes its own headers, so functions read that way are reported
(`method`) and never make `covers_fix` true. Changes that only touch comments or whitespace
do not count as touching a function (a comment in the fix's function is no fix).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codegen_eval.ctext import matching_brace, skip_comment_or_literal

# Bounds against a hostile diff (the candidate's text is read on the host).
MAX_DIFF_LINES = 200_000
MAX_HUNKS = 1000  # a fix has a handful; the rest of a longer diff is not located
MAX_PROBES = 200_000  # places tried when locating hunks, per diff; then stated lines are used
MAX_NAMES = 64

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
# A definition's first line: column 0, no `;`, `=`, braces or `#` before the name's `(`.
_DEF_START = re.compile(r"^(?=[A-Za-z_])(?:[^;{}()=#\n]*?\b)?([A-Za-z_]\w*)\s*\(", re.M)
_SYSCALL = re.compile(r"^(COMPAT_)?SYSCALL_DEFINE\d\s*\(\s*(\w+)")
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else"}
# Written before a definition's name on its line: `__attribute__((weak)) void f(`.
_PREFIX_ATTRIBUTES = {"__attribute__", "__printf", "__scanf", "__section", "__aligned"}
_NEXT_CALL = re.compile(r"[^;{}()=\n]*?\b([A-Za-z_]\w*)\s*\(")
# A definition's line below a macro line (`SEC("x")` over `int f(`): words before the name.
_COLUMN_0 = re.compile(r"\n[A-Za-z_][\w \t*]*[ \t*]\w+\s*\(")

SourceReader = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class Change:
    """One run of changed lines in a hunk: the pre-image lines it removes (`first..last`,
    1-based) or, for a pure insertion, the gap after line `first - 1` (`last = first - 1`)."""

    path: str
    first: int
    last: int
    removed: tuple[str, ...]
    added: tuple[str, ...]
    header: str  # the hunk header's function context (candidate-written)

    @property
    def is_code(self) -> bool:
        """False when only comments and whitespace differ."""
        return _code("\n".join(self.removed)) != _code("\n".join(self.added))


def _strip_path(name: str) -> str:
    name = name.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    return name.split("/", 1)[1] if "/" in name else name  # -p1


def _code(text: str) -> str:
    """`text` without comments and whitespace: what the compiler sees of a change."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = skip_comment_or_literal(text, i)
        if j == i:
            if not text[i].isspace():
                out.append(text[i])
            i += 1
        elif text.startswith(("//", "/*"), i):
            i = j
        else:
            out.append(text[i:j])  # a literal is code
            i = j
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Hunk:
    path: str
    old_start: int  # as stated in its header
    old_lines: tuple[str, ...]  # context and removed lines, in order: what patch looks for
    changes: tuple[Change, ...]  # at the stated lines


def changes(diff: str) -> list[Change]:
    """Every run of changed lines of a unified diff, at the lines its headers state."""
    return [c for h in hunks(diff) for c in h.changes]


def hunks(diff: str) -> list[Hunk]:
    """The hunks of a unified diff, with the file each is in (-p1 names)."""
    lines = diff.replace("\r\n", "\n").split("\n")[:MAX_DIFF_LINES]
    found: list[Hunk] = []
    path = old = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- "):
            old = _strip_path(line[4:])
        elif line.startswith("+++ "):  # a deleted file (+++ /dev/null) keeps its old name
            path = (
                old if line[4:].split("\t", 1)[0].strip() == "/dev/null" else _strip_path(line[4:])
            )
        m = _HUNK.match(line)
        if m is None:
            i += 1
            continue
        if len(found) == MAX_HUNKS:
            break
        old_len = int(m[2]) if m[2] is not None else 1
        new_len = int(m[4]) if m[4] is not None else 1
        i = _read_hunk(lines, i + 1, path, int(m[1]), old_len, new_len, m[5], found)
    return found


def _read_hunk(
    lines: list[str], i: int, path: str, old_at: int, old_left: int, new_left: int, header: str,
    out: list[Hunk],
) -> int:  # fmt: skip
    removed: list[str] = []
    added: list[str] = []
    old_lines: list[str] = []
    runs: list[Change] = []
    first_line, start = old_at, old_at

    def flush() -> None:
        if removed or added:
            runs.append(Change(path, start, start + len(removed) - 1, tuple(removed),
                               tuple(added), header))  # fmt: skip
        removed.clear()
        added.clear()

    while i < len(lines) and (old_left > 0 or new_left > 0):
        line = lines[i]
        tag, text = line[:1], line[1:]
        if tag == "\\":  # "\ No newline at end of file"
            i += 1
            continue
        if tag == "-" and old_left > 0:
            if not removed and not added:
                start = old_at
            removed.append(text)
            old_lines.append(text)
            old_at += 1
            old_left -= 1
        elif tag == "+" and new_left > 0:
            if not removed and not added:
                start = old_at
            added.append(text)
            new_left -= 1
        elif tag in (" ", "") and old_left > 0 and new_left > 0:
            flush()
            old_lines.append(text)
            old_at += 1
            old_left -= 1
            new_left -= 1
        else:
            break  # the counts do not fit the body: stop reading this hunk
        i += 1
    flush()
    out.append(Hunk(path, first_line, tuple(old_lines), tuple(runs)))
    return i


def _offset(
    pre: list[str], index: dict[str, list[int]], hunk: Hunk, guess: int, budget: list[int]
) -> int | None:
    """Where `patch --fuzz=0` applies `hunk` in the pre-image lines (`index`: where each line
    occurs, ascending): its old lines must match exactly, at the stated start plus `guess` or
    the nearest place around it. The offset from the stated start; None when they match
    nowhere (the patch does not apply) or `budget[0]` (lines left to compare) runs out."""
    want = list(hunk.old_lines)
    if not want:
        return guess
    # Anchor on the old line that occurs least often: a line found nowhere ends the search.
    k = min(range(len(want)), key=lambda j: len(index.get(want[j], ())))
    places = index.get(want[k], [])
    target = hunk.old_start - 1 + guess + k
    hi = bisect.bisect_left(places, target)
    lo = hi - 1
    while lo >= 0 or hi < len(places):  # nearest first; a tie: the later place, as patch
        if hi >= len(places) or (lo >= 0 and target - places[lo] < places[hi] - target):
            at, lo = places[lo] - k, lo - 1
        else:
            at, hi = places[hi] - k, hi + 1
        budget[0] -= len(want)
        if budget[0] < 0:
            return None
        if at >= 0 and pre[at : at + len(want)] == want:
            return at - (hunk.old_start - 1)
    return None


def _placed(hunk: Hunk, delta: int) -> list[Change]:
    return [
        Change(c.path, c.first + delta, c.last + delta, c.removed, c.added, c.header)
        for c in hunk.changes
    ]


@dataclass(frozen=True, slots=True)
class Span:
    name: str
    first: int  # the definition's first line
    last: int  # the line of its closing brace


def function_spans(text: str) -> list[Span]:
    """The function definitions of C source `text`, with the lines they cover."""
    spans: list[Span] = []
    pos = 0
    while True:
        m = _DEF_START.search(text, pos)
        if m is None:
            return spans
        name, close_paren = m[1], matching_brace(text, m.end() - 1)
        while name in _PREFIX_ATTRIBUTES and close_paren is not None:
            after = _NEXT_CALL.match(text, close_paren + 1)
            if after is None:
                break
            name, close_paren = after[1], matching_brace(text, after.end() - 1)
        if close_paren is None:
            return spans
        brace = text.find("{", close_paren)
        semi = text.find(";", close_paren)
        if name in _NOT_FUNCTIONS or brace == -1 or (semi != -1 and semi < brace):
            pos = m.end()
            continue  # a declaration or a prototype
        between = text[close_paren + 1 : brace]
        macro_line = "\n#" not in between and _COLUMN_0.search(between)  # not #ifdef'd twins
        if between.strip().startswith("=") or macro_line:
            pos = close_paren + 1  # an initializer, or a macro line (`SEC("x")`) above a definition
            continue
        end = matching_brace(text, brace)
        if end is None:
            return spans
        first = text.count("\n", 0, m.start()) + 1
        sys = _SYSCALL.match(text[m.start() : close_paren + 1])
        if sys:
            name = ("compat_sys_" if sys[1] else "sys_") + sys[2]
        spans.append(Span(name, first, first + text.count("\n", m.start(), end)))
        pos = end + 1


def _header_function(header: str) -> str | None:
    sys = _SYSCALL.match(header.strip())
    if sys:
        return ("compat_sys_" if sys[1] else "sys_") + sys[2]
    names = [n for n in re.findall(r"\b([A-Za-z_]\w*)\s*\(", header) if n not in _NOT_FUNCTIONS]
    return names[0] if names else None


def _functions_of(change: Change, spans: list[Span]) -> list[str]:
    """The functions whose bodies the change lies in (a removal may span several)."""
    if change.last >= change.first:  # removes lines first..last
        return [s.name for s in spans if s.first <= change.last and change.first <= s.last]
    gap = change.first  # inserted between lines gap-1 and gap
    return [s.name for s in spans if s.first < gap <= s.last]


@dataclass(slots=True)
class Touched:
    files: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)  # "path:function"
    from_headers: bool = False  # some functions come from hunk headers, not the source


def touched(diff: str, read_source: SourceReader) -> Touched:
    """The files and functions `diff` changes (code, not comments or whitespace)."""
    out = Touched()
    spans: dict[str, list[Span] | None] = {}
    pre: dict[str, list[str]] = {}
    index: dict[str, dict[str, list[int]]] = {}  # per file: line text -> where it occurs
    offset: dict[str, int] = {}  # the last hunk's offset per file: patch starts from it
    budget = [MAX_PROBES]
    placed: list[Change] = []
    for hunk in hunks(diff):
        if hunk.path not in spans:
            text = read_source(hunk.path)
            spans[hunk.path] = function_spans(text) if text is not None else None
            pre[hunk.path] = text.split("\n") if text is not None else []
            index[hunk.path] = {}
            for n, line in enumerate(pre[hunk.path]):
                index[hunk.path].setdefault(line, []).append(n)
        delta = 0
        if spans[hunk.path] is not None:
            found = _offset(
                pre[hunk.path], index[hunk.path], hunk, offset.get(hunk.path, 0), budget
            )
            delta = offset[hunk.path] = found if found is not None else 0
        placed += _placed(hunk, delta)
    for ch in placed:
        if not ch.is_code:
            continue
        if ch.path not in out.files:
            out.files.append(ch.path)
        file_spans = spans[ch.path]
        if file_spans is not None:
            names = _functions_of(ch, file_spans)
        else:
            names = [n for n in [_header_function(ch.header)] if n]
            out.from_headers = out.from_headers or bool(names)
        for name in names:
            key = f"{ch.path}:{name}"
            if key not in out.functions and len(out.functions) < MAX_NAMES:
                out.functions.append(key)
    out.files = out.files[:MAX_NAMES]
    return out


@dataclass(slots=True)
class Localization:
    """Candidate vs developer fix. `covers_fix`: the candidate changes the code of every
    function the fix changes (of every file, when the fix changes no function), read from the
    source; None when the candidate's functions could only be read from its hunk headers."""

    candidate: Touched
    fix: Touched
    covers_fix: bool | None

    def to_dict(self) -> dict[str, Any]:
        def part(a: list[str], b: list[str]) -> dict[str, list[str]]:
            return {"candidate": a, "fix": b, "overlap": [x for x in a if x in b]}

        method = (
            "hunk headers" if self.candidate.from_headers or self.fix.from_headers else "source"
        )
        return {
            "files": part(self.candidate.files, self.fix.files),
            "functions": part(self.candidate.functions, self.fix.functions),
            "covers_fix": self.covers_fix,
            "method": method,
        }


def localize(candidate: str, fix: str, read_source: SourceReader) -> Localization:
    """Compare where `candidate` and `fix` (unified diffs against the same tree) change code.
    `read_source(path)`: the pre-image text of a file (-p1 path), None when not at hand."""
    cand, dev = touched(candidate, read_source), touched(fix, read_source)
    covers: bool | None
    if cand.from_headers:
        covers = None  # a candidate's own headers are no evidence
    elif dev.functions:
        covers = all(f in cand.functions for f in dev.functions)
    else:
        covers = bool(dev.files) and all(f in cand.files for f in dev.files)
    return Localization(cand, dev, covers)


def apply_exact(text: str, diff: str, path: str) -> str:
    """`text` (the file `path`) with the hunks of a trusted diff (a bundled bug's injected
    change) applied at their stated lines; for reading the pre-image a candidate sees."""
    lines = text.split("\n")
    for ch in sorted((c for c in changes(diff) if c.path == path), key=lambda c: -c.first):
        at = ch.first - 1
        if tuple(lines[at : at + len(ch.removed)]) != ch.removed:
            raise ValueError(f"{path}: the diff does not apply at line {ch.first}")
        lines[at : at + len(ch.removed)] = list(ch.added)
    return "\n".join(lines)
