"""The sandbox backend travels explicitly, under one name (`backend`), from where it is chosen
(the CLI's --sandbox, an Inspect task's -T backend, a slurm spec) to every scorer that opens a
sandbox; no code path of ours writes $CODEGEN_SANDBOX, and two runs in one process do not
leak their backends into each other. The old `sandbox=` keyword of the readers still works,
with a DeprecationWarning."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from codegen_eval.cli import main
from codegen_eval.executors.worker import score_batch
from codegen_eval.registry import get_suite
from sandboxes import BACKEND_ENV, use_backend

PLUGIN = ["--plugin", "tests.codegen_eval.backend_probe"]
HUMANEVAL = Path(__file__).parent / "humaneval_fixture" / "problems.jsonl"


@pytest.fixture(autouse=True)
def _no_user_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)


def _seen(log: Path) -> dict[str, dict[str, Any]]:
    """sample id -> what its scorer recorded (the backend it opened, $CODEGEN_SANDBOX)."""
    out = {}
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "score":
            assert rec["status"] == "pass", rec
            out[rec["sample_id"]] = rec["score_metadata"]
    return out


def _run(log: Path, *options: str) -> None:
    argv = [*PLUGIN, "run", "--suite", "backend-probe", "--suite", "backend-probe-implicit",
            "--solver", "reference", "--no-progress", "--log", str(log), *options]  # fmt: skip
    assert main(argv) == 0


def test_run_with_a_sandbox_option_leaves_the_environment_and_scores_in_that_backend(
    tmp_path: Path,
) -> None:
    before = dict(os.environ)
    _run(tmp_path / "local.jsonl", "--sandbox", "unsafe-local")
    assert dict(os.environ) == before  # old code: CODEGEN_SANDBOX=unsafe-local was set
    seen = _seen(tmp_path / "local.jsonl")
    # the factory that takes `backend` got it; the one that does not opened the run's block's
    assert seen == {
        "backend-probe-0": {"backend": "unsafe-local", "env": None},
        "backend-probe-implicit-0": {"backend": "unsafe-local", "env": None},
    }


def test_two_runs_in_one_process_do_not_leak_their_backends(tmp_path: Path) -> None:
    _run(tmp_path / "first.jsonl", "--sandbox", "unsafe-local")
    _run(tmp_path / "second.jsonl")  # no --sandbox, no $CODEGEN_SANDBOX: bwrap
    assert {m["backend"] for m in _seen(tmp_path / "second.jsonl").values()} == {"bwrap"}
    # and a run inside a caller's use_backend block takes that block's as its default
    with use_backend("unsafe-local"):
        _run(tmp_path / "third.jsonl")
    assert {m["backend"] for m in _seen(tmp_path / "third.jsonl").values()} == {"unsafe-local"}


def test_the_environment_is_still_the_users_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BACKEND_ENV, "unsafe-local")
    _run(tmp_path / "env.jsonl")
    assert {m["backend"] for m in _seen(tmp_path / "env.jsonl").values()} == {"unsafe-local"}
    with open(tmp_path / "env.jsonl") as fh:
        header = json.loads(fh.readline())
    assert header["options"]["sandbox"] == "unsafe-local"  # recorded for --resume and slurm


async def test_a_slurm_worker_scores_in_the_backend_its_spec_names(tmp_path: Path) -> None:
    batch = {
        "task_spec": {
            "factory": "tests.codegen_eval.backend_probe:worker_tasks",
            "backend": "unsafe-local",
            "env": {},
        },
        "items": [
            {"key": "k0", "suite": "backend-probe-implicit", "sample_id": "backend-probe-implicit-0",
             "index": 0, "code": "anything"}
        ],
    }  # fmt: skip
    before = dict(os.environ)
    out = tmp_path / "result-0.jsonl"
    assert await score_batch(batch, out, "1_0") == 1
    assert dict(os.environ) == before
    line = json.loads(out.read_text())
    # old code: the spec's backend was ignored and the node's default (bwrap) opened
    assert line["score"]["metadata"] == {"backend": "unsafe-local", "env": None}


def test_get_suite_hands_the_backend_to_factories_that_take_it() -> None:
    import tests.codegen_eval.backend_probe  # noqa: F401  (registers the probe suites)

    assert get_suite("omp-pragma", backend="unsafe-local").scorer.backend == "unsafe-local"
    assert get_suite("backend-probe", backend="docker").scorer.backend == "docker"
    # a factory without the keyword is called without it (its scorer opens the run's)
    assert get_suite("backend-probe-implicit", backend="docker").scorer.backend is None


def test_the_readers_old_sandbox_keyword_still_works_with_a_warning() -> None:
    from codegen_eval.readers import load_humaneval
    from codegen_eval.readers.humaneval.scorer import HumanEvalScorer

    with pytest.warns(DeprecationWarning, match=r"load_humaneval\(sandbox=...\) is deprecated"):
        task = load_humaneval(HUMANEVAL, sandbox="unsafe-local")
    assert task.scorer.backend == "unsafe-local"
    with pytest.warns(DeprecationWarning, match="say backend='docker'"):
        assert HumanEvalScorer(sandbox="docker").backend == "docker"
    with pytest.raises(TypeError, match="disagree"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        HumanEvalScorer(backend="bwrap", sandbox="docker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new keyword: no warning
        assert load_humaneval(HUMANEVAL, backend="docker").scorer.backend == "docker"


def test_an_inspect_task_hands_its_backend_on_and_leaves_the_environment() -> None:
    from codegen_eval.inspect_tasks import omp_pragma

    before = dict(os.environ)
    task = omp_pragma(solver="reference", backend="bwrap", limit=1)
    assert dict(os.environ) == before  # old code: CODEGEN_SANDBOX=bwrap was set here
    assert task.metadata["codegen_eval"]["backend"] == "bwrap"


def test_pareval_takes_backend_and_its_old_keyword_with_a_warning() -> None:
    from codegen_eval.readers import load_pareval

    fixture = Path(__file__).parent / "pareval_fixture"
    with pytest.warns(DeprecationWarning, match=r"load_pareval\(sandbox=...\)"):
        task = load_pareval(fixture, models=("serial",), sandbox="unsafe-local")
    assert task.scorer.backend == task.scorer.objects.backend == "unsafe-local"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        task = load_pareval(fixture, models=("serial",), backend="docker")
    assert task.scorer.backend == task.scorer.objects.backend == "docker"
