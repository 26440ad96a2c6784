"""omp-pragma's verdicts decided from the screened answer without a sandbox: constant clause
values computed as gcc computes them (or refused), the data-sharing rules, the simd answers
that cannot vectorise, and the largest piece a chunk or task hands one thread. The same
answers in the real sandbox are in test_omp_pragma_adversarial.py."""

from __future__ import annotations

import pytest

from codegen_eval.suites._cscreen import Forbidden, program_names, tokenize
from codegen_eval.suites.omp_pragma import all_problems, parse_pragma
from codegen_eval.suites.omp_pragma.constant import evaluate
from codegen_eval.suites.omp_pragma.observe import Encounter, Trace, handed_share
from codegen_eval.suites.omp_pragma.screen import screen_pragma
from codegen_eval.suites.omp_pragma.sharing import check_sharing, unvectorised


def _names(problem: str):
    return program_names(all_problems()[problem].masked)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("N - 1", (1 << 25) - 1),  # N is (1L << 25): expanded as the preprocessor does
        ("2 - 1", 1),
        ("017", 15),
        ("0x10", 16),
        ("-5 / 2", -2),  # C truncates toward zero
        ("-5 % 2", -1),
        ("1 ? 2 : 3", 2),
        ("!0 + ~0", 0),
        ("(1 << 32) + 1", None),  # gcc: a shift past int's width; not computed, refused
        ("2147483647 + 1", None),  # outside int: the operand types would matter
        ("1u", None),  # unsigned arithmetic wraps
        ("1.0", None),
        ("sum", None),  # a variable
        ("0 ? 1 / 0 : 2", None),
    ],
)
def test_constant_values_are_gccs_or_none(text: str, value: int | None) -> None:
    assert evaluate(tokenize(text), _names("reduction_sum").macros) == value


def test_macros_expand_as_tokens_not_as_parenthesised_values() -> None:
    macros = {"H": "8 / 2"}
    assert evaluate(tokenize("16 / H"), macros) == 1  # 16 / 8 / 2, not 16 / (8 / 2)


def test_the_screen_keeps_computed_constants_and_refuses_the_rest() -> None:
    s = screen_pragma(["#pragma omp parallel for schedule(dynamic, N - 1) collapse(1 + 0)"],
                      _names("reduction_sum"))  # fmt: skip
    assert s.constant("chunk") == (1 << 25) - 1 and s.constant("collapse") == 1
    assert "collapse ( 1 )" in s.text  # compiled as its value: the clause parser reads it
    assert parse_pragma(s.text).collapse == 1
    t = screen_pragma(["#pragma omp parallel master taskloop grainsize(strict: N / 2)"],
                      _names("reduction_sum"))  # fmt: skip
    assert (t.constant("grainsize"), t.constant("strict")) == (1 << 24, 1)
    u = screen_pragma(["#pragma omp simd if(simd: r > 3) safelen(2)"], _names("simd_inner_dot"))
    assert u.conditions == (("simd", "r > 3"),) and u.constant("safelen") == 2
    with pytest.raises(Forbidden) as err:
        screen_pragma(["#pragma omp simd safelen((1 << 32) + 1)"], _names("simd_inner_dot"))
    assert err.value.what == "non_constant"


def _sharing(ref: str, answer: str, loop_vars: frozenset[str] = frozenset()):
    return check_sharing(parse_pragma(ref), parse_pragma(answer), loop_vars)


@pytest.mark.parametrize(
    ("ref", "answer", "racy", "wrong"),
    [
        # a reduction variable: reduced, with the reference's operator (`-` is `+`)
        ("parallel for reduction(+:s)", "parallel for reduction(-:s)", (), ()),
        ("parallel for reduction(+:s)", "parallel for reduction(*:s)", (), ("s",)),
        ("parallel for reduction(+:s)", "parallel for private(s)", (), ("s",)),
        ("parallel for reduction(+:s)", "parallel for lastprivate(s)", (), ("s",)),
        ("parallel for reduction(+:s)", "parallel for default(firstprivate)", (), ("s",)),
        ("parallel for reduction(+:s)", "parallel for", ("s",), ()),
        ("parallel for reduction(+:s)", "parallel for default(private) shared(s)", ("s",), ()),
        # a lastprivate variable: lastprivate (conditional or not)
        ("parallel for lastprivate(x)", "parallel for lastprivate(conditional: x)", (), ()),
        ("parallel for lastprivate(x)", "parallel for firstprivate(x) lastprivate(x)", (), ()),
        ("parallel for lastprivate(x)", "parallel for reduction(max:x)", (), ("x",)),
        ("parallel for lastprivate(x)", "parallel for private(x)", (), ("x",)),
        # a private variable: any privatising clause
        ("parallel for private(t, u)", "parallel for lastprivate(t) firstprivate(u)", (), ()),
        ("parallel for private(t, u)", "parallel for private(t) reduction(+:u)", (), ()),
        ("parallel for private(t, u)", "parallel for private(t)", ("u",), ()),
        ("parallel for firstprivate(t)", "parallel for private(t)", (), ("t",)),
        # not a loop construct: the observer judges it
        ("parallel for reduction(+:s)", "parallel", (), ()),
    ],
)  # fmt: skip
def test_data_sharing_rules(ref: str, answer: str, racy: tuple, wrong: tuple) -> None:
    got = _sharing(f"#pragma omp {ref}", f"#pragma omp {answer}")
    assert (got.racy, tuple(v for v, _ in got.wrong)) == (racy, wrong), got


def test_loop_variables_of_the_answer_count_as_private() -> None:
    assert not _sharing("#pragma omp parallel for private(j, s)",
                        "#pragma omp parallel for collapse(2) private(s)", frozenset({"i", "j"}))  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "serial"),
    [
        ("simd reduction(+:acc)", False),
        ("simd reduction(+:acc) safelen(8) simdlen(4) if(simd: COLS > 1)", False),
        ("simd reduction(+:acc) if(parallel: 0)", False),  # not the simd part's condition
        ("simd reduction(+:acc) safelen(1)", True),
        ("simd reduction(+:acc) simdlen(2 - 1)", True),
        ("simd reduction(+:acc) safelen(ROWS - 1023)", True),
        ("simd reduction(+:acc) if(simd: 0)", True),
        ("simd reduction(+:acc) if(1 - 1)", True),
        ("simd reduction(+:acc) if(r > 3)", True),  # a runtime condition: not shown true
    ],
)
def test_simd_answers_that_cannot_vectorise(answer: str, serial: bool) -> None:
    names = _names("simd_inner_dot")
    s = screen_pragma([f"#pragma omp {answer}"], names)
    why = unvectorised(parse_pragma("#pragma omp simd reduction(+:acc)"), s, names.macros)
    assert (why is not None) == serial, why
    # a parallel reference: the simd part is an extra, the observer judges the threads
    assert unvectorised(parse_pragma("#pragma omp parallel for"), s, names.macros) is None


@pytest.mark.parametrize(
    ("answer", "share"),
    [
        ("parallel for", 0.5),
        ("parallel for schedule(dynamic)", 0.01),
        ("parallel for schedule(dynamic, 99)", 0.99),
        ("parallel for schedule(dynamic, 75)", 0.75),
        ("parallel for schedule(dynamic, 0)", 0.01),  # gcc takes 1 (with a warning)
        ("parallel for schedule(guided, 10)", 0.5),  # the first chunk: half the loop
        ("parallel for schedule(guided, 90)", 0.9),
        ("parallel master taskloop", 0.5),  # one task per thread
        ("parallel master taskloop grainsize(40)", 0.5),  # 2 tasks of 50
        ("parallel master taskloop grainsize(60)", 1.0),  # 100 // 60 = 1 task
        ("parallel master taskloop grainsize(strict: 99)", 0.99),
        ("parallel master taskloop num_tasks(4)", 0.25),
        ("parallel master taskloop num_tasks(2 - 1)", 1.0),
        ("parallel master taskloop num_tasks(0)", 1.0),  # gcc takes 1
    ],
)
def test_handed_share_is_the_largest_piece_libgomp_cuts(answer: str, share: float) -> None:
    s = screen_pragma([f"#pragma omp {answer}"], _names("reduction_sum"))
    serial = Trace((Encounter(100, 1, 1, 1, 100), Encounter(1, 1, 1, 1, 1)), overflow=False)
    assert handed_share(serial, s) == pytest.approx(share)
