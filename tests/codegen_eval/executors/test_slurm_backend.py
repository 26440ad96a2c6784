"""--executor slurm scores in the backend the run chose, shipped in the job spec: the compute
node's worker never learns it from an environment variable (the submitting CLI sets none, and
sbatch's exported environment therefore carries none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_worker_scores_in_the_runs_backend_from_its_spec(
    slurm_cluster: str, tmp_path: Path
) -> None:
    log = tmp_path / "run.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "CODEGEN_SANDBOX"}
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", "--plugin", "tests.codegen_eval.backend_probe",
         "run", "--suite", "backend-probe", "--suite", "backend-probe-implicit", "--solver",
         "reference", "--sandbox", "unsafe-local", "--executor", "slurm", "--no-progress",
         "--log", str(log)],
        cwd=ROOT, env=dict(env, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    scores = [json.loads(x) for x in log.read_text().splitlines()]
    scores = [r for r in scores if r.get("type") == "score"]
    assert len(scores) == 2 and all(r["executor"]["kind"] == "slurm" for r in scores)
    # Old code: the CLI set CODEGEN_SANDBOX in its own environment and sbatch exported it,
    # so the worker saw env "unsafe-local"; now it sees none and still opens unsafe-local.
    assert {r["sample_id"]: r["score_metadata"] for r in scores} == {
        "backend-probe-0": {"backend": "unsafe-local", "env": None},
        "backend-probe-implicit-0": {"backend": "unsafe-local", "env": None},
    }
