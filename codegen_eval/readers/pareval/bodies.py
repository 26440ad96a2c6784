"""Function bodies in ParEval's own C++ headers: find them, and trap them.

The trusted mode's producer is the candidate's build, so it must hold no working copy of the
code the verdict compares with: a candidate reaches any function in its binary through a fake
argument struct, a symbol-table lookup or `##`-built names, whatever the function is called.
`trap_bodies` replaces every function body of a (trusted, upstream) header by a trap and keeps
everything else (includes, macros, types, data), so what the candidate may legitimately use
still compiles and nothing that computes an answer is left to call.

The scan reads C++ without a parser. It is fail-safe in one direction: a `{` at namespace or
class scope whose head holds a `(` is taken for a function body (every function definition
has one), so an unusual definition is trapped, not kept; a non-function it misreads that way
fails to compile, loudly. Heads without a `(` are namespaces, types (walked into, for member
functions) or brace initializers (data, kept).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen_eval.ctext import matching_brace, skip_comment_or_literal

TRAP = " __builtin_trap(); "
_NAMESPACE = re.compile(r'(?:inline\s+)?namespace\b|extern\s*"C(?:\+\+)?"$')
_TYPE = re.compile(r"(?:typedef\s+)?(?:struct|class|union|enum)\b")
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
# Words followed by `(` in a function's head that are not its name.
_NOT_NAMES = frozenset(
    "__attribute__ __declspec alignas decltype noexcept throw requires operator".split()
)


@dataclass(frozen=True)
class Definition:
    name: str
    start: int  # where its head starts (after the previous `;`, `}` or directive)
    open: int  # its body's `{`
    close: int  # its body's `}`


def _template_free(head: str) -> str:
    """The head without a leading `template <...>`."""
    if not head.startswith("template"):
        return head
    depth = 0
    for i, c in enumerate(head):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return head[i + 1 :].lstrip()
    return head


def _name(head: str) -> str:
    depth = 0
    for m in _CALL.finditer(head):
        depth = head.count("(", 0, m.start()) - head.count(")", 0, m.start())
        if depth == 0 and m.group(1) not in _NOT_NAMES:
            return m.group(1)
    return ""


def _at_line_start(text: str, i: int) -> bool:
    return text[text.rfind("\n", 0, i) + 1 : i].strip() == ""


def _directive_end(text: str, i: int) -> int:
    """Index of the newline that ends the preprocessor directive at text[i] (continuations
    with a trailing backslash included)."""
    while True:
        j = text.find("\n", i)
        if j < 0:
            return len(text)
        if not text[:j].rstrip("\r").endswith("\\"):
            return j
        i = j + 1


def definitions(source: str) -> list[Definition]:
    """Every function defined at namespace or class scope, in source order (lambdas and local
    classes inside a body are part of that body)."""
    found: list[Definition] = []
    head: list[str] = []
    start, i = 0, 0
    while i < len(source):
        j = skip_comment_or_literal(source, i)
        if j != i:
            # a string literal stays in the head (`extern "C"`); a comment is a space
            head.append(source[i:j] if source[i] in "\"'" else " ")
            i = j
            continue
        c = source[i]
        if c == "#" and _at_line_start(source, i):
            i = _directive_end(source, i)
            head, start = [], i
            continue
        if c in ";}":
            head, start = [], i + 1
        elif c == "{":
            text = _template_free(" ".join("".join(head).split()))
            if _NAMESPACE.match(text) or (_TYPE.match(text) and "(" not in text):
                head, start = [], i + 1  # walk into it: its functions are found the same way
            else:
                close = matching_brace(source, i)
                if close is None:
                    raise ValueError("unbalanced braces in a ParEval header")
                if "(" in text:
                    found.append(Definition(_name(text), start, i, close))
                head, start, i = [], close + 1, close + 1
                continue
        else:
            head.append(c)
        i += 1
    return found


def trap_bodies(source: str, keep: frozenset[str] = frozenset()) -> str:
    """`source` with the body of every function not named in `keep` replaced by a trap."""
    out, at = [], 0
    for d in definitions(source):
        if d.name in keep:
            continue
        out += [source[at : d.open + 1], TRAP]
        at = d.close
    return "".join(out) + source[at:]


def declared_functions(prompt: str) -> frozenset[str]:
    """Functions a prompt declares without defining (05_fft_inverse_fft's `void fft(...);`):
    the problem promises them to the answer, so they are not trapped."""
    bare = re.sub(r"/\*.*?\*/|//[^\n]*", " ", prompt, flags=re.S)
    top, depth = [], 0  # namespace-scope text only: a call inside a prompt's helper is no
    for c in bare:  # declaration (14_geometry_closest_pair_1d's `std::abs(x1 - x2);`)
        depth += (c == "{") - (c == "}")
        if depth == 0 and c != "}":
            top.append(c)
    decl = r"([A-Za-z_]\w*)\s*\([^;{}()]*(?:\([^;{}()]*\))*\)\s*(?:const\s*)?;"
    return frozenset(re.findall(decl, "".join(top)))


def helpers_called(source: str, body: str, exclude: frozenset[str]) -> list[Definition]:
    """The functions of `source` that `body` calls, directly or through each other, in source
    order (`exclude`d names are neither returned nor followed)."""
    defs = {d.name: d for d in definitions(source) if d.name and d.name not in exclude}
    wanted: set[str] = set()
    todo = [body]
    while todo:
        for name in set(_CALL.findall(todo.pop())) & defs.keys() - wanted:
            wanted.add(name)
            d = defs[name]
            todo.append(source[d.open : d.close + 1])
    return [d for d in defs.values() if d.name in wanted]


def driver_prefix(driver: str) -> str:
    """A benchmark driver cut after its `#include "generated-code..."` line: the includes the
    candidate's code is compiled after, without the driver's functions (best(), validate())
    or a baseline included later, which the producer does not need and must not hold."""
    m = re.search(r'^[ \t]*#[ \t]*include[ \t]*"generated-code\.[^"\n]*"[^\n]*\n?', driver, re.M)
    if m is None:
        raise ValueError('the driver does not #include "generated-code.*"')
    return driver[: m.end()]
