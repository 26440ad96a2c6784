"""Structured edits -> unified diffs, so a small model never has to write a diff itself.

Two forms, each one contiguous change to one file:

  search/replace  {"path", "search", "replace"}: `search` is text copied from the file (one
                  or more whole lines); it must occur exactly once. Whitespace at the ends of
                  lines and tabs-versus-spaces do not matter for finding it (models copy
                  kernel code with spaces), but the replacement keeps the file's indentation
                  where the model's own is ambiguous.
  line range      {"path", "first_line", "last_line", "new_text"}: lines first..last (1-based,
                  inclusive, as the numbered tool output shows them) replaced by `new_text`;
                  last_line = first_line - 1 inserts before first_line.
  whole function  {"name", "new_code"}: the function's new definition, signature to closing
                  brace (`function_text` checks it); the tools turn it into a line range.
                  Small models rewrite a function they were shown more reliably than they
                  pick an anchor: the 1.5B model took search text for "where to put this".

`apply_edits` checks each edit against the real file and says exactly what is wrong (no such
file, search text not found - with the nearest lines -, found twice, a range outside the file)
instead of producing a diff that `patch` would reject after a build slot was spent.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from codegen_eval.ctext import matching_brace

__all__ = [
    "Edit",
    "EditError",
    "apply_edits",
    "code_blocks",
    "function_text",
    "functions_in",
    "resolve_path",
    "restore_string_escapes",
]

# The module builder copies the bug's source into a temporary directory
# (.../kgym-mod-XXXX/src/...): crash reports name files by that absolute path. Crash text is
# the candidate's to shape, so the prefix is found in linear time, one run of path
# characters at a time (the regex `(?:/[^\s:'"`]*)?/kgym-mod-[^/\s]+/src/` took seconds
# on a few KB of slashes).
_PATH_RUN = re.compile(r"[^\s:'\"`]+")
_BUILD_MARK = "/kgym-mod-"


class EditError(ValueError):
    """An edit that cannot be applied; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class Edit:
    path: str
    search: str | None = None
    replace: str = ""
    first_line: int | None = None
    last_line: int | None = None


def strip_build_paths(text: str) -> str:
    """Crash-report text with the temporary build directory removed from file paths: in a
    run of path characters, from its first `/` through the last `/kgym-mod-NAME/src/`."""
    if _BUILD_MARK not in text:
        return text
    return _PATH_RUN.sub(lambda m: _strip_run(m.group()), text)


def _strip_run(run: str) -> str:
    end = len(run)
    while (mark := run.rfind(_BUILD_MARK, 0, end)) >= 0:
        name_end = mark + len(_BUILD_MARK)
        slash = run.find("/", name_end)
        if slash > name_end and run.startswith("/src/", slash):
            return run[: run.index("/")] + run[slash + len("/src/") :]
        end = mark  # not a build directory: look further left
    return run


def resolve_path(path: str, files: list[str]) -> str:
    """The bug's file that `path` names: as is, without the temporary build prefix, without
    a/ b/ ./ prefixes, or the one known file it ends with. Unknown paths come back unchanged
    (the caller reports them)."""
    known = set(files)
    candidate = strip_build_paths(path.strip()).strip()
    for prefix in ("a/", "b/", "./"):
        if candidate not in known and candidate.startswith(prefix):
            candidate = candidate[len(prefix) :]
    if candidate in known:
        return candidate
    tails = [f for f in files if candidate.endswith("/" + f) or f.endswith("/" + candidate)]
    if len(tails) == 1:
        return tails[0]
    # a name without the extension, e.g. the module's /proc entry "/proc/kgym_bugon" that a
    # small model took for the file: the one source file with that stem
    stem = candidate.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]
    same = [
        f for f in files if f.endswith((".c", ".h")) and f.rsplit("/", 1)[-1].split(".")[0] == stem
    ]
    if stem and len(same) == 1:
        return same[0]
    return candidate


def _norm(line: str) -> str:
    return " ".join(line.split())


def _strip_blank(search: list[str]) -> list[str]:
    """Leading and trailing blank lines of a search text are noise."""
    lo, hi = 0, len(search)
    while lo < hi and not search[lo].strip():
        lo += 1
    while hi > lo and not search[hi - 1].strip():
        hi -= 1
    return search[lo:hi]


def _find(lines: list[str], search: list[str]) -> list[int]:
    """Start indexes where `search` matches, ignoring whitespace differences."""
    want = [_norm(s) for s in search]
    if not want:
        return []
    have = [_norm(x) for x in lines]
    n = len(want)
    return [i for i in range(len(have) - n + 1) if have[i : i + n] == want]


def _nearest(lines: list[str], search: list[str]) -> str:
    """The file's lines most like the first non-blank search line, numbered, for the model."""
    probe = next((_norm(s) for s in search if s.strip()), "")
    if not probe:
        return ""
    scored = sorted(
        range(len(lines)),
        key=lambda i: -difflib.SequenceMatcher(None, _norm(lines[i]), probe).ratio(),
    )[:1]
    if not scored:
        return ""
    i = scored[0]
    lo, hi = max(0, i - 2), min(len(lines), i + len(search) + 2)
    return "\n".join(f"{n + 1:5d}\t{lines[n]}" for n in range(lo, hi))


def _indent_like(new: list[str], old: list[str]) -> list[str]:
    """Re-indent replacement lines written with spaces when the file uses tabs: a model
    that copied `    if (x)` for `\\tif (x)` means the file's own indentation. Lines that
    all lost their indentation (small models strip it) get that of the first replaced line."""
    first = next((line for line in old if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    if indent and new and not any(line[:1] in (" ", "\t") for line in new):
        new = [indent + line if line.strip() else line for line in new]
    if not any(line.startswith("\t") for line in old):
        return new
    out = []
    for line in new:
        stripped = line.lstrip(" ")
        spaces = len(line) - len(stripped)
        if spaces and not line.startswith("\t"):
            line = "\t" * max(1, round(spaces / 4)) + stripped if spaces >= 2 else line
        out.append(line)
    return out


# Text that starts like a C statement, not an expression.
_STATEMENT = re.compile(r"^\s*(?:(?:if|for|while|do|switch|return|goto|break|continue)\b|\{)")


_LINE_NUMBER = re.compile(r"^\s*\d+(?:\t|: |\| | {2,})")
_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")


def restore_string_escapes(code: str) -> str:
    """A real newline or tab inside a C string or character literal, written back as `\\n` /
    `\\t`. C has no raw newlines in literals, so one there is a JSON escape the model meant
    for C: the 1.5B model's `pr_info("... %u\\n", ...)` arrived with `\\n` decoded by JSON,
    and did not build."""
    out: list[str] = []
    quote = ""  # the open literal's quote, or "" outside literals
    comment = ""  # "//" or "/*" while inside a comment
    i = 0
    while i < len(code):
        c = code[i]
        if comment == "//":
            comment = "" if c == "\n" else comment
        elif comment == "/*":
            if code.startswith("*/", i):
                out.append("*/")
                comment, i = "", i + 2
                continue
        elif quote:
            if c == "\\" and i + 1 < len(code) and code[i + 1] != "\n":
                out.append(code[i : i + 2])
                i += 2
                continue
            if c in "\n\t":
                out.append("\\n" if c == "\n" else "\\t")
                i += 1
                continue
            if c == quote:
                quote = ""
        elif code.startswith(("//", "/*"), i):
            comment = code[i : i + 2]
            out.append(comment)
            i += 2
            continue
        elif c in "\"'":
            quote = c
        out.append(c)
        i += 1
    return "".join(out)


def _without_line_numbers(text: str) -> str:
    """Code copied from the tools' numbered output, without the numbers. Only when most
    non-blank lines have one (the 1.5B model put an unnumbered `// file.c` line above its
    numbered copy); a single line of code that starts with a number stays as it is."""
    lines = text.split("\n")
    solid = [line for line in lines if line.strip()]
    numbered = sum(1 for line in solid if _LINE_NUMBER.match(line))
    if numbered < 2 or numbered * 2 < len(solid):
        return text
    return "\n".join(_LINE_NUMBER.sub("", line, count=1) for line in lines)


def function_text(name: str, new_code: str) -> str:
    """A model's whole-function rewrite, cleaned (code fences and copied line numbers
    removed) and checked: it must define `name` and its braces must balance."""
    lines = [line for line in new_code.replace("\r\n", "\n").split("\n") if not _FENCE.match(line)]
    code = _without_line_numbers("\n".join(lines)).strip("\n")
    if not re.search(rf"\b{re.escape(name)}\s*\(", code):
        raise EditError(
            f"new_code must be the whole definition of {name}, from its signature "
            f"(`... {name}(...)`) to its closing brace"
        )
    opened, closed = code.count("{"), code.count("}")
    if opened == 0 or opened != closed:
        raise EditError(
            f"the braces of new_code do not balance ({opened} '{{', {closed} '}}'): write the "
            f"whole function {name}, from its signature to its closing brace, and nothing else"
        )
    return code


_BLOCK = re.compile(r"```[\w+-]*[ \t]*\n(.*?)(?:```|\Z)", re.S)
_DEFINITION = re.compile(r"^[A-Za-z_][^;{}()=]*?\b([A-Za-z_]\w*)\s*\(", re.M)
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else"}


def code_blocks(answer: str) -> list[str]:
    """The fenced code blocks of a plain answer (an unclosed last one too), or the whole
    answer when it has none: small models do not always fence their code."""
    answer = _unwrapped_call(answer)
    blocks = [m[1] for m in _BLOCK.finditer(answer)]
    return [_without_line_numbers(b) for b in blocks or [answer]]


def _unwrapped_call(answer: str) -> str:
    """Asked for a ```c block, the 0.5B model mostly wrote the edit tool's call as JSON text
    instead, `{"tool": "replace_function", "arguments": {"name": ..., "new_code": ...}}` (24
    of its 51 calls in one run of the 9 tier-0 bugs, none of them executed): the code is
    its `new_code` (or `code`). Anything else comes back as it is."""
    text = answer.strip()
    if not text.startswith("{"):
        return answer
    try:
        call = json.loads(text)
    except ValueError:
        return answer
    args = call.get("arguments", call.get("parameters")) if isinstance(call, dict) else None
    code = args.get("new_code", args.get("code")) if isinstance(args, dict) else None
    return f"```c\n{code}\n```" if isinstance(code, str) and code.strip() else answer


def functions_in(code: str) -> list[tuple[str, str]]:
    """The top-level C function definitions in `code`, as (name, text from the signature to
    the closing brace), found by matching braces."""
    found: list[tuple[str, str]] = []
    pos = 0
    while (m := _DEFINITION.search(code, pos)) is not None:
        brace, semi = code.find("{", m.end()), code.find(";", m.end())
        if m[1] in _NOT_FUNCTIONS or brace == -1 or (semi != -1 and semi < brace):
            pos = m.end()
            continue
        close = matching_brace(code, brace)
        if close is None:
            break  # cut off: not a whole function
        found.append((m[1], code[m.start() : close + 1]))
        pos = close + 1
    return found


def _apply_one(text: str, edit: Edit) -> str:
    lines = text.split("\n")
    trailing_newline = text.endswith("\n")
    if trailing_newline:
        lines = lines[:-1]
    replacement = restore_string_escapes(edit.replace.replace("\r\n", "\n"))
    new_lines = replacement.split("\n") if replacement else []
    if new_lines and new_lines[-1] == "" and replacement.endswith("\n"):
        new_lines.pop()
    if edit.search is not None:
        search = _strip_blank(edit.search.replace("\r\n", "\n").split("\n"))
        if not search:
            raise EditError("the search text is empty: copy the lines to replace from the file")
        starts = _find(lines, search)
        if not starts and len(search) == 1:
            # part of one line (`x >= MAX` of `BUG_ON(x >= MAX);`): replaced where it stands
            fragment = search[0].strip()
            holders = [i for i, line in enumerate(lines) if fragment in line]
            if len(holders) == 1 and fragment:
                i = holders[0]
                if not _STATEMENT.match(replacement) or lines[i].strip().startswith(fragment):
                    lines[i] = lines[i].replace(fragment, replacement.strip("\n"), 1)
                    return "\n".join(lines) + ("\n" if trailing_newline else "")
                # Statements for an expression (`if (...) return ...;` for `div_u64(...)` of
                # `return div_u64(...);`): spliced in place they give `return if (...)`. The
                # 1.5B model did this on 3 of the 9 tier-0 bugs; it means the whole line.
                starts = [i]
        if not starts:
            near = _nearest(lines, search)
            hint = f" The most similar lines in the file:\n{near}" if near else ""
            raise EditError(
                f"the search text was not found in {edit.path}: copy whole lines exactly as "
                f"read_file shows them (without the line numbers).{hint}"
            )
        if len(starts) > 1:
            where = ", ".join(str(s + 1) for s in starts[:5])
            raise EditError(
                f"the search text occurs {len(starts)} times in {edit.path} (at lines {where}): "
                "include more lines so it is unique"
            )
        lo, hi = starts[0], starts[0] + len(search)
    else:
        first = edit.first_line if edit.first_line is not None else 0
        last = edit.last_line if edit.last_line is not None else first
        if first < 1 or first > len(lines) + 1 or last < first - 1 or last > len(lines):
            raise EditError(
                f"lines {first}-{last} are outside {edit.path}, which has {len(lines)} lines"
            )
        lo, hi = first - 1, last
    new_lines = _indent_like(new_lines, lines[lo:hi] or lines[max(0, lo - 1) : lo + 1])
    lines[lo:hi] = new_lines
    return "\n".join(lines) + ("\n" if trailing_newline else "")


def apply_edits(edits: list[Edit], files: list[str], read: Callable[[str], str]) -> str:
    """The unified diff (paths a/<path> b/<path>) that makes the edits; EditError when one
    cannot be made or when they change nothing."""
    originals: dict[str, str] = {}
    changed: dict[str, str] = {}
    for edit in edits:
        path = resolve_path(edit.path, files)
        if path not in originals:
            try:
                originals[path] = read(path)
            except (FileNotFoundError, OSError, ValueError):
                raise EditError(
                    f"no file {edit.path!r}; the files are: {', '.join(files[:30])}"
                ) from None
            changed[path] = originals[path]
        fixed = Edit(path, edit.search, edit.replace, edit.first_line, edit.last_line)
        changed[path] = _apply_one(changed[path], fixed)
    parts = []
    for path, before in originals.items():
        after = changed[path]
        if after == before:
            continue
        parts.extend(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
                n=3,
            )
        )
    if not parts:
        raise EditError("the edit changes nothing: the replacement equals the original text")
    if all(originals[p].split() == changed[p].split() for p in originals):
        # the 1.5B model wrote a function back with one blank line less: a step spent on it
        raise EditError(
            "the edit changes only blank lines or indentation, not the code: change the code "
            "that causes the crash"
        )
    diff = "".join(p if p.endswith("\n") else p + "\n\\ No newline at end of file\n" for p in parts)
    return diff
