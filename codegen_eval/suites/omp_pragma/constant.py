"""The value of a screened constant clause argument (`safelen(2 - 1)`, `schedule(dynamic,
N - 1)`, `grainsize(N / 4)`), computed as gcc computes it, or None when this module cannot
be sure that it agrees with gcc.

    evaluate(tokenize("N - 1"), {"N": "(1L << 22)"}) == 4194303

The suite reads these values to decide what a clause does to the loop (one simd lane, one
thread handed the whole loop), so a value that differs from the compiler's would be a way
around the verdict. Hence a deliberately small domain in which exact integer arithmetic and
C's agree: signed integer literals (no `u` suffix: unsigned wrap-around; no floating
literals), the program's object-like constant macros expanded token by token as the
preprocessor does (no parentheses added: `#define H N / 2` then `H * 2` is `N / 2 * 2`),
every intermediate value within `int` (so no operation can overflow, whatever the operands'
types), shift counts 0..30 of non-negative left operands, no division by zero. Anything
else (a variable, a subscript, a value outside that domain) gives None, and the caller
refuses the clause: an honest answer writes `safelen(8)` or `schedule(dynamic, 64)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from codegen_eval.suites._cscreen import (
    Forbidden,
    ScreenSyntaxError,
    Token,
    strip_comments,
    tokenize,
)

__all__ = ["evaluate"]

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)(?:ll|LL|l|L)?")
_PRECEDENCE = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7,
    ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}  # fmt: skip


class _Unsure(Exception):
    """The value is outside the domain in which this module agrees with gcc."""


def _checked(v: int) -> int:
    if not _INT_MIN <= v <= _INT_MAX:
        raise _Unsure
    return v


def _expand(tokens: Sequence[Token], macros: Mapping[str, str], active: frozenset[str]) -> list:
    out: list[Token] = []
    for t in tokens:
        if t.kind == "ident" and t.text in macros and t.text not in active:
            try:
                body = tokenize(strip_comments(macros[t.text]))
            except (Forbidden, ScreenSyntaxError) as exc:
                raise _Unsure from exc
            out += _expand(body, macros, active | {t.text})
        else:
            out.append(t)
    return out


def _binary(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        if b == 0:
            raise _Unsure
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
        return q if op == "/" else a - q * b
    if op in ("<<", ">>"):
        if not 0 <= b <= 30 or (op == "<<" and a < 0):
            raise _Unsure  # undefined, or wider than int: the operand types would matter
        return a << b if op == "<<" else a >> b  # >> of a negative: gcc shifts arithmetically
    table = {
        "+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
        "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
        "==": int(a == b), "!=": int(a != b), "&&": int(bool(a) and bool(b)),
        "||": int(bool(a) or bool(b)),
    }  # fmt: skip
    return table[op]


class _Evaluator:
    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.k = 0

    def peek(self) -> str | None:
        return self.toks[self.k].text if self.k < len(self.toks) else None

    def take(self) -> Token:
        if self.k >= len(self.toks):
            raise _Unsure
        self.k += 1
        return self.toks[self.k - 1]

    def expression(self) -> int:
        cond = self.binary(1)
        if self.peek() != "?":
            return cond
        self.take()
        yes = self.expression()  # both branches must be in the domain, whichever is taken
        if self.take().text != ":":
            raise _Unsure
        no = self.expression()
        return yes if cond else no

    def binary(self, min_prec: int) -> int:
        left = self.unary()
        while (op := self.peek()) is not None and _PRECEDENCE.get(op, 0) >= min_prec:
            self.take()
            right = self.binary(_PRECEDENCE[op] + 1)
            left = _checked(_binary(op, left, right))
        return left

    def unary(self) -> int:
        op = self.peek()
        if op in ("+", "-", "!", "~"):
            self.take()
            v = self.unary()
            return _checked({"+": v, "-": -v, "!": int(not v), "~": ~v}[op])
        t = self.take()
        if t.text == "(":
            v = self.expression()
            if self.take().text != ")":
                raise _Unsure
            return v
        m = _INTEGER.fullmatch(t.text) if t.kind == "number" else None
        if m is None:
            raise _Unsure  # a variable, a floating or unsigned literal, a subscript...
        digits = m.group(1)
        if digits[:2] in ("0x", "0X"):
            return _checked(int(digits, 16))
        return _checked(int(digits, 8) if digits[0] == "0" else int(digits))


def evaluate(tokens: Sequence[Token], macros: Mapping[str, str]) -> int | None:
    """The value of a constant expression the screen accepted (tokens), or None when it is
    not one this module is sure to evaluate as gcc does (see the module docstring)."""
    try:
        ev = _Evaluator(_expand(tokens, macros, frozenset()))
        value = ev.expression()
        return None if ev.k != len(ev.toks) else value
    except (_Unsure, RecursionError):
        return None
