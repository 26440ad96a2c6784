"""omp-pragma's answer screen and observer, without a sandbox: every reference is accepted
and rendered canonically, refused constructs get their class, the instrumented program keeps
its line numbers, and the observation rules decide on synthetic traces."""

from __future__ import annotations

import pytest

from codegen_eval.suites._cscreen import Forbidden, ScreenSyntaxError, program_names
from codegen_eval.suites.omp_pragma import all_problems, parse_pragma
from codegen_eval.suites.omp_pragma.observe import (
    Encounter,
    Trace,
    instrument,
    judge_run,
    parse_trace,
    shared,
)
from codegen_eval.suites.omp_pragma.screen import screen_pragma


def _names(problem: str = "reduction_sum"):
    return program_names(all_problems()[problem].masked)


def test_every_reference_passes_the_screen_unchanged_in_meaning() -> None:
    for name, p in all_problems().items():
        if p.target == "none":
            continue
        s = screen_pragma(p.target.splitlines(), program_names(p.masked))
        assert parse_pragma(s.text).facts() == parse_pragma(p.target).facts(), name
        assert parse_pragma(s.text).directive == parse_pragma(p.target).directive, name


@pytest.mark.parametrize(
    ("answer", "canonical"),
    [
        ("#pragma omp parallel for reduction(+:sum)",
         "#pragma omp parallel for reduction ( + : sum )"),
        ("#  pragma omp parallel for num_threads(/**/2) // two",
         "#pragma omp parallel for num_threads ( 2 )"),
        ("#pragma omp parallel for schedule(nonmonotonic: dynamic, N / 64) if(parallel: N > 1)",
         "#pragma omp parallel for schedule ( nonmonotonic : dynamic , N / 64 ) "
         "if ( parallel : N > 1 )"),
        ("#pragma omp parallel for lastprivate(conditional: sum), linear(i: 1)",
         "#pragma omp parallel for lastprivate ( conditional : sum ) linear ( i : 1 )"),
        ("#pragma omp parallel for reduction(task, +: sum[0:1])",
         "#pragma omp parallel for reduction ( task , + : sum [ 0 : 1 ] )"),
        ("#pragma omp critical (lock)", "#pragma omp critical ( lock )"),
    ],
)  # fmt: skip
def test_accepted_answers_are_rendered_from_their_tokens(answer: str, canonical: str) -> None:
    assert screen_pragma([answer], _names()).lines == (canonical,)


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        ("#pragma omp parallel for num_threads(sizeof(char))", "sizeof"),
        ("#pragma omp parallel for num_threads(({ sum = 1; 1; }))", "statement_expression"),
        ("#pragma omp parallel for num_threads((<% 1; %>))", "digraph"),
        ("#pragma omp parallel for if(omp_get_thread_num() == 0)", "call"),
        ("#pragma omp parallel for num_threads(sum = 2)", "assignment"),
        ("#pragma omp parallel for num_threads(i++)", "increment"),
        ("#pragma omp parallel for num_threads(2, 1)", "comma_operator"),
        ('#pragma omp parallel for if(_Pragma("omp single") 1)', "pragma_operator"),
        ("#pragma omp parallel for if(0 ??! 0)", "trigraph"),
        ("#pragma omp parallel for num_threads(\uff12)", "non_ascii"),
        ("#pragma omp parallel for reduct\u0456on(+:sum)", "non_ascii"),
        ("#pragma omp parallel for num_threads(2) \\", "backslash"),
        ("#pragma omp parallel for schedule(dynamic, sum)", "non_constant"),
        ("#pragma omp parallel for reduction(+:sum) private(__cge_omp_count)", "identifier"),
        ("#pragma omp parallel for reduction(+:errno)", "identifier"),
        ("#pragma omp parallel for if(environ)", "identifier"),
        ("#pragma omp parallel for reduction(+:N)", "identifier"),  # a macro, not a variable
        ("#pragma omp declare reduction(p: long: omp_out = omp_in)", "directive"),
        ("#pragma omp target teams distribute parallel for", "directive"),
        ("#pragma omp parallel sections", "directive"),
        ("#pragma omp threadprivate(sum)", "directive"),
        ("#pragma omp parallel for depend(in: sum)", "clause"),
        ("#pragma omp parallel for allocate(sum)", "clause"),
    ],
)
def test_refused_answers_name_what_they_saw(answer: str, what: str) -> None:
    with pytest.raises(Forbidden) as err:
        screen_pragma(answer.splitlines(), _names())
    assert err.value.what == what, str(err.value)


def test_directive_sequences() -> None:
    two = screen_pragma(["#pragma omp parallel", "#pragma omp for"], _names())
    assert two.directives == ("parallel", "for") and not two.timing_dependent
    assert screen_pragma(["#pragma omp parallel", "#pragma omp single"], _names()).directives
    with pytest.raises(Forbidden):  # `parallel for` does not take a second line
        screen_pragma(["#pragma omp parallel for", "#pragma omp critical"], _names())
    with pytest.raises(Forbidden):
        screen_pragma(["#pragma omp parallel"] * 3, _names())


@pytest.mark.parametrize(
    "answer",
    [
        "#pragma omp parallel for reduction(+ sum)",
        "#pragma omp parallel for private(sum",
        "#pragma omp parallel for reduction(+:sum) /*",
        "#pragma omp PARALLEL for",
        "#pragma omp parallel for nowait(1)",
        "#pragma omp parallel for schedule(sometimes)",
    ],
)
def test_malformed_answers_are_syntax_errors(answer: str) -> None:
    with pytest.raises(ScreenSyntaxError):
        screen_pragma([answer], _names())


def test_timing_dependence_follows_the_schedule() -> None:
    def td(answer: str) -> bool:
        return screen_pragma([answer], _names()).timing_dependent

    assert not td("#pragma omp parallel for")
    assert not td("#pragma omp parallel for schedule(static, 4)")
    assert td("#pragma omp parallel for schedule(dynamic)")
    assert td("#pragma omp parallel for schedule(runtime)")
    assert td("#pragma omp parallel master taskloop")
    assert td("#pragma omp parallel loop")


def test_instrumented_program_keeps_line_numbers_and_loop_nesting() -> None:
    p = all_problems()["collapse_grid"]
    pragma = ["#pragma omp parallel for collapse ( 2 )"]
    lines = instrument(p.masked, p.marker_line, p.indent, pragma, depth=2).splitlines()
    k = lines.index("#line 1")
    at = k + p.marker_line  # lines[k + n] is the program's line n
    assert lines[at].strip() == "__cge_omp_encounter();"
    assert lines[at + 1] == f"#line {p.marker_line}"
    assert lines[at + 2].strip() == "#pragma omp parallel for collapse ( 2 )"
    # the hook is in the body at the collapse depth, so collapse(2) still sees a perfect nest
    inner = lines[at + 5]
    assert inner.strip().startswith("{ __CGE_OMP_ITER();") and inner.rstrip().endswith("}")
    assert len(lines) == k + 1 + len(p.masked.splitlines()) + 2  # + encounter and #line
    # without collapse the hook counts the construct's own iterations: the planes
    outer = instrument(p.masked, p.marker_line, p.indent, ["#pragma omp parallel for"])
    line = outer.splitlines()[at + 4]
    assert line.strip().startswith("{ __CGE_OMP_ITER(); for (int c"), line


def _trace(*encounters: tuple[int, int, int]) -> Trace:
    # the busiest thread ran an even share (rounded up) of what its encounter ran
    return Trace(
        tuple(Encounter(n, w, t, t, -(-n // w) if w else 0) for n, w, t in encounters),
        overflow=False,
    )


SERIAL = _trace((100, 1, 1), (100, 1, 1))


@pytest.mark.parametrize(
    ("run", "threads", "timing_dependent", "expected"),
    [
        (_trace((100, 4, 4), (100, 4, 4)), 4, False, None),
        (_trace((100, 1, 1), (100, 1, 1)), 1, False, None),
        (_trace((100, 1, 1), (100, 4, 4)), 4, False, "wrong_answer:not_parallel"),  # if(r>0)
        (_trace((100, 1, 4), (100, 1, 4)), 4, False, "wrong_answer:not_parallel"),  # chunk
        (_trace((100, 1, 4), (100, 1, 4)), 4, True, None),  # dynamic: judged over all runs
        (_trace((400, 4, 4), (400, 4, 4)), 4, False, "wrong_answer:replicated_work"),
        (_trace((400, 4, 4), (400, 4, 4)), 1, False, "wrong_answer:replicated_work"),
        (_trace((50, 2, 2), (100, 2, 2)), 2, False, "wrong_answer:skipped_work"),
        (_trace((100, 2, 2)), 2, False, "infra_error:observer"),
        # static, deterministic: one thread of two ran 99 of 100 (schedule(static, N - 1))
        (Trace((Encounter(100, 2, 2, 2, 99),) * 2, False), 2, False, "wrong_answer:not_parallel"),
        (Trace((Encounter(100, 2, 2, 2, 75),) * 2, False), 2, False, None),  # 3/4: the bound
        (Trace((Encounter(100, 2, 2, 2, 99),) * 2, False), 2, True, None),  # from the clauses
    ],
)
def test_judge_run(run: Trace, threads: int, timing_dependent: bool, expected) -> None:
    got = judge_run(SERIAL, run, threads=threads, timing_dependent=timing_dependent)
    assert (got[0] if got else None) == expected, got


def test_shared_and_trace_parsing() -> None:
    assert shared(_trace((100, 1, 4), (100, 2, 4)))
    assert not shared(_trace((100, 1, 4), (100, 1, 4)))
    assert shared(_trace((1, 1, 4)))  # nothing to share
    text = "cge-omp-trace 3 encounters 2 overflow 0 unseen 0\n0 100 2 2 2 50\n1 100 1 2 2 100\n"
    t = parse_trace(text)
    assert t is not None and t.encounters[1] == Encounter(100, 1, 2, 2, 100) and not t.unseen
    assert parse_trace(text.replace("unseen 0", "unseen 7")).unseen  # type: ignore[union-attr]
    assert parse_trace("") is None
    assert parse_trace(text.replace("encounters 2", "encounters 3")) is None
    assert parse_trace("sum = 5\n") is None
