"""The C screen shared by omp-pragma and mpi-completion (no compiler here): what the lexer
and the expression parser accept, what they refuse and under which class."""

from __future__ import annotations

import pytest

from codegen_eval.suites._cexpr import ExprPolicy, parse_expression
from codegen_eval.suites._cscreen import (
    Forbidden,
    ScreenSyntaxError,
    program_names,
    strip_comments,
    tokenize,
)

PROGRAM = """\
#include <stdio.h>
#define N (1L << 20)
#define HALF (N / 2)
#define GREETING printf("hi")
static int helper(int v) { return v + 1; }
int main(void) {
    long long sum = 0;
    int a[8], i;
    for (long k = 0; k < N; k++)
        sum += helper((int)k);
    printf("%lld %d %d\\n", sum, a[0], i);
    return 0;
}
"""


def _expr(text: str, **policy) -> str:
    names = program_names(PROGRAM)
    pol = ExprPolicy(names=names.expression_names(), **policy)
    return parse_expression(tokenize(strip_comments(text)), pol).text


def test_program_names_are_variables_and_constant_macros_only() -> None:
    names = program_names(PROGRAM)
    assert set(names.variables) == {"v", "sum", "a", "i", "k"}
    assert set(names.macros) == {"N", "HALF"}  # GREETING expands to a call: not a constant
    assert names.functions == {"helper", "main"}


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("sum > 0 ? 2 : 4", "sum > 0 ? 2 : 4"),
        ("(N/2) - HALF + 1", "( N / 2 ) - HALF + 1"),
        ("a[i]*2 % 7", "a [ i ] * 2 % 7"),
        ("!(k << 3) && ~i || 0x1fUL", "! ( k << 3 ) && ~ i || 0x1fUL"),
        ("1/**/+/**/2", "1 + 2"),  # a comment is whitespace, and never reaches the compiler
        ("1.5e3", "1.5e3"),
    ],
)
def test_accepted_expressions_come_back_as_their_tokens(text: str, canonical: str) -> None:
    assert _expr(text) == canonical


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("helper(1)", "call"),
        ("(sum)(1)", "call"),
        ("a[0](1)", "call"),
        ("omp_get_thread_num()", "call"),
        ("sum = 1", "assignment"),
        ("sum += 1", "assignment"),
        ("i++", "increment"),
        ("--i", "increment"),
        ("(i, 2)", "comma_operator"),
        ("({ sum = 1; 1; })", "statement_expression"),
        ("(<% 1; %>)", "digraph"),
        ("sizeof(char)", "sizeof"),
        ("(int)sum", "cast"),
        ('"x"[0]', "string_literal"),
        ("'a'", "char_literal"),
        ("__builtin_trap", "builtin"),
        ("_Pragma", "pragma_operator"),
        ("__extension__ 1", "gnu_extension"),
        ("0b101", "gnu_extension"),
        ("&&label", "gnu_extension"),
        ("i$", "gnu_extension"),
        ("errno", "identifier"),  # a libc macro that expands to a call
        ("stdout", "identifier"),
        ("GREETING", "identifier"),  # a program macro that is not a constant
        ("helper", "identifier"),  # a function name
        ("__cge_omp_count", "identifier"),  # the harness's own symbols
        ("\uff11", "non_ascii"),  # fullwidth digit one
        ("s\u0435m", "non_ascii"),  # Cyrillic e
        ("0 ??! 1", "trigraph"),
        ("1 \\\n+ 2", "backslash"),
        ("# 1", "preprocessor_operator"),
        ("&sum", "address_of"),
        ("*a", "dereference"),
        ("a->x", "member_access"),
    ],
)
def test_refused_expressions_name_what_they_saw(text: str, what: str) -> None:
    with pytest.raises(Forbidden) as err:
        _expr(text)
    assert err.value.what == what, str(err.value)
    assert err.value.failure_class == f"forbidden_construct:{what}"


def test_constant_only_policy_refuses_variables() -> None:
    assert _expr("HALF * 2", constant_only=True) == "HALF * 2"
    with pytest.raises(Forbidden) as err:
        _expr("sum + 1", constant_only=True)
    assert err.value.what == "non_constant"


def test_pointer_and_cast_policy() -> None:
    assert _expr("&a[2]", pointers=True) == "& a [ 2 ]"
    assert _expr("(void *)&sum", pointers=True, casts=True) == "( void * ) & sum"
    assert _expr("sizeof(long)", casts=True) == "sizeof ( long )"
    # a parenthesised variable is not a cast, whatever follows it
    assert _expr("(i) - 1", casts=True) == "( i ) - 1"
    with pytest.raises((Forbidden, ScreenSyntaxError)):  # not in the short list of types
        _expr("(struct s *)a", pointers=True, casts=True)


@pytest.mark.parametrize("text", ["", "1 +", "(1", "1 2", "0x", "1e", "int"])
def test_malformed_expressions_are_syntax_errors(text: str) -> None:
    with pytest.raises(ScreenSyntaxError):
        _expr(text)


def test_strip_comments_keeps_literals_and_refuses_open_comments() -> None:
    assert strip_comments("a /* b */ c // d") == "a   c  "
    assert strip_comments('"//" x') == '"//" x'  # not a comment: refused later as a string
    with pytest.raises(ScreenSyntaxError):
        strip_comments("a /* b")
