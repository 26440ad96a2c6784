"""The screen for C text that a candidate contributes to one of our programs: OpenMP clause
arguments (omp-pragma) and MPI call arguments (mpi-completion).

    names = program_names(src)                  # the program's own variables and constants
    toks = tokenize(strip_comments(text))       # raises Forbidden / ScreenSyntaxError
    expr = parse_expression(toks, ExprPolicy(names=names.omp_names()))  # canonical text
                                                # (the expression parser: _cexpr.py)

Principle: accept only what is meant to be accepted, and hand the compiler only what was
accepted. The text is cut into tokens by our own lexer (maximal munch, as C does, so `<%`
is a digraph and `&&x` a label address) and parsed by our own recursive-descent parser of a
small, side-effect-free subset of C expressions. The canonical form given back is the
accepted tokens joined by single spaces, so nothing the lexer did not see (a comment, a
line splice, a trigraph, a glued-together token) ever reaches the compiler.

Accepted expressions: identifiers that the policy names (the program's variables and its
object-like macros whose values are themselves constant expressions), decimal/octal/hex
integer and decimal floating literals, parentheses, unary `+ - ! ~`, the binary arithmetic,
shift, bitwise, relational, equality and logical operators, `?:`, and subscripts. A policy
may add `&`, unary `*`, `.`/`->` and casts/`sizeof` to a short list of type names (MPI call
arguments need them). Everything else is refused with a `Forbidden(what, why)`: calls,
assignments, `++`/`--`, the comma operator, statement expressions and braces, string and
character literals, `sizeof`/casts where not allowed, GNU extensions (`__builtin_*`,
`typeof`, `asm`, `&&label`, `0b` literals, `$` in names), `_Pragma`, `#`/`##`, digraphs,
trigraphs, stray backslashes and any non-ASCII character (lookalike letters and digits).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._cexpr import ExprPolicy, parse_expression
from ._csource import parse as _ts_parse
from ._ctokens import (
    Forbidden,
    ScreenSyntaxError,
    Token,
    reject_side_effects,
    render,
    strip_comments,
    tokenize,
)

__all__ = [
    "Forbidden",
    "ProgramNames",
    "ScreenSyntaxError",
    "Token",
    "program_names",
    "reject_side_effects",
    "render",
    "split_top",
    "strip_comments",
    "tokenize",
]


@dataclass(frozen=True, slots=True)
class ProgramNames:
    """What a program declares: variables (name -> declared type text), object-like macros
    whose values are constant expressions (name -> value), functions."""

    variables: Mapping[str, str] = field(default_factory=dict)
    macros: Mapping[str, str] = field(default_factory=dict)
    functions: frozenset[str] = frozenset()

    def expression_names(self) -> dict[str, str]:
        """name -> "variable" | "macro", for ExprPolicy.names."""
        out = {m: "macro" for m in self.macros}
        out.update({v: "variable" for v in self.variables})
        return out


def _declared_name(node) -> tuple[str | None, bool]:
    """(identifier, is_function) of a declarator."""
    is_function = False
    while node is not None and node.type != "identifier":
        if node.type == "function_declarator":
            is_function = True
        node = node.child_by_field_name("declarator")
    return ((node.text or b"").decode() if node is not None else None), is_function


def program_names(src: str, *, reserved_prefix: str = "__cge") -> ProgramNames:
    """The names `src` declares (tree-sitter). Names starting with `reserved_prefix` (the
    harness's own instrumentation) are never included."""
    root = _ts_parse(src).root_node
    variables: dict[str, str] = {}
    functions: set[str] = set()
    macro_values: list[tuple[str, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type == "preproc_def":
            name = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name is not None:
                macro_values.append(
                    ((name.text or b"").decode(), (value.text or b"").decode() if value else "")
                )
        elif node.type == "function_definition":
            name, _ = _declared_name(node.child_by_field_name("declarator"))
            if name:
                functions.add(name)
        elif node.type in ("declaration", "parameter_declaration"):
            type_node = node.child_by_field_name("type")
            type_text = (type_node.text or b"").decode() if type_node is not None else ""
            for decl in node.children_by_field_name("declarator"):
                name, is_function = _declared_name(decl)
                if not name:
                    continue
                if is_function:
                    functions.add(name)
                else:
                    variables[name] = type_text
    # A macro is a constant when its value is a constant expression over earlier constants.
    macros: dict[str, str] = {}
    for name, value in macro_values:
        try:
            toks = tokenize(strip_comments(value))
            reject_side_effects(toks)
            parse_expression(toks, ExprPolicy(names=dict.fromkeys(macros, "macro"),
                                              constant_only=True))  # fmt: skip
        except (Forbidden, ScreenSyntaxError):
            continue
        macros[name] = value
    keep = {k: v for k, v in variables.items() if not k.startswith(reserved_prefix)}
    return ProgramNames(
        variables=keep,
        macros={k: v for k, v in macros.items() if not k.startswith(reserved_prefix)},
        functions=frozenset(functions),
    )


def split_top(tokens: list[Token], sep: str) -> list[list[Token]]:
    """Split on `sep` outside (), [] (and {} which screens refuse anyway)."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        if t.text == sep and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts
