"""Logs written before the typed records (codegen_eval/records.py) read unchanged.

fixtures/run_log_v1.jsonl was written by the runner as it was on 2026-11-28 19:27 UTC (a run,
then a resume interrupted while one candidate was being scored), and
fixtures/run_log_v1.golden/ holds what `report` and `show` printed for it then. Every later
reader must print the same and resume it the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval.log import read_log, score_key
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.types import Candidate, Sample, Score, Task

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOG = FIXTURES / "run_log_v1.jsonl"
GOLDEN = FIXTURES / "run_log_v1.golden"
ROOT = Path(__file__).resolve().parents[2]
NOTE = "everything passes (test-only)"  # fixtures/run_log_v1_suite.py's Task.log_header


def _cli(*args: str, out: Path) -> str:
    """The CLI as a user runs it, in the fixtures folder (the log's name is in the output),
    at a fixed terminal width."""
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *args],
        cwd=FIXTURES,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cp.returncode == 0, cp.stderr
    assert not out.exists() or out.is_file()
    return "".join(line for line in cp.stdout.splitlines(True) if not line.startswith("report: "))


@pytest.mark.parametrize(
    ("args", "golden"),
    [
        (["show", LOG.name], "show.txt"),
        (["show", LOG.name, "p-ok"], "show-p-ok.txt"),
        (["show", LOG.name, "--json"], "show.json"),
    ],
)
def test_show_prints_what_it_printed_when_the_log_was_written(
    args: list[str], golden: str, tmp_path: Path
) -> None:
    assert _cli(*args, out=tmp_path / "none") == (GOLDEN / golden).read_text()


@pytest.mark.parametrize(
    ("logs", "name"), [([LOG.name], "report"), ([LOG.name, LOG.name], "compare")]
)
def test_report_prints_and_renders_what_it_did(logs: list[str], name: str, tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    assert _cli("report", *logs, "-o", str(html), out=html) == (GOLDEN / f"{name}.txt").read_text()
    assert html.read_text() == (GOLDEN / f"{name}.html").read_text()


def test_the_inspect_export_of_the_old_log_reports_the_same(tmp_path: Path) -> None:
    log = tmp_path / LOG.name
    shutil.copy(LOG, log)
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    export = [sys.executable, "-m", "codegen_eval.cli", "export", str(log), "--inspect"]
    cp = subprocess.run([*export, str(tmp_path / "out.eval")], env=env, capture_output=True,
                        text=True, timeout=120)  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    html = tmp_path / "r.html"
    out = _cli("report", str(tmp_path / "out.eval"), "-o", str(html), out=html)
    assert out == (GOLDEN / "report.txt").read_text()


def test_the_cli_resumes_the_old_log_with_the_options_it_recorded(tmp_path: Path) -> None:
    """`run --resume --log` takes suite, solver, model, n and k from the old header (written
    before headers carried `cli`: n=1, every index 0 is scored), so there is nothing left to
    do, and the model is asked nothing (the scripted server records any request)."""
    from appl.testing import ScriptedServer

    log = tmp_path / "run.jsonl"
    shutil.copy(LOG, log)
    plugin = ["--plugin", "tests.codegen_eval.fixtures.run_log_v1_suite"]
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    with ScriptedServer([], default_reply="a request a resume must not make") as server:
        argv = [sys.executable, "-m", "codegen_eval.cli", *plugin, "run", "--resume",
                "--log", str(log), "--base-url", server.base_url]  # fmt: skip
        cp = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr
        assert not server.requests
    assert "nothing left to do" in cp.stdout
    assert f"fixture-c: verdict: {NOTE}" in cp.stdout  # Task.log_header, printed by the CLI
    # the old records, counted as `report` counted them when the log was written
    assert (GOLDEN / "report.txt").read_text().split("speedup@k /")[0] in cp.stdout
    contents = read_log(log)
    assert contents.resumes[-1]["n"] == 1 and contents.resumes[-1]["solver"] == "generate"
    assert contents.ends[-1] == {"type": "end", "interrupted": False, "scored": 0}


class _Forbidden:
    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        raise AssertionError(f"resume generated {sample.id}/{index}, which the log has")


class _Passing:
    def __init__(self) -> None:
        self.scored: list[tuple[str, int]] = []

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        self.scored.append((sample.id, candidate.index))
        return Score(1.0, "pass")


def _task(scorer: _Passing) -> Task:
    ids = ["p-ok", "p-gen", "p-infra", "p-skip", "p-hang"]
    return Task("fixture-c", [Sample(i, "prompt " + i) for i in ids], scorer)


async def test_resume_scores_only_the_candidate_the_old_log_left_pending(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    shutil.copy(LOG, log)
    scorer = _Passing()
    cfg = RunConfig(n=2, ks=(1, 2), progress=False, max_sandboxes=1)
    result = await run_eval([_task(scorer)], _Forbidden(), log, cfg, resume=True)
    assert scorer.scored == [("p-hang", 1)]  # generated before the interruption, not scored
    assert result.scored_now == 1 and len(result.records) == 10
    contents = read_log(log)
    assert [r["type"] for r in contents.resumes] == ["resume", "resume"]
    assert contents.ends[-1] == {"type": "end", "interrupted": False, "scored": 1}
    assert contents.scores[score_key("fixture-c", "p-hang", 1)]["status"] == "pass"


async def test_resume_with_retry_infra_rescores_old_infra_errors(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    shutil.copy(LOG, log)
    scorer = _Passing()

    class _Once:  # only the failed generation is generated again
        async def solve_one(self, sample: Sample, index: int) -> Candidate:
            assert (sample.id, index) == ("p-gen", 1)
            return Candidate(sample.id, index, "new code")

    cfg = RunConfig(n=2, ks=(1, 2), progress=False, max_sandboxes=1, retry_infra=True)
    await run_eval([_task(scorer)], _Once(), log, cfg, resume=True)
    assert sorted(scorer.scored) == [("p-gen", 1), ("p-hang", 1), ("p-infra", 0), ("p-infra", 1)]
    assert all(r["status"] != "error" for r in read_log(log).score_records)
