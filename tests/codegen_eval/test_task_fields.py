"""Task's explicit fields (excluded, log_header, reader_facts) replace magic metadata keys;
the old spelling still works for one version and warns."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from codegen_eval.cli_inputs import policy_notes
from codegen_eval.log import read_log
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import ReferenceSolver
from codegen_eval.types import Candidate, ReaderFacts, Sample, Score, Task


class _Pass:
    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        return Score(1.0, "pass")


def _samples() -> list[Sample]:
    return [Sample("s0", "p", target="code")]


def _cfg() -> RunConfig:
    return RunConfig(progress=False, max_sandboxes=1)


async def test_the_excluded_field_is_logged_and_not_scored(tmp_path: Path) -> None:
    task = Task("t", _samples(), _Pass(), excluded={"s-bad": "the reference fails here"})
    result = await run_eval([task], ReferenceSolver(), tmp_path / "r.jsonl", _cfg())
    log = read_log(tmp_path / "r.jsonl")
    assert log.excluded == [
        {
            "type": "excluded",
            "suite": "t",
            "sample_id": "s-bad",
            "reason": "the reference fails here",
        }
    ]
    assert [r["sample_id"] for r in result.records] == ["s0"]
    assert [e["sample_id"] for e in result.excluded] == ["s-bad"]


async def test_log_header_goes_into_the_runs_header(tmp_path: Path) -> None:
    task = Task("t", _samples(), _Pass(), log_header={"verdict": "trusted"})
    await run_eval([task], ReferenceSolver(), tmp_path / "r.jsonl", _cfg())
    assert read_log(tmp_path / "r.jsonl").header["suite_notes"] == {"t": {"verdict": "trusted"}}


async def test_the_old_metadata_spelling_still_works_and_warns(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"'excluded', 'log_header' are Task fields now"):
        task = Task(
            "t",
            _samples(),
            _Pass(),
            metadata={"excluded": {"s-bad": "why"}, "log_header": {"v": 1}, "source": "x"},
        )
    assert task.excluded == {"s-bad": "why"} and task.log_header == {"v": 1}
    assert task.metadata == {"source": "x"}  # free-form extras stay
    await run_eval([task], ReferenceSolver(), tmp_path / "r.jsonl", _cfg())
    log = read_log(tmp_path / "r.jsonl")
    assert [e["sample_id"] for e in log.excluded] == ["s-bad"]
    assert log.header["suite_notes"] == {"t": {"v": 1}}


def test_old_reader_keys_become_reader_facts() -> None:
    policy = {"applied": False, "problems": {"s0": "upstream discussed it"}}
    with pytest.warns(DeprecationWarning):
        task = Task("t", _samples(), _Pass(), metadata={"policy": policy, "records": 3})
    assert task.reader_facts == ReaderFacts(records=3, policy=policy)
    assert policy_notes([task])[0].startswith("t: policy exclusions off")


def test_fields_warn_about_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Task("t", _samples(), _Pass(), excluded={"a": "b"}, log_header={"v": 1},
             reader_facts=ReaderFacts(records=1))  # fmt: skip


def test_a_misspelt_field_is_a_type_error() -> None:
    # A misspelt metadata key was silently ignored: the sample was scored, not excluded.
    with pytest.raises(TypeError, match="exclude"):
        Task("t", _samples(), _Pass(), exclude={"s0": "why"})  # type: ignore[call-arg]


def test_excluded_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="excluded must map sample id to reason, not list"):
        Task("t", _samples(), _Pass(), excluded=["s0"])  # type: ignore[arg-type]
