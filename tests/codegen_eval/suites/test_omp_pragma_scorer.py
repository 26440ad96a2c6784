"""omp-pragma scorer in the real bwrap sandbox with real gcc -fopenmp: reference answers pass,
wrong answers get the right failure class. Races are found by running at 1, 2, 4, 2 threads;
the wrong answers used here (a missing reduction, a parallelised recurrence) give a wrong
result unless every run happens to execute its threads strictly one after the other."""

from __future__ import annotations

import asyncio

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.types import Candidate, Sample, Score

FAST = ["reduction_two_sums", "dependence_prefix_sum", "private_scratch", "critical_append"]


@pytest.fixture(scope="module")
def task():
    return get_suite("omp-pragma")


def _sample(task, name: str) -> Sample:
    return next(s for s in task.dataset if s.id == f"omp-pragma/{name}")


async def _score(task, name: str, answer: str, raw: str = "") -> Score:
    s = _sample(task, name)
    return await task.scorer.score(s, Candidate(s.id, 0, answer, raw=raw))


def _assert_reference_passes(score: Score, sample_id: str) -> None:
    assert score.value == 1.0, (sample_id, score.failure_class, score.explanation)
    assert score.metrics["exact_match"] == 1.0
    assert score.metrics["clause_f1"] == 1.0
    assert score.metrics["functional_output_match"] == 1.0
    if "observed_team@4t" in score.metrics:  # parallel references: the observer saw a team
        assert score.metrics["observed_team@4t"] == 4.0
        assert score.metrics["observed_workers@4t"] >= 2.0


@pytest.mark.parametrize("name", FAST)
async def test_reference_answers_pass(task, name: str) -> None:
    s = _sample(task, name)
    _assert_reference_passes(await task.scorer.score(s, Candidate(s.id, 0, s.target)), s.id)


async def test_missing_reduction_is_a_data_race_with_lower_recall(task) -> None:
    score = await _score(task, "reduction_two_sums", "#pragma omp parallel for reduction(+:sum)")
    assert score.failure_class == "wrong_answer:data_race", score.explanation
    assert score.value == 0.0
    assert score.metrics["clause_recall"] == 0.5
    assert "functional_output_match" not in score.metrics  # decided without running


async def test_reduction_into_a_private_copy_is_wrong_data_sharing(task) -> None:
    # no shared write, but the private copy loses the sum the program prints: refused from
    # the structure (the runs showed it too, but a private copy can hold it by chance)
    score = await _score(task, "reduction_two_sums",
                         "#pragma omp parallel for reduction(+:sum) private(sumsq)")  # fmt: skip
    assert score.failure_class == "wrong_answer:data_sharing", score.explanation
    assert score.metrics["clause_recall"] == 0.5
    assert "functional_output_match" not in score.metrics  # decided without running


async def test_pragma_on_a_loop_carried_dependence_is_a_wrong_answer(task) -> None:
    score = await _score(task, "dependence_prefix_sum", "#pragma omp parallel for")
    assert score.value == 0.0
    assert score.failure_class is not None and score.failure_class.startswith("wrong_answer")
    assert score.metrics["directive_match"] == 0.0


async def test_none_where_a_pragma_is_needed_is_missed_parallelism(task) -> None:
    score = await _score(task, "reduction_two_sums", "none")
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:missed_parallelism")
    assert score.metrics["functional_output_match"] == 1.0  # right output, but serial


async def test_serialising_clause_is_not_parallel(task) -> None:
    score = await _score(
        task, "reduction_two_sums", "#pragma omp parallel for reduction(+:sum,sumsq) if(0)"
    )
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:not_parallel")
    assert "team of 1 thread" in score.explanation  # observed, not read from the text
    assert score.metrics["observed_team@2t"] == 1.0


async def test_answers_gcc_rejects_are_compile_errors(task) -> None:
    # a name the program does not declare never reaches gcc: the screen refuses it
    undeclared = await _score(
        task, "reduction_two_sums", "#pragma omp parallel for reduction(+:total)"
    )
    assert undeclared.failure_class == "forbidden_construct:identifier", undeclared.explanation
    assert "`total`" in undeclared.explanation
    early_exit = await _score(task, "dependence_early_exit", "#pragma omp parallel for")
    assert early_exit.failure_class is not None
    assert early_exit.failure_class.startswith("compile_error"), early_exit.explanation


async def test_unparsable_answer_is_no_code_and_raw_reply_is_a_fallback(task) -> None:
    score = await _score(task, "private_scratch", "", raw="I would parallelise it.")
    assert (score.value, score.failure_class) == (0.0, "no_code")
    from_raw = await _score(
        task, "private_scratch", "", raw="Answer: `#pragma omp parallel for private(buf)`"
    )
    assert from_raw.value == 1.0, from_raw.explanation


@pytest.mark.slow
async def test_every_reference_answer_passes(task) -> None:
    async def one(s: Sample) -> tuple[str, Score]:
        return s.id, await task.scorer.score(s, Candidate(s.id, 0, s.target))

    results = await asyncio.gather(*(one(s) for s in task.dataset))
    assert len(results) >= 20
    for sample_id, score in results:
        _assert_reference_passes(score, sample_id)
