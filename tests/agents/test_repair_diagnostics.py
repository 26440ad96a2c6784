"""Readings of compiler and simulator messages in repair requests (agents.repair.diagnostics):
keyed on what the report or the code says, against the real reports of iverilog and gcc."""

from __future__ import annotations

import pytest

from agents.repair import RepairSolver
from agents.repair.diagnostics import MAX_HINTS, MPI_SIGNATURES, diagnostic_hints
from appl.testing import Rule
from codegen_eval import get_suite

from .test_repair import GATES_OK, _user_text

# The 0.5B model's first answer to p01 (logs of benchmarks/repair_budget.py): the output ports
# declared again, with VHDL's '0' as their value.
GATES_VHDL = GATES_OK.replace(
    "  assign y_and = a & b;", "  reg y_and = '0';\n  assign y_and = a & b;"
)


def test_vhdl_habits_in_verilog_are_named() -> None:
    code = "-- a comment\nalways @(posedge clk) begin\n  if (r = '1') then q := 0;\n  elsif\n"
    hints = diagnostic_hints("TopModule.sv:3: syntax error", code, language="verilog")
    text = "\n".join(hints)
    assert "1'b1" in text and "`//`" in text and "else if" in text
    assert len(hints) == MAX_HINTS  # `:=` would be the fifth: the list is bounded


def test_code_readings_are_for_verilog_only_and_ignore_comments() -> None:
    c_code = "int x; x -- ; y := 1;"
    assert diagnostic_hints("solution.c:1: error", c_code, language="c") == []
    prose = "// then latch it on the clock\n/* end if */\nassign y = a;\n"
    assert diagnostic_hints("TopModule.sv:3: syntax error", prose, language="verilog") == []
    # '0 (a fill literal) is Verilog, '0' is not
    assert diagnostic_hints("", "assign y = '0;", language="verilog") == []


REPORT_READINGS = [
    ("solution.c:(.text.startup+0x0): multiple definition of `main'; guest_main.o: first",
     "c", "Delete your `main()`"),
    ("TopModule.sv:11: error: 'q' has already been declared in this scope.",
     "verilog", "declared twice"),
    ('solution.cu(15): error: no instance of overloaded function "cudaMalloc" matches',
     "cuda", "(void **)&d_x"),
    # mpi-completion's screen, as the 1.5B model met it (answers numbered 0, 1, 2, ...)
    ("`MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD);` would be outside any function, which",
     "mpi", "not a count of your answer's lines"),
    ("`MPI_Barrier(MPI_COMM_WORLD);` would be the body of a `for` loop without braces",
     "mpi", "without braces"),
    ("1: MPI_Bcast(&n, 1, MPI_INT, 0, c);: `c` is not a variable or constant of this program",
     "mpi", "own variables and macros"),
    # the 1.5B model's axpy in hpc-kernels: an elementwise loop with a reduction on y
    ("solution.c:26:35: error: user defined reduction not found for ‘local_y’",
     "c", "needs no reduction clause"),
    ("solution.c:6:39: error: zero length array section in ‘reduction’ clause",
     "c", "needs no reduction clause"),
    ("solution.c:8:20: error: invalid storage class for function ‘compute_row_of_y’",
     "c", "a closing `}` is missing"),
    ("solution.c:33:5: error: variable-sized object may not be initialized", "c", "calloc(n"),
    # the 1.5B model's gemv/mpi: gcc only warned; the linker names it
    ("/usr/bin/ld: solution.c:(.text+0xe7): undefined reference to `MPI_rank'",
     "c", "Did you mean MPI_Comm_rank(MPI_Comm comm, int *rank)?"),
    ("solution.c:(.text+0x1e0): undefined reference to `MPI_Frobnicate'",
     "mpi", "the functions of the MPI standard"),
]  # fmt: skip


def test_a_reduction_on_a_pointer_is_read_from_the_code_of_c_only() -> None:
    code = "#pragma omp parallel for reduction(+:*y)\nfor (long i = 0; i < n; ++i) y[i] += a;"
    report = "solution.c:8:42: error: expected identifier before ‘*’ token"
    for language in ("c", "openmp", "mpi"):
        assert "needs no reduction clause" in diagnostic_hints(report, code, language=language)[0]
    assert diagnostic_hints(report, code, language="verilog") == []
    scalar = "#pragma omp parallel for reduction(+:sum)\nfor (i = 0; i < n; i++) sum += y[i];"
    assert diagnostic_hints(report, scalar, language="c") == []
    commented = "// reduction(+:*y) would be wrong\n#pragma omp parallel for\n"
    assert diagnostic_hints(report, commented, language="c") == []


@pytest.mark.parametrize(("report", "language", "reading"), REPORT_READINGS)
def test_report_readings(report: str, language: str, reading: str) -> None:
    assert reading in diagnostic_hints(report, "", language=language)[0]


def test_a_report_with_nothing_to_read_gets_no_reading() -> None:
    assert diagnostic_hints("TopModule.sv:40: mismatch in 3 of 20 samples", "") == []


def test_mpi_argument_errors_get_the_signatures() -> None:
    report = (
        "solution.c:58:5: error: too few arguments to function ‘MPI_Send’\n"
        "solution.c:65:5: error: too few arguments to function ‘MPI_Recv’\n"
        "solution.c:66:5: error: too few arguments to function ‘MPI_Send’\n"
    )
    [hint] = diagnostic_hints(report, "", language="c")
    assert MPI_SIGNATURES["MPI_Send"] in hint and MPI_SIGNATURES["MPI_Recv"] in hint
    assert hint.count("MPI_Send(") == 1


def test_an_undeclared_name_is_read_as_declare_it_or_take_it_out() -> None:
    report = "solution.c:3:9: error: 'x' undeclared (first use in this function)"
    [hint] = diagnostic_hints(report, "", language="c")
    assert hint.startswith("`x` is not declared at the line that uses it")
    two = diagnostic_hints(report + "\nsolution.c:4:2: error: 'y' undeclared", "")
    assert two[0].startswith("`x`, `y` are not declared")
    # a pragma answer cannot declare anything: told "declare it", the 1.5B model did
    [line] = diagnostic_hints(report, "", language="openmp", whole_file=False)
    assert "Take `x` out of your answer" in line and "cannot declare" in line
    assert "declared above its first use" not in line
    assert "already private" in line  # the omp-pragma case: a name from the loop's body
    [call] = diagnostic_hints(report, "", language="mpi", whole_file=False)
    assert "Take `x` out" in call and "private" not in call


async def test_a_pragma_answer_with_an_undeclared_name_is_told_to_drop_it(scripted) -> None:
    answer = "#pragma omp parallel for reduction(+:check)"  # declared after the loop
    server = scripted([Rule(replies=[answer, "#pragma omp parallel for private(j, s)"])])
    task = get_suite("omp-pragma", problems=["private_matvec"])
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    first = cand.metadata["history"][0]
    assert first["failure_class"] == "compile_error:undeclared"
    [reading] = first["readings"]
    assert "Take `check` out of your answer" in reading
    assert reading in _user_text(server.requests[1])
    assert cand.metadata["passed_round"] == 2


async def test_the_repair_request_carries_the_reading_of_iverilogs_report(scripted) -> None:
    server = scripted([Rule(replies=[GATES_VHDL, GATES_OK])])
    task = get_suite("verilog", problems=["p01_basic_gates"])
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    assert cand.metadata["passed_round"] == 2
    repair = _user_text(server.requests[1])
    assert "What the report means:" in repair and "1'b1" in repair
    assert "directly in a module" in repair  # iverilog's own "invalid module item"
    assert cand.metadata["history"][0]["readings"]  # the log says what was sent
    assert cand.metadata["diagnostic_hints"] is True


async def test_a_port_declared_again_is_read_from_iverilogs_message(scripted) -> None:
    again = GATES_OK.replace("  assign y_and = a & b;", "  reg y_and;\n  assign y_and = a & b;")
    server = scripted([Rule(replies=[again, GATES_OK])])
    task = get_suite("verilog", problems=["p01_basic_gates"])
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    assert "already been declared" in cand.metadata["history"][0]["explanation"]
    assert "declared twice" in _user_text(server.requests[1])


async def test_readings_can_be_turned_off(scripted) -> None:
    server = scripted([Rule(replies=[GATES_VHDL, GATES_OK])])
    task = get_suite("verilog", problems=["p01_basic_gates"])
    solver = RepairSolver(task.scorer, rounds=2, diagnostic_hints=False)
    [cand] = await solver.solve(task.dataset[0], 1)
    assert "What the report means:" not in _user_text(server.requests[1])
    assert cand.metadata["history"][0]["readings"] == []


async def test_repair_requests_carry_the_scorers_model_feedback_not_the_reference(
    scripted,
) -> None:
    # omp-pragma's report names the reference's construct ("needs ... atomic or critical"):
    # the repair request carries the scorer's model feedback instead
    server = scripted([Rule(replies=["#pragma omp parallel for", "#pragma omp atomic"])])
    task = get_suite("omp-pragma", problems=["atomic_histogram"])
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    first = cand.metadata["history"][0]
    assert "atomic or critical" in first["explanation"]  # the log keeps the full report
    assert "atomic" not in first["feedback"]
    repair = _user_text(server.requests[1])
    assert "atomic or critical" not in repair and first["feedback"] in repair
    assert cand.metadata["passed_round"] == 2


async def test_a_line_oriented_suite_is_asked_for_its_own_format_again(scripted) -> None:
    # "the complete corrected solution" made the 1.5B model write whole C programs in 28 of
    # 36 omp-pragma repair rounds; the request now restates the suite's answer format
    server = scripted([Rule(replies=["#pragma omp parallel for", "#pragma omp atomic"])])
    task = get_suite("omp-pragma", problems=["atomic_histogram"])
    await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    last = server.requests[1]["messages"][-1]["content"]
    assert "complete corrected solution" not in last
    assert "not a whole program" in last and "#pragma omp" not in last.split(":", 1)[0]
    assert "OpenMP pragma line(s) only" in last  # the suite's own format, restated


async def test_a_line_oriented_answer_is_replayed_as_c(scripted) -> None:
    # fenced under the suite's tag (```openmp), the 1.5B model answered `omp parallel for`
    # without `#pragma`; replayed bare, it repeated itself in 28 of 33 rounds
    server = scripted([Rule(replies=["none", "#pragma omp atomic"])])
    task = get_suite("omp-pragma", problems=["atomic_histogram"])
    await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    own_turn = [m for m in server.requests[1]["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in own_turn] == ["```c\nnone\n```"]


async def test_a_whole_file_suite_still_asks_for_the_complete_solution(scripted) -> None:
    server = scripted([Rule(replies=[GATES_VHDL, GATES_OK])])
    task = get_suite("verilog", problems=["p01_basic_gates"])
    await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    assert "complete corrected solution" in _user_text(server.requests[1])


async def test_an_mpi_answer_that_repeats_the_set_up_is_told_to_leave_it_out(scripted) -> None:
    # the 1.5B model's habit: the program copied with numbers, MPI_Init included
    calls = (
        "16: MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);\n"
        "18: MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"
    )
    copied = "11: MPI_Init(&argc, &argv);\n" + calls
    server = scripted([Rule(replies=[copied, calls])])
    task = get_suite("mpi-completion", problems=["bcast_params"])
    [cand] = await RepairSolver(task.scorer, rounds=2).solve(task.dataset[0], 1)
    first = cand.metadata["history"][0]
    assert first["failure_class"] == "forbidden_construct:mpi_function"
    assert any("Leave out `MPI_Init`" in r for r in first["readings"])
    repair = _user_text(server.requests[1])
    assert "refused your answer before compiling it" in repair  # the class's own hint
    assert "Leave out `MPI_Init`" in repair
    assert cand.metadata["passed_round"] == 2
