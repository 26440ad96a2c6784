"""The typed edges of codegen_eval: statuses and failure classes are enums that still read and
write the plain strings of older logs, and a score's structured metadata reaches the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.log import read_log
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import ReferenceSolver
from codegen_eval.types import Candidate, FailureClass, Sample, Score, ScoreStatus, Task


def test_a_plain_status_string_becomes_the_enum_and_serializes_unchanged() -> None:
    score = Score(1.0, "pass")  # type: ignore[arg-type]  # what older code and logs give
    assert score.status is ScoreStatus.PASS
    assert score.status == "pass"
    assert json.dumps({"status": score.status}) == '{"status": "pass"}'


def test_a_status_outside_the_vocabulary_fails_where_it_is_made() -> None:
    with pytest.raises(ValueError, match="passed"):
        Score(1.0, "passed")  # type: ignore[arg-type]


def test_failure_classes_are_strings_with_details() -> None:
    assert FailureClass.TAMPER == "tamper"
    assert f"{FailureClass.COMPILE_ERROR}" == "compile_error"
    assert (
        FailureClass.with_detail(FailureClass.RUNTIME_CRASH, "SIGSEGV") == "runtime_crash:SIGSEGV"
    )
    assert type(FailureClass.with_detail(FailureClass.TIMEOUT, None)) is str
    assert FailureClass("wrong_answer") is FailureClass.WRONG_ANSWER


def test_score_metadata_defaults_to_a_fresh_dict() -> None:
    a, b = Score(0.0, ScoreStatus.FAIL), Score(0.0, ScoreStatus.FAIL)
    a.metadata["x"] = 1
    assert b.metadata == {}


class _Detailed:
    def __init__(self) -> None:
        self.calls = 0

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        self.calls += 1
        return Score(1.0, ScoreStatus.PASS, metadata={"upstream": {"verdict": "Pass"}})


async def test_score_metadata_reaches_the_log_and_a_resumed_run_keeps_it(tmp_path: Path) -> None:
    scorer = _Detailed()
    task = Task("detailed", [Sample("s0", "p", target="code")], scorer)
    log = tmp_path / "run.jsonl"
    cfg = RunConfig(progress=False, max_sandboxes=1, n=1)
    first = await run_eval([task], ReferenceSolver(), log, cfg)
    assert first.records[0]["score_metadata"] == {"upstream": {"verdict": "Pass"}}
    (rec,) = read_log(log).scores.values()
    assert rec["score_metadata"] == {"upstream": {"verdict": "Pass"}}
    again = await run_eval([task], ReferenceSolver(), log, cfg, resume=True)
    assert again.scored_now == 0 and scorer.calls == 1


def test_the_slurm_executor_and_the_solvers_meet_their_protocols() -> None:
    from codegen_eval.executors.slurm import SlurmExecutor
    from codegen_eval.solvers import FileSolver, GenerateSolver, ReferenceSolver
    from codegen_eval.types import Executor, IncrementalSolver

    members = {"score", "status_line", "__aenter__", "__aexit__"}
    assert members <= set(dir(SlurmExecutor)) and members <= set(dir(Executor))
    for solver in (FileSolver, GenerateSolver, ReferenceSolver):
        assert hasattr(solver, "solve_one") and hasattr(solver, "solve")
    assert isinstance(ReferenceSolver(), IncrementalSolver)
    assert not isinstance(_Detailed(), IncrementalSolver)
