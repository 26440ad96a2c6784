"""Candidate text that makes a screen fail is the candidate's failure, never the harness's.

Before: ~200 nested parentheses in an omp-pragma clause or an mpi-completion argument made the
recursive screen raise RecursionError, which the runner recorded as infra_error (not cached,
scored again by --retry-infra, "the harness failed, not the candidates"); a flat chain of
3000 `+` passed the screen and then overflowed the argument normaliser the same way."""

from __future__ import annotations

import logging

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.runner import guarded_score
from codegen_eval.suites._cscreen import Forbidden
from codegen_eval.suites._csource import normalize_expr
from codegen_eval.suites._screen_guard import screen_guard
from codegen_eval.suites.mpi_completion import MissingCall, compare_calls
from codegen_eval.types import Candidate, Score

DEEP = 400  # past Python's default recursion limit with the old parser (~200 was enough)
PARENS = "(" * DEEP + "2" + ")" * DEEP
OMP_DEEP = [
    f"#pragma omp parallel for reduction(+:sum) num_threads({PARENS})",
    "#pragma omp parallel for reduction(+:sum) num_threads(" + "- " * DEEP + "2)",
    "#pragma omp parallel for reduction(+:sum) num_threads(" + "! " * DEEP + "0)",
    "#pragma omp parallel for reduction(+:sum) if(" + "N ? " * DEEP + "1" + " : 0" * DEEP + ")",
]
MPI_DEEP = [
    f"18: MPI_Reduce(&local, &total, {PARENS[:-1]}1), MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);",
    "18: MPI_Reduce(&local, &total, " + "(int)" * DEEP + "1, MPI_LONG, MPI_SUM, 0, "
    "MPI_COMM_WORLD);",
    "18: MPI_Reduce(" + "&*" * DEEP + "local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);",
    "18: MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, " + "rank ? " * DEEP + "0"
    + " : 0" * DEEP + ", MPI_COMM_WORLD);",
]  # fmt: skip


async def _guarded(suite: str, problem: str, answer: str) -> Score:
    task = get_suite(suite)
    s = next(s for s in task.dataset if s.id == f"{suite}/{problem}")
    return await guarded_score(task.scorer, s, Candidate(s.id, 0, answer), 120.0)


@pytest.mark.parametrize("answer", OMP_DEEP)
async def test_deep_omp_clause_is_the_candidates_failure(answer: str) -> None:
    score = await _guarded("omp-pragma", "reduction_sum", answer)
    assert (score.value, score.failure_class) == (0.0, "forbidden_construct:too_deep"), (
        score.explanation
    )


@pytest.mark.parametrize("answer", MPI_DEEP)
async def test_deep_mpi_argument_is_the_candidates_failure(answer: str) -> None:
    score = await _guarded("mpi-completion", "bcast_params", answer)
    assert (score.value, score.failure_class) == (0.0, "forbidden_construct:too_deep"), (
        score.explanation
    )


def test_honest_nesting_is_still_accepted() -> None:
    from codegen_eval.suites._cscreen import program_names
    from codegen_eval.suites.omp_pragma import all_problems
    from codegen_eval.suites.omp_pragma.screen import screen_pragma

    nested = "(" * 12 + "N / 64" + ")" * 12
    line = f"#pragma omp parallel for reduction(+:sum) schedule(dynamic, {nested})"
    names = program_names(all_problems()["reduction_sum"].masked)
    assert screen_pragma([line], names).lines[0].endswith("( N / 64 ) ) ) ) ) ) ) ) ) ) ) ) )")


def test_a_long_flat_chain_is_normalised_without_recursing_per_term() -> None:
    chain = " + ".join(["1"] * 3000)
    out = normalize_expr(chain)  # the deepest levels are compared as written
    assert out.count("1") == 3000 and out.endswith("+1)") and " " not in out
    assert normalize_expr("(a) + 0x10") == "(a+16)"  # shallow ones as before
    ref = (MissingCall(18, "MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"),)
    cand = (MissingCall(18, f"MPI_Reduce(&local, &total, {chain}, MPI_LONG, MPI_SUM, 0, "
                        "MPI_COMM_WORLD);"),)  # fmt: skip
    m = compare_calls(ref, cand)
    assert m["function_recall"] == 1.0 and m["exact_match"] == 0.0


def test_an_unforeseen_exception_in_a_screen_is_a_logged_candidate_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @screen_guard
    def screen(text: str) -> str:
        return {"known": "ok"}[text]  # a screen bug: KeyError on text it did not foresee

    assert screen("known") == "ok"
    with caplog.at_level(logging.ERROR), pytest.raises(Forbidden) as info:
        screen("surprise")
    assert info.value.failure_class == "forbidden_construct:unparsable"
    assert "KeyError" in str(info.value) and "screen bug" in str(info.value)
    assert any(r.exc_info and "screen" in r.getMessage() for r in caplog.records)
