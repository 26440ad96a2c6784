"""benchmarks/repair_budget.py as a user runs it, against a scripted model (real HTTP) and real
iverilog: the logs are archived as they grow and come back on a new machine, and a stop
keeps the work and says so in the times file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from appl.testing import Rule, ScriptedServer
from tests.agents.test_repair import GATES_OK

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "repair_budget.py"


def _env(tmp_path: Path, server: ScriptedServer) -> dict[str, str]:
    toml = tmp_path / "appl.toml"
    toml.write_text(
        "[models.scripted]\n"
        'provider = "openai"\n'
        f'base_url = "{server.base_url}"\n'
        'api_key = "test"\n'
        "timeout_s = 60\n"
        "max_retries = 0\n"
    )
    return dict(os.environ, APPL_CONFIG=str(toml), PYTHONPATH=str(ROOT))


def _argv(out: Path, archive: Path) -> list[str]:
    return [sys.executable, str(SCRIPT), "--suite", "verilog", "--filter", "p01_*",
            "--model", "scripted", "-R", "2", "--out", str(out), "--archive", str(archive)]  # fmt: skip


def test_archived_logs_resume_on_a_new_machine(tmp_path: Path) -> None:
    out, archive = tmp_path / "runs", tmp_path / "results"
    with ScriptedServer([Rule(reply=GATES_OK)], default_reply=None) as server:
        env = _env(tmp_path, server)
        first = subprocess.run(_argv(out, archive), env=env, capture_output=True, text=True,
                               timeout=300)  # fmt: skip
        assert first.returncode == 0, first.stdout + first.stderr
        asked = len(server.requests)
        assert asked == 3  # generate: 2 samples; repair: round 1 passes
        for arm in ("generate", "repair"):
            log = out / f"verilog-scripted.{arm}.jsonl"
            copy = archive / f"verilog-scripted.{arm}.jsonl.gz"
            assert gzip.decompress(copy.read_bytes()) == log.read_bytes()
        assert (archive / "verilog-scripted.times.jsonl").exists()

        shutil.rmtree(out)  # a new machine: only the committed archive is there
        again = subprocess.run(_argv(out, archive), env=env, capture_output=True, text=True,
                               timeout=300)  # fmt: skip
        assert again.returncode == 0, again.stdout + again.stderr
        assert "restored" in again.stdout
        assert len(server.requests) == asked  # resumed: nothing was asked twice
        assert "1 problems finished in both runs" in again.stdout
        # both invocations are on record: the first one's line came back with the logs
        times = (out / "verilog-scripted.times.jsonl").read_text().splitlines()
        assert len(times) == 2


def test_a_stop_keeps_the_work_and_is_marked(tmp_path: Path) -> None:
    out, archive = tmp_path / "runs", tmp_path / "results"
    with ScriptedServer([Rule(reply=GATES_OK, latency=60)], default_reply=None) as server:
        driver = subprocess.Popen(_argv(out, archive), env=_env(tmp_path, server),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            # both runs are waiting on the model: generate's 2 samples and repair's first
            # round (its own process, so its own request); 2 could be generate's alone, with
            # the repair run not yet started
            while len(server.requests) < 3 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert len(server.requests) >= 3
            driver.send_signal(signal.SIGTERM)
            output, _ = driver.communicate(timeout=60)
        finally:
            if driver.poll() is None:
                driver.kill()
    times = [json.loads(x) for x in (out / "verilog-scripted.times.jsonl").read_text().splitlines()]
    assert times[-1]["stopped"] is True, output
    for arm in ("generate", "repair"):  # the headers were written and kept
        log = out / f"verilog-scripted.{arm}.jsonl"
        assert json.loads(log.read_text().splitlines()[0])["type"] == "header"
        assert (archive / f"verilog-scripted.{arm}.jsonl.gz").exists()
