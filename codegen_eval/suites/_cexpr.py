"""The expression parser of the C screen (`_cscreen.py`): a recursive-descent parser of a
small, side-effect-free subset of C expressions over the screen's tokens, bounded in depth
(MAX_NESTING: deeper text is the candidate's `forbidden_construct:too_deep`, never a
RecursionError). `parse_expression(tokens, policy)` gives the canonical `Expr`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._ctokens import (
    _KEYWORD_WHAT,
    _OTHER_KEYWORDS,
    _TYPE_KEYWORDS,
    Forbidden,
    ScreenSyntaxError,
    Token,
    reject_side_effects,
    render,
)

__all__ = ["MAX_NESTING", "Expr", "ExprPolicy", "Operation", "parse_expression"]


# -- expressions -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExprPolicy:
    """What an expression may contain. names: identifier -> "variable" | "macro" |
    "constant" (a library constant such as MPI_INT). constant_only: variables refused.
    pointers: `&`, unary `*`, `.` and `->`. casts: `(type)` casts and `sizeof` with the
    arithmetic type keywords, `void`, and `type_names`, with optional `*`s."""

    names: Mapping[str, str]
    constant_only: bool = False
    pointers: bool = False
    casts: bool = False
    type_names: frozenset[str] = frozenset()
    what: str = "an expression"  # for messages: "a schedule chunk", "an MPI argument"


_BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7,
    ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Operation:
    op: str  # "+", "/", "<", "?" (a conditional's condition), "u!" (unary `!`), ...
    left: frozenset[str]  # identifiers named in the left operand (or the only one)
    right: tuple[Token, ...] = ()  # the right operand's tokens (binary operators)


@dataclass(slots=True)
class Expr:
    """A parsed expression: its tokens, the program variables it reads, every identifier it
    names (variables, macros, constants), and whether it has a cast."""

    tokens: list[Token]
    variables: set[str]
    names: set[str] = field(default_factory=set)
    has_cast: bool = False
    # every operator applied: (operator, names in its left operand (the condition for `?`,
    # the operand for a unary one), its right operand's tokens); for screens that judge
    # what an expression does with one variable (mpi-completion: `size / 5`, `size > 4`)
    operations: list[Operation] = field(default_factory=list)

    @property
    def text(self) -> str:
        return render(self.tokens)


# Recursion depth of the parser (a level per `expression` and `unary` entered: a parenthesis
# costs two). Unbounded, ~200 nested parentheses raised RecursionError: scored infra_error,
# the harness's failure, instead of the candidate's. Honest arguments nest a few levels.
MAX_NESTING = 64


class _Parser:
    def __init__(self, tokens: list[Token], policy: ExprPolicy) -> None:
        self.toks = tokens
        self.k = 0
        self.depth = 0
        self.policy = policy
        self.variables: set[str] = set()
        self.names: set[str] = set()
        self.has_cast = False
        self.seen: list[str] = []  # identifiers in the order read
        self.operations: list[Operation] = []

    def peek(self, offset: int = 0) -> Token | None:
        j = self.k + offset
        return self.toks[j] if j < len(self.toks) else None

    def take(self, text: str | None = None) -> Token:
        t = self.peek()
        if t is None:
            raise ScreenSyntaxError(f"{self.policy.what} ends too early")
        if text is not None and t.text != text:
            raise ScreenSyntaxError(f"expected {text!r}, found {t.text!r} in {self.policy.what}")
        self.k += 1
        return t

    def nest(self) -> None:
        """One level deeper; refused past MAX_NESTING (the caller returns through `unnest`)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise Forbidden("too_deep", f"{self.policy.what} nests too deeply (parentheses, "
                            "subscripts, `?:`, unary operators, casts)")  # fmt: skip

    def expression(self) -> None:
        self.nest()
        start = len(self.seen)
        self.binary(1)
        if (t := self.peek()) is not None and t.text == "?":
            self.operations.append(Operation("?", frozenset(self.seen[start:])))
            self.take("?")
            self.expression()
            if (c := self.peek()) is not None and c.text == ",":
                raise Forbidden("comma_operator", "the comma operator is not accepted")
            self.take(":")
            self.expression()
        self.depth -= 1

    def binary(self, min_prec: int) -> None:
        start = len(self.seen)
        self.unary()
        while (t := self.peek()) is not None and _BINARY_PRECEDENCE.get(t.text, 0) >= min_prec:
            left = frozenset(self.seen[start:])
            self.take()
            at = self.k
            self.binary(_BINARY_PRECEDENCE[t.text] + 1)
            self.operations.append(Operation(t.text, left, tuple(self.toks[at : self.k])))

    def unary(self) -> None:
        self.nest()
        self._unary()
        self.depth -= 1

    def _unary(self) -> None:
        t = self.peek()
        if t is None:
            raise ScreenSyntaxError(f"{self.policy.what} ends too early")
        if t.text in ("+", "-", "!", "~"):
            start = len(self.seen)
            self.take()
            self.unary()
            self.operations.append(Operation("u" + t.text, frozenset(self.seen[start:])))
            return
        if t.text == "&&":
            raise Forbidden("gnu_extension", "`&&label` (a label's address) is a GNU extension")
        if t.text in ("&", "*"):
            if not self.policy.pointers:
                what = "address_of" if t.text == "&" else "dereference"
                raise Forbidden(what, f"unary `{t.text}` is not accepted in {self.policy.what}")
            self.take()
            self.unary()
            return
        if t.kind == "ident" and t.text == "sizeof":
            if not self.policy.casts:
                raise Forbidden("sizeof", f"`sizeof` is not accepted in {self.policy.what}")
            self.take()
            if (p := self.peek()) is not None and p.text == "(" and self.is_type_start(1):
                self.take("(")
                self.type_name()
                self.take(")")
            else:
                self.unary()
            return
        if t.text == "(" and self.is_type_start(1):
            if not self.policy.casts:
                raise Forbidden("cast", f"casts are not accepted in {self.policy.what}")
            self.has_cast = True
            self.take("(")
            self.type_name()
            self.take(")")
            self.unary()
            return
        self.postfix()

    def is_type_start(self, offset: int) -> bool:
        t = self.peek(offset)
        if t is None or t.kind != "ident":
            return False
        if t.text in _TYPE_KEYWORDS:
            return True
        return t.text in self.policy.type_names and t.text not in self.policy.names

    def type_name(self) -> None:
        seen = 0
        while (
            (t := self.peek()) is not None
            and t.kind == "ident"
            and (t.text in _TYPE_KEYWORDS or t.text in self.policy.type_names)
        ):
            self.take()
            seen += 1
        if not seen:
            t = self.peek()
            raise Forbidden("cast", f"type {t.text if t else '?'!r} is not accepted in a cast "
                            "or sizeof")  # fmt: skip
        while (t := self.peek()) is not None and t.text in ("*", "const", "volatile"):
            self.take()
        if (t := self.peek()) is not None and t.text != ")":
            raise Forbidden("cast", f"only simple type names are accepted in casts and "
                            f"sizeof, not {t.text!r}")  # fmt: skip

    def postfix(self) -> None:
        self.primary()
        while (t := self.peek()) is not None:
            if t.text == "[":
                self.take("[")
                self.expression()
                self.expect_close("]")
            elif t.text == "(":
                raise Forbidden("call", f"a call is not accepted in {self.policy.what}: it "
                                "could run any code")  # fmt: skip
            elif t.text in (".", "->"):
                if not self.policy.pointers:
                    raise Forbidden("member_access", f"`{t.text}` is not accepted in "
                                    f"{self.policy.what}")  # fmt: skip
                self.take()
                m = self.take()
                if m.kind != "ident":
                    raise ScreenSyntaxError(f"expected a member name after {t.text!r}")
            else:
                return

    def expect_close(self, close: str) -> None:
        t = self.peek()
        if t is not None and t.text == ",":
            raise Forbidden("comma_operator", "the comma operator is not accepted")
        self.take(close)

    def primary(self) -> None:
        t = self.take()
        if t.kind == "number":
            return
        if t.kind in ("string", "char"):
            what = "string_literal" if t.kind == "string" else "char_literal"
            raise Forbidden(what, f"{what.replace('_', ' ')}s are not accepted in "
                            f"{self.policy.what}")  # fmt: skip
        if t.text == "(":
            self.expression()
            self.expect_close(")")
            return
        if t.kind != "ident":
            raise ScreenSyntaxError(f"unexpected {t.text!r} in {self.policy.what}")
        if t.text in _KEYWORD_WHAT:
            what = _KEYWORD_WHAT[t.text]
            raise Forbidden(what, f"`{t.text}` is not accepted in {self.policy.what}")
        if t.text.startswith("__builtin"):
            raise Forbidden("builtin", f"`{t.text}` is a compiler builtin, not accepted")
        nxt = self.peek()
        if nxt is not None and nxt.text == "(":
            raise Forbidden("call", f"`{t.text}(...)` is a call; {self.policy.what} may only "
                            "read the program's variables and constants")  # fmt: skip
        if t.text in _TYPE_KEYWORDS or t.text in _OTHER_KEYWORDS:
            raise ScreenSyntaxError(f"keyword {t.text!r} in {self.policy.what}")
        kind = self.policy.names.get(t.text)
        self.names.add(t.text)
        self.seen.append(t.text)
        if kind is None:
            raise Forbidden("identifier", f"`{t.text}` is not a variable or constant of this "
                            "program")  # fmt: skip
        if kind == "variable":
            if self.policy.constant_only:
                raise Forbidden("non_constant", f"`{t.text}` is a variable; {self.policy.what} "
                                "must be a constant (literals and the program's macros)")  # fmt: skip
            self.variables.add(t.text)


def parse_expression(tokens: list[Token], policy: ExprPolicy) -> Expr:
    """`tokens` as exactly one accepted expression. Raises Forbidden or ScreenSyntaxError."""
    if not tokens:
        raise ScreenSyntaxError(f"{policy.what} is empty")
    reject_side_effects(tokens)
    p = _Parser(tokens, policy)
    p.expression()
    if (t := p.peek()) is not None:
        if t.text == ",":
            raise Forbidden("comma_operator", f"the comma operator is not accepted in "
                            f"{policy.what}")  # fmt: skip
        raise ScreenSyntaxError(f"unexpected {t.text!r} in {policy.what}")
    return Expr(list(tokens), p.variables, p.names, p.has_cast, p.operations)
