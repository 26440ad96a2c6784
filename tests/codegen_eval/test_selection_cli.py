"""The selection options on the command line: the same --filter/--match/--sample-id in `list`,
`run`, `show` and `report`, one-line errors naming the closest ids, and stored ids unchanged
(a run selected by the new rule resumes, and its log reads as before)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval import cli
from codegen_eval.log import read_log

ROOT = Path(__file__).resolve().parents[2]


def _ids(out: str) -> list[str]:
    return [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TINY_COPIES="3")
    env.pop("CODEGEN_EVAL_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _one_line_error(cp: subprocess.CompletedProcess[str]) -> str:
    assert cp.returncode == 2, (cp.stdout, cp.stderr)  # a usage error (docs/cli.md)
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    return lines[0]


def test_list_selects_across_every_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--filter", "atomic*"]) == 0
    assert _ids(capsys.readouterr().out) == ["omp-pragma/atomic_histogram"]
    assert cli.main(["list", "-m", "HISTOGRAM", "--filter", "*/cuda"]) == 0
    assert _ids(capsys.readouterr().out) == ["hpc-kernels/histogram/cuda"]
    assert cli.main(["list", "--sample-id", "p01_basic_gates,verilog/p02_mux4_byte"]) == 0
    assert _ids(capsys.readouterr().out) == ["verilog/p01_basic_gates", "verilog/p02_mux4_byte"]
    # one suite: the ids as stored (what logs hold), selected by the same rule
    assert cli.main(["list", "omp-pragma", "--filter", "atomic*"]) == 0
    assert _ids(capsys.readouterr().out) == ["omp-pragma/atomic_histogram"]


def test_list_selecting_nothing_is_one_line_naming_the_closest() -> None:
    line = _one_line_error(run_cli("list", "--sample-id", "axpy/seriall"))
    assert "--sample-id 'axpy/seriall' matches no problem id" in line
    assert "closest: hpc-kernels/axpy/serial" in line
    line = _one_line_error(run_cli("list", "verilog", "--filter", "basic_gates"))
    assert "did you mean --match 'basic_gates'?" in line and "verilog/p01_basic_gates" in line
    assert "needs a non-empty value" in _one_line_error(run_cli("list", "--match", ""))


@pytest.mark.slow
def test_run_show_report_share_the_selection(tmp_path: Path) -> None:
    """One run over two suites with different id schemes, selected by name globs; the log keeps
    the stored ids; resume, show and report take the same options."""
    log = tmp_path / "run.jsonl"
    base = ["run", "--suite", "verilog", "--suite", "omp-pragma", "--solver", "reference"]
    cp = run_cli(*base, "--filter", "atomic*", "--filter", "p01*", "--log", str(log))
    assert cp.returncode == 0, cp.stderr
    scores = read_log(log).score_records
    assert sorted((r["suite"], r["sample_id"]) for r in scores) == [
        ("omp-pragma", "omp-pragma/atomic_histogram"),
        ("verilog", "p01_basic_gates"),
    ]
    assert all(r["status"] == "pass" for r in scores)
    cp = run_cli("run", "--resume", "--log", str(log))
    assert cp.returncode == 0 and "nothing left to do" in cp.stdout, cp.stderr

    cp = run_cli("show", str(log), "--json", "--match", "ATOMIC")
    assert [r["id"] for r in json.loads(cp.stdout)] == ["omp-pragma/atomic_histogram"]
    cp = run_cli("show", str(log), "verilog/p01_basic_gates")  # the qualified id works too
    assert cp.returncode == 0 and "p01_basic_gates" in cp.stdout, cp.stderr

    html = tmp_path / "r.html"
    cp = run_cli("report", str(log), "--sample-id", "p01_basic_gates", "-o", str(html))
    assert cp.returncode == 0, cp.stderr
    assert "verilog" in cp.stdout and "omp-pragma" not in cp.stdout
    assert "p01_basic_gates" in html.read_text() and "atomic_histogram" not in html.read_text()
    line = _one_line_error(run_cli("report", str(log), "--filter", "atomc*", "-o", str(html)))
    assert "closest: omp-pragma/atomic_histogram" in line


def test_sizes_say_kernels_x_variants_only_where_ids_have_that_shape(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """hpc-kernels' 45 problems are 9 kernels x 5 variants, in `list` too; omp-pragma's ids
    carry their suite as a prefix, which is no kernel (it was shown as 1 kernel x 23 variants).
    A narrow terminal wraps the description, never a size (CI folded it at 80 columns when a
    test's plugin suite with a long name was registered)."""
    monkeypatch.setenv("COLUMNS", "60")
    assert cli.main(["list"]) == 0
    rows = {r.split("│")[1].strip(): r.split("│")[2].strip()
            for r in capsys.readouterr().out.splitlines() if r.startswith("│")}  # fmt: skip
    assert rows["hpc-kernels"] == "45 (9 kernels x 5 variants)" and rows["omp-pragma"] == "23"
    assert cli.main(["list", "omp-pragma"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "23 problems; select with" in out and "kernels" not in out


def test_a_samples_file_may_name_problems_by_qualified_id(tmp_path: Path) -> None:
    """Ids copied from `list` across suites (SUITE/ID) are taken as their problems."""
    from tests.codegen_eval.tiny_suite import REFERENCE

    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"sample_id": "tiny-c/sum-01", "code": REFERENCE}) + "\n")
    log = tmp_path / "run.jsonl"
    cp = run_cli("--plugin", "tests.codegen_eval.tiny_suite", "run", "--suite", "tiny-c",
                 "--samples", str(samples), "--sample-id", "sum-01", "--log", str(log))  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    assert "are qualified ids (SUITE/ID), each taken as its problem: tiny-c/sum-01 -> sum-01" in (
        cp.stderr
    )
    scores = read_log(log).score_records
    assert [(r["sample_id"], r["status"]) for r in scores] == [("sum-01", "pass")]
