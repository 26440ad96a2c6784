"""`codegen-eval run --cvdp FILE`: the solutions of our fixture pass end to end (the
commercial problem listed as excluded, the other workflows as not read), and bad input is one
line on stderr with exit 1 (2 for argument syntax)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .cvdp_fixture import write_jsonl

ROOT = Path(__file__).resolve().parents[3]


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    full_env.pop("CODEGEN_EVAL_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", "run", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def one_line(cp: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert cp.returncode == code, (cp.returncode, cp.stdout, cp.stderr)
    assert "Traceback" not in cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    return lines[0]


def test_run_cvdp_solutions_pass(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path)
    out = tmp_path / "run.jsonl"
    cp = cli("--cvdp", str(jsonl), "--solver", "reference", "--log", str(out), cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert "cvdp: 5 records: 2 not code generation, 2 to score, 1 excluded" in cp.stderr
    assert "excluded cvdp_copilot_checker_0003: needs a commercial simulator" in cp.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    scored = {r["sample_id"]: r["status"] for r in rows if r.get("type") == "score"}
    assert scored == {"cvdp_copilot_adder_0001": "pass", "cvdp_copilot_counter_0002": "pass"}
    upstream = {r["score_metadata"]["upstream_verdict"] for r in rows if r.get("type") == "score"}
    assert upstream == {"pass"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--cvdp", "missing.jsonl"], "--cvdp: missing.jsonl does not exist"),
        (["--cvdp", "."], "is a directory: give a CVDP JSONL file"),
        (["--cvdp", "other.jsonl"], "records need id and categories (a CVDP JSONL file)"),
        (["--cvdp", "cvdp_fixture.jsonl", "--sandbox", "docker"], "runs its harnesses in bwrap"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], expected: str) -> None:
    write_jsonl(tmp_path)
    (tmp_path / "other.jsonl").write_text('{"task_id": "HumanEval/0", "prompt": "x"}\n')
    assert expected in one_line(cli(*args, "--solver", "reference", cwd=tmp_path))


def test_missing_runtime_names_the_fix(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path)
    env = {"CODEGEN_CVDP_VENV": str(tmp_path / "none"), "CODEGEN_CVDP_CALIBRATION": str(tmp_path)}
    line = one_line(cli("--cvdp", str(jsonl), "--solver", "reference", cwd=tmp_path, env=env))
    assert "no CVDP harness runtime" in line and "scripts/setup.sh" in line


def test_bad_wall_limit_is_an_argument_error(tmp_path: Path) -> None:
    cp = cli("--cvdp", "x.jsonl", "--cvdp-wall-s", "0", cwd=tmp_path)
    assert cp.returncode == 2 and "--cvdp-wall-s must be > 0" in cp.stderr
