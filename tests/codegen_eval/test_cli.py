"""The CLI end to end (subprocesses), resume after SIGINT and SIGKILL, the HTML report and the
parquet export."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import pytest

from appl.testing import Rule, ScriptedServer
from codegen_eval.hf import log_to_dataset
from codegen_eval.log import read_log
from tests.codegen_eval.tiny_suite import BROKEN, REFERENCE

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ["--plugin", "tests.codegen_eval.tiny_suite"]


def _env(copies: int = 3) -> dict[str, str]:
    env = dict(os.environ, TINY_COPIES=str(copies), PYTHONPATH=str(ROOT))
    env.pop("CODEGEN_EVAL_PLUGINS", None)
    return env


def cli(*args: str, copies: int = 3, check: bool = True) -> subprocess.CompletedProcess[str]:
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *PLUGIN, *args],
        cwd=ROOT,
        env=_env(copies),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp


class _Balanced(HTMLParser):
    VOID: ClassVar[set[str]] = {"meta", "br", "img", "link", "input", "hr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tables: list[str] = []
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append(dict(attrs).get("id") or "")
        if tag == "svg":
            self.svgs += 1
        if tag in {"link", "script", "img"}:
            raise AssertionError(f"external asset or script: <{tag}>")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> in {self.stack[-3:]}"
        self.stack.pop()


def test_list_shows_suites_with_sizes() -> None:
    out = cli("list", copies=4).stdout
    # the description may wrap inside its cell: read the table's words in order
    words = " ".join(out.replace("│", " ").split())
    assert "tiny-c" in out and "sum of" in words and "array" in words and "4" in out


def test_unknown_suite_lists_known_ones(tmp_path: Path) -> None:
    cp = cli(
        "run",
        "--suite",
        "nope",
        "--solver",
        "reference",
        "--log",
        str(tmp_path / "x.jsonl"),
        check=False,
    )
    assert cp.returncode == 2
    assert "unknown suite 'nope'" in cp.stderr and "tiny-c" in cp.stderr


def test_dead_model_server_names_the_url(tmp_path: Path) -> None:
    cp = cli(
        "run",
        "--suite",
        "tiny-c",
        "--model",
        "x",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--log",
        str(tmp_path / "x.jsonl"),
        check=False,
    )
    assert (
        cp.returncode == 2 and "http://127.0.0.1:9/v1" in cp.stderr and "not reachable" in cp.stderr
    )


def test_run_report_export_end_to_end(tmp_path: Path) -> None:
    log, html_out, pq = tmp_path / "run.jsonl", tmp_path / "r.html", tmp_path / "run.parquet"
    cp = cli(
        "run",
        "--suite",
        "tiny-c",
        "--solver",
        "reference",
        "-n",
        "2",
        "-k",
        "1,2",
        "--log",
        str(log),
    )
    assert "pass@1" in cp.stdout and "pass@2" in cp.stdout and "tiny-c" in cp.stdout
    assert "excluded" in cp.stdout and "sum-broken" in cp.stdout
    contents = read_log(log)
    assert len(contents.scores) == 6 and all(r["status"] == "pass" for r in contents.score_records)
    # rerunning into the same log without --resume refuses and keeps the log
    again = cli("run", "--suite", "tiny-c", "--solver", "reference", "--log", str(log), check=False)
    assert again.returncode == 2 and "--resume" in again.stderr
    assert len(read_log(log).scores) == 6

    cli("report", str(log), "-o", str(html_out))
    page = html_out.read_text()
    parser = _Balanced()
    parser.feed(page)
    parser.close()
    assert parser.stack == [] and parser.svgs >= 2
    assert {"results", "excluded"} <= set(parser.tables)
    # every candidate passed: the page says so, with no empty failures table under it
    assert 'id="no-failures"' in page and "failures" not in parser.tables
    assert "tiny-c" in page and "c/serial" in page and "1.000" in page

    cli("export", str(log), "--parquet", str(pq))
    import pyarrow.parquet as papq

    table = papq.read_table(pq)
    assert table.num_rows == 6 and "code" in table.column_names
    ds = log_to_dataset(log)
    assert len(ds) == 6 and set(ds["status"]) == {"pass"}


def _wait_for_scores(proc: subprocess.Popen[str], log: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count('"type": "score"') >= count:
            return
        time.sleep(0.05)


def _verdicts(log: Path) -> dict[tuple[str, int], tuple[str, str | None]]:
    return {
        (r["sample_id"], r["index"]): (r["status"], r["failure_class"])
        for r in read_log(log).score_records
    }


def _printed_hint(stderr: str) -> list[str]:
    """The resume command printed after Ctrl-C, as argv (run verbatim, nothing added)."""
    lines = stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if "continue with:" in line)
    return shlex.split(lines[at + 1])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_resume_after_kill_scores_each_candidate_once(tmp_path: Path, sig: int) -> None:
    log = tmp_path / "run.jsonl"
    copies, n = 14, 2
    # the console script, as a user types it (the hint must name the same program)
    script = str(Path(sys.executable).with_name("codegen-eval"))
    args = [script, *PLUGIN, "run", "--suite", "tiny-c", "--solver", "reference", "-n", str(n),
            "--max-sandboxes", "1", "--log", str(log)]  # fmt: skip
    env = _env(copies)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for_scores(proc, log, 4)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    first = read_log(log)
    assert 4 <= len(first.scores) < copies * n, "the run was not interrupted mid-way"
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert first.ends and first.ends[-1]["interrupted"] is True
        # how many were scored, and their partial table
        assert f"partial results of {len(first.scores)} scored candidate(s)" in out, out
        assert "tiny-c" in out
        hint = _printed_hint(err)
        assert hint == ["codegen-eval", "run", "--resume", "--log", str(log)]
    else:
        assert proc.returncode == -signal.SIGKILL
        hint = ["codegen-eval", "run", "--resume", "--log", str(log)]  # what the docs say

    # the plugin, the suite, -n and the solver all come from the log's header
    cp = subprocess.run(hint, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    final = read_log(log)
    assert final.duplicates == 0  # nothing scored twice
    assert len(final.scores) == copies * n  # and nothing missing
    assert all(r["status"] == "pass" for r in final.score_records)
    assert len(final.resumes) == 1 and final.ends[-1]["interrupted"] is False
    scored_now = int(cp.stdout.split("scored now: ")[1].split(",")[0])
    assert scored_now == copies * n - len(first.scores)
    for line in log.read_text().splitlines():
        json.loads(line)  # the resumed log is valid JSONL throughout

    # resuming the finished run does nothing and says so
    again = subprocess.run(hint, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing left to do" in again.stdout
    assert len(read_log(log).scores) == copies * n


def test_sigint_resume_against_a_scripted_server_matches_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    """A generate run against a real OpenAI-compatible server (scripted): interrupted with
    SIGINT, continued with the printed command verbatim, it ends with every candidate once and
    the verdicts of a run that was never interrupted."""
    copies, n = 8, 2

    def reply(body: dict[str, object]) -> str:
        seed = int(body["seed"])  # type: ignore[call-overload]
        code = REFERENCE if seed % 2 == 0 else BROKEN["wrong"]  # index 0 passes, 1 fails
        return f"```c\n{code}```\n"

    with ScriptedServer([Rule(match="sum_array", reply=reply)], default_latency=0.1) as server:

        def run(log: Path) -> subprocess.Popen[str]:
            argv = [sys.executable, "-m", "codegen_eval.cli", *PLUGIN, "run", "--suite", "tiny-c",
                    "--model", "scripted-cli", "--base-url", server.base_url, "-n", str(n),
                    "-k", "1,2", "--temperature", "0.5", "--max-generations", "2",
                    "--max-sandboxes", "1", "--log", str(log)]  # fmt: skip
            return subprocess.Popen(
                argv, cwd=ROOT, env=_env(copies), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip

        whole = tmp_path / "whole.jsonl"
        assert run(whole).wait(timeout=300) == 0

        log = tmp_path / "cut.jsonl"
        proc = run(log)
        _wait_for_scores(proc, log, 3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        first = read_log(log)
        assert 3 <= len(first.scores) < copies * n, "the run was not interrupted mid-way"
        requests_before = len(server.requests)

        cp = subprocess.run(
            _printed_hint(err), cwd=ROOT, env=_env(copies), capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert cp.returncode == 0, cp.stderr
        # only the candidates never generated were asked for again
        assert len(server.requests) - requests_before == copies * n - len(first.candidates)

    final = read_log(log)
    assert final.duplicates == 0 and len(final.scores) == copies * n
    assert _verdicts(log) == _verdicts(whole)
    assert {v for v in _verdicts(log).values()} == {("pass", None), ("fail", "wrong_answer")}
    resumed = final.resumes[0]
    assert resumed["model"] == "scripted-cli" and resumed["n"] == n
    assert resumed["cli"]["options"]["temperature"] == 0.5


def test_resume_refuses_conflicting_options(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    cli("run", "--suite", "tiny-c", "--solver", "reference", "-n", "2", "--log", str(log), copies=2)
    before = log.read_text()
    cp = cli("run", "--resume", "--log", str(log), "-n", "3", "--filter", "sum-0*", check=False)
    assert cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1
    assert "-n 3 (the log has 2)" in cp.stderr and "--filter sum-0* (the log has none)" in cp.stderr
    assert log.read_text() == before  # nothing appended
    # the same values, or options that only steer the rest of the run, are accepted
    ok = cli("run", "--resume", "--log", str(log), "-n", "2", "--max-sandboxes", "1", copies=2)
    assert "nothing left to do" in ok.stdout and "--max-sandboxes 1 replaces" in ok.stderr


def test_resume_of_a_log_written_before_options_were_recorded(tmp_path: Path) -> None:
    """An older header has no `cli` field: its suites, n and solver still carry over."""
    log = tmp_path / "old.jsonl"
    cli("run", "--suite", "tiny-c", "--solver", "reference", "-n", "2", "--log", str(log), copies=3)
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    del header["cli"]
    scores = [i for i, line in enumerate(lines) if '"type": "score"' in line]
    kept = [json.dumps(header)] + [line for i, line in enumerate(lines[1:], 1) if i < scores[2]]
    log.write_text("\n".join(kept) + "\n")
    cp = cli("run", "--resume", "--log", str(log), copies=3)
    final = read_log(log)
    assert len(final.scores) == 6 and final.duplicates == 0
    assert "scored now: 4" in cp.stdout


def test_resume_with_the_same_filter_as_an_older_log_that_recorded_it_as_a_string(
    tmp_path: Path,
) -> None:
    """Logs from before the common selection rule recorded --filter as one string; giving the
    same glob again on --resume is no conflict (it used to read as 'the log has sum-0*')."""
    log = tmp_path / "run.jsonl"
    cli("run", "--suite", "tiny-c", "--solver", "reference", "--filter", "sum-0*",
        "--log", str(log), copies=2)  # fmt: skip
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["cli"]["options"]["filter"] == ["sum-0*"]
    header["cli"]["options"]["filter"] = "sum-0*"
    log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    cp = cli("run", "--resume", "--log", str(log), "--filter", "sum-0*", copies=2)
    assert "nothing left to do" in cp.stdout
