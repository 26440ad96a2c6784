"""The runner in-process: reference/file/generate solvers on the tiny C suite, scorer errors,
the score cache, and a model behind a real scripted OpenAI-compatible server."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

import appl
from appl.testing import FakeClock, Rule, ScriptedServer
from codegen_eval.log import read_log
from codegen_eval.progress import Progress
from codegen_eval.report import summarize
from codegen_eval.runner import RunAborted, RunConfig, run_eval
from codegen_eval.solvers import FileSolver, GenerateSolver, ReferenceSolver
from codegen_eval.types import Candidate, Sample, Score, Task
from tests.codegen_eval.tiny_suite import BROKEN, REFERENCE, tiny_task


def _cfg(**kw: object) -> RunConfig:
    return RunConfig(progress=False, max_sandboxes=2, **kw)  # type: ignore[arg-type]


async def test_reference_run_passes_and_caches_identical_candidates(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    result = await run_eval([tiny_task(2)], ReferenceSolver(), log, _cfg(n=3, ks=(1, 3)))
    assert len(result.records) == 6 and all(r["status"] == "pass" for r in result.records)
    assert result.cache_hits == 4  # 2 samples x (3 identical candidates - 1 scored)
    contents = read_log(log)
    assert contents.header["suites"] == ["tiny-c"] and contents.header["n"] == 3
    assert len(contents.scores) == 6 and len(contents.candidates) == 6
    assert [e["sample_id"] for e in contents.excluded] == ["sum-broken"]
    assert contents.ends[-1]["interrupted"] is False
    top = summarize(result.records, (1, 3))[0]
    assert top.pass_at == {1: 1.0, 3: 1.0} and top.speedup_at[1] == pytest.approx(1.0)


class _Exploding:
    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        if candidate.index == 1:
            raise RuntimeError("scorer bug: kaboom")
        return Score(1.0, "pass")


async def test_scorer_exception_is_infra_error_and_run_continues(tmp_path: Path) -> None:
    samples = [Sample(f"s{i}", "p", target=f"code{i}") for i in range(3)]
    task = Task("explode", samples, _Exploding())
    result = await run_eval([task], ReferenceSolver(), tmp_path / "r.jsonl", _cfg(n=1))
    assert all(r["status"] == "pass" for r in result.records)  # index 0 only: no explosion
    # a second suite run with n=2 hits the exploding index for every sample
    result = await run_eval([task], _DistinctSolver(), tmp_path / "r2.jsonl", _cfg(n=2))
    bad = [r for r in result.records if r["index"] == 1]
    assert len(bad) == 3 and all(r["failure_class"] == "infra_error" for r in bad)
    assert all("kaboom" in r["explanation"] for r in bad)
    assert sum(r["status"] == "pass" for r in result.records) == 3


class _DistinctSolver:
    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        return Candidate(sample.id, index, f"{sample.target}-{index}")

    async def solve(self, sample: Sample, n: int) -> list[Candidate]:
        return [await self.solve_one(sample, i) for i in range(n)]


async def test_file_solver_scores_foreign_samples(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    lines = [
        {"sample_id": "sum-00", "index": 0, "code": REFERENCE},
        {"sample_id": "sum-00", "index": 1, "code": BROKEN["wrong"]},
        {"task_id": "sum-01", "raw": f"Sure:\n```c\n{BROKEN['syntax']}```"},
    ]
    samples.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = await run_eval([tiny_task(2)], FileSolver(samples), tmp_path / "r.jsonl", _cfg(n=2))
    by_key = {(r["sample_id"], r["index"]): r for r in result.records}
    assert set(by_key) == {("sum-00", 0), ("sum-00", 1), ("sum-01", 0)}  # missing index skipped
    assert by_key[("sum-00", 0)]["status"] == "pass"
    assert by_key[("sum-00", 1)]["failure_class"] == "wrong_answer"
    assert by_key[("sum-01", 0)]["failure_class"] == "compile_error:syntax"


class _Tightened:
    """A scorer made stricter after a run: whatever passed before now fails."""

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        return Score(0.0, "fail", "wrong_answer:tightened", {}, "re-judged")


async def test_a_run_log_is_a_samples_file_scored_again(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    lines = [
        {"sample_id": "sum-00", "index": 0, "code": REFERENCE, "metadata": {"tokens": 7}},
        {"sample_id": "sum-01", "index": 0, "raw": f"```c\n{BROKEN['syntax']}```"},
    ]
    samples.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    first = tmp_path / "first.jsonl"
    await run_eval([tiny_task(2)], FileSolver(samples), first, _cfg(n=1))
    with first.open("a") as fh:  # a generation that failed has no code to score again
        fh.write(json.dumps({"type": "candidate", "suite": "tiny-c", "sample_id": "sum-01",
                             "index": 1, "code": "", "raw": "",
                             "metadata": {"generation_error": "HTTP 500"}}) + "\n")  # fmt: skip
    again = FileSolver(first)
    assert again.available("sum-00") == 1 and again.available("sum-01") == 1
    # the same scorer gives the same verdicts, and the candidates keep their metadata
    same = await run_eval([tiny_task(2)], again, tmp_path / "same.jsonl", _cfg(n=1))
    by_id = {r["sample_id"]: r for r in same.records}
    assert by_id["sum-00"]["status"] == "pass" and by_id["sum-00"]["candidate"]["tokens"] == 7
    assert by_id["sum-01"]["failure_class"] == "compile_error:syntax"
    # a tightened scorer re-judges the logged code: the verdicts are its own, not the log's
    strict = Task("tiny-c", tiny_task(2).dataset, _Tightened())
    result = await run_eval([strict], FileSolver(first), tmp_path / "strict.jsonl", _cfg(n=1))
    assert {r["failure_class"] for r in result.records} == {"wrong_answer:tightened"}
    assert len(result.records) == 2


def test_file_solver_bad_input_is_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "a"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        FileSolver(bad)


async def test_generate_solver_through_scripted_server(tmp_path: Path) -> None:
    def reply(body: dict) -> str:
        # even seeds answer right, odd seeds wrong: pass@1 is exactly 0.5
        code = REFERENCE if body["seed"] % 2 == 0 else BROKEN["wrong"]
        return f"Here is the function.\n```c\n{code}```\n"

    async with ScriptedServer(rules=[Rule(match="sum_array", reply=reply)]) as server:
        appl.configure(
            models={
                "scripted-t": {"provider": "openai", "base_url": server.base_url, "api_key": "k"}
            }
        )
        solver = GenerateSolver("scripted-t", temperature=0.7, seed=10, max_tokens=300)
        # an async caller owns its loop and closes the model clients it used (below)
        try:
            result = await run_eval(
                [tiny_task(2)], solver, tmp_path / "g.jsonl", _cfg(n=4, ks=(1, 2))
            )
        finally:
            await appl.close_models()
        requests = list(server.requests)
    assert len(requests) == 8  # one request per sample, n=4 for 2 problems
    assert {r["seed"] for r in requests} == {10, 11, 12, 13}
    assert all(r["temperature"] == 0.7 and r["max_tokens"] == 300 for r in requests)
    assert requests[0]["messages"][0]["role"] == "system"
    assert "fenced code block" in requests[0]["messages"][0]["content"]
    top = summarize(result.records, (1, 2))[0]
    assert top.pass_at[1] == pytest.approx(0.5)
    assert top.pass_at[2] == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    cands = read_log(tmp_path / "g.jsonl").candidates.values()
    assert all(c["metadata"]["temperature"] == 0.7 and "seed" in c["metadata"] for c in cands)


async def test_dead_model_aborts_with_a_clear_error(tmp_path: Path) -> None:
    appl.configure(
        models={
            "dead-t": {
                "provider": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "k",
                "max_retries": 0,
            }
        }
    )
    try:
        with pytest.raises(RunAborted, match="unreachable"):
            await run_eval(
                [tiny_task(1)], GenerateSolver("dead-t"), tmp_path / "d.jsonl", _cfg(n=1)
            )
    finally:
        await appl.close_models()
    assert read_log(tmp_path / "d.jsonl").ends[-1]["interrupted"] is True


async def test_progress_is_printed_as_lines_when_stderr_is_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI log or a pipe gets a plain line every progress_interval_s (here: every event)."""
    config = RunConfig(n=2, max_sandboxes=2, progress=True, progress_interval_s=0.0)
    await run_eval([tiny_task(2)], ReferenceSolver(), tmp_path / "p.jsonl", config)
    err = capsys.readouterr().err
    assert "progress: scored 4/4, generated 4/4" in err
    assert "\x1b[" not in err  # no terminal control codes


class _FlakySolver:
    """The reference, except that generations listed in `fail` raise (a model server timing
    out): they end as infra_error, to be redone by a resume with retry_infra."""

    def __init__(self, fail: set[int]) -> None:
        self.fail = fail
        self.asked: list[tuple[str, int]] = []

    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        self.asked.append((sample.id, index))
        if index in self.fail:
            raise TimeoutError("model 'local': timeout (120s) on 4 attempts")
        return Candidate(sample.id, index, sample.target)


async def test_resume_with_retry_infra_redoes_only_the_infra_errors(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    first = await run_eval([tiny_task(2)], _FlakySolver({1}), log, _cfg(n=2, ks=(1, 2)))
    assert sorted(r["status"] for r in first.records) == ["error", "error", "pass", "pass"]
    # a plain resume keeps them: nothing to do
    again = await run_eval([tiny_task(2)], _FlakySolver(set()), log, _cfg(n=2), resume=True)
    assert again.scored_now == 0
    retry = _FlakySolver(set())
    done = await run_eval(
        [tiny_task(2)], retry, log, _cfg(n=2, ks=(1, 2), retry_infra=True), resume=True
    )
    assert sorted(i for _, i in retry.asked) == [1, 1]  # only the failed generations
    assert done.scored_now == 2 and all(r["status"] == "pass" for r in done.records)
    contents = read_log(log)
    assert contents.duplicates == 0 and len(contents.scores) == 4
    assert all(r["status"] == "pass" for r in contents.scores.values())
    assert all("generation_error" not in (c.get("metadata") or {})
               for c in contents.candidates.values())  # fmt: skip


def test_progress_on_a_pipe_beats_while_nothing_finishes() -> None:
    """The heartbeat thread prints a line at every interval of the (fake) clock while no
    generation or score finishes: one slow model call must not look like a hung run."""
    clock, out = FakeClock(), io.StringIO()

    def lines() -> list[str]:
        return [ln for ln in out.getvalue().splitlines() if ln.startswith("progress:")]

    def wait_for(count: int, cap_s: float = 30) -> list[str]:  # the thread prints on its own
        deadline = time.monotonic() + cap_s
        while len(lines()) < count and time.monotonic() < deadline:
            time.sleep(0.005)
        return lines()

    with Progress(True, interval_s=30, clock=clock, out=out) as progress:
        progress.add(gen=3, score=3)
        clock.advance(29.9)
        assert wait_for(1, cap_s=0.3) == []  # not due yet
        for seconds in (30, 60, 90):
            clock.advance(seconds - clock.monotonic())
            assert len(wait_for(seconds // 30)) == seconds // 30, lines()
    assert lines() == [
        "progress: scored 0/3, generated 0/3 (0m30s)",
        "progress: scored 0/3, generated 0/3 (1m00s)",
        "progress: scored 0/3, generated 0/3 (1m30s)",
    ]
