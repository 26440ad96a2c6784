"""The omp-pragma problems: our own C programs in `problems/*.c`, one loop each whose
OpenMP pragma the model must supply.

File format: the first line is `// category: <name>`; exactly one line carries the marker
comment `// @target`: either a pragma line (`#pragma omp ... // @target`, the reference
answer) or `// @target none` (the loop must stay serial). Other `#pragma omp` lines are
context the model sees unchanged (a histogram inside an existing `parallel for` whose
update needs `atomic`). Programs print only integers or exactly representable values, so
every correct execution prints the same text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from codegen_eval.suites._csource import loop_nest_vars

from .pragma import parse_pragma

MARKER = "/* >>> OPENMP PRAGMA HERE (or none) <<< */"
_TARGET = re.compile(r"^(?P<indent>[ \t]*)(?P<pragma>.*?)\s*//\s*@target(?P<none>\s+none)?\s*$")


@dataclass(frozen=True, slots=True)
class OmpProblem:
    name: str
    category: str
    lines: tuple[str, ...]  # the program; lines[marker_line - 1] is MARKER (indented)
    marker_line: int  # 1-based
    indent: str
    target: str  # the reference pragma line(s), or "none"

    @property
    def masked(self) -> str:
        """The program as the model sees it."""
        return "\n".join(self.lines) + "\n"

    def with_pragma(self, pragma_lines: list[str] | tuple[str, ...]) -> str:
        """The program with the marker replaced by `pragma_lines` (none: an empty line, so
        line numbers in compiler messages match the masked program)."""
        body = [self.indent + ln.strip() for ln in pragma_lines] or [""]
        out = [*self.lines[: self.marker_line - 1], *body, *self.lines[self.marker_line :]]
        return "\n".join(out) + "\n"

    @property
    def reference_program(self) -> str:
        return self.with_pragma([] if self.target == "none" else self.target.splitlines())

    @property
    def loop_vars(self) -> tuple[str, ...]:
        """Iteration variables made private by the reference's construct itself."""
        depth = 1
        if self.target != "none":
            depth = max(1, parse_pragma(self.target).collapse)
        return tuple(loop_nest_vars(self.masked, self.marker_line + 1, depth))


def load_problem(name: str, text: str) -> OmpProblem:
    raw = text.splitlines()
    m = re.match(r"//\s*category:\s*(\S+)", raw[0]) if raw else None
    if not m:
        raise ValueError(f"{name}: first line must be '// category: <name>'")
    lines = raw[1:]
    hits = [(k, _TARGET.match(ln)) for k, ln in enumerate(lines)]
    hits = [(k, h) for k, h in hits if h]
    if len(hits) != 1:
        raise ValueError(f"{name}: expected exactly one '// @target' line, found {len(hits)}")
    k, h = hits[0]
    if h["none"]:
        target = "none"
    else:
        target = h["pragma"].strip()
        parse_pragma(target)  # a reference that does not parse is a bug in the problem
    lines[k] = h["indent"] + MARKER
    return OmpProblem(name, m.group(1), tuple(lines), k + 1, h["indent"], target)


@functools.cache
def all_problems() -> dict[str, OmpProblem]:
    folder = resources.files(__package__).joinpath("problems")
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".c"):
            name = entry.name[:-2]
            out[name] = load_problem(name, entry.read_text())
    return out
