"""The CVDP reader on problems of our own in CVDP's layout (cvdp_fixture.py): records read
as upstream reads them, references pass through the real harness (pytest + cocotb +
Icarus in bwrap), wrong designs fail, the commercial problem is excluded with the reason
measured by running it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.readers.cvdp import CvdpFormatError, CvdpScorer, cvdp, read_cvdp
from codegen_eval.readers.cvdp.records import compose_command, parse_env
from codegen_eval.readers.cvdp.verdict import ReportError, read_report
from codegen_eval.types import Candidate, Sample

from .cvdp_fixture import ADDER, COUNTER, write_jsonl


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("cvdp"))


@pytest.fixture(scope="module")
def scorer() -> CvdpScorer:
    return CvdpScorer()  # one per module: each reference is calibrated once


def _sample(jsonl: Path, pid: str) -> Sample:
    return next(s for s in read_cvdp(jsonl).samples if s.id == pid)


def test_records_read_as_upstream(jsonl: Path) -> None:
    read = read_cvdp(jsonl)
    assert read.total == 5
    assert [s.id for s in read.samples] == [
        "cvdp_copilot_adder_0001",
        "cvdp_copilot_counter_0002",
        "cvdp_copilot_checker_0003",
    ]
    assert "code comprehension" in read.excluded["cvdp_copilot_explain_0004"]
    assert "agentic" in read.excluded["cvdp_agentic_adder_0005"]
    counter = read.samples[1]
    # upstream's prompt: the context files, the request, where the answer is saved
    assert "Consider the following content for the file rtl/counter.sv" in counter.input
    assert "Provide me one answer for this request: Complete the counter." in counter.input
    assert "saved directly to: rtl/counter.sv" in counter.input
    assert counter.metadata["outputs"] == ["rtl/counter.sv"]
    assert counter.files["code/rtl/counter.sv"].startswith("module counter")  # the partial file
    assert counter.target == COUNTER
    assert read.samples[2].metadata["commercial"] is True


def test_env_and_compose_parsing() -> None:
    env = parse_env(
        "SIM             = icarus\n# c\nVERILOG_SOURCES = /code/rtl/a.sv /code/rtl/b.sv\n"
    )
    assert env == {"SIM": "icarus", "VERILOG_SOURCES": "/code/rtl/a.sv /code/rtl/b.sv"}
    cmd = compose_command("services:\n  direct:\n    command: pytest -s /src/test_runner.py\n")
    assert cmd == "pytest -s /src/test_runner.py"


def test_not_cvdp_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"task_id": "a"}\n')
    with pytest.raises(CvdpFormatError, match="records need id and categories"):
        read_cvdp(bad)
    with pytest.raises(CvdpFormatError, match="is a directory"):
        read_cvdp(tmp_path)


def test_reports_are_counted_not_trusted() -> None:
    ok = read_report('<testsuites><testsuite><testcase name="a"/><testcase name="b"/>'
                     "</testsuite></testsuites>")  # fmt: skip
    assert (ok.total, ok.passed, ok.ok) == (2, 2, True)
    # a suite that claims tests="5" failures="0" but holds a skipped and a failing case
    mixed = read_report(
        '<testsuites><testsuite tests="5" failures="0"><testcase name="a"><skipped/></testcase>'
        '<testcase name="b"><failure message="boom"/></testcase></testsuite></testsuites>'
    )
    assert (mixed.total, mixed.passed, mixed.ok) == (2, 0, False)
    assert not read_report("<testsuites><testsuite/></testsuites>").ok  # nothing ran
    for text, why in [(None, "no report"), ("<x>", "not XML"), ("<a/>", "root"),
                      ('<!DOCTYPE a [<!ENTITY x "y">]><testsuites/>', "DTD")]:  # fmt: skip
        with pytest.raises(ReportError, match=why):
            read_report(text)


async def test_references_pass_and_wrong_designs_fail(jsonl: Path, scorer: CvdpScorer) -> None:
    adder = _sample(jsonl, "cvdp_copilot_adder_0001")
    good = await scorer.score(adder, Candidate(adder.id, 0, ADDER))
    assert good.status == "pass", good.explanation
    assert "2 cocotb tests in 1 simulation(s) passed" in good.explanation
    wrong = ADDER.replace("a + b + cin", "a + b")  # ignores the carry in
    bad = await scorer.score(adder, Candidate(adder.id, 0, wrong))
    assert (bad.status, bad.failure_class) == ("fail", "wrong_answer"), bad.explanation
    assert "1 of 2 cocotb tests failed" in bad.explanation
    broken = await scorer.score(adder, Candidate(adder.id, 0, "module adder4(;\nendmodule\n"))
    assert (broken.status, broken.failure_class) == ("fail", "compile_error")
    empty = await scorer.score(adder, Candidate(adder.id, 0, "  "))
    assert empty.failure_class == "no_code"


async def test_parametrized_harness_runs_every_build(jsonl: Path, scorer: CvdpScorer) -> None:
    counter = _sample(jsonl, "cvdp_copilot_counter_0002")
    cal = await scorer.calibration(counter)
    assert (cal.ok, cal.runs, cal.pytest_total) == (True, 2, 2)
    good = await scorer.score(counter, Candidate(counter.id, 0, COUNTER))
    assert good.status == "pass", good.explanation
    # right at WIDTH=3, wrong at WIDTH=5: only the second build's simulation catches it
    narrow = COUNTER.replace("q <= q + 1'b1", "q <= (WIDTH > 4 && q == 7) ? 0 : q + 1'b1")
    bad = await scorer.score(counter, Candidate(counter.id, 0, narrow))
    assert (bad.status, bad.failure_class) == ("fail", "wrong_answer"), bad.explanation


async def test_commercial_problem_excluded_with_measured_reason(jsonl: Path) -> None:
    task = cvdp(jsonl)
    assert [s.id for s in task.dataset] == ["cvdp_copilot_adder_0001", "cvdp_copilot_counter_0002"]
    why = task.metadata["measured_failures"]["cvdp_copilot_checker_0003"]
    assert why == "needs a commercial simulator: its harness calls xrun, not installed here"
    assert set(task.excluded) == {"cvdp_copilot_checker_0003"}
    assert set(task.reader_facts.not_read) == {
        "cvdp_copilot_explain_0004",
        "cvdp_agentic_adder_0005",
    }


async def test_records_without_solutions(tmp_path: Path) -> None:
    """The published dataset has no solutions: scored without the reference's counts, the
    commercial problem excluded on its face."""
    task = cvdp(write_jsonl(tmp_path, solutions=False))
    assert [s.id for s in task.dataset] == ["cvdp_copilot_adder_0001", "cvdp_copilot_counter_0002"]
    assert "commercial simulator" in task.excluded["cvdp_copilot_checker_0003"]
    adder = task.dataset[0]
    assert adder.target == "" and adder.metadata["reference"] == {}
    good = await task.scorer.score(adder, Candidate(adder.id, 0, ADDER))
    assert good.status == "pass", good.explanation
    assert "no solution in the record" in good.explanation
    wrong = await task.scorer.score(adder, Candidate(adder.id, 0, ADDER.replace("+ cin", "")))
    assert (wrong.status, wrong.failure_class) == ("fail", "wrong_answer")
    fopen = ADDER.replace("endmodule", 'integer f; initial f = $fopen("x", "w");\nendmodule')
    cheat = await task.scorer.score(adder, Candidate(adder.id, 0, fopen))
    assert cheat.failure_class == "forbidden_construct:$fopen"


async def test_other_simulator_excluded_with_what_happened_here(tmp_path: Path) -> None:
    """SIM=verilator: run here (Verilator 5.006) and excluded with what it did, since the
    screen reads Icarus' compiled designs only."""
    row = json.loads(write_jsonl(tmp_path).read_text().splitlines()[0])
    env = row["harness"]["files"]["src/.env"]
    row["harness"]["files"]["src/.env"] = env.replace("SIM = icarus", "SIM = verilator")
    path = tmp_path / "verilator.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = cvdp(path)
    assert task.dataset == []
    why = task.excluded["cvdp_copilot_adder_0001"]
    assert why.startswith(
        "SIM=verilator: this reader screens Icarus-compiled designs only (run here:"
    )
