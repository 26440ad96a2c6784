"""A reader's problems under the common selection: `--filter 'rtllm/GLOB'` selects what the
deprecated `--rtllm-problems GLOB` selected (which now says so on stderr), and a name glob
without the suite works on a reader's ids as on a built-in suite's."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval.log import read_log
from codegen_eval.readers.rtllm_cli import rtllm_tasks

from .readers.rtllm_fixture import write_rtllm

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, root: Path, name: str, *options: str) -> tuple[list[str], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CODEGEN_EVAL_PLUGINS", None)
    log = tmp_path / f"{name}.jsonl"
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", "run", "--rtllm", str(root), "--solver",
         "reference", "--log", str(log), *options],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    return sorted({r["sample_id"] for r in read_log(log).score_records}), cp.stderr


@pytest.mark.slow
def test_reader_glob_and_common_filter_select_the_same(tmp_path: Path) -> None:
    root = write_rtllm(tmp_path / "rtllm")
    old, said = _run(tmp_path, root, "old", "--rtllm-problems", "adder*")
    assert old == ["adder_4bit"]
    assert "note: --rtllm-problems is deprecated: use --filter 'rtllm/GLOB'" in said
    new, said = _run(tmp_path, root, "new", "--filter", "rtllm/adder*")
    assert new == old and "deprecated" not in said
    short, _ = _run(tmp_path, root, "short", "--filter", "adder*")  # the name alone
    assert short == old
    both, _ = _run(tmp_path, root, "both", "-m", "ADDER", "--sample-id", "rtllm/adder_4bit")
    assert both == old


def _namespace(root: Path, **options: object) -> argparse.Namespace:
    base = {"rtllm": str(root), "rtllm_problems": None, "filter": None, "match": None,
            "sample_id": None, "include_known_bad": False, "sandbox": None}  # fmt: skip
    return argparse.Namespace(**{**base, **options})


def test_the_common_selection_limits_what_a_reader_loads_and_calibrates(tmp_path: Path) -> None:
    """`--filter 'rtllm/adder*'` loads (and so measures the reference of) only the adders,
    as the deprecated --rtllm-problems did; before, the reader loaded every design and the
    runner dropped the others after calibrating them all."""
    root = write_rtllm(tmp_path / "rtllm")
    everything = rtllm_tasks(_namespace(root))[0]
    assert len(everything.dataset) + len(everything.excluded) > 1
    (task,) = rtllm_tasks(_namespace(root, filter=["rtllm/adder*"]))
    assert [s.id for s in task.dataset] == ["adder_4bit"] and not task.excluded
    (by_id,) = rtllm_tasks(_namespace(root, sample_id=["adder_4bit"]))
    assert [s.id for s in by_id.dataset] == ["adder_4bit"]
