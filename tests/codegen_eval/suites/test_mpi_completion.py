"""mpi-completion: problems, answer parsing, argument normalization and call metrics (no
sandbox here). Scorer runs are in test_mpi_completion_scorer.py."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.suites._cscreen import program_names
from codegen_eval.suites._csource import normalize_expr, parse_call_statement
from codegen_eval.suites.mpi_completion import (
    KEPT_CALLS,
    MissingCall,
    RequiredCall,
    all_problems,
    compare_calls,
    parse_answer,
)
from codegen_eval.suites.mpi_completion.problems import load_problem
from codegen_eval.suites.mpi_completion.scorer import _missing_required
from codegen_eval.suites.mpi_completion.screen import FUNCTIONS, setup_variables


def _squash(text: str) -> str:
    return "".join(text.split())


def test_problem_set_and_removal_rules() -> None:
    problems = all_problems()
    assert len(problems) >= 12
    names = {c.text.split("(")[0] for p in problems.values() for c in p.missing}
    for needed in (
        "MPI_Send",
        "MPI_Recv",
        "MPI_Bcast",
        "MPI_Scatter",
        "MPI_Gather",
        "MPI_Reduce",
        "MPI_Allreduce",
        "MPI_Sendrecv",
        "MPI_Barrier",
    ):
        assert needed in names, needed  # fmt: skip
    for p in problems.values():
        assert not names & KEPT_CALLS
        for kept in ("MPI_Init", "MPI_Finalize", "MPI_Comm_rank", "MPI_Comm_size"):
            assert kept in p.stripped
        for c in p.missing:
            assert c.text not in p.stripped
        # putting the removed calls back at their answer lines rebuilds the original
        assert _squash(p.reference_program) == _squash(p.original)


def test_task_factory_and_sample_shape() -> None:
    task = get_suite("mpi-completion", problems=["ring_*", "bcast_*"])
    assert [s.id for s in task.dataset] == ["mpi-completion/bcast_params",
                                            "mpi-completion/ring_pass"]  # fmt: skip
    s = task.dataset[0]
    assert s.target.splitlines() == [
        "16: MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);",
        "18: MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);",
    ]
    assert s.metadata["removed_after"] == [16, 18]
    assert " 16|     }" in s.input and "MPI_Bcast" not in s.input
    assert len(get_suite("mpi-completion", limit=2).dataset) == 2


def test_parse_answer_formats() -> None:
    reply = (
        "Here are the calls:\n```c\n"
        "16: MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);\n"
        "Line 18: `MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD)`\n"
        "- 20| MPI_Barrier(MPI_COMM_WORLD);\n```\n"
    )
    answer = parse_answer(reply)
    assert [(c.after_line, c.text.split("(")[0]) for c in answer.calls] == [
        (16, "MPI_Bcast"), (18, "MPI_Reduce"), (20, "MPI_Barrier")]  # fmt: skip
    assert answer.calls[1].text.endswith(";") and not answer.rejected


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("5: MPI_Send(exit(0), 1, MPI_INT, 0, 0, MPI_COMM_WORLD);", "call"),
        ('5: MPI_Send(printf("pass"), 1, MPI_INT, 0, 0, MPI_COMM_WORLD);', "string_literal"),
        ("5: MPI_Barrier(MPI_COMM_WORLD); exit(0);", "statement"),  # a second statement
        ("5: MPI_Bcast(({ exit(0); 0; }), 1, MPI_INT, 0, MPI_COMM_WORLD);",
         "statement_expression"),
        ("5: MPI_Bcast(&(n = 3), 1, MPI_INT, 0, MPI_COMM_WORLD);", "assignment"),
    ],
)  # fmt: skip
def test_unsafe_calls_are_forbidden(line: str, what: str) -> None:
    answer = parse_answer(line)
    assert answer.calls == () and answer.rejected == ()
    assert [(f[0], f[1]) for f in answer.forbidden] == [(line, f"forbidden_construct:{what}")]


def test_broken_calls_are_rejected() -> None:
    answer = parse_answer("5: MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD")
    assert answer.calls == () and len(answer.rejected) == 1 and answer.forbidden == ()


def test_lines_beyond_the_program_are_rejected() -> None:
    assert parse_answer("99: MPI_Barrier(MPI_COMM_WORLD);", max_line=30).calls == ()


def test_argument_normalization() -> None:
    assert normalize_expr("&buf[0]") == normalize_expr("buf") == normalize_expr("(void *)buf")
    assert normalize_expr("( rank+1 ) % size") == normalize_expr("(rank + 1)%size")
    assert normalize_expr("&u[LOCAL + 1]") == normalize_expr("u + (LOCAL+1)") == "(u+(LOCAL+1))"
    assert normalize_expr("0x10") == "16"
    assert normalize_expr("&x") != normalize_expr("x")
    assert normalize_expr("MPI_STATUS_IGNORE") != normalize_expr("&status")
    call = parse_call_statement("MPI_Send( &x[0] , (int)n, MPI_INT, dest, 0, MPI_COMM_WORLD )")
    assert call is not None
    assert call.normalized_args() == ("x", "n", "MPI_INT", "dest", "0", "MPI_COMM_WORLD")


REF = (
    MissingCall(16, "MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);"),
    MissingCall(18, "MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"),
)


def test_metrics_right_calls_wrong_lines() -> None:
    moved = tuple(MissingCall(c.after_line + 6, c.text) for c in REF)
    m = compare_calls(REF, moved, tolerance=1)
    assert m["location_accuracy"] == 0.0
    assert m["function_recall"] == m["function_precision"] == 1.0
    assert m["argument_accuracy"] == 1.0 and m["exact_match"] == 0.0
    near = compare_calls(REF, tuple(MissingCall(c.after_line + 1, c.text) for c in REF))
    assert near["location_accuracy"] == 1.0 and near["exact_match"] == 1.0


def test_metrics_arguments_and_extra_calls() -> None:
    pred = (
        MissingCall(16, "MPI_Bcast(&params[0], 3, MPI_LONG, 0, MPI_COMM_WORLD);"),  # same
        MissingCall(18, "MPI_Reduce(&total, &local, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);"),
        MissingCall(18, "MPI_Barrier(MPI_COMM_WORLD);"),
    )
    m = compare_calls(REF, pred)
    assert m["function_recall"] == 1.0 and m["function_precision"] == pytest.approx(2 / 3, 1e-3)
    assert m["argument_accuracy"] == pytest.approx((1 + 4 / 7) / 2, abs=1e-3)
    assert m["location_accuracy"] == 1.0 and m["exact_match"] == 0.0
    assert compare_calls(REF, ())["function_recall"] == 0.0


def _screen(problem: str, line: str) -> tuple[str, ...]:
    """The failure classes of an answer line against one problem's names and set-up."""
    src = all_problems()[problem].stripped
    answer = parse_answer(line, None, program_names(src), setup_variables(src))
    return tuple(f[1] for f in answer.forbidden)


@pytest.mark.parametrize(
    ("problem", "line", "what"),
    [
        # local arithmetic is not communication (it forged any constant, red team m07)
        ("bcast_params", "18: MPI_Reduce_local(&local, &total, 1, MPI_LONG, MPI_SUM);",
         "mpi_function"),
        # the set-up variables are never buffers, wherever they stand in the pointer
        ("pi_integration", "11: MPI_Allreduce(MPI_IN_PLACE, &size, 1, MPI_INT, MPI_LAND, "
         "MPI_COMM_WORLD);", "buffer"),
        ("gatherv_ragged", "26: MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, "
         "MPI_COMM_WORLD);", "buffer"),
        ("gatherv_ragged", "26: MPI_Bcast(argv, 1, MPI_CHAR, 0, MPI_COMM_WORLD);", "buffer"),
        ("gatherv_ragged", "26: MPI_Bcast(n > 0 ? mine : &size, 1, MPI_INT, 0, "
         "MPI_COMM_WORLD);", "buffer"),
        # byte-level placement: a cast inside the buffer, a datatype narrower than the data
        ("bcast_params", "18: MPI_Bcast((char *)&total + 1, 1, MPI_CHAR, 0, MPI_COMM_WORLD);",
         "cast"),
        ("bcast_params", "18: MPI_Bcast((void *)((char *)&total + 1), 1, MPI_LONG, 0, "
         "MPI_COMM_WORLD);", "cast"),
        ("bcast_params", "18: MPI_Bcast(&total, 3, MPI_BYTE, 0, MPI_COMM_WORLD);", "datatype"),
        ("bcast_params", "18: MPI_Sendrecv(params, 1, MPI_LONG, rank, 0, &total, 2, MPI_INT, "
         "rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);", "datatype"),
    ],
)  # fmt: skip
def test_buffers_hold_whole_program_values(problem: str, line: str, what: str) -> None:
    assert _screen(problem, line) == (f"forbidden_construct:{what}",)


@pytest.mark.parametrize(
    ("problem", "line"),
    [
        ("gatherv_ragged", "26: MPI_Gather(&mine[rank], 1, MPI_INT, all, 1, MPI_INT, 0, "
         "MPI_COMM_WORLD);"),  # rank as an index, not as the data
        ("bcast_params", "18: MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &local, &local, 1, "
         "MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"),  # rank in the condition
        ("bcast_params", "16: MPI_Bcast((void *)&params[0], 3, MPI_INT64_T, 0, MPI_COMM_WORLD);"),
        ("scatter_gather", "17: MPI_Scatter(all, CHUNK, MPI_INT, part + 0, CHUNK, MPI_INT32_T, "
         "0, MPI_COMM_WORLD);"),
    ],
)  # fmt: skip
def test_honest_buffer_forms_are_accepted(problem: str, line: str) -> None:
    assert _screen(problem, line) == ()


def test_setup_variables_come_from_the_kept_calls() -> None:
    src = all_problems()["ring_pass"].stripped
    assert setup_variables(src) == {"argc", "argv", "rank", "size"}


def test_the_run_time_check_wraps_every_accepted_function() -> None:
    # an accepted call that bypassed mpi_check.c would be neither tracked nor followed by
    # the rank/size comparison
    source = resources.files("codegen_eval.suites.mpi_completion").joinpath("mpi_check.c")
    text = source.read_text()
    wrapped = set(re.findall(r"^int (MPI_\w+)\(", text, re.MULTILINE))
    wrapped |= {f"MPI_{n}" for n in re.findall(r"^CGE_(?:WRAP|WRAP_REQ|SEND)\((\w+)", text,
                                                re.MULTILINE)}  # fmt: skip
    assert set(FUNCTIONS) <= wrapped, sorted(set(FUNCTIONS) - wrapped)
    assert {"MPI_Comm_rank", "MPI_Comm_size", "MPI_Finalize", "MPI_Test"} <= wrapped


def test_required_calls_of_barrier_timing() -> None:
    problem = all_problems()["barrier_timing"]
    barrier = "MPI_Barrier(MPI_COMM_WORLD);"
    assert problem.required == (RequiredCall(barrier, 11, 13), RequiredCall(barrier, 16, 16))
    assert [m.after_line for m in problem.missing if m.text == barrier] == [13, 16]
    sample = get_suite("mpi-completion", problems=["barrier_timing"]).dataset[0]
    required = sample.metadata["required_calls"]
    assert required == [[barrier, 11, 13], [barrier, 16, 16]]
    calls = parse_answer(sample.target).calls
    assert _missing_required(calls, required) == ""
    moved = tuple(MissingCall(12 if c.after_line == 13 else c.after_line, c.text) for c in calls)
    assert _missing_required(moved, required) == ""  # anywhere before the clock starts
    late = tuple(MissingCall(17 if c.after_line == 16 else c.after_line, c.text) for c in calls)
    why = _missing_required(late, required)
    assert why.startswith("1 MPI_Barrier call(s) missing or out of place")
    assert "16" not in why and "COMM_WORLD" not in why  # never the reference's place or args
    self_comm = parse_answer(sample.target.replace("MPI_COMM_WORLD);\n16", "MPI_COMM_SELF);\n16"))
    assert _missing_required(self_comm.calls, required).startswith("1 MPI_Barrier")


def test_a_required_window_must_hold_a_removed_call() -> None:
    text = (resources.files("codegen_eval.suites.mpi_completion") / "problems"
            / "barrier_timing.c").read_text()  # fmt: skip
    with pytest.raises(ValueError, match="no removed MPI_Barrier"):
        load_problem("x", text.replace("MPI_Barrier@16", "MPI_Barrier@17-18"))
