"""`codegen-eval run --rtllm CHECKOUT`: the fixture checkout end to end with the reference
solver, and one-line errors for paths that are not a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .rtllm_fixture import write_rtllm

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CODEGEN_EVAL_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: p, "has no RTLLM designs"),
        (lambda p: (p / "f.v").write_text("x") and p / "f.v", "is not a directory"),
    ],
)
def test_bad_checkout_is_one_line(tmp_path: Path, make, expected: str) -> None:
    cp = cli("run", "--rtllm", str(make(tmp_path)), "--solver", "reference",
             "--log", str(tmp_path / "run.jsonl"))  # fmt: skip
    assert cp.returncode == 2, (cp.stdout, cp.stderr)
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    assert "--rtllm: " in lines[0] and expected in lines[0]


def test_problems_glob_that_selects_nothing_is_one_line(tmp_path: Path) -> None:
    root = write_rtllm(tmp_path / "rtllm")
    cp = cli("run", "--rtllm", str(root), "--rtllm-problems", "nothing*", "--solver",
             "reference", "--log", str(tmp_path / "run.jsonl"))  # fmt: skip
    assert cp.returncode == 2 and "Traceback" not in cp.stderr, cp.stderr
    assert (
        cp.stderr.strip().splitlines()[-1].endswith("--rtllm-problems nothing* matches no design")
    )


def test_run_with_the_reference_solver(tmp_path: Path) -> None:
    root = write_rtllm(tmp_path / "rtllm")
    log = tmp_path / "run.jsonl"
    cp = cli("run", "--rtllm", str(root), "--solver", "reference", "--log", str(log))
    assert cp.returncode == 0, cp.stderr
    said = " ".join((cp.stdout + cp.stderr).split())
    assert "rtllm/shift_reg4: the reference fails here" in said and "newer Icarus: likely" in said
    records = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    scored = {r["sample_id"]: r for r in records if r.get("type") == "score"}
    assert {k: v["status"] for k, v in scored.items()} == {
        "adder_4bit": "pass",
        "counter_mod6": "pass",
    }
    assert all(v["metrics"]["upstream_pass"] == 1.0 for v in scored.values())
