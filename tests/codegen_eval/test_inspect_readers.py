"""The public-benchmark readers as Inspect tasks, on our fixtures of their layouts: the same
verdicts through Inspect as through `codegen-eval run` (reference solvers), and their own
options checked in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from codegen_eval.cli import main as cli_main
from codegen_eval.inspect_tasks import humaneval, pareval, verilogeval
from codegen_eval.inspect_tasks.options import TaskOptionError
from codegen_eval.inspect_tasks.scorer import SCORER_NAME
from codegen_eval.log import read_log

from .verilogeval_fixture import write_v2

HERE = Path(__file__).parent
HUMANEVAL = HERE / "humaneval_fixture" / "problems.jsonl"
PAREVAL = HERE / "pareval_fixture"


@pytest.fixture(autouse=True)
def _calibration_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEGEN_VERILOG_CALIBRATION", str(tmp_path / "cal"))


def _ours(tmp: Path, args: list[str]) -> dict[str, str]:
    log = tmp / "ours.jsonl"
    assert (
        cli_main(["run", *args, "--solver", "reference", "--log", str(log), "--no-progress"]) == 0
    )
    return {r["sample_id"]: r["status"] for r in read_log(log).score_records}


def _theirs(tmp: Path, task) -> dict[str, str]:
    (log,) = inspect_eval(task, model="mockllm/model", log_dir=str(tmp / "i"), display="none")
    assert log.status == "success", log.error
    return {str(s.id): s.scores[SCORER_NAME].metadata["status"] for s in log.samples or []}


def test_verilogeval_v2_same_verdicts(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ve")
    ours = _ours(tmp_path, ["--verilogeval", str(root / "dataset_spec-to-rtl")])
    theirs = _theirs(
        tmp_path, verilogeval(path=str(root / "dataset_spec-to-rtl"), solver="reference")
    )
    assert theirs == ours and set(ours.values()) == {"pass"}


def test_humaneval_same_verdicts(tmp_path: Path) -> None:
    ours = _ours(tmp_path, ["--humaneval", str(HUMANEVAL), "--limit", "4"])
    theirs = _theirs(tmp_path, humaneval(path=str(HUMANEVAL), solver="reference", limit=4))
    assert theirs == ours and len(ours) == 4


@pytest.mark.slow
def test_pareval_trusted_same_verdicts(tmp_path: Path) -> None:
    args = ["--pareval", str(PAREVAL), "--pareval-models", "serial", "--pareval-verdict",
            "trusted", "--limit", "2"]  # fmt: skip
    ours = _ours(tmp_path, args)
    theirs = _theirs(
        tmp_path,
        pareval(path=str(PAREVAL), models="serial", verdict="trusted", solver="reference", limit=2),
    )
    assert theirs == ours and len(ours) == 2


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: pareval(path=str(PAREVAL), verdict="maybe"), "-T verdict=maybe is not one of"),
        (lambda: pareval(path=str(PAREVAL), models="serial,fortran"), "unknown parallelism model"),
        (lambda: humaneval(path=str(HERE / "nope.jsonl")), "no such file or directory"),
        (lambda: verilogeval(path=str(HUMANEVAL), mode="spec-to-rtl"), "v1 JSONL"),
        (lambda: humaneval(path=str(HUMANEVAL), k="0"), "-T k values must be >= 1"),
    ],
)
def test_reader_options_are_one_line_errors(make, message: str) -> None:
    with pytest.raises(TaskOptionError) as err:
        make()
    text = str(err.value)
    assert message in text and "\n" not in text, text
