"""A newcomer's mistakes get one line on stderr naming the fix, a non-zero exit, no traceback
and no half-made log: selections that select nothing, samples files whose ids do not match,
unusable sandbox backends, bad command-line syntax, damaged logs for report and export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval.log import read_log
from codegen_eval.registry import get_suite

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ["--plugin", "tests.codegen_eval.tiny_suite"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, TINY_COPIES="3", PYTHONPATH=str(ROOT), **(env or {}))
    full_env.pop("CODEGEN_EVAL_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *PLUGIN, *args],
        cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def one_line_error(cp: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert cp.returncode == code, (cp.returncode, cp.stdout, cp.stderr)
    assert "Traceback" not in cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--filter", "nothing*"], "--filter 'nothing*' matches no problem id"),
        (["--filter", "sum-1*"], "ids look like tiny-c: sum-00, sum-01, sum-02"),
        (["--filter", "sum"], "did you mean --filter 'sum*'?"),
        (["--limit", "0"], "--limit must be >= 1 (got 0)"),
        (["--limit", "-1"], "--limit must be >= 1 (got -1)"),
        (["-n", "1", "-k", "1,5"], "use -n 5 or a smaller -k"),
        (["--solver", "file"], "--solver file needs --samples FILE"),
    ],
)
def test_a_selection_of_nothing_is_an_error(
    tmp_path: Path, options: list[str], expected: str
) -> None:
    log = tmp_path / "x.jsonl"
    argv = ["run", "--suite", "tiny-c", "--solver", "reference", *options, "--log", str(log)]
    if options == ["--solver", "file"]:
        argv = ["run", "--suite", "tiny-c", *options, "--log", str(log)]
    line = one_line_error(cli(*argv))
    assert expected in line
    assert not log.exists()  # nothing was started


def _samples(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"sample_id": i, "code": c}) + "\n" for i, c in rows))
    return path


def test_samples_ids_matching_nothing_list_valid_ids(tmp_path: Path) -> None:
    samples = _samples(tmp_path / "s.jsonl", [("Prob001", "module x; endmodule")])
    line = one_line_error(cli("run", "--suite", "tiny-c", "--samples", str(samples),
                              "--log", str(tmp_path / "x.jsonl")))  # fmt: skip
    assert "no id in samples file" in line and "Prob001" in line and "sum-00" in line


def test_short_ids_are_accepted_and_unmatched_ones_warned(tmp_path: Path) -> None:
    """`p01` for the problem `p01_basic_gates` (the unique id it starts, up to `_`)."""
    problems = list(get_suite("verilog").dataset)[:2]
    rows = [(p.id.split("_")[0], p.target) for p in problems] + [("p99", "module m; endmodule")]
    samples = _samples(tmp_path / "short.jsonl", rows)
    log = tmp_path / "v.jsonl"
    cp = cli("run", "--suite", "verilog", "--samples", str(samples), "--filter", "p0[1-3]_*",
             "--log", str(log))  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    assert f"p01 -> {problems[0].id}" in cp.stderr and "short ids" in cp.stderr
    assert "1 ids in" in cp.stderr and "match no problem and are ignored: p99" in cp.stderr
    assert "1 of 3 selected problems have no candidate" in cp.stderr  # p03 has none
    scores = read_log(log).score_records
    assert sorted(r["sample_id"] for r in scores) == sorted(p.id for p in problems)
    assert all(r["status"] == "pass" for r in scores)


def test_samples_outside_the_selection_is_an_error(tmp_path: Path) -> None:
    samples = _samples(tmp_path / "s.jsonl", [("sum-00", "long sum_array(const int *a, int n);")])
    line = one_line_error(cli("run", "--suite", "tiny-c", "--samples", str(samples), "--filter",
                              "sum-02", "--log", str(tmp_path / "x.jsonl")))  # fmt: skip
    assert "none of the 1 selected problems has a candidate" in line


@pytest.mark.parametrize(
    ("options", "env", "expected"),
    [
        # docker with no engine: DOCKER_HOST names a socket that does not exist
        (["--sandbox", "docker"], {"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
         "sandbox backend 'docker' is not usable: docker backend: no Docker engine reachable"),
        # bwrap not installed: not on PATH
        ([], {"PATH": "/nonexistent-bin"}, "sandbox backend 'bwrap' is not usable: bubblewrap"),
        ([], {"CODEGEN_SANDBOX": "firecracker"}, "unknown sandbox backend 'firecracker'"),
    ],
)  # fmt: skip
def test_an_unusable_backend_stops_before_any_work(
    tmp_path: Path, options: list[str], env: dict[str, str], expected: str
) -> None:
    log = tmp_path / "x.jsonl"
    cp = cli("run", "--suite", "tiny-c", "--solver", "reference", *options, "--log", str(log),
             env=env)  # fmt: skip
    assert expected in one_line_error(cp)
    assert not log.exists()


def test_bad_syntax_is_one_line_with_where_to_look(tmp_path: Path) -> None:
    cp = cli("run", "--suite", "tiny-c", "--backend", "nope")
    line = one_line_error(cp, code=2)
    assert "invalid choice: 'nope'" in line and "codegen-eval run --help" in line
    assert "-k wants comma-separated integers" in one_line_error(cli("run", "-k", "x"), code=2)


def test_a_run_where_every_candidate_is_an_infra_error_fails(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    cp = cli("run", "--suite", "tiny-broken-harness", "--solver", "reference", "--log", str(log))
    assert cp.returncode == 1
    assert "every candidate ended in infra_error" in cp.stderr and "harness broke" in cp.stderr
    assert "infra_error" in cp.stdout  # the table and the log are still there
    assert len(read_log(log).scores) == 2


def _good_log(tmp_path: Path) -> Path:
    log = tmp_path / "good.jsonl"
    cp = cli("run", "--suite", "tiny-c", "--solver", "reference", "--log", str(log))
    assert cp.returncode == 0, cp.stderr
    return log


def test_report_and_export_of_bad_logs(tmp_path: Path) -> None:
    good = _good_log(tmp_path)
    lines = good.read_text().splitlines()
    cases = {
        "missing.jsonl": None,
        "empty.jsonl": "",
        "no-header.jsonl": "[1, 2]\n",
        "damaged.jsonl": "\n".join([lines[0], "{not json", *lines[1:]]) + "\n",
        "no-fields.jsonl": lines[0] + '\n{"type": "score", "suite": "tiny-c"}\n' + lines[-1],
    }
    expected = {
        "missing.jsonl": "no such run log",
        "empty.jsonl": "is empty: not a codegen-eval run log",
        "no-header.jsonl": "has no header record",
        "damaged.jsonl": "damaged.jsonl:2: not a JSON record",
        "no-fields.jsonl": "no-fields.jsonl:2: a score record without sample_id, index, status",
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        line = one_line_error(cli("report", str(path), "-o", str(tmp_path / "r.html")))
        assert expected[name] in line, line
    assert "a directory" in one_line_error(
        cli("report", str(tmp_path), "-o", str(tmp_path / "r.html"))
    )
    out = tmp_path / "x.parquet"
    assert "not a JSON record" in one_line_error(
        cli("export", str(tmp_path / "damaged.jsonl"), "--parquet", str(out))
    )
    assert not out.exists()

    # a log cut mid-line (killed while writing) still reports, and says what it ignored
    cut = tmp_path / "cut.jsonl"
    text = good.read_text()
    cut.write_text(text[: text.rindex('"type": "score"') + 30])
    cp = cli("report", str(cut), "-o", str(tmp_path / "cut.html"))
    assert cp.returncode == 0, cp.stderr
    assert "the last line is cut off" in cp.stderr and "no end record" in cp.stderr
    assert "tiny-c" in cp.stdout and (tmp_path / "cut.html").exists()


def test_missing_local_model_and_a_directory_as_log(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    empty = tmp_path / "models"
    empty.mkdir()
    cp = cli("run", "--suite", "tiny-c", "--model", "local", "--log", str(log),
             env={"APPL_MODEL_CACHE": str(empty)})  # fmt: skip
    line = one_line_error(cp)
    assert "model 'local'" in line and "not installed" in line and "setup.sh --local-model" in line
    assert not log.exists()  # not one generation was tried
    line = one_line_error(cli("run", "--suite", "tiny-c", "--solver", "reference", "--log",
                              str(tmp_path)))  # fmt: skip
    assert "is a directory; give a file" in line


def test_an_unknown_model_names_base_url(tmp_path: Path) -> None:
    line = one_line_error(cli("run", "--suite", "tiny-c", "--model", "nosuch", "--log",
                              str(tmp_path / "x.jsonl")))  # fmt: skip
    assert "unknown model alias 'nosuch'" in line and "--base-url URL" in line


def test_a_factory_that_replaces_the_scorer_is_refused_on_slurm(tmp_path: Path) -> None:
    """Compute nodes score with the suite's own scorer: a solver factory that brings its own
    would be ignored there, so `--executor slurm` refuses it in one line, before any work
    (no cluster is needed to say so)."""
    from appl.testing import ScriptedServer

    with ScriptedServer([], default_reply="x") as server:
        log = tmp_path / "x.jsonl"
        cp = cli("run", "--suite", "tiny-c", "--solver", "tests.codegen_eval.tiny_suite:rescored",
                 "--base-url", server.base_url, "--executor", "slurm", "--log", str(log))  # fmt: skip
    line = one_line_error(cp)
    assert "replaces the suite's scorer" in line and "--executor local" in line
    assert not log.exists()


def test_retry_infra_needs_resume(tmp_path: Path) -> None:
    cp = cli("run", "--suite", "tiny-c", "--solver", "reference", "--retry-infra",
             "--log", str(tmp_path / "x.jsonl"))  # fmt: skip
    assert "--retry-infra goes with --resume" in one_line_error(cp)
