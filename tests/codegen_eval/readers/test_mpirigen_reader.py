"""The MPIrigen reader on a checkout of our own in upstream's layout (mpirigen_checkout.py):
upstream's prompt, the gpt set's derived groups, and our run verdict next to upstream's
metrics: the label passes, wrong answers and cheats fail, programs that cannot be rebuilt or
run are skipped with the measured reason. Real mpicc, mpirun and sandbox."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval.log import read_log
from codegen_eval.readers.mpirigen import load_programs, mpirigen_task
from codegen_eval.readers.mpirigen.survey import survey
from codegen_eval.types import Candidate, Sample, Score

from .mpirigen_checkout import fixture_programs, numbered, write_checkout

ROOT = Path(__file__).resolve().parents[3]
SET_UP = (
    "(3 1, MPI_Init(&argc, &argv);) (3 2, MPI_Comm_rank(MPI_COMM_WORLD, &rank);) "
    "(3 3, MPI_Comm_size(MPI_COMM_WORLD, &size);) (12 1, MPI_Finalize();) "
)
BCAST = "(7 1, MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);) "
REDUCE = "(8 1, MPI_Reduce(&sum, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);) "


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkout(tmp_path_factory.mktemp("MPI-rigen"))


@pytest.fixture(scope="module")
def task(checkout: Path):
    return mpirigen_task(str(checkout), nps=(2,))


def score(task, index: int, answer: str) -> Score:
    sample: Sample = task.dataset[index]
    return asyncio.run(task.scorer.score(sample, Candidate(sample.id, 0, answer, answer)))


def test_prompt_is_upstreams(checkout: Path) -> None:
    programs = load_programs(checkout)
    first = fixture_programs()[0]
    assert [p.name for p in programs] == [p["program"] for p in fixture_programs()]
    # test_mpi.py: f'{code} {sep_token} parallel ' with sep_token "\n" (the BPE model)
    assert programs[0].prompt == numbered(first["lines"]) + " \n parallel "
    assert programs[0].label == first["mpi_labels"]


def test_gpt_set_groups_are_derived_from_the_whole_program(checkout: Path) -> None:
    test_set = {p.name: p for p in load_programs(checkout, "test")}
    for p in load_programs(checkout, "gpt"):
        ref = test_set[p.name]
        assert p.numbered == ref.numbered
        # the same calls after the same lines (the gpt set has no COL 0: the fixture wrote
        # the expression call of ours_timed_1 as a statement)
        want = ref.label.replace("(3 0,", "(3 1,")
        assert p.label.split() == want.split()


def test_the_label_passes_with_perfect_upstream_metrics(task) -> None:
    s = score(task, 0, task.dataset[0].target)
    assert s.status == "pass", s.explanation
    for t in (0, 1, 2):
        assert s.metrics[f"location_t{t}"] == 1.0 and s.metrics[f"args_t{t}"] == 1.0
        assert s.metrics[f"function_t{t}_mcc"] == 1.0


@pytest.mark.parametrize(("answer", "failure"), [
    (SET_UP + BCAST + REDUCE.replace("MPI_SUM", "MPI_MAX"), "wrong_answer"),  # total 43
    (SET_UP + REDUCE, "wrong_answer"),  # no Bcast: x stays 0 on rank 1
    (SET_UP + "(8 1, MPI_Reduce(&sum, &total, 1, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD);) "
     + BCAST, "wrong_answer"),  # root 1: rank 0 prints total 0
])  # fmt: skip
def test_wrong_answers_fail(task, answer: str, failure: str) -> None:
    s = score(task, 0, answer)
    assert s.status == "fail" and s.failure_class == failure, s.explanation


@pytest.mark.parametrize(("answer", "failure"), [
    # ends the job early with status 0 (the reference's output would then be all it had)
    (SET_UP + BCAST + REDUCE + "(11 1, MPI_Abort(MPI_COMM_WORLD, 0);) ",
     "forbidden_construct:mpi_function"),
    # writes the expected line through MPI-IO to stdout
    (SET_UP + '(8 1, MPI_File_open(MPI_COMM_WORLD, "/dev/stdout", 4, MPI_INFO_NULL, &x);) ',
     "forbidden_construct:string_literal"),
    # a call in an argument
    (SET_UP + BCAST + "(8 1, MPI_Reduce(&sum, &total, printf(\"x\"), MPI_INT, MPI_SUM, 0, "
     "MPI_COMM_WORLD);) ", "forbidden_construct"),
])  # fmt: skip
def test_cheats_fail(task, answer: str, failure: str) -> None:
    s = score(task, 0, answer)
    assert s.status == "fail" and str(s.failure_class).startswith(failure), s.explanation


def test_spraying_calls_fools_upstreams_metrics_not_the_run(task) -> None:
    # Every reference call after every line: upstream's location and function accuracy
    # at tolerance 1 are perfect, the program does not compute the same thing.
    calls = [BCAST.split(", ", 1)[1].rstrip(") "), REDUCE.split(", ", 1)[1].rstrip(") ")]
    spray = " ".join(
        f"({line} {k}, {call})" for line in range(1, 15) for k, call in enumerate(calls, 1)
    )
    s = score(task, 0, spray)
    assert s.metrics["location_t1"] == 1.0
    assert s.status == "fail", s.explanation


def test_set_up_calls_in_an_answer_are_the_references(task) -> None:
    # The program keeps the label's set-up calls; an answer's own (here: the size written
    # into x) are scored by upstream's metrics only, never inserted.
    answer = BCAST + REDUCE + "(3 1, MPI_Comm_size(MPI_COMM_WORLD, &x);)"
    s = score(task, 0, answer)
    assert s.status == "pass", s.explanation
    # 3 of the label's 6 locations: Bcast, Reduce, and Init's 3.1, where the answer's
    # Comm_size sits (upstream counts a location whatever the call there)
    assert s.metrics["location_t0"] == pytest.approx(3 / 6)
    assert s.metrics["function_t0"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(("index", "reason"), [
    (1, "not_runnable:expression_call"),
    (2, "not_runnable:reference_build"),
    (3, "not_runnable:only_setup_calls"),
])  # fmt: skip
def test_programs_that_cannot_judge_are_skipped_with_the_reason(
    task, index: int, reason: str
) -> None:
    s = score(task, index, task.dataset[index].target)
    assert s.status == "skipped" and s.failure_class == reason, s.explanation
    assert s.metrics["location_t0"] == 1.0  # upstream's metrics are still reported


@pytest.mark.slow
def test_survey_classifies_each_program(checkout: Path) -> None:
    rows = asyncio.run(survey(load_programs(checkout)))
    got = {r.program: (r.built_and_ran, r.verdict) for r in rows}
    assert got == {
        "ours_bcast_reduce_0": (True, "judged"),
        "ours_timed_1": (False, "expression_call"),
        "ours_helper_2": (False, "outside_names"),
        "ours_setup_only_3": (True, "only_setup_calls"),
    }


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codegen_eval.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.mark.slow
def test_run_errors_are_one_line(tmp_path: Path, checkout: Path) -> None:
    cp = cli("run", "--mpirigen", str(tmp_path / "nope"), "--solver", "reference",
             "--log", str(tmp_path / "x.jsonl"))  # fmt: skip
    assert cp.returncode == 2 and "Traceback" not in cp.stderr
    assert "--mpirigen: " in cp.stderr and "is not a directory" in cp.stderr
    # one error line (the sandbox's start-up may add its own notes, e.g. on stale cgroups
    # other runs left behind)
    assert sum("error:" in line for line in cp.stderr.splitlines()) == 1
    (tmp_path / "empty").mkdir()
    cp = cli("run", "--mpirigen", str(tmp_path / "empty"), "--solver", "reference",
             "--log", str(tmp_path / "x.jsonl"))  # fmt: skip
    assert cp.returncode == 2 and "not a datasets save" in cp.stderr, cp.stderr
    cp = cli("run", "--mpirigen", str(checkout), "--mpirigen-limit", "-1", "--solver",
             "reference", "--log", str(tmp_path / "x.jsonl"))  # fmt: skip
    assert cp.returncode == 2 and "--mpirigen-limit must be >= 0" in cp.stderr


@pytest.mark.slow
def test_run_end_to_end_with_the_reference_solver(tmp_path: Path, checkout: Path) -> None:
    log = tmp_path / "run.jsonl"
    cp = cli("run", "--mpirigen", str(checkout), "--mpirigen-limit", "2", "--solver",
             "reference", "--log", str(log), "--no-progress")  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    scores = read_log(log).score_records
    by_id = {r["sample_id"]: r for r in scores}
    first, second = (by_id[k] for k in sorted(by_id))
    assert first["status"] == "pass", first
    assert second["status"] == "skipped"
    assert second["failure_class"] == "not_runnable:expression_call"
    assert second["metrics"]["location_t0"] == 1.0


@pytest.mark.parametrize("answer", [
    "(" * 200_000,  # no ";": every "(" used to scan to the end (9.5 s for 16 KB)
    "(1 1, MPI_a(" * 20_000 + ";)",
    "(" + "1 " * 100_000 + ";",
])  # fmt: skip
def test_hostile_answers_are_read_in_bounded_time(task, answer: str) -> None:
    from time import process_time

    from codegen_eval.readers.mpirigen.data import label_calls
    from codegen_eval.readers.mpirigen.task import upstream_metrics

    start = process_time()  # CPU time: a loaded machine delays the parse but adds no work
    upstream_metrics(task.dataset[0].target, answer)
    label_calls(answer[:16384])
    assert process_time() - start < 2.0


def test_a_newline_in_a_group_cannot_choose_an_answer_line(task) -> None:
    from codegen_eval.readers.mpirigen.runs import RunSetup, candidate_answer

    sample = task.dataset[0]
    setup = RunSetup(sample.files["program.c"], sample.files["target"],
                     tuple((a, b) for a, b in sample.metadata["kept_after"]))  # fmt: skip
    answer = "(8 1, MPI_Reduce(&sum, &total, 1,\n1: MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);)"
    lines = candidate_answer(setup, answer).splitlines()
    assert lines == [f"{setup.map_line(8)}: MPI_Reduce(&sum, &total, 1, 1: MPI_INT, MPI_SUM, "
                     "0, MPI_COMM_WORLD);"]  # fmt: skip
