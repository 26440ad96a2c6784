"""mpi-completion scorer with real mpicc/mpirun (Open MPI) in the real bwrap sandbox."""

from __future__ import annotations

import asyncio

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.types import Candidate, Sample, Score

FAST = ["ring_pass", "halo_exchange"]


@pytest.fixture(scope="module")
def task():
    return get_suite("mpi-completion", run_timeout_s=8.0)


def _sample(task, name: str) -> Sample:
    return next(s for s in task.dataset if s.id == f"mpi-completion/{name}")


async def _score(task, name: str, answer: str) -> Score:
    s = _sample(task, name)
    return await task.scorer.score(s, Candidate(s.id, 0, answer))


def _assert_reference_passes(score: Score, sample_id: str) -> None:
    assert score.value == 1.0, (sample_id, score.failure_class, score.explanation)
    for key in ("function_f1", "location_accuracy", "argument_accuracy", "exact_match"):
        assert score.metrics[key] == 1.0, (sample_id, key)
    assert {"runtime_s@np2", "runtime_s@np3", "runtime_s@np4"} <= set(score.metrics)


@pytest.mark.parametrize("name", FAST)
async def test_reference_answers_pass(task, name: str) -> None:
    s = _sample(task, name)
    _assert_reference_passes(await task.scorer.score(s, Candidate(s.id, 0, s.target)), s.id)


async def test_fenced_reply_in_raw_text_is_accepted(task) -> None:
    s = _sample(task, "bcast_params")
    raw = f"The missing calls:\n```\n{s.target}\n```\n"
    score = await task.scorer.score(s, Candidate(s.id, 0, "", raw=raw))
    assert score.value == 1.0, score.explanation


async def test_wrong_line_right_call(task) -> None:
    # MPI_Bcast moved to before rank 0 fills the parameters (line 12 instead of 16)
    answer = _sample(task, "bcast_params").target.replace("16: MPI_Bcast", "12: MPI_Bcast")
    score = await _score(task, "bcast_params", answer)
    assert score.metrics["location_accuracy"] == 0.5  # the Reduce is still in place
    assert score.metrics["function_f1"] == 1.0 and score.metrics["argument_accuracy"] == 1.0
    assert (score.value, score.failure_class) == (0.0, "wrong_answer"), score.explanation
    only_bcast = await _score(task, "bcast_params", answer.splitlines()[0])
    assert only_bcast.metrics["location_accuracy"] == 0.0
    assert only_bcast.metrics["function_precision"] == 1.0


async def test_swapped_send_recv_deadlocks_into_timeout(task) -> None:
    # rank 0 receives before it sends, like rank 1: both wait forever
    answer = (
        "16: MPI_Recv(&value, 1, MPI_LONG, 1, r, MPI_COMM_WORLD, &status);\n"
        "16: MPI_Send(&value, 1, MPI_LONG, 1, r, MPI_COMM_WORLD);\n"
        "17: MPI_Recv(&value, 1, MPI_LONG, 0, r, MPI_COMM_WORLD, &status);\n"
        "18: MPI_Send(&value, 1, MPI_LONG, 0, r, MPI_COMM_WORLD);\n"
    )
    score = await _score(task, "pingpong", answer)
    assert score.value == 0.0
    assert score.failure_class is not None and score.failure_class.startswith("timeout")
    assert score.metrics["function_f1"] == 1.0 and score.metrics["exact_match"] == 0.0


async def test_compile_error_and_unparsable_answers(task) -> None:
    # a name the program does not declare never reaches mpicc: the screen refuses it
    undeclared = await _score(task, "ring_pass",
                              "14: MPI_Send(&tok, 1, MPI_INT, next, 0, MPI_COMM_WORLD);")  # fmt: skip
    assert undeclared.failure_class == "forbidden_construct:identifier", undeclared.explanation
    wrong_type = await _score(task, "ring_pass",
                              "14: MPI_Send(token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);")  # fmt: skip
    assert wrong_type.failure_class == "compile_error:type", wrong_type.explanation
    for reply in ("I am not sure.", '14: printf("ok\\n");', "14: MPI_Barrier(MPI_COMM_WORLD"):
        score = await _score(task, "ring_pass", reply)
        assert (score.value, score.failure_class) == (0.0, "no_code"), reply


@pytest.mark.slow
async def test_every_reference_answer_passes(task) -> None:
    assert len(task.dataset) >= 12

    async def one(s: Sample) -> tuple[str, Score]:
        return s.id, await task.scorer.score(s, Candidate(s.id, 0, s.target))

    for sample_id, score in await asyncio.gather(*(one(s) for s in task.dataset)):
        _assert_reference_passes(score, sample_id)
