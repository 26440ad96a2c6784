"""omp-pragma: the pragma parser, answer parsing and clause metrics (no sandbox here), and the
problem set's invariants. Scorer runs are in test_omp_pragma_scorer.py."""

from __future__ import annotations

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.suites.omp_pragma import (
    MARKER,
    PragmaSyntaxError,
    all_problems,
    compare,
    parse_answer,
    parse_pragma,
)


def test_problem_set_covers_the_required_kinds() -> None:
    problems = all_problems()
    assert len(problems) >= 20
    cats = [p.category for p in problems.values()]
    assert cats.count("dependence") >= 4
    for kind in ("reduction", "private", "schedule", "collapse", "atomic", "critical"):
        assert kind in cats, kind
    ops = {op for p in problems.values() if p.target != "none"
           for op in parse_pragma(p.target).reductions}  # fmt: skip
    assert {"+", "*", "max", "min"} <= ops
    for p in problems.values():
        assert p.masked.count(MARKER) == 1
        assert "@target" not in p.masked  # the answer never leaks into the prompt
        assert p.target == "none" or p.target not in p.masked


def test_task_factory_options_and_sample_shape() -> None:
    task = get_suite("omp-pragma", problems=["reduction_*"], limit=3)
    assert [s.id for s in task.dataset] == [
        "omp-pragma/reduction_max_rows", "omp-pragma/reduction_min_rows",
        "omp-pragma/reduction_product",
    ]  # fmt: skip
    s = task.dataset[0]
    assert s.target == "#pragma omp parallel for reduction(max:best)"
    assert s.metadata["language"] == "openmp"
    assert s.metadata["removed_lines"] == [s.target]
    assert s.metadata["loop_vars"] == ["c"]
    assert MARKER in s.input and "reduction(max" not in s.input
    assert len(get_suite("omp-pragma").dataset) == len(all_problems())
    with pytest.raises(ValueError):
        get_suite("omp-pragma", problems=["no_such_*"])


def test_collapse_reference_knows_both_loop_variables() -> None:
    assert all_problems()["collapse_grid"].loop_vars == ("p", "c")


@pytest.mark.parametrize(
    "text",
    [
        "#pragma omp parallel for private(t, u) reduction(+:s)",
        "#pragma omp parallel for reduction( + : s )private( u,t )",
        "  #  pragma   OMP parallel   for reduction(-:s) private(u) private(t)",
        "#pragma omp parallel for \\\n    private(t, u) \\\n    reduction(+:s)",
        "#pragma omp parallel\n#pragma omp for private(t,u) reduction(+:s)",
        "#pragma omp parallel for shared(a, n) default(shared) private(t,u) reduction(+:s)",
    ],
)
def test_equivalent_spellings_normalize_to_the_same_pragma(text: str) -> None:
    want = parse_pragma("#pragma omp parallel for reduction(+:s) private(t,u)")
    got = parse_pragma(text)
    assert got.directive == "parallel for"
    assert got.facts() == want.facts() == {"private:t", "private:u", "reduction:+:s"}
    assert compare(want, got)["exact_match"] == 1.0


def test_parser_details() -> None:
    p = parse_pragma("#pragma omp parallel for schedule(dynamic, 1) collapse(2) num_threads(4)")
    assert p.schedule == ("dynamic", None) and p.collapse == 2 and not p.serializing
    assert "schedule_chunk:4" in parse_pragma("#pragma omp for schedule(guided,4)").facts()
    assert parse_pragma("#pragma omp parallel for schedule(monotonic:static)").schedule == (
        "static", None)  # fmt: skip
    assert parse_pragma("#pragma omp atomic update").facts() == frozenset()
    assert parse_pragma("#pragma omp critical (list_lock)").directive == "critical"
    assert parse_pragma("#pragma omp parallel for simd reduction(max:m)").directive == (
        "parallel for simd")  # fmt: skip
    assert parse_pragma("#pragma omp parallel for if(0)").serializing
    assert parse_pragma("#pragma omp parallel for num_threads(1)").serializing
    assert parse_pragma("#pragma omp parallel for reduction(+:h[:16])").reductions == {
        "+": frozenset({"h[:16]"})}  # fmt: skip
    # the loop variable is predetermined private: private(i) says nothing
    assert parse_pragma("#pragma omp parallel for private(i, t)",
                        implicit_private=frozenset({"i"})).private == {"t"}  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "#pragma omp parallel for reduction(+ s)",  # no ':'
        "#pragma omp parallel for private(a",  # unbalanced
        "#pragma omp for\n#pragma omp parallel",  # `for` does not combine with what follows
        "#pragma acc parallel loop",
        "#pragma omp parallel for collapse(two)",
    ],
)
def test_parser_rejects_malformed_pragmas(text: str) -> None:
    with pytest.raises(PragmaSyntaxError):
        parse_pragma(text)


def test_clause_metrics_for_partial_answers() -> None:
    ref = parse_pragma("#pragma omp parallel for reduction(+:sum, sumsq)")
    half = compare(ref, parse_pragma("#pragma omp parallel for reduction(+:sum)"))
    assert half["clause_recall"] == 0.5 and half["clause_precision"] == 1.0
    assert half["reduction_recall"] == 0.5 and half["exact_match"] == 0.0
    assert half["directive_match"] == 1.0
    extra = compare(ref, parse_pragma(
        "#pragma omp parallel for reduction(+:sum, sumsq) schedule(static)"))  # fmt: skip
    assert extra["clause_recall"] == 1.0 and extra["clause_precision"] == pytest.approx(
        2 / 3, abs=1e-3
    )
    assert extra["schedule_precision"] == 0.0
    assert compare(None, None)["exact_match"] == 1.0
    missed = compare(ref, None)
    assert missed["clause_recall"] == 0.0 and missed["directive_match"] == 0.0
    assert compare(None, ref)["clause_precision"] == 0.0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("#pragma omp parallel for reduction(+:s)", ("#pragma omp parallel for reduction(+:s)",)),
        ("Here:\n```c\n#pragma omp parallel for \\\n  private(t)\n```\n",
         ("#pragma omp parallel for    private(t)",)),
        ("Use `#pragma omp atomic` before the update.", ("#pragma omp atomic",)),
        ("```c\n#pragma omp parallel\n#pragma omp for\nfor (...) {}\n```",
         ("#pragma omp parallel", "#pragma omp for")),
        ("none", ()),
        ("`none` - the loop carries a dependence", ()),
        ("This loop cannot be parallelized safely.", ()),
        ("```none```\nThis is the correct answer.", ()),  # a one-line fence (1.5B repair)
    ],
)  # fmt: skip
def test_parse_answer(reply: str, expected: tuple[str, ...]) -> None:
    answer = parse_answer(reply)
    assert answer is not None
    assert tuple(" ".join(x.split()) for x in answer.lines) == tuple(
        " ".join(x.split()) for x in expected
    )


def test_parse_answer_without_pragma_or_none_is_unparsable() -> None:
    assert parse_answer("I would use OpenMP threads here.") is None
    assert parse_answer("") is None
    assert parse_answer("```none\nint x;\n```") is None  # a fence's info string is not prose
    assert parse_answer("<think>#pragma omp parallel for</think>It depends.") is None
