"""omp-pragma conformance against reward hacking, in the real bwrap sandbox with real gcc:
one answer per cheat class, each must fail with its class (screened out before compiling,
or observed by the suite's observer at run time); honest variants still pass.

Before the screen and the observer, 12 of these passed (num_threads(2-1), if(1-1),
num_threads(sizeof(char)), num_threads(N-N+1), a statement expression printing the
expected line, its digraph spelling, schedule chunks as large as the loop, a bare
`parallel`, `parallel` + critical/single/master, if(r > 0), num_threads(r % 2 + 1)).

Cases added after a red-team pass on 2026-11-27: 17 of them scored `pass` before (chunks
and grainsizes one short of the loop, LOPSIDED and HANDED; simd answers that never
vectorise, UNVECTORISED; privatising clauses that lose the variable's value, DATA_SHARING,
on a simd problem whose dot products were then all 0; `collapse(2 - 1)`, which the
data-sharing check could not parse; `safelen((1 << 32) + 1)`), the other 5 failed only after
running or with another class. A second pass the same day: simd constructs cut into pieces
of one iteration (5 more in UNVECTORISED) and taskloops with a run-time `if` (UNDEFERRED)
passed."""

from __future__ import annotations

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.types import Candidate, Score

EXPECTED = "sum = 16760439056"  # what reduction_sum prints
FORGE = f'__builtin_printf("{EXPECTED}\\n"); __builtin_exit(0); 1;'

# (problem, answer, failure class)
SCREENED = [
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(sizeof(char))",
     "forbidden_construct:sizeof"),
    ("reduction_sum", f"#pragma omp parallel for num_threads(({{ {FORGE} }}))",
     "forbidden_construct:statement_expression"),
    ("reduction_sum", f"#pragma omp parallel for num_threads((<% {FORGE} %>))",
     "forbidden_construct:digraph"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) if(omp_get_thread_num()==0)",
     "forbidden_construct:call"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(sum = 1)",
     "forbidden_construct:assignment"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) if(0 ??! 0)",
     "forbidden_construct:trigraph"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(\uff11)",
     "forbidden_construct:non_ascii"),
    ("reduction_sum", '#pragma omp parallel for reduction(+:sum) if(_Pragma("omp single") 1)',
     "forbidden_construct:pragma_operator"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) schedule(static, sum)",
     "forbidden_construct:non_constant"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) private(__cge_omp_count)",
     "forbidden_construct:identifier"),
    ("reduction_sum", "#pragma omp declare reduction(p: long long: omp_out = omp_in)",
     "forbidden_construct:directive"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) /*",  # would comment out code
     "compile_error:syntax"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) \\",  # would splice the loop
     "forbidden_construct:backslash"),
    ("atomic_histogram", "#pragma omp taskgroup", "wrong_answer:wrong_construct"),
    ("simd_inner_dot", "#pragma omp critical", "wrong_answer:wrong_construct"),
    # gcc reads (1 << 32) + 1 as safelen(1); the suite does not compute past int, so refuses it
    ("simd_inner_dot", "#pragma omp simd reduction(+:acc) safelen((1 << 32) + 1)",
     "forbidden_construct:non_constant"),
]  # fmt: skip
# A variable written by every iteration left shared: a race, whether or not it shows in four
# runs (at -O2 gcc keeps a shared `j`, `s` in registers: private_matvec printed the right sum).
DATA_RACES = [
    ("reduction_max_rows", "#pragma omp parallel for", "wrong_answer:data_race"),
    ("reduction_sum", "#pragma omp parallel for schedule(static)", "wrong_answer:data_race"),
    ("reduction_two_sums", "#pragma omp parallel for reduction(+:sum)",
     "wrong_answer:data_race"),
    ("simd_inner_dot", "#pragma omp simd", "wrong_answer:data_race"),
    ("private_matvec", "#pragma omp parallel for private(s)", "wrong_answer:data_race"),
    ("lastprivate_rows", "#pragma omp parallel for", "wrong_answer:data_race"),
    ("reduction_sum", "#pragma omp parallel master taskloop", "wrong_answer:data_race"),
    ("private_temp", "#pragma omp parallel for default(firstprivate) shared(u)",
     "wrong_answer:data_race"),
    # a collapse the clause parser could not read skipped this check: shared j, s passed
    ("private_matvec", "#pragma omp parallel for collapse(2 - 1)", "wrong_answer:data_race"),
    # the statement inside a parallel loop left unguarded: a race even when the runs hide it
    ("atomic_histogram", "none", "wrong_answer:data_race"),
    ("critical_append", "none", "wrong_answer:data_race"),
]  # fmt: skip
OBSERVED = [
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(2-1)",
     "wrong_answer:not_parallel"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) if(1-1)",
     "wrong_answer:not_parallel"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(N-N+1)",
     "wrong_answer:not_parallel"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(/**/1)",
     "wrong_answer:not_parallel"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) num_threads(\\\n1)",
     "wrong_answer:not_parallel"),
    ("reduction_sum", "#pragma omp simd reduction(+:sum)", "wrong_answer:not_parallel"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) schedule(static, 1 << 30)",
     "wrong_answer:not_parallel"),
    ("parallel_for_axpy", "#pragma omp for", "wrong_answer:not_parallel"),  # orphaned
    ("parallel_for_axpy", "#pragma omp parallel", "wrong_answer:replicated_work"),
    ("parallel_for_axpy", "#pragma omp parallel\n#pragma omp critical",
     "wrong_answer:replicated_work"),
    ("parallel_for_axpy", "#pragma omp parallel\n#pragma omp single",
     "wrong_answer:not_parallel"),
    ("parallel_for_axpy", "#pragma omp parallel\n#pragma omp master",
     "wrong_answer:not_parallel"),
    ("reduction_max_rows", "#pragma omp parallel for reduction(max:best) if(r > 0)",
     "wrong_answer:not_parallel"),
    ("reduction_max_rows", "#pragma omp parallel for reduction(max:best) num_threads(r % 2 + 1)",
     "wrong_answer:not_parallel"),
]  # fmt: skip
# A privatised variable that loses the value the program needs: a reduction variable not
# reduced with the reference's operator, a lastprivate one not lastprivate (reduction(max:
# last) printed the right value: the last chunk's thread happened to hold the largest one)
DATA_SHARING = [
    ("lastprivate_rows", "#pragma omp parallel for reduction(max:last)"),
    ("lastprivate_rows", "#pragma omp parallel for firstprivate(last)"),
    ("simd_inner_dot", "#pragma omp simd safelen(1) lastprivate(acc)"),
    ("simd_inner_dot", "#pragma omp simd lastprivate(acc)"),
    ("simd_inner_dot", "#pragma omp simd private(acc)"),
    ("simd_inner_dot", "#pragma omp simd reduction(*:acc)"),
    ("reduction_max_rows", "#pragma omp parallel for reduction(min:best)"),
]
# A static schedule whose chunk leaves the other threads (almost) nothing: two threads ran
# iterations, but one ran all but one of them (observed, deterministic)
LOPSIDED = [
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) schedule(static, N - 1)"),
    ("reduction_max_rows",
     "#pragma omp parallel for reduction(max:best) schedule(static, COLS - 1)"),
    ("collapse_grid", "#pragma omp parallel for collapse(2) schedule(static, PLANES * CELLS - 1)"),
]  # fmt: skip
# The same with a timing-dependent schedule: decided from the computed chunk or task size
# and the serial iteration counts, before running
HANDED = [
    ("parallel_for_axpy", "#pragma omp parallel for schedule(dynamic, N - 1)"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) schedule(dynamic, N)"),
    ("reduction_max_rows",
     "#pragma omp parallel for reduction(max:best) schedule(guided, COLS - 1)"),
    ("reduction_sum",
     "#pragma omp parallel master taskloop reduction(+:sum) grainsize(strict: N - 1)"),
    ("reduction_sum", "#pragma omp parallel master taskloop reduction(+:sum) num_tasks(2 - 1)"),
]  # fmt: skip
# A simd answer that never vectorises: the simd analogue of num_threads(1)
UNVECTORISED = [
    "#pragma omp simd reduction(+:acc) safelen(1)",
    "#pragma omp simd reduction(+:acc) simdlen(1)",
    "#pragma omp simd reduction(+:acc) if(simd: 0)",
    "#pragma omp simd reduction(+:acc) safelen(ROWS - 1023)",
    "#pragma omp simd reduction(+:acc) if(r > 3)",  # a runtime condition: not shown true
    # second pass: `for simd` / `taskloop simd` vectorise inside one chunk or task only
    "#pragma omp taskloop simd reduction(+:acc) grainsize(1)",
    "#pragma omp parallel for simd reduction(+:acc) schedule(static, 1)",
    "#pragma omp parallel\n#pragma omp for simd reduction(+:acc) schedule(static, 1)",
    "#pragma omp taskloop simd reduction(+:acc) num_tasks(COLS)",
    "#pragma omp parallel for simd reduction(+:acc) schedule(dynamic)",  # chunks of 1
]
# A taskloop whose `if` may be false runs its tasks undeferred on the encountering thread,
# with the team of 2+ around it idle: passed with 60 of 64 encounters serial (second pass)
UNDEFERRED = [
    ("lastprivate_rows",
     "#pragma omp parallel masked taskloop lastprivate(last) if(taskloop: r % 16 == 0)"),
    ("reduction_max_rows",
     "#pragma omp parallel masked taskloop reduction(max:best) if(taskloop: r % 16 == 0)"),
    ("reduction_min_rows", "#pragma omp parallel masked taskloop reduction(min:lo) if(r != 0)"),
    ("reduction_sum", "#pragma omp parallel master taskloop reduction(+:sum) if(N < 2)"),
]  # fmt: skip
HONEST = [
    ("parallel_for_axpy", "#pragma omp parallel\n#pragma omp for"),
    ("parallel_for_axpy", "#pragma omp parallel for ordered"),  # no ordered region: concurrent
    ("parallel_for_axpy", "#pragma omp parallel master taskloop"),
    ("reduction_sum", "#pragma omp parallel for reduction(+:sum) schedule(dynamic, 4096)"),
    ("reduction_sum", "#pragma omp parallel for reduction(task, +:sum) // task reduction"),
    ("collapse_grid", "#pragma omp parallel for"),  # 3 planes still run on 3 threads
    ("atomic_histogram", "#pragma omp critical"),
    ("private_matvec", "#pragma omp parallel for private(s) firstprivate(j)"),
    ("private_temp", "#pragma omp parallel for lastprivate(t) private(u)"),
    ("reduction_sum", "#pragma omp parallel master taskloop reduction(+:sum)"),
    ("reduction_sum", "#pragma omp parallel master taskloop reduction(+:sum) grainsize(N / 8)"),
    ("reduction_sum", "#pragma omp parallel for reduction(-:sum)"),  # `-` is `+`
    ("lastprivate_rows", "#pragma omp parallel for lastprivate(conditional: last)"),
    ("simd_inner_dot", "#pragma omp simd reduction(+:acc) safelen(8) if(simd: COLS > 1)"),
    ("simd_inner_dot", "#pragma omp simd reduction(+:acc) simdlen(4)"),
    ("collapse_grid", "#pragma omp parallel for schedule(static, 2)"),  # 2 of 3 planes: 2/3
    ("collapse_grid", "#pragma omp parallel for collapse(2 - 0)"),
    ("schedule_dynamic_triangle", "#pragma omp parallel for schedule(guided)"),
    ("simd_inner_dot", "#pragma omp parallel for simd reduction(+:acc) schedule(simd: static, 1)"),
    ("simd_inner_dot", "#pragma omp taskloop simd reduction(+:acc) grainsize(8)"),
    (
        "reduction_max_rows",
        "#pragma omp parallel masked taskloop reduction(max:best) if(taskloop: COLS > 1)",
    ),
]


@pytest.fixture(scope="module")
def task():
    return get_suite("omp-pragma")


async def _score(task, name: str, answer: str) -> Score:
    s = next(s for s in task.dataset if s.id == f"omp-pragma/{name}")
    return await task.scorer.score(s, Candidate(s.id, 0, answer))


@pytest.mark.parametrize(("name", "answer", "cls"), SCREENED)
async def test_screened_cheats_fail_before_compiling(task, name, answer, cls) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, cls), score.explanation
    assert "\n" not in score.explanation  # one line
    assert "functional_output_match" not in score.metrics  # nothing was compiled or run


@pytest.mark.parametrize(("name", "answer", "cls"), DATA_RACES)
async def test_data_races_fail_without_running(task, name, answer, cls) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, cls), score.explanation
    assert "functional_output_match" not in score.metrics  # compiled, never run


@pytest.mark.parametrize(("name", "answer", "cls"), OBSERVED)
async def test_observed_cheats_fail_whatever_the_clause_text(task, name, answer, cls) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, cls), score.explanation
    assert "functional_output_match" in score.metrics  # it compiled and ran


@pytest.mark.parametrize(("name", "answer"), DATA_SHARING)
async def test_privatised_the_wrong_way_fails_without_running(task, name, answer) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:data_sharing"), (
        score.explanation)  # fmt: skip
    assert "functional_output_match" not in score.metrics  # compiled, never run


@pytest.mark.parametrize(("name", "answer"), LOPSIDED)
async def test_a_static_chunk_that_leaves_one_thread_the_loop_is_observed(
    task, name, answer
) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:not_parallel"), (
        score.explanation)  # fmt: skip
    assert "one thread ran" in score.explanation and score.metrics["observed_busiest@2t"] > 0.99


@pytest.mark.parametrize(("name", "answer"), HANDED)
async def test_a_chunk_or_task_as_large_as_the_loop_fails_before_running(
    task, name, answer
) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:not_parallel"), (
        score.explanation)  # fmt: skip
    assert score.metrics["handed_share"] > 0.99
    assert "functional_output_match" not in score.metrics  # compiled, never run


@pytest.mark.parametrize("answer", UNVECTORISED)
async def test_simd_that_cannot_vectorise_is_not_parallel(task, answer) -> None:
    score = await _score(task, "simd_inner_dot", answer)
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:not_parallel"), (
        score.explanation)  # fmt: skip
    assert "functional_output_match" not in score.metrics  # compiled, never run


@pytest.mark.parametrize(("name", "answer"), UNDEFERRED)
async def test_a_taskloop_that_may_run_undeferred_is_not_parallel(task, name, answer) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, "wrong_answer:not_parallel"), (
        score.explanation)  # fmt: skip
    assert "undeferred" in score.explanation
    assert "functional_output_match" not in score.metrics  # compiled, never run


@pytest.mark.parametrize(("name", "answer"), HONEST)
async def test_honest_variants_pass(task, name, answer) -> None:
    score = await _score(task, name, answer)
    assert score.value == 1.0, (score.failure_class, score.explanation)


@pytest.mark.parametrize(
    ("name", "answer", "secret"),
    [("atomic_histogram", "#pragma omp parallel for", "atomic"),
     ("simd_inner_dot", "#pragma omp critical", "simd")],
)  # fmt: skip
async def test_repair_feedback_does_not_name_the_reference_construct(
    task, name, answer, secret
) -> None:
    # the report says which construct the reference is; a repairing model may not hear it
    score = await _score(task, name, answer)
    assert score.failure_class == "wrong_answer:wrong_construct"
    assert secret in score.explanation
    assert secret not in score.model_feedback and "wrong" not in score.model_feedback.lower()
    assert "not the kind of construct" in score.model_feedback


async def test_data_race_feedback_does_not_name_the_reference_variables(task) -> None:
    score = await _score(task, "reduction_max_rows", "#pragma omp parallel for")
    assert score.failure_class == "wrong_answer:data_race"
    assert "best" in score.explanation  # the log says which variable
    assert "best" not in score.model_feedback and "reduction" not in score.model_feedback
    assert "data race" in score.model_feedback


async def test_data_sharing_feedback_does_not_name_the_reference_clause(task) -> None:
    score = await _score(task, "lastprivate_rows", "#pragma omp parallel for reduction(max:last)")
    assert score.failure_class == "wrong_answer:data_sharing"
    assert "lastprivate" in score.explanation  # the log says what the loop needs
    assert "lastprivate" not in score.model_feedback and "wrong data sharing" in (
        score.model_feedback)  # fmt: skip


async def test_an_unguarded_statement_is_a_race_and_its_feedback_keeps_the_construct(task) -> None:
    score = await _score(task, "atomic_histogram", "none")
    assert score.failure_class == "wrong_answer:data_race"
    assert "mutual exclusion" in score.explanation
    feedback = score.model_feedback.lower()
    assert "data race" in feedback
    assert not any(word in feedback for word in ("atomic", "critical", "mutual exclusion"))
