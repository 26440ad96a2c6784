"""codegen_eval.ctext: brace matching that skips comments and literals, shared by the ParEval
reader, the kernel gym and the kernel agent's edits."""

from __future__ import annotations

from codegen_eval.ctext import matching_brace, skip_comment_or_literal
from codegen_eval.readers.pareval.checkout import called_in


def test_braces_in_comments_and_literals_do_not_count() -> None:
    text = "int f(void) { /* } */ char c = '}'; puts(\"{ }\"); // }\n return 1; } int g;"
    close = matching_brace(text, text.index("{"))
    assert close is not None and text[close - 10 : close + 1] == "return 1; }"


def test_an_escaped_quote_stays_inside_its_literal() -> None:
    text = 'void f() { s = "a\\"}"; }'
    assert matching_brace(text, text.index("{")) == len(text) - 1


def test_unbalanced_text_gives_none() -> None:
    assert matching_brace("void f() { if (x) { y(); }", 9) is None
    assert matching_brace('void f() { s = "}', 9) is None  # the string never ends


def test_skip_returns_the_index_after_the_comment_or_literal() -> None:
    assert skip_comment_or_literal("a // c\nb", 2) == 6
    assert skip_comment_or_literal("/* x */y", 0) == 7
    assert skip_comment_or_literal("'a'b", 0) == 3
    assert skip_comment_or_literal("'abc", 0) == 4  # unterminated: to the end, not past it
    assert skip_comment_or_literal("abc", 1) == 1


def test_a_driver_cut_off_inside_compute_names_no_call() -> None:
    # before: the ParEval reader sliced with -1 and read a call out of the cut-off text
    assert called_in("void compute(Context *ctx) { correct(ctx->x", "compute") is None
    assert called_in("void compute(Context *ctx) { correct(ctx->x); }", "compute") == "correct"


def test_matching_brace_matches_parentheses_and_brackets_past_literals() -> None:
    text = "f(a, \")\", g(b[1]), '(') + 1"
    assert matching_brace(text, 1) == len(text) - 5
    assert matching_brace("x[a[0] /* ] */]", 1) == len("x[a[0] /* ] */]") - 1
