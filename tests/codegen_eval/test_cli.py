"""The CLI end to end (subprocesses), resume after SIGINT and SIGKILL, the HTML report and the
parquet export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import pytest

from codegen_eval.hf import log_to_dataset
from codegen_eval.log import read_log

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
    assert "tiny-c" in out and "sum of an array" in out and "4" in out


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
    assert cp.returncode == 1
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
        cp.returncode == 1 and "http://127.0.0.1:9/v1" in cp.stderr and "not reachable" in cp.stderr
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
    assert again.returncode == 1 and "--resume" in again.stderr
    assert len(read_log(log).scores) == 6

    cli("report", str(log), "-o", str(html_out))
    page = html_out.read_text()
    parser = _Balanced()
    parser.feed(page)
    parser.close()
    assert parser.stack == [] and parser.svgs >= 2
    assert {"results", "failures", "excluded"} <= set(parser.tables)
    assert "tiny-c" in page and "c/serial" in page and "1.000" in page

    cli("export", str(log), "--parquet", str(pq))
    import pyarrow.parquet as papq

    table = papq.read_table(pq)
    assert table.num_rows == 6 and "code" in table.column_names
    ds = log_to_dataset(log)
    assert len(ds) == 6 and set(ds["status"]) == {"pass"}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_resume_after_kill_scores_each_candidate_once(tmp_path: Path, sig: int) -> None:
    log = tmp_path / "run.jsonl"
    copies, n = 14, 2
    args = [
        sys.executable,
        "-m",
        "codegen_eval.cli",
        *PLUGIN,
        "run",
        "--suite",
        "tiny-c",
        "--solver",
        "reference",
        "-n",
        str(n),
        "--max-sandboxes",
        "1",
        "--log",
        str(log),
    ]
    proc = subprocess.Popen(
        args, cwd=ROOT, env=_env(copies), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count('"type": "score"') >= 4:
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    first = read_log(log)
    assert 4 <= len(first.scores) < copies * n, "the run was not interrupted mid-way"
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "--resume" in err
        assert first.ends and first.ends[-1]["interrupted"] is True
    else:
        assert proc.returncode == -signal.SIGKILL

    cp = cli(
        "run",
        "--suite",
        "tiny-c",
        "--solver",
        "reference",
        "-n",
        str(n),
        "--log",
        str(log),
        "--resume",
        copies=copies,
    )
    final = read_log(log)
    assert final.duplicates == 0  # nothing scored twice
    assert len(final.scores) == copies * n  # and nothing missing
    assert all(r["status"] == "pass" for r in final.score_records)
    assert len(final.resumes) == 1 and final.ends[-1]["interrupted"] is False
    scored_now = int(cp.stdout.split("scored now: ")[1].split(",")[0])
    assert scored_now == copies * n - len(first.scores)
    for line in log.read_text().splitlines():
        json.loads(line)  # the resumed log is valid JSONL throughout
