"""The agent's tools: read-only access to the code of the bug (the gym's SourceView).

Each method is an appl tool (the spec comes from its type hints and docstring); results are
capped so one call cannot flood the model's context. Lines are numbered because the model
must write hunk headers and context lines that match the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agents.kernel.edits import (
    Edit,
    EditError,
    apply_edits,
    code_blocks,
    function_text,
    functions_in,
    resolve_path,
)
from codegen_eval.kernelgym.env import SourceView

MAX_CHARS = 4000  # ~1,300 tokens: a third of the embedded model's window


def numbered(text: str, first: int) -> str:
    return "\n".join(f"{first + i:5d}\t{line}" for i, line in enumerate(text.split("\n")))


def located(found: str | None) -> tuple[str, int, str] | None:
    """SourceView.read_function's answer (`// path:line` over the body) as (path, first
    line, body); None when there is none or it has no such header."""
    if found is None:
        return None
    header, _, body = found.partition("\n")
    path, _, line = header.removeprefix("// ").rpartition(":")
    if not header.startswith("// ") or not path or not line.isascii() or not line.isdigit():
        return None
    return path, int(line), body


def numbered_function(found: str | None) -> str | None:
    """A function found by SourceView.read_function, as the model reads it: its file, then
    its lines numbered."""
    where = located(found)
    return None if where is None else f"// {where[0]}\n" + numbered(where[2], where[1])


def _cap(text: str, limit: int = MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters; ask for a narrower range]"


EDIT_TOOLS = ("replace_function", "search_replace", "replace_lines")


class SourceTools:
    """Tools over one bug's source. `calls` records (tool, arguments) for the log.

    The edit tools (search_replace, replace_lines) check the edit against the file and turn
    it into a unified diff, kept in `patch` for the agent to take (`take_patch`)."""

    def __init__(self, source: SourceView, files: list[str]) -> None:
        self.source = source
        self.files = files
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.patch: str | None = None
        self._last_read = ""  # the latest read_file, as path:start:end

    def as_list(self, edits: bool = True) -> list[Callable[..., str]]:
        readers: list[Callable[..., str]] = [
            self.read_file,
            self.read_function,
            self.list_files,
            self.grep,
        ]
        if not edits:
            return readers
        return [*readers, self.replace_function, self.search_replace, self.replace_lines]

    def take_patch(self) -> str | None:
        patch, self.patch = self.patch, None
        return patch

    def _edit(self, edit: Edit) -> str:
        try:
            self.patch = apply_edits([edit], self.files, lambda p: self.source.read_file(p))
        except EditError as exc:
            return f"Error: {exc}"
        return "Edit accepted; the patch is being built and tested:\n" + self.patch

    def replace_function(self, name: str, new_code: str) -> str:
        """Propose the fix: write the whole new definition of one function, with the fix in it.

        Args:
            name: The function to rewrite, e.g. "foo_write".
            new_code: Its complete new code, from the signature line to the closing brace.
        """
        self.calls.append(("replace_function", {"name": name, "new_code": new_code}))
        where = self._function_range(name)
        if where is None:
            return f"Error: no definition of {name!r} in the files of this bug"
        try:
            code = function_text(name, new_code)
        except EditError as exc:
            return f"Error: {exc}"
        path, first, last = where
        return self._edit(Edit(path, replace=code, first_line=first, last_line=last))

    def _function_range(self, name: str) -> tuple[str, int, int] | None:
        """(path, first line, last line) of the definition of `name` in this bug's files."""
        where = located(self.source.read_function(name, hint_files=self.files))
        if where is None or resolve_path(where[0], self.files) not in self.files:
            return None
        path, first, body = where
        return path, first, first + body.count("\n")

    def rewrite_functions(self, answer: str) -> str | None:
        """A plain answer holding whole functions (in ```c blocks) as edits: each function of
        this bug's files that it defines replaces that definition. None when the answer
        defines none of them; else the tool-like message (patch accepted, or why not)."""
        defined = [f for block in code_blocks(answer) for f in functions_in(block)]
        ranges = {name: self._function_range(name) for name, _ in defined}
        known = [(name, text) for name, text in defined if ranges[name] is not None]
        if not known:
            return None
        self.calls.append(("rewrite_functions", {"names": [n for n, _ in known]}))
        edits = []
        for name, text in dict(known).items():  # a function written twice: the last one
            path, first, last = ranges[name]  # type: ignore[misc]
            try:
                code = function_text(name, text)
            except EditError as exc:
                return f"Error: {exc}"
            edits.append(Edit(path, replace=code, first_line=first, last_line=last))
        # bottom-up, so each edit's line numbers are still those of the original file
        edits.sort(key=lambda e: (e.path, -(e.first_line or 0)))
        try:
            self.patch = apply_edits(edits, self.files, lambda p: self.source.read_file(p))
        except EditError as exc:
            return f"Error: {exc}"
        left_out = sorted({n for n, _ in defined if ranges[n] is None})
        note = f" (new functions are not added: {', '.join(left_out)})" if left_out else ""
        return f"Edit accepted{note}; the patch is being built and tested:\n" + self.patch

    def search_replace(self, path: str, search: str, replace: str) -> str:
        """Propose the fix: replace a piece of a file (whole lines copied from it) by new text.

        Args:
            path: The file, e.g. "foo.c" (see the list of files).
            search: The exact lines to replace, copied from the file (without line numbers).
            replace: The new lines that take their place (keep the unchanged lines too).
        """
        self.calls.append(("search_replace", {"path": path, "search": search, "replace": replace}))
        return self._edit(Edit(path, search=search, replace=replace))

    def replace_lines(self, path: str, first_line: int, last_line: int, new_text: str) -> str:
        """Propose the fix: replace lines first_line..last_line of a file by new text.

        Args:
            path: The file, e.g. "foo.c" (see the list of files).
            first_line: First line to replace (1-based, as read_file numbers them).
            last_line: Last line to replace; first_line - 1 inserts new_text before first_line.
            new_text: The new lines.
        """
        args = {"path": path, "first_line": first_line, "last_line": last_line}
        self.calls.append(("replace_lines", {**args, "new_text": new_text}))
        return self._edit(Edit(path, replace=new_text, first_line=first_line, last_line=last_line))

    def read_file(self, path: str, start_line: int = 1, end_line: int = 0) -> str:
        """Read a source file, with line numbers.

        Args:
            path: Path as in the patch (relative to the source root), e.g. "foo.c" (see the list of files).
            start_line: First line to show (1-based).
            end_line: Last line to show; 0 means to the end of the file.
        """
        self.calls.append(("read_file", {"path": path, "start": start_line, "end": end_line}))
        path = resolve_path(path, self.files)
        start = max(1, start_line)
        key = f"{path}:{start}:{end_line}"
        # the same read right after itself: the text is in the conversation just above (an
        # older read may have been dropped to fit the context window, so only the last counts)
        if key == self._last_read:
            return (
                f"Already shown: {path} lines {start}-{end_line or 'end'} are just above. "
                "Propose the fix now (replace_function, search_replace or replace_lines)."
            )
        self._last_read = key
        try:
            text = self.source.read_file(path, start, end_line or None)
        except (FileNotFoundError, OSError):
            return f"Error: no file {path!r}. Known files: {', '.join(self.files[:40])}"
        return _cap(f"// {path}\n" + numbered(text, start))

    def read_function(self, name: str) -> str:
        """Show the definition of a C function, with its file and line numbers.

        Args:
            name: The function's name, e.g. "foo_write".
        """
        self.calls.append(("read_function", {"name": name}))
        found = self.source.read_function(name, hint_files=self.files)
        if found is None:
            return f"Error: no definition of {name!r} found"
        return _cap(numbered_function(found) or found)

    def list_files(self, prefix: str = "") -> str:
        """List the source files (paths relative to the source root).

        Args:
            prefix: Only paths starting with this prefix, e.g. "drivers/net/".
        """
        self.calls.append(("list_files", {"prefix": prefix}))
        files = self.source.list_files(prefix, limit=300)
        return "\n".join(files) if files else f"no files under {prefix!r}"

    def grep(self, pattern: str, path: str = "") -> str:
        """Search the files of this bug (the crashing code) for a regular expression.

        Args:
            pattern: A Python regular expression, e.g. a function or struct name.
            path: Only this file (or files under this directory); empty: all files of the bug.
        """
        self.calls.append(("grep", {"pattern": pattern, "path": path}))
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            return f"Error: bad regular expression: {exc}"
        path = resolve_path(path, self.files) if path else ""
        targets = [f for f in self.files if not path or f == path or f.startswith(path)]
        hits: list[str] = []
        for rel in targets:
            try:
                text = self.source.read_file(rel)
            except (FileNotFoundError, OSError):
                continue
            for no, line in enumerate(text.split("\n"), start=1):
                if rx.search(line):
                    hits.append(f"{rel}:{no}: {line.strip()}")
                    if len(hits) >= 100:
                        return "\n".join([*hits, "... (first 100 matches)"])
        return "\n".join(hits) if hits else "no matches"
